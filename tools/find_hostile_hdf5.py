#!/usr/bin/python3
"""Finds HDF5 files that crash or hang libhdf5 itself, to test that PosLens survives them.

Writes a small file shaped like a PosLens analysis file (variable-length UTF-8 string attributes
and datasets, which live in HDF5's global heap, and a numeric dataset) with h5py, then flips 1-4
bytes, mostly in the global heap collection ("GCOL"), and reads each mutant with h5py (the same
Debian libhdf5 1.10.8 PosLens links) in a child process: a child ended by a signal is a crash, one
still running after 5 s a hang. Deterministic for a seed. The files kept in
tests/data/fuzz/analysis_hdf5/ came from

    cd /tmp/h5 && /usr/bin/python3 tools/find_hostile_hdf5.py 1 150

(crash-global-heap-1/2 = mutants 1 and 6, hang-global-heap/-2 = mutants 17 and 65).
"""
import random
import subprocess
import sys

import h5py
import numpy as np

READER = r'''
import h5py, sys
try:
    with h5py.File(sys.argv[1], "r") as f:
        def walk(name, obj):
            for k in obj.attrs: obj.attrs[k]
            if isinstance(obj, h5py.Dataset): obj[()]
        for k in f.attrs: f.attrs[k]
        f.visititems(walk)
except Exception:
    pass  # an error the library reports is fine; only crashes and hangs are findings
'''


def write_base(path):
    strings = h5py.string_dtype()
    with h5py.File(path, "w") as f:
        f.attrs["poslens_version"] = "0.1.0"
        f.attrs["checkpoint"] = "x" * 40
        g = f.create_group("analysis/heads")
        g.create_dataset("metrics", data=np.array(["entropy", "mean_distance", "sink"], dtype=strings))
        g.create_dataset("values", data=np.ones((2, 2, 3)))
        f.create_dataset("tokens/text", data=np.array([["a", "b", "c"]], dtype=strings))


def main(seed, trials):
    write_base("base.h5")
    base = open("base.h5", "rb").read()
    heap = base.find(b"GCOL")
    open("reader.py", "w").write(READER)
    rng = random.Random(seed)
    for trial in range(trials):
        b = bytearray(base)
        for _ in range(rng.randint(1, 4)):
            i = heap + rng.randrange(0, 200) if rng.random() < 0.8 else rng.randrange(len(b))
            if i < len(b):
                b[i] = rng.randrange(256)
        open("m.h5", "wb").write(b)
        try:
            r = subprocess.run(["/usr/bin/python3", "reader.py", "m.h5"], timeout=5, capture_output=True)
            if r.returncode < 0:
                open(f"crash_{trial}_{-r.returncode}.h5", "wb").write(b)
                print("crash", trial, -r.returncode, flush=True)
        except subprocess.TimeoutExpired:
            open(f"hang_{trial}.h5", "wb").write(b)
            print("hang", trial, flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
