#!/usr/bin/env bash
# Configures and builds PosLens into ./build (Ninja, RelWithDebInfo). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja "$@"
cmake --build build --parallel "$(nproc)"
