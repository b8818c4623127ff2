#!/usr/bin/env bash
# Sets up, builds and opens the PosLens GUI. With no argument it opens the stories260K
# fixture from ../shared/fixtures (when present) and runs it on a sample sentence.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
if [ $# -gt 0 ]; then
  exec ./build/app/gui/poslens "$@"
fi
fixture=../shared/fixtures/stories260K/stories260K.bin
if [ -f "$fixture" ]; then
  exec ./build/app/gui/poslens "$fixture" --text "Once upon a time, there was a little girl named Lily." --run
fi
exec ./build/app/gui/poslens
