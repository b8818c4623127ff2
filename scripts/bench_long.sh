#!/usr/bin/env bash
# Long-input benchmark, side by side: for each T, wall time and peak RSS (GNU time -v) of
#   poslens-cli run (the forward, capturing ln_final only), poslens-cli heads, poslens-cli position-map on one
#   head, and PyTorch eager keeping every pattern (tools/bench_pytorch_long.py --keep-patterns;
#   skipped when layers*heads*T^2*4 bytes exceed 75% of MemTotal).
# ROWS=forward compares the forward pass alone instead: poslens-cli run with the fused kernel
#   (LibTorch 2.x), the same with POSLENS_ATTENTION=blocked, and PyTorch's own forward on the same
#   weights, eager (explicit float32 softmax) and with scaled_dot_product_attention (--sdpa).
#   scripts/bench_long.sh MODEL_DIR "512 1024 2048" [OUT.md]
# MODEL_DIR: an HF Llama folder, e.g. from tools/make_random_hf_model.py. Input: T random ids in
# [3, vocab) with a fixed seed. DEVICE=cpu by default (DEVICE=auto or cuda for poslens-cli on a
# GPU). Needs GNU time at /usr/bin/time (Debian package `time`: apt-get install time) and the
# built CLI (build/app/cli/poslens-cli, or POSLENS_CLI=...; build-cuda/... for LibTorch 2.x).
# PYTHON runs the PyTorch side (default: the venv of scripts/setup.sh where it exists, its torch
# 2.x having SDPA; else /usr/bin/python3). Prints a markdown table, and
# writes it to OUT.md when given (GB = 2^30 bytes). A command that fails gets a "failed" row.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n '2,/^set -euo/s/^# \{0,1\}//p' "$0" | grep -v '^set'; exit 2; }
model=$1; lengths=$2; out=${3:-}
cli=${POSLENS_CLI:-build/app/cli/poslens-cli}
device=${DEVICE:-cpu}
rows=${ROWS:-analyses}
venv=${POSLENS_VENV:-$HOME/.local/share/poslens/venv}
python=${PYTHON:-$([ -x "$venv/bin/python" ] && echo "$venv/bin/python" || echo /usr/bin/python3)}
[ -x /usr/bin/time ] || { echo "needs GNU time: apt-get install time" >&2; exit 1; }
[ -x "$cli" ] || { echo "no $cli: build first (scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mem_kb=$(awk '/MemTotal/ {print $2}' /proc/meminfo)
read -r vocab layers heads < <(/usr/bin/python3 -c "import json, sys
c = json.load(open(sys.argv[1] + '/config.json'))
print(c['vocab_size'], c['num_hidden_layers'], c['num_attention_heads'])" "$model")

table=$tmp/table.md
{
  echo "Long-input benchmark: \`$model\` ($layers layers, $heads heads, vocab $vocab), device $device"
  echo "Machine: nproc $(nproc), MemTotal $(awk -v k="$mem_kb" 'BEGIN {printf "%.1f", k / 1048576}') GB"
  echo
  echo "| T | what | wall s | peak RSS GB |"
  echo "|---:|---|---:|---:|"
} > "$table"

# measure T WHAT CMD...: one row with the wall seconds and peak RSS of CMD under GNU time.
measure() {
  local t=$1 what=$2; shift 2
  echo "T=$t: $what" >&2
  if /usr/bin/time -v -o "$tmp/time" "$@" > "$tmp/log" 2>&1; then
    local extra
    extra=$(grep -oE '(forward pass: |forward_s=)[0-9.]+' "$tmp/log" | grep -oE '[0-9.]+$' | head -1 || true)
    [ -n "$extra" ] && what="$what (forward $extra s)"
    awk -v t="$t" -v what="$what" -F': ' '
      /Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i] }
      /Maximum resident set size/ { rss = $2 / 1048576 }
      END { printf "| %s | %s | %.2f | %.2f |\n", t, what, s, rss }' "$tmp/time" >> "$table"
  else
    local rc=$?
    echo "  failed (rc $rc):" >&2; tail -n 5 "$tmp/log" | sed 's/^/    /' >&2
    echo "| $t | $what | failed (rc $rc) | - |" >> "$table"
  fi
  rm -f "$tmp"/out.*
}

for t in $lengths; do
  /usr/bin/python3 -c "import sys, torch
g = torch.Generator().manual_seed(1234)
print(','.join(map(str, torch.randint(3, int(sys.argv[2]), (int(sys.argv[1]),), generator=g).tolist())))" \
    "$t" "$vocab" > "$tmp/ids"
  if [ "$rows" = forward ]; then
    measure "$t" "poslens-cli run, fused" \
      "$cli" run "$model" --device "$device" --tokens-file "$tmp/ids" --warmup \
      --capture ln_final.hook_normalized --top-k 0 --out "$tmp/out.h5"
    measure "$t" "poslens-cli run, blocked" env POSLENS_ATTENTION=blocked \
      "$cli" run "$model" --device "$device" --tokens-file "$tmp/ids" --warmup \
      --capture ln_final.hook_normalized --top-k 0 --out "$tmp/out.h5"
    measure "$t" "pytorch eager" "$python" tools/bench_pytorch_long.py "$model" "$t"
    measure "$t" "pytorch sdpa" "$python" tools/bench_pytorch_long.py "$model" "$t" --sdpa
    continue
  fi
  ids=$(cat "$tmp/ids")
  # The forward: a small capture (ln_final) so the row times the pass, not gzip of [T, vocab].
  measure "$t" "poslens-cli run" \
    "$cli" run "$model" --device "$device" --tokens "$ids" --capture ln_final.hook_normalized \
    --top-k 0 --out "$tmp/out.h5"
  measure "$t" "poslens-cli heads" \
    "$cli" heads "$model" --device "$device" --tokens "$ids" --out "$tmp/out.csv"
  measure "$t" "poslens-cli position-map (head 5.3)" \
    "$cli" position-map "$model" --device "$device" --tokens "$ids" --heads 5.3 --pool 1024 \
    --probe-samples 4 --out "$tmp/out.h5"
  need=$((layers * heads * t * t * 4))
  if [ "$need" -gt $((mem_kb * 1024 / 4 * 3)) ]; then
    gb=$(awk -v b="$need" 'BEGIN {printf "%.0f", b / 1073741824}')
    echo "| $t | pytorch eager, keep patterns | skipped: needs ~$gb GB for patterns | - |" >> "$table"
  else
    measure "$t" "pytorch eager, keep patterns" \
      /usr/bin/python3 tools/bench_pytorch_long.py "$model" "$t" --keep-patterns
  fi
done
cat "$table"
[ -z "$out" ] || cp "$table" "$out"
