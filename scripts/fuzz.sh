#!/usr/bin/env bash
# Fuzzes every PosLens reader of untrusted bytes with libFuzzer (fuzz/CMakeLists.txt, docs/reliability.md).
#
#   scripts/fuzz.sh [SECONDS]        every target for SECONDS each (default 600)
#
# Steps: configure + build build-fuzz/ (clang-14, ASan + UBSan + libFuzzer; only when
# something changed), write the seed corpora (fuzz/make_seeds.sh), then run each target on
#   build-fuzz/corpus/<target>/     its corpus: the seeds plus what the fuzzer adds (kept)
# with its dictionary and -max_len (table below), -rss_limit_mb=2048 -timeout=10
# -detect_leaks=1 -max_total_time=SECONDS.
#
# Targets run in libFuzzer's fork mode (-fork=1 -ignore_crashes=1): a crash, leak, timeout or
# out-of-memory is saved and the target keeps fuzzing for its whole time, instead of stopping
# at the first (known) bug. FUZZ_FORK=0 runs the classic single process instead (stops at the
# first finding; its -print_final_stats=1 numbers go into the report).
#
# Output:
#   build-fuzz/crashes/<target>/    crash-*, leak-*, timeout-*, oom-* inputs, each with a
#                                   <input>.log: the target re-run on it (sanitizer report, stack)
#   build-fuzz/logs/<target>.log    libFuzzer's output
#   build-fuzz/fuzz-report.tsv      target, executions, seconds, exec/s, cov, ft, corpus size,
#                                   crashes, leaks, timeouts, ooms (new in this run); cov and ft
#                                   are libFuzzer's final numbers (coverage counters / features)
# Exit status: 0 when no target found anything new in this run, 1 otherwise, 2 on a setup error.
#
# Environment:
#   FUZZ_JOBS=N        targets run N at a time (default 1; each uses one core, two in fork mode
#                      for short bursts)
#   FUZZ_TARGETS="a b" only these targets (default: all)
#   FUZZ_FORK=0        no fork mode (see above)
#   FUZZ_NICE=N        nice level of builds and fuzzers (default 10: other builds keep priority)
#   FUZZ_BUILD_JOBS=N  build parallelism (default 2)
#   FUZZ_SKIP_BUILD=1, FUZZ_SKIP_SEEDS=1   use build-fuzz/ and its corpora as they are
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="$ROOT/build-fuzz"
SECONDS_PER_TARGET="${1:-600}"
JOBS="${FUZZ_JOBS:-1}"
FORK="${FUZZ_FORK:-1}"
NICE="${FUZZ_NICE:-10}"
BUILD_JOBS="${FUZZ_BUILD_JOBS:-2}"

if ! [[ "$SECONDS_PER_TARGET" =~ ^[0-9]+$ ]] || [ "$SECONDS_PER_TARGET" -lt 1 ]; then
  echo "usage: scripts/fuzz.sh [SECONDS]   (SECONDS per target, default 600)" >&2
  exit 2
fi

# target: max_len in bytes and dictionaries (fuzz/dicts/, merged into one file per target).
# 1 MiB for the checkpoint readers, 64 KiB for configs and tokenizer files (make_seeds.sh cuts
# the real vocabularies to fit: a 1 MB tokenizer.json costs ~200 ms an execution under ASan),
# 512 KiB for tokenizer.bin (a 32000-token one is ~430 KB). Keep in sync with make_seeds.sh.
declare -A MAX_LEN=(
  [fuzz_safetensors_header]=1048576 [fuzz_safetensors_index]=65536
  [fuzz_torch_zip]=1048576          [fuzz_unpickler]=1048576
  [fuzz_llama2c_bin]=1048576        [fuzz_llama2c_tokenizer]=524288
  [fuzz_config_json]=65536          [fuzz_poslens_config]=65536
  [fuzz_tokenizer_json]=65536       [fuzz_sentencepiece_model]=65536
  [fuzz_vocab_merges]=65536         [fuzz_analysis_hdf5]=131072
)
declare -A DICTS=(
  [fuzz_safetensors_header]="json safetensors" [fuzz_safetensors_index]="json safetensors"
  [fuzz_torch_zip]="pickle"                    [fuzz_unpickler]="pickle"
  [fuzz_llama2c_bin]=""                        [fuzz_llama2c_tokenizer]=""
  [fuzz_config_json]="json"                    [fuzz_poslens_config]="json"
  [fuzz_tokenizer_json]="json"                 [fuzz_sentencepiece_model]=""
  [fuzz_vocab_merges]="json"                   [fuzz_analysis_hdf5]="hdf5"
)
ALL_TARGETS="fuzz_safetensors_header fuzz_safetensors_index fuzz_torch_zip fuzz_unpickler
  fuzz_llama2c_bin fuzz_llama2c_tokenizer fuzz_config_json fuzz_poslens_config
  fuzz_tokenizer_json fuzz_sentencepiece_model fuzz_vocab_merges fuzz_analysis_hdf5"
TARGETS="${FUZZ_TARGETS:-$ALL_TARGETS}"
for t in $TARGETS; do
  [ -n "${MAX_LEN[$t]+x}" ] || { echo "fuzz.sh: unknown target $t" >&2; exit 2; }
done

# --- build --------------------------------------------------------------------------------------
if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then
  if [ ! -f "$BUILD/build.ninja" ]; then
    nice -n "$NICE" cmake -S "$ROOT/fuzz" -B "$BUILD" -G Ninja \
      -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 || exit 2
  fi
  nice -n "$NICE" cmake --build "$BUILD" -j "$BUILD_JOBS" || exit 2
fi
if [ "${FUZZ_SKIP_SEEDS:-0}" != 1 ]; then
  nice -n "$NICE" "$ROOT/fuzz/make_seeds.sh" "$BUILD" || exit 2
fi

mkdir -p "$BUILD/dicts" "$BUILD/logs" "$BUILD/crashes" "$BUILD/results"
# Leaks inside the third-party libraries, suppressed per target so that they do not hide
# PosLens's own (each is a finding of the first smoke run, kept in build-fuzz/crashes/):
#  - fuzz_torch_zip: LibTorch 1.13's PyTorchStreamReader leaks its miniz state (~360 bytes)
#    when its constructor throws after mz_zip_reader_init (a zip that is not a torch.save
#    archive: no version record, ...). ASan's fast unwinder stops inside libtorch_cpu (no frame
#    pointers), so the suppression names the module: a leak of memory that PosLens's code
#    allocates through c10 (tensors, records) has its stack in libc10, and stays reported.
#  - fuzz_analysis_hdf5: HDF5 1.10.8 leaks metadata-cache entries (H5C_protect) on the error
#    paths of hostile files. Full unwinding (fast_unwind_on_malloc=0, this target only: it is
#    slow anyway) lets the suppression name the function; leaks of the vlen strings PosLens
#    reads (H5T__conv_vlen, reclaimed by the reader) stay reported.
cat > "$BUILD/lsan-fuzz_torch_zip.supp" <<'EOF'
leak:libtorch_cpu.so
EOF
cat > "$BUILD/lsan-fuzz_analysis_hdf5.supp" <<'EOF'
leak:H5C_protect
EOF

# The targets write their inputs under /dev/shm/poslens-fuzz-<pid>/ and remove it at exit; a
# process that crashed, timed out or ran out of memory cannot: remove those of dead processes.
clean_scratch() {
  local d pid
  for d in /dev/shm/poslens-fuzz-*; do
    [ -d "$d" ] || continue
    pid="${d##*-}"
    [ -d "/proc/$pid" ] || rm -rf "$d"
  done
}

# --- one target ---------------------------------------------------------------------------------
run_target() {
  local t="$1"
  local corpus="$BUILD/corpus/$t" crashes="$BUILD/crashes/$t" log="$BUILD/logs/$t.log"
  local dict="$BUILD/dicts/$t.dict"
  mkdir -p "$corpus" "$crashes"
  : > "$dict"
  for d in ${DICTS[$t]}; do cat "$ROOT/fuzz/dicts/$d.dict" >> "$dict"; done
  local before; before="$(ls "$crashes" 2>/dev/null | grep -v '\.log$' | sort)"

  local -a args=(-max_total_time="$SECONDS_PER_TARGET" -max_len="${MAX_LEN[$t]}"
                 -rss_limit_mb=2048 -timeout=10 -detect_leaks=1 -print_final_stats=1
                 -artifact_prefix="$crashes/")
  [ -s "$dict" ] && args+=(-dict="$dict")
  [ "$FORK" = 1 ] && args+=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  local lsan="${LSAN_OPTIONS:-}" asan="${ASAN_OPTIONS:-}"
  [ -f "$BUILD/lsan-$t.supp" ] && lsan="suppressions=$BUILD/lsan-$t.supp${lsan:+:$lsan}"
  [ "$t" = fuzz_analysis_hdf5 ] && asan="fast_unwind_on_malloc=0${asan:+:$asan}"

  local start=$SECONDS
  echo "fuzz.sh: $t for ${SECONDS_PER_TARGET}s (max_len ${MAX_LEN[$t]}, dict: ${DICTS[$t]:-none})"
  ( cd "$BUILD" &&
    ASAN_OPTIONS="$asan" LSAN_OPTIONS="$lsan" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
    nice -n "$NICE" "$BUILD/$t" "${args[@]}" "$corpus" ) > "$log" 2>&1
  local elapsed=$((SECONDS - start))

  # Re-run every new finding alone: its log is the report to read (stack, sanitizer message).
  local after new=""
  after="$(ls "$crashes" 2>/dev/null | grep -v '\.log$' | sort)"
  new="$(comm -13 <(echo "$before") <(echo "$after") | grep -E '^(crash|leak|timeout|oom)-' || true)"
  for f in $new; do
    ( cd "$BUILD" &&
      ASAN_OPTIONS="$asan" LSAN_OPTIONS="$lsan" UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
      timeout 120 nice -n "$NICE" "$BUILD/$t" -rss_limit_mb=2048 -timeout=10 -detect_leaks=1 \
        -artifact_prefix="$BUILD/results/$t-rerun-" "$crashes/$f" ) > "$crashes/$f.log" 2>&1
  done
  rm -f "$BUILD/results/$t-rerun-"*
  clean_scratch

  # Final numbers: the last status line ("#N ... cov: C ft: F corp: K ..."); the single-process
  # mode also prints stat::number_of_executed_units.
  local status execs cov ft corp
  status="$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)"
  execs="$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$')"
  [ -n "$execs" ] || execs="$(echo "$status" | grep -oE '^#[0-9]+' | tr -d '#')"
  cov="$(echo "$status" | grep -oE 'cov: [0-9]+' | grep -oE '[0-9]+')"
  ft="$(echo "$status" | grep -oE 'ft: [0-9]+' | grep -oE '[0-9]+')"
  corp="$(ls "$corpus" | wc -l)"
  local n_crash n_leak n_timeout n_oom rate
  n_crash=$(echo "$new" | grep -c '^crash-' || true)
  n_leak=$(echo "$new" | grep -c '^leak-' || true)
  n_timeout=$(echo "$new" | grep -c '^timeout-' || true)
  n_oom=$(echo "$new" | grep -c '^oom-' || true)
  execs="${execs:-0}"
  rate=$(( elapsed > 0 ? execs / elapsed : 0 ))
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$t" "$execs" "$elapsed" "$rate" \
    "${cov:-?}" "${ft:-?}" "$corp" "$n_crash" "$n_leak" "$n_timeout" "$n_oom" > "$BUILD/results/$t.tsv"
  echo "fuzz.sh: $t done: $execs executions in ${elapsed}s ($rate/s), cov ${cov:-?} ft ${ft:-?}," \
       "new findings: $n_crash crash, $n_leak leak, $n_timeout timeout, $n_oom oom"
}

# --- all targets, FUZZ_JOBS at a time -------------------------------------------------------------
rm -f "$BUILD/results/"*.tsv
running=0
for t in $TARGETS; do
  if [ "$running" -ge "$JOBS" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_target "$t" &
  running=$((running + 1))
done
wait

REPORT="$BUILD/fuzz-report.tsv"
printf 'target\texecutions\tseconds\texec_per_s\tcov\tft\tcorpus\tcrashes\tleaks\ttimeouts\tooms\n' > "$REPORT"
for t in $TARGETS; do
  if [ -f "$BUILD/results/$t.tsv" ]; then cat "$BUILD/results/$t.tsv"; else printf '%s\t?\t?\t?\t?\t?\t?\t?\t?\t?\t?\n' "$t"; fi
done >> "$REPORT"
column -t -s $'\t' "$REPORT"
echo "fuzz.sh: report $REPORT; findings under $BUILD/crashes/<target>/ (each with a .log)"

failed=$(awk -F'\t' 'NR > 1 && ($8 + $9 + $10 + $11 > 0 || $2 == "?") { n++ } END { print n + 0 }' "$REPORT")
if [ "$failed" -gt 0 ]; then
  echo "fuzz.sh: $failed target(s) found crashes, leaks, timeouts or out-of-memory inputs" >&2
  exit 1
fi
exit 0
