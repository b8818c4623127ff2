#!/bin/bash
# Long-input numbers of the BLOOM (ALiBi, causal) and T5 (bidirectional encoder, cross-attention)
# families: wall time and peak RSS (GNU time -v) of poslens-cli at T = 1024, 4096, 8192, as a
# markdown table on stdout. The models (random weights, real layouts):
#   /usr/bin/python3 tools/make_random_arch_model.py bloom /tmp/models/bloom768 \
#       --tokenizer ../shared/fixtures/tokenizers/gpt2/tokenizer.json --d-model 768 --layers 12 --heads 12
#   /usr/bin/python3 tools/make_random_arch_model.py t5 /tmp/models/t5_512 \
#       --tokenizer tests/data/tokenizers/t5_unigram_tokenizer.json --d-model 512 --layers 6 --heads 8
#   scripts/bench_arch_long.sh > bench_arch.md
set -u
cd "$(dirname "$0")/.."
C=${POSLENS_CLI:-build/app/cli/poslens-cli}
ids() { /usr/bin/python3 -c "import torch,sys; g=torch.Generator().manual_seed(1234); print(','.join(map(str, torch.randint(3, int(sys.argv[2]), (int(sys.argv[1]),), generator=g).tolist())))" $1 $2; }
row() { # T what cmd...
  t=$1; what=$2; shift 2
  /usr/bin/time -v -o /tmp/bt.time "$@" > /tmp/bt.log 2>&1 || { echo "| $t | $what | failed |"; tail -3 /tmp/bt.log; return; }
  fw=$(grep -oE 'forward pass: [0-9.]+' /tmp/bt.log | grep -oE '[0-9.]+$' | head -1)
  awk -v t="$t" -v what="$what" -v fw="$fw" -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i] } /Maximum resident set size/ { rss = $2 / 1048576 } END { printf "| %s | %s | %.2f | %s | %.2f |\n", t, what, s, fw, rss }' /tmp/bt.time
  rm -f /tmp/bt.h5
}
echo "| T | command | wall s | forward s | peak RSS GB |"
echo "|---:|---|---:|---:|---:|"
for T in 1024 4096 8192; do
  I=$(ids $T 50257)
  row $T "BLOOM run (forward, ln_final)" $C run /tmp/models/bloom768 --tokens $I --capture ln_final.hook_normalized --top-k 0 --out /tmp/bt.h5
  row $T "BLOOM heads" $C heads /tmp/models/bloom768 --tokens $I --out /tmp/bt.h5
done
D=$(/usr/bin/python3 -c "print(' '.join(['the house is small and the garden is green'] * 7))")
for T in 1024 4096 8192; do
  I=$(ids $T 1005)
  row $T "T5 run (forward, decoder ~70 tokens)" $C run /tmp/models/t5_512 --tokens $I --decoder-text "$D" --capture decoder.ln_final.hook_normalized --top-k 0 --out /tmp/bt.h5
  row $T "T5 run, every pattern pooled to 256²" $C run /tmp/models/t5_512 --tokens $I --decoder-text "$D" --pool 256 --top-k 0 --out /tmp/bt.h5
done
