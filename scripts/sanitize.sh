#!/usr/bin/env bash
# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (CMake preset `asan`,
# build-asan/): builds, then runs ctest with the sanitizers' reports made fatal. Not part of CI:
# a cold sanitized build takes ~1 h on 2 cores (docs/reliability.md has the last result).
#
#   scripts/sanitize.sh [CTEST ARGS...]      e.g. scripts/sanitize.sh -R poslens_core_tests
#
# Our code is instrumented; LibTorch, Qt and HDF5 are Debian's (not instrumented), so a bug
# inside them is found only where our calls pass it bad memory. -fno-sanitize=vptr: LibTorch's
# classes come from a library built without it, whose type info the check cannot compare.
# Leaks: LeakSanitizer runs; tests/sanitizer/lsan.supp lists the one-time allocations of the
# libraries we link (never ours), each with why.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --preset asan > /dev/null
cmake --build --preset asan --parallel "$(nproc)"
export QT_QPA_PLATFORM=offscreen
export POSLENS_TESTS_STRICT=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tests/sanitizer/lsan.supp:print_suppressions=0
# The kill and Slurm tests drive the CLI as a user does; under ASan they are slow and say nothing
# more than the unit tests do about memory, so they are left to the normal build.
ctest --test-dir build-asan --output-on-failure --timeout 3600 -j "$(nproc)" -E 'CrashKillWriters|SlurmSweep' "$@"
