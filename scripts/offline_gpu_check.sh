#!/usr/bin/env bash
# First contact with a GPU node that has a preinstalled PyTorch stack (torch >= 2.11, transformers, peft, accelerate)
# and no network: no uv, no vLLM, no Unsloth, no model, no dataset (docs/gpu.md "An offline GPU node").
#
#   bash scripts/offline_gpu_check.sh --download     # here, with PyPI: the wheels the node lacks -> .whl/ (~46 MiB)
#   bash scripts/offline_gpu_check.sh                # there (copy the checkout with .whl/): install them, run the checks
#   bash scripts/offline_gpu_check.sh --dry-run      # here, on the CPU: the same steps at a small size
#
# Options: --wheels DIR (default .whl), --out DIR (default checkpoints/offline-gpu-check), --python PY (default
# python3; --dry-run: the checkout's .venv if there is one), --steps N (default 3, at least 2), --node-python X.Y
# (with --download: the node's Python version, default 3.12; multiprocess's wheel is per version). A value may
# follow its option (--out DIR) or be joined to it (--out=DIR, the form for a value that starts with "-"); any
# path works. An option without its value, or an unknown one, is refused: one line naming it, exit 2.
# The checks: (1) scripts/gpu_check.py --config experiment=gsm8k_main backend=hf --random-weights: Qwen2.5-3B's
# architecture with random weights, 4-bit base through bitsandbytes, LoRA 64 (fp32) under bf16 autocast, prompts and
# completions of 512 tokens, n = 64 -> m = 16; (2) scripts/train_trl.py: TRL's PODSTrainer on the same random model
# for 2 optimizer steps (n = 16 -> m = 4). Every figure lands in <out>/offline-gpu-check.json; exit 1 if a check failed.
# Without --dry-run the node must have CUDA: a CPU is refused before anything is installed or written (exit 2).
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
# The wheels a node with torch, transformers, peft and accelerate lacks: pods' other dependencies at uv.lock's
# versions (tests/scripts/test_offline_gpu_check.py keeps them equal), and bitsandbytes for the 4-bit base.
WHEELS_PINNED=(hydra-core==1.3.8 omegaconf==2.3.1 hydra-submitit-launcher==1.2.0 submitit==1.5.4
               math-verify==0.9.0 latex2sympy2-extended==1.11.0 trl==1.15.0 datasets==4.8.5 dill==0.4.1
               multiprocess==0.70.19 bitsandbytes==0.50.2)
SDISTS_PINNED=(antlr4-python3-runtime==4.9.3 pylatexenc==2.10)  # no wheels on PyPI: built here (pure Python)

WHEELS="$ROOT/.whl" WHEELS_GIVEN=0 OUT="$ROOT/checkpoints/offline-gpu-check" PY="" STEPS=3 MODE=check NODE_PYTHON=3.12
refuse() { echo "offline_gpu_check.sh: $* (see --help)" >&2; exit 2; }
while [ $# -gt 0 ]; do
    opt="$1" value="" joined=0
    shift
    case "$opt" in --*=*) value="${opt#*=}" opt="${opt%%=*}" joined=1 ;; esac
    case "$opt" in
        --wheels|--out|--python|--steps|--node-python)
            if [ "$joined" = 0 ]; then  # the next argument, unless there is none or it is another option
                [ $# -gt 0 ] && [[ "$1" != -* ]] || refuse "$opt needs a value"
                value="$1"
                shift
            fi
            [ -n "$value" ] || refuse "$opt needs a value" ;;
        --download|--dry-run|-h|--help) [ "$joined" = 0 ] || refuse "$opt takes no value" ;;
        *) refuse "unknown argument $opt" ;;
    esac
    case "$opt" in
        --download) MODE=download ;;
        --dry-run) MODE=dry ;;
        --wheels) WHEELS="$(realpath -m -- "$value")" WHEELS_GIVEN=1 ;;
        --out) OUT="$(realpath -m -- "$value")" ;;
        --python) PY="$value" ;;
        --steps) [[ "$value" =~ ^[0-9]+$ ]] && [ "$value" -ge 2 ] || refuse "--steps must be a whole number >= 2, got '$value'"
                 STEPS="$value" ;;
        --node-python) [[ "$value" =~ ^[0-9]+\.[0-9]+$ ]] || refuse "--node-python must be X.Y (e.g. 3.12), got '$value'"
                       NODE_PYTHON="$value" ;;
        -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    esac
done
if [ -e "$OUT" ] && [ ! -d "$OUT" ]; then refuse "--out $OUT is a file; give a directory"; fi

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
    "$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)" 2>/dev/null
    case $? in
        0) ;;
        3) refuse "no CUDA GPU here ($PY's torch sees none): the checks measure a GPU; on a CPU run the same steps at a small size with --dry-run" ;;
        *) refuse "$PY cannot import torch: on the node, give its Python with --python PY" ;;
    esac
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
# paths travel as arguments (sys.argv) and quoted overrides, never pasted into code: any path works
"$PY" -c "import json, sys; from pods.firstcontact.sizecheck import stack; print(json.dumps(stack(), indent=1))" \
    > "$OUT/stack.json" || { echo "offline_gpu_check.sh: pods does not import with $PY (above)" >&2; exit 1; }
hydra_quote() {  # a value for a Hydra override, read back as exactly the text given (pods.config.files.quote)
    "$PY" -c "import sys; from pods.config.files import quote; print(quote(sys.argv[1]))" "$1"
}
cat "$OUT/stack.json"

status=0
echo "== 1/2: gsm8k_main's step (hf backend) with random weights"
"$PY" "$ROOT/scripts/gpu_check.py" --out "$OUT" --steps "$STEPS" --config experiment=gsm8k_main backend=hf \
    "${SIZE[@]}" --random-weights "${LENGTHS[@]}" || status=1

echo "== 2/2: TRL's PODSTrainer on the same random model"
MODEL=""
for dir in "$OUT"/models/random-*/; do [ -d "$dir" ] && { MODEL="${dir%/}"; break; }; done
if [ -n "$MODEL" ]; then
    "$PY" "$ROOT/scripts/train_trl.py" --preset "$ROOT/config/trl/pods-qwen2.5-3b.yaml" "model=$(hydra_quote "$MODEL")" \
        "run_dir=$(hydra_quote "$OUT/trl")" overwrite=true train_steps=2 max_train_seconds=null eval_every_seconds=null \
        save_every_seconds=null "dataset.name=$(hydra_quote "$OUT/standin_prompts.py:prompts")" \
        dataset.prompt_style=plain dataset.system_prompt=null eval.limit=4 trl.gradient_accumulation_steps=1 \
        trl.prompt_repeats=1 "${TRL_SIZE[@]}" > "$OUT/trl.log" 2>&1 || { status=1; tail -5 "$OUT/trl.log"; }
else
    echo "no random model was built (step 1 failed)"; status=1
fi
"$PY" -c "import sys; from pods.firstcontact.sizecheck import write_summary; write_summary(sys.argv[1])" "$OUT" || status=1
echo "offline_gpu_check.sh: figures in $OUT/offline-gpu-check.json (exit $status)"
exit "$status"
