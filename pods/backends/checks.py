"""Start-up checks of the model and backend settings, run before any model loads.

    problems = backend_problems(cfg, cuda=torch.cuda.is_available())   # by pods.config.checks.validate
    problems = model_problems(cfg.model.name)                           # tiny, a local directory or a hub id
    check_offline(cfg.model.name); line = check_memory(cfg)             # right before loading (ConfigError)
    no_cuda_reason(); raise load_error(cfg.model.name, err)             # "the NVIDIA driver 535.x is too old ..."
    arch = model_architecture(cfg.model)                                # for the memory estimate (memory.py)

Each problem is one sentence saying what to change. Nothing here imports vLLM or Unsloth (importlib.util.find_spec);
`load_error` says what from_pretrained's error means, `check_memory` runs on a CUDA GPU only.
"""

from __future__ import annotations

import errno
import importlib.util
import os
import re
from pathlib import Path

from pods.backends import facts, memory
from pods.backends.gguf import gguf_file, is_packaged
from pods.errors import ConfigError, PodsError
from pods.io import os_error_in

DEMO_HINT = "on a machine without a GPU run the CPU demo instead: `uv run python train.py experiment=demo`"
# CUDA major version of a torch build -> the oldest Linux driver branch that runs it (NVIDIA's CUDA release notes)
CUDA_DRIVERS = {13: 580, 12: 525, 11: 450}


def backend_problems(cfg, *, cuda: bool) -> list[str]:
    """Problems of cfg.backend with cfg.model and cfg.rl on this machine (cuda: a CUDA GPU is here), once every key
    has its declared type (pods.config.fields walks cfg.backend against the chosen backend's settings first)."""
    backend, model, rl = cfg.backend, cfg.model, cfg.rl
    name = backend.name
    problems, f = [], facts(name)
    if f.needs_cuda and not cuda and not (f.cpu_build and _installed(f.library)):  # a CPU build runs here
        problems.append(f"backend {name!r} needs a CUDA GPU, and {no_cuda_reason()}; use backend=hf, or " + DEMO_HINT)
    budget = rl.max_prompt_tokens + rl.max_completion_tokens
    length_key = f.length_key
    length = backend.get(length_key) if length_key else None
    if length is not None and length < budget:
        problems.append(
            f"backend.{length_key}={length} < rl.max_prompt_tokens + rl.max_completion_tokens = "
            f"{rl.max_prompt_tokens} + {rl.max_completion_tokens} = {budget}: longer sequences would be "
            f"truncated and their log-probs misaligned; set backend.{length_key}={budget} (or more), "
            f"or lower the token limits")
    four_bit = cuda and bool(model.get("load_in_4bit"))  # 4-bit applies only on a CUDA GPU
    if four_bit and model.lora.rank == 0:
        problems.append("model.load_in_4bit=true with model.lora.rank=0: 4-bit weights cannot be trained; "
                        "set model.load_in_4bit=false for full-parameter training, or model.lora.rank > 0 "
                        "(QLoRA)")
    return problems + (f.problems(cfg, cuda=cuda) if f.problems else [])


def cuda_problem(available: bool, driver: str | None, torch_cuda: str | None) -> str | None:
    """Why CUDA is not usable, from torch.cuda.is_available(), the NVIDIA driver's version and torch.version.cuda;
    None when it is usable."""
    if available:
        return None
    if torch_cuda is None:
        return "this torch is a CPU-only build"
    if driver is None:
        return "no NVIDIA driver is loaded (no CUDA GPU here)"
    need = CUDA_DRIVERS.get(int(torch_cuda.split(".")[0]))
    if need is not None and int(driver.split(".")[0]) < need:
        return (f"the NVIDIA driver {driver} is too old for this torch, a CUDA {torch_cuda} build that needs driver "
                f"R{need} or newer: update the driver (nvidia-smi shows its version)")
    return (f"CUDA is not usable although driver {driver} is loaded (torch's CUDA {torch_cuda}): check nvidia-smi "
            "and CUDA_VISIBLE_DEVICES")


def driver_version(path: Path = Path("/proc/driver/nvidia/version")) -> str | None:
    """The loaded NVIDIA kernel driver's version ("580.65.06"), None without one."""
    try:
        found = re.search(r"Kernel Module\b.*?\s(\d+\.\d+(?:\.\d+)?)\s", path.read_text())
    except OSError:
        return None
    return found.group(1) if found else None


def no_cuda_reason() -> str:
    """Why this machine has no usable CUDA GPU, in words (cuda_problem of what is here)."""
    import torch

    return cuda_problem(torch.cuda.is_available(), driver_version(), torch.version.cuda) or "none is available"


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def model_problems(name: str) -> list[str]:
    """model.name is "tiny", a local model directory (with config.json) or a hub id (see also `check_offline`;
    a hub id that does not exist online is only found when loading: `load_error`)."""
    if name == "tiny":
        return []
    if is_packaged(name):
        try:
            gguf_file(name)  # installed, readers new enough (the conversion itself comes when it loads)
        except ConfigError as err:
            return [str(err)]
        return []
    path = Path(name).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            return [f"model.name {name}: a local model is a directory holding config.json (save_pretrained's "
                    "output); this one has none"]
        return []
    if name.startswith(("/", ".", "~")) or name.count("/") > 1:
        return [f"model.name {name!r}: no such directory, and not a hub id (like Qwen/Qwen2.5-3B-Instruct); "
                "point model.name at a local model directory or a hub id"]
    return []


def check_offline(name: str) -> None:
    """Offline (HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE), a hub id must be in the local cache: ConfigError
    otherwise. Called right before a model loads (pods.config.checks.validate stays independent of the cache)."""
    offline = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    if name == "tiny" or is_packaged(name) or Path(name).expanduser().exists():
        return
    if any(os.environ.get(v, "").lower() in ("1", "true", "yes", "on") for v in offline):
        from huggingface_hub import try_to_load_from_cache

        if not isinstance(try_to_load_from_cache(name, "config.json"), str):
            raise ConfigError(f"model.name {name}: offline (HF_HUB_OFFLINE) and not in the local cache; download "
                              f"it first (`hf download {name}`) or point model.name at a local model directory")


CACHE_ERRORS = {errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.ENOTDIR, errno.EEXIST}


def load_error(name: str, err: Exception) -> PodsError:
    """The error for a model that transformers / huggingface_hub could not load (an unknown hub id, no network,
    files missing from a local directory, a config.json transformers does not know, a cache it cannot write):
    OSError or ValueError from transformers / huggingface_hub; our own errors pass through as they are."""
    if isinstance(err, PodsError):  # already says what to fix (a packaged model, its cache: pods.backends.gguf)
        return err
    cause = os_error_in(err)
    if cause is not None and cause.errno in CACHE_ERRORS:  # the file system, not the network
        where = f": {cause.filename}" if getattr(cause, "filename", None) else ""
        return ConfigError(f"model.name {name} could not be loaded: a file could not be written "
                           f"({os.strerror(cause.errno).lower()}{where}): its cache directory (HF_HOME, PODS_CACHE_DIR) "
                           "is read-only, full or not a directory, not the network; point it at a writable directory "
                           "with room")
    first = (str(err).strip().splitlines() or [type(err).__name__])[0][:400]
    return ConfigError(f"model.name {name} could not be loaded ({type(err).__name__}: {first}); check the name "
                       "(a hub id such as Qwen/Qwen2.5-3B-Instruct, or a local model directory) and the network")


def model_architecture(model_cfg) -> memory.Architecture:
    """The model's numbers for the memory estimate: model.architecture or model.tiny, else its config.json
    (a local directory, or the hub: one small file); ConfigError when none of these is available."""
    arch = memory.architecture(model_cfg)
    if arch is not None:
        return arch
    from transformers import AutoConfig

    try:
        return memory.from_hf_config(AutoConfig.from_pretrained(str(model_cfg.name)))
    except (OSError, ValueError, AttributeError) as err:
        raise ConfigError(f"model.name {model_cfg.name}: its architecture is unknown for the memory estimate "
                          f"({type(err).__name__}: {str(err).splitlines()[0][:200]}); set model.architecture.* "
                          "from its config.json (as config/model/qwen2.5-3b-instruct.yaml does), or "
                          "check_memory=false") from err


def uses_cuda(cfg) -> bool:
    """Whether the run's model goes on a CUDA GPU (a backend that is always there, e.g. Unsloth; others per
    backend.device)."""
    import torch

    device = str((cfg.backend or {}).get("device", "auto"))
    return torch.cuda.is_available() and (facts(cfg.backend.name).always_cuda or device == "auto"
                                          or device.startswith("cuda"))


def check_memory(cfg) -> str | None:
    """On a CUDA GPU, before a model loads: 'memory estimate: fits: ...'; a ConfigError with the estimate's table
    and the settings that would fit when the run cannot fit the free memory (`check_memory=false`: a warning
    instead). None when the run does not use a CUDA GPU."""
    if not uses_cuda(cfg):
        return None
    import torch

    device = str(cfg.backend.get("device", "auto"))
    index = torch.device(device).index if device.startswith("cuda") else None
    free, total = (b / memory.GIB for b in torch.cuda.mem_get_info(index))
    arch, w = model_architecture(cfg.model), memory.workload(cfg)
    est = memory.estimate(arch, w, total_gib=total)  # once: the verdict and the table read it
    # mem_get_info created this process's CUDA context, which `free` already lacks and the estimate counts
    fits, line = memory.verdict(arch, w, total_gib=total, available_gib=free + memory.CONTEXT_GIB, est=est)
    where = f"{torch.cuda.get_device_name(index)}, {free:.1f} of {total:.1f} GiB free"
    if fits:
        return f"memory estimate: {line} ({where})"
    text = (f"the run does not fit the GPU's memory ({where}; estimate of "
            f"{memory.describe(str(cfg.model.name), arch, w)}, docs/gpu.md):\n{est.table()}\n  generation: "
            f"{est.generation}\n{line}")
    if cfg.get("check_memory", True):
        raise ConfigError(text + "\n(check_memory=false starts it anyway)")
    return "warning: " + text
