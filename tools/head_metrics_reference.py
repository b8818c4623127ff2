#!/usr/bin/python3
"""An independent float64 reference for `poslens-cli heads` (docs/performance.md): recomputes
entropy, mean distance, sink and previous-token per head from a run's rotated q and k, in
blocks of 512 queries with numpy float64 (causal softmax of scale·q·k), and compares them
with the CLI's CSV. Position share is not recomputed (it needs the position term).

    poslens-cli run MODEL --tokens IDS --capture 'blocks.*.attn.hook_rot_q,blocks.*.attn.hook_rot_k' --out qk.h5
    poslens-cli heads MODEL --tokens IDS --out heads.csv
    /usr/bin/python3 tools/head_metrics_reference.py qk.h5 heads.csv

Prints the largest relative difference per metric; exits 1 when one exceeds --tolerance
(default 1e-3). For causal models without a sliding window (what the run's config says).
"""
import argparse
import csv
import json
import sys

import h5py
import numpy as np

METRICS = ["entropy", "mean_distance", "sink", "previous_token"]


def head_metrics(q, k, scale, block=512):
    """q [T, d], k [T, d] float64 -> the four metrics of one head (means over queries)."""
    T = q.shape[0]
    sums = np.zeros(4)
    for start in range(0, T, block):
        rows = np.arange(start, min(T, start + block))
        s = (q[rows] @ k[: rows[-1] + 1].T) * scale            # [rows, keys seen]
        j = np.arange(s.shape[1])
        s[j[None, :] > rows[:, None]] = -np.inf               # causal mask
        s -= s.max(axis=1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            sums[0] -= np.where(p > 0, p * np.log(p), 0.0).sum()
        sums[1] += (p * (rows[:, None] - j[None, :])).sum()
        sums[2] += p[:, 0].sum()
        ok = rows >= 1
        sums[3] += p[np.nonzero(ok)[0], rows[ok] - 1].sum()
    return sums / np.array([T, T, T, max(T - 1, 1)])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("captures")
    ap.add_argument("csv")
    ap.add_argument("--tolerance", type=float, default=1e-3)
    args = ap.parse_args()
    with h5py.File(args.captures, "r") as f:
        config = json.loads(f.attrs["model_config"])
        H, Hkv = config["n_heads"], config["n_kv_heads"]
        scale = config.get("attn_scale") or config["d_head"] ** -0.5
        if config.get("sliding_window", 0) or not config.get("causal", True):
            sys.exit("the reference covers causal models without a sliding window")
        ours = {}
        with open(args.csv) as c:
            for row in csv.DictReader(c):
                ours[(int(row["layer"]), int(row["head"]))] = [float(row[m]) for m in METRICS]
        worst = np.zeros(4)
        for layer in range(config["n_layers"]):
            q = f[f"captures/blocks.{layer}.attn.hook_rot_q"][0].astype(np.float64)  # [T, H, d]
            k = f[f"captures/blocks.{layer}.attn.hook_rot_k"][0].astype(np.float64)  # [T, Hkv, d]
            for h in range(H):
                ref = head_metrics(q[:, h], k[:, h // (H // Hkv)], scale)
                got = np.array(ours[(layer, h)])
                worst = np.maximum(worst, np.abs(got - ref) / np.maximum(np.abs(ref), 1e-12))
    for name, w in zip(METRICS, worst):
        print(f"{name}: max relative difference {w:.2e}")
    sys.exit(0 if (worst <= args.tolerance).all() else 1)


if __name__ == "__main__":
    main()
