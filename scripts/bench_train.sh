#!/usr/bin/env bash
# Training step, PosLens against PyTorch eager, side by side in one run: for each Flip-Flop
# demo config (resources/demos/configs/flipflop-*.json, vocabulary 5, T 128, batch 32) the two
# benchmarks alternate ROUNDS times; prints every measurement and the ratio of the medians.
#   scripts/bench_train.sh [ROUNDS]      (needs build/bench/poslens_bench_train_step)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for name in cope rope absolute; do
  /usr/bin/python3 - "$name" "$tmp/$name.json" <<'PY'
import json, sys
c = json.load(open(f"resources/demos/configs/flipflop-{sys.argv[1]}.json"))
c.update(vocab_size=5, n_ctx=128)
json.dump(c, open(sys.argv[2], "w"))
PY
  for r in $(seq "$rounds"); do
    build/bench/poslens_bench_train_step "$tmp/$name.json" | tee -a "$tmp/$name.poslens"
    /usr/bin/python3 tools/bench_pytorch_train.py "$tmp/$name.json" | tee -a "$tmp/$name.pytorch"
  done
done
echo
echo "encoding  poslens ms  pytorch ms  ratio (poslens / pytorch, medians of the round medians)"
for name in cope rope absolute; do
  /usr/bin/python3 - "$name" "$tmp/$name.poslens" "$tmp/$name.pytorch" <<'PY'
import re, statistics, sys
med = lambda f: statistics.median(float(re.search(r"median ([0-9.]+)", l).group(1)) for l in open(f))
a, b = med(sys.argv[2]), med(sys.argv[3])
print(f"{sys.argv[1]:9} {a:10.1f}  {b:10.1f}  {a / b:5.2f}")
PY
done
