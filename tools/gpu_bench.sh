#!/usr/bin/env bash
# PosLens on a CUDA GPU beside HF transformers, in one run, one table (docs/performance.md,
# "GPU"). On a machine with CUDA, a Python torch 2.x and transformers (a GPU image without
# -dev packages takes --deps, the tarball of scripts/pack_build_deps.sh):
#   1. builds poslens-cli against that torch (scripts/build_cuda.sh; --deps for an image without
#      -dev packages), or takes --build DIR; the core tests build in the background, and
#      `ctest -L gpu` runs at the end where time is left;
#   2. writes random Llama-3.2-1B- and Llama-3.1-8B-shaped models (tools/make_random_hf_model.py,
#      bf16; the 8B with --cheap weights, timing only) and random ids at each T;
#   3. times, at T in 2k, 8k, 32k, 128k (8B: as far as the card and the time allow): PosLens's
#      forward (run --warmup, ln_final captured), heads, position-map of one head (8 probe
#      samples) and the probe, each with its peak device memory (the CLI's own report), beside
#      HF's SDPA forward and HF eager keeping every pattern (tools/gpu_hf_bench.py), and the
#      parity of ln_final against HF float32 at the first T (2k);
#   4. prints the table last.
# Every step has a time limit; the whole run stops starting steps after BUDGET seconds (default
# 480). Logs and results.tsv go to OUT (default $OUT, else ./gpu-bench-out).
#
#   tools/gpu_bench.sh [--build DIR] [--deps TARBALL] [--out DIR] [--budget SECONDS]
#                      [--lengths 2048,8192,32768,131072] [--no-8b]
# Plumbing check without a GPU (tiny, on the CPU): GPU_BENCH_DEVICE=cpu GPU_BENCH_LAYERS=1
#   tools/gpu_bench.sh --build build-cuda --no-8b --lengths 64,128
# Exit 0 when the table was printed, 1 when PosLens could not be built, 2 on bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."
project=$(pwd)
build=""
deps=""
out=${OUT:-$project/gpu-bench-out}
budget=480
lengths=2048,8192,32768,131072
big=1
while (($#)); do
  case $1 in
    --build) build=${2:?}; shift 2 ;;
    --deps) deps=${2:?}; shift 2 ;;
    --out) out=${2:?}; shift 2 ;;
    --budget) budget=${2:?}; shift 2 ;;
    --lengths) lengths=${2:?}; shift 2 ;;
    --no-8b) big=0; shift ;;
    -h|--help) sed -n '2,/^# Exit/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
    *) echo "gpu_bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out" && out=$(cd "$out" && pwd)
work=${GPU_BENCH_WORK:-/tmp/poslens-gpu-bench}
mkdir -p "$work"
results=$out/results.tsv
: >"$results"
start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }
left() { echo $((budget - $(elapsed))); }
say() { echo "[$(elapsed)s] $*"; }
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results"; }
python=${PYTHON:-python3}
device=${GPU_BENCH_DEVICE:-cuda}
layers=()
[[ -n ${GPU_BENCH_LAYERS:-} ]] && layers=(--layers "$GPU_BENCH_LAYERS")

say "environment"
{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "no nvidia-smi"
  nproc
  $python -c 'import torch,transformers;print("torch",torch.__version__,"cuda",torch.version.cuda,torch.cuda.is_available(),"transformers",transformers.__version__)'
} >"$out/env.txt" 2>&1
cat "$out/env.txt"

# --- 1. build ---------------------------------------------------------------------------------
if [[ -z $build ]]; then
  build=$work/build
  args=(--python "$(command -v $python)" --build-dir "$build" --gui off --no-install --target poslens-cli)
  [[ -n $deps ]] && args+=(--deps "$deps")
  say "build poslens-cli (log: $out/build.log)"
  timeout 300 scripts/build_cuda.sh "${args[@]}" >"$out/build.log" 2>&1 || {
    tail -20 "$out/build.log"; echo "gpu_bench: poslens-cli did not build" >&2; exit 1; }
  (timeout 420 nice cmake --build "$build" --parallel 6 --target poslens_core_tests >"$out/build_tests.log" 2>&1
   echo "rc $?" >>"$out/build_tests.log") &
  tests_build=$!
fi
cli=$build/app/cli/poslens-cli
[[ -x $cli ]] || { echo "gpu_bench: no $cli" >&2; exit 1; }
say "poslens-cli: $cli"

# --- 2. models and ids ------------------------------------------------------------------------
IFS=, read -r -a Ts <<<"$lengths"
$python - "$work" "${Ts[@]}" <<'PY'
import random, sys
for T in sys.argv[2:]:
    random.seed(int(T))
    open(f"{sys.argv[1]}/ids_{T}.txt", "w").write(",".join(str(random.randrange(10, 32000)) for _ in range(int(T))))
PY
[[ -f $work/l1b/model.safetensors ]] ||
  timeout 120 $python tools/make_random_hf_model.py llama-3.2-1b "$work/l1b" "${layers[@]}" >"$out/make_1b.log" 2>&1
if ((big)) && [[ ! -f $work/l8b/model.safetensors ]]; then
  (timeout 240 $python tools/make_random_hf_model.py llama-3.1-8b "$work/l8b" --cheap "${layers[@]}" >"$out/make_8b.log" 2>&1) &
  make_8b=$!
fi

# --- 3. measurements --------------------------------------------------------------------------
# poslens MODEL_NAME T WHAT LIMIT ARGS...: runs the CLI, records seconds and peak device memory
poslens() {
  local name=$1 T=$2 what=$3 limit=$4; shift 4
  if (($(left) < limit / 2)); then row "$name" "$T" "PosLens $what" "" "" "skipped: time"; return; fi
  local log=$out/${name}_${what// /_}_$T.log
  local t0=$EPOCHREALTIME
  timeout "$limit" "$cli" "$@" >"$log" 2>&1
  local rc=$?
  local total peak forward
  total=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')  # the whole process
  peak=$(sed -n 's/.*peak device memory \([0-9.]*\) GiB.*/\1/p' "$log" | tail -1)
  forward=$(sed -n 's/^forward pass: \([0-9.]*\) s.*/\1/p' "$log" | tail -1)
  local note="rc $rc"
  ((rc == 124)) && note="timed out after ${limit}s"
  ((rc == 0)) && note="total ${total} s"
  local seconds=${forward:-$total}
  ((rc == 0)) || seconds=""  # a failed step has no time, only its note
  row "$name" "$T" "PosLens $what" "$seconds" "$peak" "$note"
}

bench_model() {  # NAME DIR MAX_T EAGER_LENGTHS
  local name=$1 dir=$2 max=$3 eager=$4 T
  for T in "${Ts[@]}"; do
    ((T > max)) && continue
    local ids=$work/ids_$T.txt
    local common=("$dir" --tokens-file "$ids" --device "$device" --dtype bfloat16)
    poslens "$name" "$T" forward 120 run "${common[@]}" --warmup --capture ln_final.hook_normalized \
      --top-k 0 --out "$work/${name}_$T.h5"
    ((T <= 32768)) && poslens "$name" "$T" heads 150 heads "${common[@]}" --out "$work/${name}_heads_$T.csv"
    ((T <= 32768)) && poslens "$name" "$T" "position-map" 150 position-map "${common[@]}" --heads 0.0 \
      --probe-samples 8 --out "$work/${name}_pm_$T.h5"
    ((T == 8192)) && poslens "$name" "$T" probe 120 probe "$dir" --length "$T" --samples 8 \
      --device "$device" --dtype bfloat16 --out "$work/${name}_probe_$T.h5"
  done
  local hf_lengths
  hf_lengths=$(printf '%s\n' "${Ts[@]}" | awk -v m="$max" '$1 <= m' | paste -sd,)
  if (($(left) > 30)); then
    say "$name: HF transformers"
    timeout $(($(left) > 200 ? 200 : $(left))) $python tools/gpu_hf_bench.py "$dir" "$work" "$name" \
      --lengths "$hf_lengths" --eager-lengths "$eager" --device "$device" \
      --parity-h5 "$work/${name}_${Ts[0]}.h5" --parity-length "${Ts[0]}" >>"$results" 2>"$out/${name}_hf.log"
  fi
}

if [[ -f $work/l1b/model.safetensors ]]; then
  say "Llama-3.2-1B shape"
  bench_model 1B "$work/l1b" 131072 2048,8192,16384
else
  row 1B "" "model" "" "" "not written: $(tail -1 "$out/make_1b.log")"
fi
if ((big)); then
  [[ -n ${make_8b:-} ]] && wait "$make_8b"
  if [[ -f $work/l8b/model.safetensors ]]; then
    say "Llama-3.1-8B shape"
    bench_model 8B "$work/l8b" 32768 2048
  else
    row 8B "" "model" "" "" "not written: $(tail -1 "$out/make_8b.log")"
  fi
fi

if [[ -n ${tests_build:-} ]]; then
  say "ctest -L gpu"
  wait "$tests_build"
  if [[ -x $build/tests/poslens_core_tests ]]; then
    (cd "$build" && timeout 120 ctest -L gpu --output-on-failure >"$out/ctest_gpu.log" 2>&1)
    row all "" "ctest -L gpu" "" "" "$(grep -E 'tests passed|tests failed' "$out/ctest_gpu.log")"
  else
    row all "" "ctest -L gpu" "" "" "test binary not built: $(tail -1 "$out/build_tests.log")"
  fi
fi

# --- 4. the table -----------------------------------------------------------------------------
say "done"
$python - "$results" <<'PY'
import collections, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
by = collections.defaultdict(dict)
notes = []
total = {}
for name, T, what, sec, peak, note in rows:
    if T and sec:
        by[(name, int(T))][what] = (float(sec), peak)
        if note.startswith("total "):
            total[(name, int(T), what)] = float(note.split()[1])
    else:
        notes.append(f"{name} {T} {what}: {note}")
def cell(d, k):
    return f"{d[k][0]:.3f} s" if k in d else "—"
def mem(d, k):
    return f"{d[k][1]} GiB" if k in d and d[k][1] else "—"
print("| model | T | PosLens forward | HF SDPA | ratio | heads | heads / forward | position-map (1 head) | probe | PosLens peak (forward / heads) | HF SDPA peak | HF eager + patterns |")
print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
for (name, T), d in sorted(by.items()):
    f, h = d.get("PosLens forward"), d.get("HF sdpa forward")
    # The analyses' times less the model's load (the run's total less its two forwards).
    run_total = total.get((name, T, "PosLens forward"))
    if f and run_total:
        load = max(0.0, run_total - 2 * f[0])
        for k in ("PosLens heads", "PosLens position-map", "PosLens probe"):
            if k in d:
                d[k] = (max(0.0, d[k][0] - load), d[k][1])
    ratio = f"{f[0] / h[0]:.2f}×" if f and h and h[0] > 0 else "—"
    hr = f"{d['PosLens heads'][0] / f[0]:.1f}×" if f and "PosLens heads" in d and f[0] > 0 else "—"
    print(f"| {name} | {T} | {cell(d, 'PosLens forward')} | {cell(d, 'HF sdpa forward')} | {ratio} | "
          f"{cell(d, 'PosLens heads')} | {hr} | {cell(d, 'PosLens position-map')} | {cell(d, 'PosLens probe')} | "
          f"{mem(d, 'PosLens forward')} / {mem(d, 'PosLens heads')} | {mem(d, 'HF sdpa forward')} | "
          f"{cell(d, 'HF eager keeping patterns')} ({mem(d, 'HF eager keeping patterns')}) |")
print("forward: one warm pass (run --warmup); heads, position-map, probe: the command's time less the "
      "model's load (the run's total less its two forwards).")
for n in notes:
    print(n)
PY
