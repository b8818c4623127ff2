#!/usr/bin/env bash
# Sets up (Debian packages), builds and runs the whole test suite with ctest.
# Tests read the real fixtures from ../shared/fixtures and skip with a message when absent.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
export QT_QPA_PLATFORM=offscreen
ctest --test-dir build --output-on-failure --timeout 600 -j "$(nproc)"
