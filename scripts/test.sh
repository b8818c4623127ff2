#!/usr/bin/env bash
# Sets up, builds and tests both LibTorch builds of PosLens (docs/building.md); CI runs this.
#
#   scripts/test.sh            both builds, one after the other
#   scripts/test.sh debian     only (1)         scripts/test.sh cuda   only (2)
#
# (1) Debian 12's LibTorch 1.13 with the Qt GUI, in build/ (scripts/build.sh): every ctest entry.
# (2) The PyTorch wheel's LibTorch 2.x with CUDA (the venv scripts/setup.sh makes), GUI-less, in
#     build-cuda/ (scripts/build_cuda.sh): what a GPU server runs. Its ctest runs the core suite
#     (twice: default and small attention blocks) on the CPU with the CUDA libraries linked, the
#     `gpu` tests (they skip without a device) and the CLI-level tests against its poslens-cli.
# Tests read the real fixtures from ../shared/fixtures. Run by hand, a test whose prerequisite is
# missing (fixture, Python with torch/h5py, the CLI) skips with a message; here, as in CI, it fails
# (POSLENS_TESTS_STRICT=1), so the suite cannot pass having tested nothing. Only the CUDA tests
# skip on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:-both}
case $which in
  both|debian|cuda) ;;
  *) echo "usage: scripts/test.sh [debian|cuda]" >&2; exit 2 ;;
esac
if [[ $which == debian ]]; then bash scripts/setup.sh --no-venv; else bash scripts/setup.sh; fi
export QT_QPA_PLATFORM=offscreen
export POSLENS_TESTS_STRICT=1
status=0
if [[ $which != cuda ]]; then
  echo "== (1) Debian's LibTorch 1.13 with the GUI: build/"
  bash scripts/build.sh
  ctest --test-dir build --output-on-failure --timeout 600 -j "$(nproc)" || status=1
fi
if [[ $which != debian ]]; then
  echo "== (2) the PyTorch wheel's LibTorch 2.x with CUDA, GUI-less: build-cuda/"
  bash scripts/build_cuda.sh --build-dir build-cuda --gui off --no-install
  # The Python reference's self-test does not depend on the build: (1) runs it.
  ctest --test-dir build-cuda --output-on-failure --timeout 600 -j "$(nproc)" \
    -E '^PythonReference' || status=1
fi
exit "$status"
