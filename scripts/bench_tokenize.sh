#!/usr/bin/env bash
# PosLens's HfTokenizer encode speed against HF's Rust `tokenizers` (PyPI binding, same machine,
# same text; tools/bench_tokenize_reference.py), for GPT-2 and Mistral's tokenizer.json:
#
#   bash scripts/bench_tokenize.sh [BUILD_DIR] [ROUNDS]
#
# The binding comes from the Python venv of scripts/setup.sh ($POSLENS_VENV, default
# ~/.local/share/poslens/venv).
#
# The text: ~1 MB of English, Debian's fortune files (package `fortunes`, already a PosLens
# dependency) concatenated in name order and cut at 1,000,000 bytes (on a character boundary);
# /usr/share/common-licenses repeated when fortunes is absent. Each implementation times ROUNDS
# encodes of the whole text after a warm-up and reports the median; the two alternate three
# times and the median of the three medians is printed with the ratio PosLens / HF.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
fixtures=${POSLENS_FIXTURES_DIR:-../shared/fixtures}/tokenizers
python=${POSLENS_VENV:-$HOME/.local/share/poslens/venv}/bin/python

ninja -C "$build" -j2 poslens_bench_tokenize >/dev/null
corpus="$build/bench_tokenize_corpus.txt"
python3 - "$corpus" <<'PY'
import glob, os, sys
files = sorted(f for f in glob.glob("/usr/share/games/fortunes/*")
               if os.path.isfile(f) and not f.endswith((".dat", ".u8")))
if not files:
    files = sorted(glob.glob("/usr/share/common-licenses/*"))
data = b""
while len(data) < 1_000_000:
    for f in files:
        data += open(f, "rb").read()
text = data[:1_000_000].decode("utf-8", errors="ignore")
open(sys.argv[1], "w", encoding="utf-8").write(text)
PY

median() { python3 -c 'import sys; v=sorted(map(float, sys.argv[1:])); print(v[len(v)//2])' "$@"; }
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

for name in gpt2 mistral; do
  file="$fixtures/$name/tokenizer.json"
  ours=(); theirs=()
  for _ in 1 2 3; do
    p=$("$build/bench/poslens_bench_tokenize" "$file" "$corpus" "$rounds")
    h=$("$python" tools/bench_tokenize_reference.py "$file" "$corpus" "$rounds")
    ours+=("$(field "$p" median_s)"); theirs+=("$(field "$h" median_s)")
    [ "$(field "$p" ids)" = "$(field "$h" ids)" ] || echo "warning: $name id counts differ: $p $h"
  done
  o=$(median "${ours[@]}"); t=$(median "${theirs[@]}")
  python3 -c "import sys; o,t=float(sys.argv[2]),float(sys.argv[3]); print(f'{sys.argv[1]:8s} {sys.argv[4]} ids  poslens {o*1000:8.1f} ms  hf {t*1000:8.1f} ms  ratio {o/t:.2f}')" \
    "$name" "$o" "$t" "$(field "$p" ids)"
done
