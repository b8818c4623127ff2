#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the whole test suite with ctest.
# Tests read the real fixtures from ../shared/fixtures. Run by hand, a test whose prerequisite is
# missing (fixture, Python with torch/h5py, the CLI) skips with a message; here, as in CI, it fails
# (POSLENS_TESTS_STRICT=1), so the suite cannot pass having tested nothing. Only the CUDA tests
# skip on a machine without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen
export POSLENS_TESTS_STRICT=1
ctest --test-dir build --output-on-failure --timeout 600 -j "$(nproc)"
