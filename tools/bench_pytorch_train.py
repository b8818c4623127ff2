#!/usr/bin/python3
"""PyTorch-eager counterpart of bench/bench_train_step.cpp: the same PosLens config built with
the reference module (tools/poslens_reference.py), the same step (forward, next-token
cross-entropy, backward, gradient clipping 1.0, AdamW lr 1e-3 betas 0.9/0.999 weight decay
0.01) on a fixed random batch. Uses Debian's python3-torch.

    /usr/bin/python3 tools/bench_pytorch_train.py CONFIG.json [--batch 32] [--length 128]
        [--steps 20] [--warmup 3] [--profile TRACE.json]

--profile records the measured steps with PyTorch's autograd profiler into a Chrome trace
(tools/profile_ops.py compares it with PosLens's); the printed median then includes the
profiler's overhead.
"""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from poslens_reference import PosLensConfig, PosLensModel  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("config")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--length", type=int, default=128)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile", help="Chrome trace of the measured steps")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count())
    with open(args.config) as f:
        config = PosLensConfig.from_dict(json.load(f))
    torch.manual_seed(0)
    model = PosLensModel(config)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), weight_decay=0.01)
    torch.manual_seed(1)
    tokens = torch.randint(0, config.vocab_size, (args.batch, args.length))
    times = []
    profiler = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup and args.profile:
            profiler = torch.autograd.profiler.profile()
            profiler.__enter__()
        start = time.perf_counter()
        logits = model(tokens)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss.item()
        if step >= args.warmup:
            times.append((time.perf_counter() - start) * 1000)
    if profiler:
        profiler.__exit__(None, None, None)
        profiler.export_chrome_trace(args.profile)
    times.sort()
    n = len(times)
    print(f"pytorch  {args.config}  batch {args.batch} x {args.length}: median {times[n // 2]:.1f} "
          f"ms/step (q1 {times[n // 4]:.1f}, q3 {times[3 * n // 4]:.1f}, {args.steps} steps)")


if __name__ == "__main__":
    main()
