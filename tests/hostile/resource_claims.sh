#!/usr/bin/env bash
# Files and arguments that claim far more than the machine has must fail fast, with one clear
# message, in bounded memory (docs/reliability.md):
#   1. a safetensors checkpoint claiming 1.1·10^12 parameters (a sparse 4.4 TB file),
#   2. a tokenizer with ~10^9 merges (vocab.json + a sparse 4 GiB merges.txt),
#   3. a 4 GiB JSON header (safetensors header length) and a 4 GiB config.json / tokenizer.json,
#   4. probe --length 10000000.
# Each must exit with the expected status and message with a peak RSS (/usr/bin/time -v) under
# 2 GiB: generous — LibTorch alone takes ~170 MB — so only allocating the claim trips it.
# Peak RSS and time are printed for the record, never judged.
# Usage: resource_claims.sh POSLENS_CLI FIXTURES_DIR
set -euo pipefail
cli=$1
fixtures=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
demo="$(cd "$(dirname "$0")/../.." && pwd)/resources/demos/flipflop-rope"
limit_kb=$((2 * 1024 * 1024))
failures=0

# check NAME STATUS NEEDLE -- COMMAND...: runs COMMAND under /usr/bin/time -v.
check() {
  local name=$1 want_status=$2 needle=$3
  shift 4
  local status=0
  /usr/bin/time -v -o "$work/time" "$@" > "$work/out" 2>&1 || status=$?
  local rss seconds
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time")
  seconds=$(awk -F': ' '/Elapsed \(wall clock\)/ {print $2}' "$work/time")
  local message
  message=$(grep -v '^Run with --help' "$work/out" | tail -1)
  printf '%-34s exit %s, peak RSS %6.0f MB, %s s: %s\n' "$name" "$status" "$((rss / 1024))" "$seconds" "$message"
  if [ "$status" != "$want_status" ] || ! grep -qF -- "$needle" "$work/out" || [ "$rss" -gt "$limit_kb" ]; then
    echo "  FAILED: wanted exit $want_status, a message with \"$needle\" and peak RSS under $((limit_kb / 1024)) MB" >&2
    failures=$((failures + 1))
  fi
}

# 1. 1.1e12 parameters: a Llama config with d_model 2^18 and a sparse file with every tensor.
/usr/bin/python3 - "$work/params" <<'PY'
import json, os, struct, sys
out = sys.argv[1]; os.makedirs(out)
D, I, V, L = 2**18, 4, 8, 4
shapes = {"model.embed_tokens.weight": [V, D], "model.norm.weight": [D], "lm_head.weight": [V, D]}
for l in range(L):
    p = f"model.layers.{l}."
    shapes.update({p + "input_layernorm.weight": [D], p + "post_attention_layernorm.weight": [D],
                   **{p + f"self_attn.{x}_proj.weight": [D, D] for x in "qkvo"},
                   p + "mlp.gate_proj.weight": [I, D], p + "mlp.up_proj.weight": [I, D],
                   p + "mlp.down_proj.weight": [D, I]})
meta, offset = {}, 0
for name, shape in shapes.items():
    n = 1
    for d in shape: n *= d
    meta[name] = {"dtype": "F32", "shape": shape, "data_offsets": [offset, offset + 4 * n]}
    offset += 4 * n
header = json.dumps(meta).encode()
header += b" " * (-len(header) % 8)
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(header)) + header)
    f.truncate(8 + len(header) + offset)  # sparse: 4.4 TB on paper, a few KB on disk
json.dump({"model_type": "llama", "hidden_size": D, "num_hidden_layers": L, "num_attention_heads": 1,
           "num_key_value_heads": 1, "intermediate_size": I, "vocab_size": V,
           "max_position_embeddings": 16, "rms_norm_eps": 1e-5}, open(os.path.join(out, "config.json"), "w"))
PY
check "10^12 parameters (info)" 1 "parameters, 4398.12 GB as float32, more than" -- "$cli" info "$work/params"
check "10^12 parameters (run)" 1 "parameters, 4398.12 GB as float32, more than" -- \
  "$cli" run "$work/params" --tokens 1,2,3 --out "$work/params.h5"

# 2. ~10^9 merges: 4 GiB of merges.txt ("a b\n" is 4 bytes a merge).
mkdir "$work/merges"
echo '{"a": 0, "b": 1, "ab": 2}' > "$work/merges/vocab.json"
truncate -s 4G "$work/merges/merges.txt"
check "10^9 merges (merges.txt 4 GiB)" 1 "merges.txt: 4294967296 bytes, larger than the limit" -- \
  "$cli" tokenize "$work/merges/vocab.json" --text hello

# 3. 4 GiB JSON: a safetensors header length, a config.json, a tokenizer.json.
mkdir "$work/header"
cp "$demo/config.json" "$work/header/"
/usr/bin/python3 -c 'import struct, sys; open(sys.argv[1], "wb").write(struct.pack("<Q", 4 << 30) + b"{\"a\":")' \
  "$work/header/model.safetensors"
check "4 GiB safetensors JSON header" 1 "header length 4294967296 bytes exceeds the limit" -- \
  "$cli" info "$work/header/model.safetensors"
mkdir "$work/config"
cp "$demo/model.safetensors" "$work/config/"
truncate -s 4G "$work/config/config.json"
check "4 GiB config.json" 1 "config.json: 4294967296 bytes, larger than the limit" -- "$cli" info "$work/config"
truncate -s 4G "$work/tokenizer.json"
check "4 GiB tokenizer.json" 1 "tokenizer.json: 4294967296 bytes, larger than the limit" -- \
  "$cli" tokenize "$work/tokenizer.json" --text hello

# 4. probe --length 10^7 (usage: exit 2).
check "probe --length 10000000" 2 "--length: Value 10000000 not in range" -- \
  "$cli" probe "$fixtures/stories260K/stories260K.bin" --length 10000000 --out "$work/probe.h5"

if [ "$failures" -ne 0 ]; then
  echo "$failures resource claim(s) not refused as they should be" >&2
  exit 1
fi
echo "every resource claim refused fast, in bounded memory"
