#!/usr/bin/env bash
# Sets up, builds and opens the PosLens GUI. With no argument it opens the Flip-Flop CoPE demo
# (resources/demos/flipflop-cope, trained by poslens-cli train) on a Flip-Flop string and shows
# its CoPE gates; the Demo models menu has the others.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --no-venv
bash scripts/build.sh
if [ $# -gt 0 ]; then
  exec ./build/app/gui/poslens "$@"
fi
demo=resources/demos/flipflop-cope
if [ -f "$demo/config.json" ]; then
  exec ./build/app/gui/poslens "$demo" --text "w1i0i1i1r1i0i0w0i1i1i0i1i0i1r0i1i0i1i1i0i0i1r0" \
    --view hook_cope_gates --run
fi
exec ./build/app/gui/poslens
