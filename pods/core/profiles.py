"""Machine profiles: the constants of the step-time model (pods.core.timing) for one machine and backend.

    prof = load("l40s-unsloth")                  # a shipped one (pods/core/machines/), or one you measured
    prof = load("checkpoints/gpu-check/my-gpu.json")        # any profile file
    prof.check_backend("hf")                     # ConfigError when it was measured on another backend
    prof.outside(sequences=512, completion_tokens=230, kept=16)    # what lies outside the fitted range
    save(prof)                                   # into profile_dir(), where load(name) finds it

Contract: a profile holds every constant of pods.core.timing.CONSTANTS (seconds per unit, finite, >= 0), the
backend and device it was measured on, the model it priced (parameters, KV cache bytes per token), where each
constant came from, and the range of batches and lengths it was fitted on. Names are looked up in the shipped
folder, then in profile_dir() ($PODS_PROFILE_DIR, default ~/.config/pods/profiles). A bad name or file is one
ConfigError. docs/leaderboard.md "Time, not tokens".
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from pods.core.timing import CONSTANTS
from pods.errors import ConfigError
from pods.io import atomic_write_json

SHIPPED = Path(__file__).with_name("machines")
RANGE_KEYS = ("sequences", "completion_tokens", "kept")  # per batch decoded, mean completion, kept per prompt


@dataclass(frozen=True)
class Profile:
    name: str
    machine: str  # e.g. "one NVIDIA L40S (48 GB)"
    backend: str  # pods backend it was measured on (hf, vllm, unsloth)
    device: str  # cuda | cpu
    model: str  # what it priced
    model_params: float  # its parameters (the update and decoding scale with them)
    kv_bytes_per_token: float  # its KV cache per token of context (the context term scales with it)
    constants: dict[str, float]  # pods.core.timing.CONSTANTS -> seconds per unit
    origin: dict[str, str] = field(default_factory=dict)  # constant -> fitted / measured / from sizes (how)
    fitted_range: dict[str, list[float]] = field(default_factory=dict)  # RANGE_KEYS -> [low, high]
    source: str = ""
    date: str = ""
    gpu: str = ""  # the GPU's name as `pods preflight --gpu` spells it ("" on a CPU)

    def check_backend(self, backend: str) -> None:
        """ConfigError when the run's backend is not the one this profile was measured on."""
        if backend != self.backend:
            raise ConfigError(f"profile {self.name!r} was measured on backend={self.backend} ({self.machine}); this run "
                              f"uses backend={backend}: pass a profile of backend={backend} (`pods gpu-check --config "
                              f"... backend={backend} --random-weights` measures one) or run backend={self.backend}")

    def outside(self, **where: float) -> list[str]:
        """'key value outside [low, high]' for each given RANGE_KEYS value outside the fitted range."""
        out = []
        for key, value in where.items():
            low, high = self.fitted_range.get(key, (None, None))
            if low is not None and not low * 0.999 <= value <= high * 1.001:
                out.append(f"{key.replace('_', ' ')} {value:g} outside the fitted {low:g}-{high:g}")
        return out

    def scaled(self, params: float, kv_bytes_per_token: float) -> Profile:
        """The profile for another model, from sizes: decoding, prefill and the update in proportion to its
        parameters, the context term to its KV cache per token; the fixed part and batch set-up unchanged."""
        p, kv = params / self.model_params, kv_bytes_per_token / self.kv_bytes_per_token
        scale = {"fixed": 1.0, "batch": 1.0, "context_token": kv}
        constants = {c: v * scale.get(c, p) for c, v in self.constants.items()}
        return replace(self, constants=constants, model=f"{self.model}, scaled from sizes to {params / 1e9:.2f} B "
                       f"parameters and {kv_bytes_per_token:,.0f} KV bytes per token")



def profile_dir() -> Path:
    """Where measured profiles are saved and looked up by name."""
    return Path(os.environ.get("PODS_PROFILE_DIR") or Path.home() / ".config" / "pods" / "profiles")


def known() -> list[str]:
    """Names load() finds: the shipped profiles, then the measured ones in profile_dir()."""
    names = {p.stem for p in SHIPPED.glob("*.json")}
    if profile_dir().is_dir():
        names |= {p.stem for p in profile_dir().glob("*.json")}
    return sorted(names)


def for_machine(gpu: str | None, backend: str) -> Profile:
    """The known profile of this GPU (None: the CPU) and backend; ConfigError naming the known ones otherwise."""
    found = [p for p in map(load, known()) if p.backend == backend and
             (p.gpu == gpu if gpu else p.device == "cpu")]
    if not found:
        where = gpu or "the CPU"
        raise ConfigError(f"no profile measured on {where} with backend={backend}; known: " + ", ".join(
            f"{p.name} ({p.gpu or p.device}, backend={p.backend})" for p in map(load, known()))
            + "; pass --profile NAME|FILE, or measure one there: `pods gpu-check --config ... --random-weights`")
    return found[0]


def _path(spec: str) -> Path:
    if spec.endswith(".json") or os.sep in spec:
        return Path(spec)
    for folder in (SHIPPED, profile_dir()):
        if (folder / f"{spec}.json").is_file():
            return folder / f"{spec}.json"
    raise ConfigError(f"unknown profile {spec!r}; known: {', '.join(known())} (measured ones live in {profile_dir()}); "
                      "or give a profile file's path (*.json)")


def load(spec: str) -> Profile:
    """The profile named `spec` (shipped or measured) or in the file `spec`; ConfigError saying what to fix."""
    path = _path(str(spec))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"profile file {path} does not exist; known profiles: {', '.join(known())}") from None
    except (OSError, ValueError) as err:
        raise ConfigError(f"profile file {path} cannot be read as JSON ({err}); fix it or measure it again") from None
    if not isinstance(data, dict):
        raise ConfigError(f"profile file {path} holds a JSON {type(data).__name__}, not a profile object")
    return validate(data, where=str(path))


def validate(data: dict, where: str) -> Profile:
    """A Profile from its JSON object; ConfigError naming every missing, negative or non-numeric constant."""
    consts = data.get("constants")
    if not isinstance(consts, dict):
        raise ConfigError(f"profile {where}: no 'constants' object; it needs {', '.join(CONSTANTS)} (seconds each)")
    missing = [c for c in CONSTANTS if c not in consts]
    bad = [f"{c}={consts[c]!r}" for c in CONSTANTS if c in consts and not _seconds(consts[c])]
    unknown = sorted(set(consts) - set(CONSTANTS))
    if missing or bad or unknown:
        raise ConfigError(f"profile {where}: " + "; ".join(
            part for part in (f"missing constant(s) {', '.join(missing)}" if missing else "",
                              f"not a finite number >= 0: {', '.join(bad)}" if bad else "",
                              f"unknown constant(s) {', '.join(unknown)}" if unknown else "") if part)
            + f" (every constant of {', '.join(CONSTANTS)} is seconds per unit, >= 0)")
    for key in ("name", "backend", "device"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ConfigError(f"profile {where}: '{key}' must be a non-empty string")
    for key in ("model_params", "kv_bytes_per_token"):
        if not _seconds(data.get(key)) or not data[key] > 0:
            raise ConfigError(f"profile {where}: '{key}' must be a positive number")
    kw = {k: data[k] for k in ("machine", "model", "origin", "fitted_range", "source", "date", "gpu") if k in data}
    return Profile(name=data["name"], backend=data["backend"], device=data["device"],
                   model_params=float(data["model_params"]), kv_bytes_per_token=float(data["kv_bytes_per_token"]),
                   constants={c: float(consts[c]) for c in CONSTANTS}, **{"machine": "", "model": "", **kw})


def _seconds(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0


def save(profile: Profile, folder: Path | None = None) -> Path:
    """Write `profile` as <folder or profile_dir()>/<name>.json (load(name) then finds it)."""
    folder = Path(folder or profile_dir())
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{profile.name}.json"
    atomic_write_json(path, asdict(profile))
    return path
