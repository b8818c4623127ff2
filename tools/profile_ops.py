#!/usr/bin/python3
"""Sums a Chrome trace of LibTorch's or PyTorch's autograd profiler per operator: calls and
self time (the operator's own time, its nested operators' subtracted), per step. Given two
traces (PosLens's and PyTorch's, `--profile` of bench/bench_train_step.cpp and
tools/bench_pytorch_train.py), prints them side by side, largest difference first: where a
training step spends its time differently.

    /usr/bin/python3 tools/profile_ops.py TRACE.json [OTHER.json] [--steps 20] [--top 30]
"""
import argparse
import collections
import json


def self_times(path):
    """{operator: [calls, self µs]} over the trace's complete ("X") events, nesting per thread."""
    with open(path) as f:
        events = [e for e in json.load(f) if e.get("ph") == "X"]
    totals = collections.defaultdict(lambda: [0, 0.0])
    by_thread = collections.defaultdict(list)
    for e in events:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    for thread_events in by_thread.values():
        # Parents first: earlier start, and on a tie the longer one.
        thread_events.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []  # [end, event's total entry]
        for e in thread_events:
            start, dur = float(e["ts"]), float(e["dur"])
            while stack and stack[-1][0] <= start:
                stack.pop()
            entry = totals[e["name"]]
            entry[0] += 1
            entry[1] += dur
            if stack:
                totals_parent = stack[-1][1]
                totals_parent[1] -= dur
            stack.append([start + dur, entry])
    return totals


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--steps", type=int, default=20, help="steps the trace holds (per-step figures)")
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args()
    tables = [self_times(p) for p in args.traces[:2]]
    names = set().union(*tables)
    per_step = lambda t, n, i: t.get(n, [0, 0.0])[i] / args.steps
    if len(tables) == 1:
        rows = sorted(names, key=lambda n: -per_step(tables[0], n, 1))[: args.top]
        print(f"{'operator':40} {'calls':>7} {'self ms':>9}   (per step)")
        for n in rows:
            print(f"{n[:40]:40} {per_step(tables[0], n, 0):7.1f} {per_step(tables[0], n, 1) / 1000:9.2f}")
    else:
        diff = lambda n: per_step(tables[0], n, 1) - per_step(tables[1], n, 1)
        rows = sorted(names, key=lambda n: -abs(diff(n)))[: args.top]
        print(f"{'operator':40} {'calls A':>7} {'ms A':>8} {'calls B':>7} {'ms B':>8} {'A - B':>8}   (per step)")
        for n in rows:
            print(f"{n[:40]:40} {per_step(tables[0], n, 0):7.1f} {per_step(tables[0], n, 1) / 1000:8.2f} "
                  f"{per_step(tables[1], n, 0):7.1f} {per_step(tables[1], n, 1) / 1000:8.2f} {diff(n) / 1000:8.2f}")
    for i, t in enumerate(tables):
        print(f"trace {'AB'[i]} ({args.traces[i]}): {sum(v[1] for v in t.values()) / args.steps / 1000:.1f} ms "
              f"of operator time per step, {sum(v[0] for v in t.values()) / args.steps:.0f} calls")


if __name__ == "__main__":
    main()
