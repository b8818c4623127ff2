#!/usr/bin/env bash
# Training step, PosLens against PyTorch eager, side by side in one run: for each model config
# the two benchmarks alternate ROUNDS times; prints every measurement and the ratio of the
# medians. Default: the Flip-Flop demo configs (resources/demos/configs/flipflop-*.json),
# vocabulary 5, T 128, batch 32.
#   scripts/bench_train.sh [ROUNDS]      (needs build/bench/poslens_bench_train_step)
#   BENCH_LENGTH=512 BENCH_STEPS=6 scripts/bench_train.sh 2          at T 512, 6 measured steps
#   BENCH_CONFIGS="resources/experiments/hope-lm/*.json" BENCH_VOCAB=4096 BENCH_LENGTH=256 \
#     BENCH_BATCH=16 scripts/bench_train.sh 2                         the HoPE experiment's models
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
length=${BENCH_LENGTH:-128}
steps=${BENCH_STEPS:-20}
batch=${BENCH_BATCH:-32}
vocab=${BENCH_VOCAB:-5}
configs=${BENCH_CONFIGS:-"resources/demos/configs/flipflop-cope.json resources/demos/configs/flipflop-rope.json resources/demos/configs/flipflop-absolute.json"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
names=()
for config in $configs; do
  name=$(basename "$config" .json)
  names+=("$name")
  /usr/bin/python3 - "$config" "$tmp/$name.json" "$length" "$vocab" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c.update(vocab_size=int(sys.argv[4]), n_ctx=int(sys.argv[3]))
json.dump(c, open(sys.argv[2], "w"))
PY
  for r in $(seq "$rounds"); do
    build/bench/poslens_bench_train_step "$tmp/$name.json" --length "$length" --steps "$steps" \
      --batch "$batch" | tee -a "$tmp/$name.poslens"
    /usr/bin/python3 tools/bench_pytorch_train.py "$tmp/$name.json" --length "$length" --steps "$steps" \
      --batch "$batch" | tee -a "$tmp/$name.pytorch"
  done
done
echo
echo "T $length, batch $batch, vocabulary $vocab"
echo "model               poslens ms  pytorch ms  ratio (poslens / pytorch, medians of the round medians)"
for name in "${names[@]}"; do
  /usr/bin/python3 - "$name" "$tmp/$name.poslens" "$tmp/$name.pytorch" <<'PY'
import re, statistics, sys
med = lambda f: statistics.median(float(re.search(r"median ([0-9.]+)", l).group(1)) for l in open(f))
a, b = med(sys.argv[2]), med(sys.argv[3])
print(f"{sys.argv[1]:19} {a:10.1f}  {b:10.1f}  {a / b:5.2f}")
PY
done
