#!/usr/bin/python3
"""PyTorch-eager counterpart of bench/bench_forward.cpp: a randomly initialised Llama block
model, one forward pass at T tokens, explicit attention with a float32 softmax -- the same
computation PosLens runs. Uses Debian's python3-torch.

    /usr/bin/python3 tools/bench_pytorch_forward.py [--shape gpt2-small|stories260K] [--tokens T]
        [--repeat 10] [--capture] [--matmuls-only]

Shapes: gpt2-small (12 layers, d_model 768, 12 heads, d_mlp 3072, vocab 32000, half-split
RoPE) and stories260K (5 layers, d_model 64, 8 heads, 4 kv heads, d_mlp 172, vocab 512).
--capture keeps every attention pattern (what a TransformerLens cache holds). --matmuls-only
times just the model's matrix products (projections, MLP, unembedding) at these shapes: the
"sgemm limit" a forward pass cannot beat (docs/performance.md).
"""
import argparse
import os
import time

import torch

SHAPES = {
    "gpt2-small": dict(D=768, L=12, H=12, KV=12, DH=64, F=3072, V=32000),
    "stories260K": dict(D=64, L=5, H=8, KV=4, DH=8, F=172, V=512),
}


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def rms(x, w, eps=1e-5):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", choices=SHAPES, default="gpt2-small")
    ap.add_argument("--tokens", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--capture", action="store_true", help="keep every attention pattern")
    ap.add_argument("--matmuls-only", action="store_true", help="time the matrix products alone")
    args = ap.parse_args()
    s = SHAPES[args.shape]
    D, L, H, KV, DH, F, V, T = s["D"], s["L"], s["H"], s["KV"], s["DH"], s["F"], s["V"], args.tokens
    torch.set_num_threads(os.cpu_count())
    torch.manual_seed(0)
    r = lambda *shape: torch.randn(*shape) * 0.02
    emb, unemb = r(V, D), r(V, D)
    layers = [dict(q=r(H * DH, D), k=r(KV * DH, D), v=r(KV * DH, D), o=r(D, H * DH), g=r(F, D),
                   u=r(F, D), d=r(D, F), n1=torch.ones(D), n2=torch.ones(D)) for _ in range(L)]
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
            k = rope((h @ w["k"].T).view(1, T, KV, DH), cos, sin).transpose(1, 2)
            v = (h @ w["v"].T).view(1, T, KV, DH).transpose(1, 2)
            if KV != H:
                k, v = k.repeat_interleave(H // KV, 1), v.repeat_interleave(H // KV, 1)
            scores = (q @ k.transpose(-1, -2)).float() / DH ** 0.5
            p = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
            if args.capture:
                kept.append(p)
            x = x + (p @ v).transpose(1, 2).reshape(1, T, H * DH) @ w["o"].T
            h2 = rms(x, w["n2"])
            x = x + (torch.nn.functional.silu(h2 @ w["g"].T) * (h2 @ w["u"].T)) @ w["d"].T
        return rms(x, torch.ones(D)) @ unemb.T

    x0, z0, f0 = torch.randn(1, T, D), torch.randn(1, T, H * DH), torch.randn(1, T, F)

    def matmuls():  # the same products, nothing else
        for w in layers:
            x0 @ w["q"].T, x0 @ w["k"].T, x0 @ w["v"].T, z0 @ w["o"].T
            x0 @ w["g"].T, x0 @ w["u"].T, f0 @ w["d"].T
        return x0 @ unemb.T

    run = matmuls if args.matmuls_only else forward
    with torch.inference_mode():
        run()  # warm-up
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
    times.sort()
    what = "matrix products only" if args.matmuls_only else f"capture={args.capture}"
    print(f"pytorch {torch.__version__} eager, {args.shape}, T={T}, {torch.get_num_threads()} threads, "
          f"{what}: median {times[len(times) // 2] * 1000:.1f} ms, min {times[0] * 1000:.1f} ms "
          f"over {args.repeat} runs")


if __name__ == "__main__":
    main()
