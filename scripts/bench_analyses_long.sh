#!/usr/bin/env bash
# Wall time and peak RSS (GNU time -v) of each streamed analysis at several input lengths: heads
# (detectors, sinks, induction), massive-activations, frequency-usage, value-norms, divergence
# (the model against itself), position-offset and length-loss.
#   scripts/bench_analyses_long.sh CHECKPOINT "2048 8192" [TEXT_FILE]
# The inputs are T random ids (seed 0) below the vocabulary; length-loss reads TEXT_FILE
# (default: Debian's fortunes "computers") in 2 windows of T. Results: docs/analyses.md.
set -euo pipefail
cd "$(dirname "$0")/.."
cli=build/app/cli/poslens-cli
checkpoint=$1
lengths=$2
text=${3:-/usr/share/games/fortunes/computers}
vocab=$("$cli" info "$checkpoint" | awk '/^vocab:/ {print $2}')
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
measure() {  # measure NAME ARGS...: one line "NAME  T  seconds  peak GB"
  local name=$1
  shift
  /usr/bin/time -v "$cli" "$@" >"$out/log" 2>&1 || { echo "$name failed:"; tail -3 "$out/log"; return; }
  awk -v name="$name" -v T="$T" '/Elapsed \(wall clock\)/ {n = split($NF, t, ":"); s = t[n] + 60 * t[n-1]}
       /Maximum resident/ {kb = $NF} END {printf "%-22s T=%-6s %7.2f s  %5.2f GB\n", name, T, s, kb / 1048576}' "$out/log"
}
for T in $lengths; do
  ids=$(/usr/bin/python3 -c "import random; random.seed(0); print(','.join(str(random.randrange(3, $vocab)) for _ in range($T)))")
  measure heads heads "$checkpoint" --tokens "$ids" --out "$out/h.h5"
  measure massive-activations massive-activations "$checkpoint" --tokens "$ids" --out "$out/m.h5"
  measure frequency-usage frequency-usage "$checkpoint" --tokens "$ids" --out "$out/u.h5"
  measure value-norms value-norms "$checkpoint" --tokens "$ids" --out "$out/v.h5"
  measure divergence divergence "$checkpoint" "$checkpoint" --tokens "$ids" --out "$out/d.h5"
  measure position-offset position-offset "$checkpoint" --tokens "$ids" --offset 100 --out "$out/o.h5"
  measure length-loss length-loss "$checkpoint" --text-file "$text" --length "$T" --windows 2 --out "$out/l.h5"
done
