#!/usr/bin/python3
"""PyTorch-eager side of the long-input benchmark (scripts/bench_long.sh): loads an HF Llama
folder (config.json + model.safetensors, e.g. from tools/make_random_hf_model.py) and times one
forward pass at T tokens -- the computation PosLens runs: RMSNorm, half-split RoPE (with HF's
llama3 rope_scaling rule when configured), GQA by repeating kv heads, explicit float32
attention q.k^T/sqrt(d) with a causal mask and a float32 softmax, SiLU-gated MLP, final norm,
lm_head; all in float32 under torch.inference_mode. --keep-patterns keeps every layer's
[1, heads, T, T] pattern in a list, as TransformerLens's ActivationCache does. --sdpa computes
attention with torch.nn.functional.scaled_dot_product_attention instead (PyTorch >= 2.0: the
fused kernel PosLens's fused path calls; run it with the venv of scripts/setup.sh).

    /usr/bin/python3 tools/bench_pytorch_long.py MODEL_DIR T [--keep-patterns | --sdpa] [--seed N]
    /usr/bin/python3 tools/bench_pytorch_long.py MODEL_DIR --tokens 1,2,3 --save-logits out.npy

Prints one line: pytorch-eager|pytorch-sdpa VERSION T=... keep_patterns=... forward_s=...
"""
import argparse
import json
import math
import os
import struct
import time

import numpy as np
import torch

NP_DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.int16}


def load_safetensors(path):
    """{name: float32 tensor}, read through a numpy memmap (no safetensors package)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    header.pop("__metadata__", None)
    raw = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for name, info in header.items():
        begin, end = info["data_offsets"]
        a = raw[begin:end].view(NP_DTYPES[info["dtype"]]).reshape(info["shape"])
        t = torch.from_numpy(np.array(a))  # copy out of the read-only map
        out[name] = (t.view(torch.bfloat16) if info["dtype"] == "BF16" else t).float()
    return out


def inv_freq(cfg, dh):
    """Rotary inverse frequencies, with HF's llama3 rope_scaling rule when configured."""
    inv = 1.0 / cfg.get("rope_theta", 10000.0) ** (torch.arange(0, dh, 2, dtype=torch.float64) / dh)
    rs = cfg.get("rope_scaling") or {}
    if rs.get("rope_type", rs.get("type")) == "llama3":
        factor, lo, hi = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > old / lo, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= old / hi) & (wavelen <= old / lo)
        inv = torch.where(medium, smoothed, scaled)
    elif rs:
        raise SystemExit(f"unsupported rope_scaling {rs}")
    return inv


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    a, b = x[..., :half], x[..., half:]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def forward(cfg, w, tokens, keep_patterns, sdpa=False):
    """Logits [1, T, vocab] and the kept patterns (empty unless keep_patterns)."""
    D, H, KV = cfg["hidden_size"], cfg["num_attention_heads"], cfg.get("num_key_value_heads")
    KV = KV or H
    DH, eps, T = cfg.get("head_dim") or D // H, cfg["rms_norm_eps"], tokens.shape[1]
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq(cfg, DH)
    cos, sin = ang.cos().float()[None, None], ang.sin().float()[None, None]
    masked = torch.ones(T, T, dtype=torch.bool).triu(1)
    kept = []
    x = w["model.embed_tokens.weight"][tokens]
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms(x, w[p + "input_layernorm.weight"], eps)
        q = (h @ w[p + "self_attn.q_proj.weight"].T).view(1, T, H, DH).transpose(1, 2)
        k = (h @ w[p + "self_attn.k_proj.weight"].T).view(1, T, KV, DH).transpose(1, 2)
        v = (h @ w[p + "self_attn.v_proj.weight"].T).view(1, T, KV, DH).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        k, v = k.repeat_interleave(H // KV, dim=1), v.repeat_interleave(H // KV, dim=1)
        if sdpa:
            z = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + z.transpose(1, 2).reshape(1, T, H * DH) @ w[p + "self_attn.o_proj.weight"].T
            h = rms(x, w[p + "post_attention_layernorm.weight"], eps)
            g = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
            x = x + (g * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
            continue
        s = (q @ k.transpose(-1, -2)).div_(math.sqrt(DH)).masked_fill_(masked, float("-inf"))
        pattern = torch.softmax(s, dim=-1)
        del s
        if keep_patterns:
            kept.append(pattern)
        z = (pattern @ v).transpose(1, 2).reshape(1, T, H * DH)
        x = x + z @ w[p + "self_attn.o_proj.weight"].T
        h = rms(x, w[p + "post_attention_layernorm.weight"], eps)
        g = torch.nn.functional.silu(h @ w[p + "mlp.gate_proj.weight"].T)
        x = x + (g * (h @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    unembed = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    return rms(x, w["model.norm.weight"], eps) @ unembed.T, kept


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir")
    ap.add_argument("T", type=int, nargs="?", help="random ids in [3, vocab)")
    ap.add_argument("--tokens", help="comma-separated ids instead of random ones")
    ap.add_argument("--keep-patterns", action="store_true")
    ap.add_argument("--sdpa", action="store_true", help="PyTorch's fused attention (torch >= 2.0)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--save-logits", metavar="NPY", help="write the logits [1, T, vocab]")
    args = ap.parse_args()
    torch.set_num_threads(os.cpu_count())

    with open(os.path.join(args.model_dir, "config.json")) as f:
        cfg = json.load(f)
    w = load_safetensors(os.path.join(args.model_dir, "model.safetensors"))
    if args.tokens:
        tokens = torch.tensor([[int(t) for t in args.tokens.split(",")]])
    elif args.T:
        g = torch.Generator().manual_seed(args.seed)
        tokens = torch.randint(3, cfg["vocab_size"], (1, args.T), generator=g)
    else:
        ap.error("give T or --tokens")

    with torch.inference_mode():
        forward(cfg, w, tokens[:, :4], False, args.sdpa)  # untimed warm-up (thread pool, BLAS set-up)
        start = time.perf_counter()
        logits, kept = forward(cfg, w, tokens, args.keep_patterns, args.sdpa)
        seconds = time.perf_counter() - start
    if args.save_logits:
        np.save(args.save_logits, logits.numpy())
    print(f"pytorch-{'sdpa' if args.sdpa else 'eager'} {torch.__version__} T={tokens.shape[1]} "
          f"keep_patterns={args.keep_patterns} "
          f"forward_s={seconds:.3f}")


if __name__ == "__main__":
    main()
