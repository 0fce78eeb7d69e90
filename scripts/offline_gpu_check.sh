#!/usr/bin/env bash
# First contact with a GPU node that has a preinstalled PyTorch stack (torch >= 2.11, transformers, peft, accelerate)
# and no network: no uv, no vLLM, no Unsloth, no model, no dataset (docs/gpu.md "An offline GPU node").
#
#   bash scripts/offline_gpu_check.sh --download     # here, with PyPI: the wheels the node lacks -> .whl/ (~46 MiB)
#   bash scripts/offline_gpu_check.sh                # there (copy the checkout with .whl/): install them, run the checks
#   bash scripts/offline_gpu_check.sh --dry-run      # here, on the CPU: the same steps at a small size
#
# Options: --wheels DIR (default .whl), --out DIR (default checkpoints/offline-gpu-check), --python PY (default
# python3; --dry-run: the checkout's .venv if there is one), --steps N (default 3), --node-python X.Y (with
# --download: the node's Python version, default 3.12; multiprocess's wheel is per version).
# The checks: (1) scripts/gpu_check.py --config experiment=gsm8k_main backend=hf --random-weights: Qwen2.5-3B's
# architecture with random weights, 4-bit base through bitsandbytes, LoRA 64 (fp32) under bf16 autocast, prompts and
# completions of 512 tokens, n = 64 -> m = 16; (2) scripts/train_trl.py: TRL's PODSTrainer on the same random model
# for 2 optimizer steps (n = 16 -> m = 4). Every figure lands in <out>/offline-gpu-check.json; exit 1 if a check failed.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# The wheels a node with torch, transformers, peft and accelerate lacks: pods' other dependencies at uv.lock's
# versions (tests/scripts/test_offline_gpu_check.py keeps them equal), and bitsandbytes for the 4-bit base.
WHEELS_PINNED=(hydra-core==1.3.8 omegaconf==2.3.1 hydra-submitit-launcher==1.2.0 submitit==1.5.4
               math-verify==0.9.0 latex2sympy2-extended==1.11.0 trl==1.15.0 datasets==4.8.5 dill==0.4.1
               multiprocess==0.70.19 bitsandbytes==0.50.2)
SDISTS_PINNED=(antlr4-python3-runtime==4.9.3 pylatexenc==2.10)  # no wheels on PyPI: built here (pure Python)

WHEELS="$ROOT/.whl" WHEELS_GIVEN=0 OUT="$ROOT/checkpoints/offline-gpu-check" PY="" STEPS=3 MODE=check NODE_PYTHON=3.12
while [ $# -gt 0 ]; do
    case "$1" in
        --download) MODE=download; shift ;;
        --dry-run) MODE=dry; shift ;;
        --wheels) WHEELS="$(realpath -m "$2")" WHEELS_GIVEN=1; shift 2 ;;
        --out) OUT="$(realpath -m "$2")"; shift 2 ;;
        --python) PY="$2"; shift 2 ;;
        --steps) STEPS="$2"; shift 2 ;;
        --node-python) NODE_PYTHON="$2"; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        *) echo "offline_gpu_check.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done

if [ "$MODE" = download ]; then
    mkdir -p "$WHEELS"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$NODE_PYTHON" --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 -d "$WHEELS" "${WHEELS_PINNED[@]}" || exit 1
    python3 -m pip wheel -q --no-deps -w "$WHEELS" "${SDISTS_PINNED[@]}" || exit 1
    du -ch "$WHEELS"/*.whl | tail -1 | sed 's/total/in all: copy the checkout with this folder to the node/'
    exit 0
fi

if [ "$MODE" = dry ]; then
    PY="${PY:-$([ -x "$ROOT/.venv/bin/python" ] && echo "$ROOT/.venv/bin/python" || echo python3)}"
    # the same presets, scaled down for a CPU: the architecture, the group, the lengths
    SIZE=(model.architecture.layers=2 model.architecture.hidden=64 model.architecture.intermediate=128
          model.architecture.heads=4 model.architecture.kv_heads=2 model.architecture.vocab=4096
          model.architecture.params=null model.load_in_4bit=false model.dtype=float32 backend.device=cpu
          rl.n=4 rl.m=2 optim.name=adamw)
    LENGTHS=(--prompt-tokens 24 --completion-tokens 5)
    TRL_SIZE=(trl.num_generations=4 trl.pods_m=2 trl.per_device_train_batch_size=4 trl.max_completion_length=5
              trl.bf16=false trl.model_init_kwargs.dtype=float32 trl.use_cpu=true)
    export PODS_THREADS="${PODS_THREADS:-2}"
else
    PY="${PY:-python3}"
    SIZE=() LENGTHS=()
    TRL_SIZE=(trl.num_generations=16 trl.pods_m=4 trl.per_device_train_batch_size=16 trl.max_completion_length=512)
fi

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
if [ "$MODE" = check ] || [ "$WHEELS_GIVEN" = 1 ]; then  # a dry run uses its own environment unless given wheels
    ls "$WHEELS"/*.whl >/dev/null 2>&1 || { echo "offline_gpu_check.sh: no wheels in $WHEELS: run" \
        "'bash scripts/offline_gpu_check.sh --download' on a machine with PyPI, then copy the checkout here" >&2; exit 2; }
    SITE="$OUT/site-packages"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
        "$WHEELS"/*.whl || exit 1
    export PYTHONPATH="$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
else
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
fi
mkdir -p "$OUT"
"$PY" -c "import json, sys; from pods.firstcontact.sizecheck import stack; print(json.dumps(stack(), indent=1))" \
    > "$OUT/stack.json" || { echo "offline_gpu_check.sh: pods does not import with $PY (above)" >&2; exit 1; }
cat "$OUT/stack.json"

status=0
echo "== 1/2: gsm8k_main's step (hf backend) with random weights"
"$PY" "$ROOT/scripts/gpu_check.py" --out "$OUT" --steps "$STEPS" --config experiment=gsm8k_main backend=hf \
    "${SIZE[@]}" --random-weights "${LENGTHS[@]}" || status=1

echo "== 2/2: TRL's PODSTrainer on the same random model"
MODEL="$(ls -d "$OUT"/models/random-*/ 2>/dev/null | head -1)"
if [ -n "$MODEL" ]; then
    "$PY" "$ROOT/scripts/train_trl.py" --preset "$ROOT/config/trl/pods-qwen2.5-3b.yaml" model="$MODEL" \
        run_dir="$OUT/trl" overwrite=true train_steps=2 max_train_seconds=null eval_every_seconds=null \
        save_every_seconds=null "dataset.name=$OUT/standin_prompts.py:prompts" dataset.prompt_style=plain \
        dataset.system_prompt=null eval.limit=4 trl.gradient_accumulation_steps=1 trl.prompt_repeats=1 \
        "${TRL_SIZE[@]}" > "$OUT/trl.log" 2>&1 || { status=1; tail -5 "$OUT/trl.log"; }
else
    echo "no random model was built (step 1 failed)"; status=1
fi
"$PY" -c "from pods.firstcontact.sizecheck import write_summary; write_summary('$OUT')" || status=1
echo "offline_gpu_check.sh: figures in $OUT/offline-gpu-check.json (exit $status)"
exit "$status"
