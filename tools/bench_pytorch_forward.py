#!/usr/bin/python3
"""PyTorch-eager counterpart of bench/bench_forward.cpp (model=1): a randomly initialised
Llama block model of GPT-2-small size (12 layers, d_model 768, 12 heads, d_mlp 3072,
vocab 32000, half-split RoPE), one forward pass at 512 tokens, explicit attention with a
float32 softmax -- the same computation PosLens runs. Uses Debian's python3-torch.

    /usr/bin/python3 tools/bench_pytorch_forward.py [--repeat 10] [--capture]
"""
import argparse
import os
import time

import torch

D, L, H, DH, F, V, T = 768, 12, 12, 64, 3072, 32000, 512


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def rms(x, w, eps=1e-5):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--capture", action="store_true", help="keep every attention pattern")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count())
    torch.manual_seed(0)
    r = lambda *s: torch.randn(*s) * 0.02
    emb, unemb = r(V, D), r(V, D)
    layers = [dict(q=r(D, D), k=r(D, D), v=r(D, D), o=r(D, D), g=r(F, D), u=r(F, D), d=r(D, F),
                   n1=torch.ones(D), n2=torch.ones(D)) for _ in range(L)]
    inv = 10000.0 ** (-torch.arange(0, DH // 2, dtype=torch.float64) * 2 / DH)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv
    cos, sin = ang.cos().float()[None, :, None, :], ang.sin().float()[None, :, None, :]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    tokens = torch.randint(3, V, (1, T))

    def forward():
        kept = []
        x = emb[tokens]
        for w in layers:
            h = rms(x, w["n1"])
            q = rope((h @ w["q"].T).view(1, T, H, DH), cos, sin).transpose(1, 2)
            k = rope((h @ w["k"].T).view(1, T, H, DH), cos, sin).transpose(1, 2)
            v = (h @ w["v"].T).view(1, T, H, DH).transpose(1, 2)
            s = (q @ k.transpose(-1, -2)).float() / DH ** 0.5
            p = torch.softmax(s.masked_fill(~mask, float("-inf")), -1)
            if args.capture:
                kept.append(p)
            x = x + (p @ v).transpose(1, 2).reshape(1, T, D) @ w["o"].T
            h2 = rms(x, w["n2"])
            x = x + (torch.nn.functional.silu(h2 @ w["g"].T) * (h2 @ w["u"].T)) @ w["d"].T
        return rms(x, torch.ones(D)) @ unemb.T

    with torch.inference_mode():
        forward()  # warm-up
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            forward()
            times.append(time.perf_counter() - start)
    times.sort()
    print(f"pytorch {torch.__version__} eager, {torch.get_num_threads()} threads, "
          f"capture={args.capture}: median {times[len(times) // 2] * 1000:.1f} ms, "
          f"min {times[0] * 1000:.1f} ms over {args.repeat} runs")


if __name__ == "__main__":
    main()
