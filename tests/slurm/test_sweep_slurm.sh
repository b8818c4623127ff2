#!/usr/bin/env bash
# ctest label "slurm": `poslens-cli sweep --slurm` on a real single-node Slurm cluster started
# here (scripts/slurm_local.sh: slurmctld + slurmd + a private munged, config in a temporary
# folder, stopped at the end whatever happens). The probe over every checkpoint of the
# text-rope-series demo runs as a job array (two tasks at a time), the dependent merge job
# writes one file, and its VAF table must equal `poslens-cli compare --series` on the same
# checkpoints and thread count (to 1e-4, far below what tells two checkpoints apart), and each
# task runs on as many threads as it was given CPUs.
#   tests/slurm/test_sweep_slurm.sh POSLENS_CLI SOURCE_DIR
set -euo pipefail
cli=$1
source_dir=$2
dir=$(mktemp -d)
mkdir -p "$dir/cluster"
fail() {
    echo "test_sweep_slurm: FAIL: $*" >&2
    squeue >&2 || true
    for f in "$dir"/cluster/*.log "$dir"/sweep/logs/*; do
        [[ -e $f ]] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
    done
    exit 1
}
cleanup() {
    "$source_dir/scripts/slurm_local.sh" stop "$dir/cluster" >/dev/null 2>&1 || true
    rm -rf "$dir"
}
trap cleanup EXIT

command -v slurmctld >/dev/null || fail "slurmctld not installed (scripts/setup.sh installs slurm-wlm and munge)"
# Its own port, so a cluster someone runs on 6817 is left alone.
export SLURM_LOCAL_PORT=${SLURM_LOCAL_PORT:-7817}
"$source_dir/scripts/slurm_local.sh" start "$dir/cluster" >/dev/null || fail "the cluster did not start"
export SLURM_CONF=$dir/cluster/slurm.conf

series=$source_dir/resources/demos/text-rope-series
cat > "$dir/manifest.json" <<JSON
{"items": [{"series": "$series", "analysis": "probe", "options": ["--length", "16", "--samples", "6"]}]}
JSON
"$cli" sweep "$dir/manifest.json" --out "$dir/sweep" --slurm --max-parallel 2 || fail "sweep --slurm failed"

# Wait (at most 300 s) until the array and the merge job have left the queue.
for ((i = 0; i < 600; i++)); do
    [[ -z $(squeue -h -o %i) ]] && break
    sleep 0.5
done
[[ -z $(squeue -h -o %i) ]] || fail "jobs still queued after 300 s"
[[ -f $dir/sweep/merged.h5 ]] || fail "the merge job wrote no merged.h5"

# Each task got Slurm's default of one CPU on a cluster that does not bind tasks (task/none):
# the script's OMP_NUM_THREADS must give it one thread, not one per core of the node.
threads=$(grep -h "^sweep: items run on" "$dir"/sweep/logs/slurm-*_*.out | sort | uniq -c)
[[ $threads == *" 11 sweep: items run on 1 thread ("* ]] || fail "array tasks' threads: $threads"

# The reference on the tasks' thread count (1): float32 sums split over another number of threads
# add in another order (on an AMD Zen 3 with AVX2, 1 and 2 threads differ by 2.6e-5 in the VAF).
OMP_NUM_THREADS=1 "$cli" compare --series "$series" --length 16 --samples 6 --out "$dir/compare.h5" >/dev/null ||
    fail "compare --series failed"
/usr/bin/python3 - "$dir/sweep/merged.h5" "$dir/compare.h5" <<'PY' || fail "the merged VAF table differs from compare --series"
import sys
import h5py
import numpy as np
merged, compare = (h5py.File(p, "r") for p in sys.argv[1:3])
steps = merged["analysis/compare/steps"][()]
assert np.array_equal(steps, compare["analysis/compare/steps"][()]), "steps"
a, b = merged["analysis/compare/vaf"][()], compare["analysis/compare/vaf"][()]
assert a.shape == b.shape, (a.shape, b.shape)
# VAF is a ratio of float32 sums in [0, 1]: same thread count, so equal in practice; 1e-4 leaves
# room for any other reordering (a different thread count moves it by 2.6e-5) and is far below
# what a wrong or swapped item changes: checked below, so this comparison can still fail.
TOL = 1e-4
worst = float(np.abs(a - b).max())
assert worst <= TOL, f"vaf differs by {worst:.3g}"
apart = np.abs(np.diff(b, axis=0)).reshape(b.shape[0] - 1, -1).max(axis=1).min()
assert apart > 100 * TOL, f"consecutive checkpoints' VAF only {apart:.3g} apart: the test cannot tell them"
items = sorted(merged["items"].keys())
assert len(items) == a.shape[0] == 11, items
print(f"test_sweep_slurm: {len(items)} items through Slurm; VAF table {a.shape} equals compare --series "
      f"to {worst:.2g} (checkpoints at least {apart:.2g} apart)")
PY
