#!/usr/bin/env bash
# Trains the demo checkpoints of resources/demos/ with poslens-cli train and installs them
# (model files only: config.json with the training metadata, model.safetensors, tokenizer.json).
# The full run folders (log.jsonl, every checkpoint, optimizer state) stay in $RUNS.
#
#   scripts/make_demos.sh [NAME...]      default: every demo
#   SEED=1 RUNS=/tmp/runs scripts/make_demos.sh flipflop-cope   another seed, not installed
#   FLIPFLOP_STEPS=1500 scripts/make_demos.sh flipflop-absolute  (how the shipped one was made)
#
# Names: flipflop-cope flipflop-rope flipflop-absolute counting-cope text-cope text-heinsen
# text-rope-series english-absolute english-rope english-kerple english-hope.
# The english-* models are the HoPE experiment's final checkpoints (scripts/make_hope_figures.sh,
# run first if $HOPE_OUT has none), installed as float16. Several runs side by side:
# OMP_NUM_THREADS=1 for each (docs/training.md).
# Recipes and results: resources/demos/README.md and docs/experiments.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=${CLI:-build/app/cli/poslens-cli}
runs=${RUNS:-/tmp/poslens-demo-runs}
seed=${SEED:-0}
demos=resources/demos
mkdir -p "$runs"

# Flip-Flop as MEASURED.md's recipe (T 128, full next-token loss, batch 32, AdamW lr 1e-3 with
# 100 warm-up steps and linear decay, weight decay 0.01, clipping 1.0) but 3000 steps: at 1500
# the CoPE model has not converged (docs/experiments.md). FLIPFLOP_STEPS=1500 for the shorter run.
flipflop_steps=${FLIPFLOP_STEPS:-3000}
flipflop() {
  "$cli" train --task flipflop --length 128 --model "$demos/configs/$1.json" \
    --out "$runs/$1-seed$seed" --steps "$flipflop_steps" --batch-size 32 --lr 1e-3 --warmup 100 \
    --seed "$seed" --checkpoint-every 1500 --eval-sequences 500 --log-every 100
}
# Character LM on Debian's fortunes, T 128.
text() {
  "$cli" train --task text --length 128 --model "$demos/configs/$2.json" \
    --out "$runs/$1-seed$seed" --steps 1500 --batch-size 32 --lr 2e-3 --warmup 100 \
    --seed "$seed" --checkpoint-every "$3" --eval-sequences 200 --log-every 50
}
# Counting (Golovneva et al. 2024 §5.3) with one variable, as scripts/make_cope_tables.sh trains it.
counting() {
  "$cli" train --task counting --length 128 --task-option variables=1 \
    --model "$demos/configs/flipflop-${1#counting-}.json" --out "$runs/$1-seed$seed" --steps 2000 \
    --batch-size 32 --lr 1e-3 --warmup 100 --seed "$seed" --checkpoint-every 1000 \
    --eval-sequences 500 --log-every 250
}
# The HoPE experiment's final model of one encoding, weights as float16 (tools/to_float16.py;
# docs/experiments.md: the figures they give are those of the float32 weights).
english() {
  local hope_out=${HOPE_OUT:-/var/tmp/poslens-hope} enc=${1#english-}
  local final=$hope_out/runs/$enc-seed0/step-001500
  [ -f "$final/model.safetensors" ] || POSLENS_CLI="$cli" bash scripts/make_hope_figures.sh "$hope_out"
  rm -rf "$demos/$1"
  /usr/bin/python3 tools/to_float16.py "$final" "$demos/$1"
}
install_model() {  # install_model RUN_STEP_FOLDER TARGET
  rm -rf "$2" && mkdir -p "$2"
  cp "$1"/config.json "$1"/model.safetensors "$1"/tokenizer.json "$2"/
}
last_step() { ls -d "$1"/step-* | sort | tail -1; }

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(flipflop-cope flipflop-rope flipflop-absolute counting-cope text-cope
                                   text-heinsen text-rope-series english-absolute english-rope
                                   english-kerple english-hope)
for name in "${names[@]}"; do
  if [[ $name == english-* ]]; then
    english "$name"
    continue
  fi
  run="$runs/$name-seed$seed"
  rm -rf "$run"
  case "$name" in
    flipflop-*) flipflop "$name" ;;
    counting-cope) counting "$name" ;;
    text-cope) text "$name" text-cope 500 ;;
    text-heinsen) text "$name" text-heinsen 1500 ;;
    text-rope-series) text "$name" text-rope 150 ;;
    *) echo "unknown demo $name" >&2; exit 2 ;;
  esac
  [ "$seed" = 0 ] || continue  # other seeds are for docs/experiments.md only
  if [ "$name" = text-rope-series ]; then
    rm -rf "$demos/$name"
    for step in "$run"/step-*; do install_model "$step" "$demos/$name/$(basename "$step")"; done
  else
    install_model "$(last_step "$run")" "$demos/$name"
  fi
done
