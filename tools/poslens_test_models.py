#!/usr/bin/python3
"""Small random PosLens models, one per position-encoding case, with the captures of their
forward pass in PyTorch: the fixtures of PosLens's C++ parity test (PosLensReference.*) and GUI
test. Each case folder holds config.json, model.safetensors (or model.pt) and
reference.safetensors (input_ids + every capture under its docs/formulas.md §1 hook name).

    /usr/bin/python3 tools/poslens_test_models.py OUTDIR [--seed N] [--case NAME]...
    (also: tools/poslens_reference.py make-test-models OUTDIR ...)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import zlib
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from poslens_reference import (PosLensConfig, PosLensModel, save_pretrained,  # noqa: E402
                               save_safetensors)

BASE = dict(d_model=32, n_layers=2, n_heads=4, d_mlp=64, vocab_size=64, n_ctx=64)
SEQ_LEN = 12

# name -> (config overrides, weights format, randomize options). Every case exercises something.
TEST_CASES: Dict[str, Tuple[Dict[str, Any], str, Dict[str, Any]]] = {
    "nope": (dict(position_encoding=[], bos_token_id=1), "safetensors", {}),
    "learned_absolute": (dict(position_encoding={"type": "learned_absolute"}), "safetensors", {}),
    "sinusoidal": (dict(position_encoding=[{"type": "sinusoidal"}]), "safetensors", {}),
    "heinsen": (dict(position_encoding=[{"type": "heinsen", "d_pe": 8}], activation="gelu_tanh"),
                "safetensors", {}),
    "rope_half_split_partial": (dict(d_model=64, position_encoding=[{"type": "rope", "rotary_dim": 8}]),
                                "safetensors", {}),
    "rope_interleaved_linear_scaling": (dict(position_encoding=[{
        "type": "rope", "pairing": "interleaved", "rope_theta": 500.0,
        "rope_scaling": {"type": "linear", "factor": 4.0}}]), "safetensors", {}),
    "rope_yarn": (dict(d_model=64, position_encoding=[{
        "type": "rope", "rope_scaling": {"rope_type": "yarn", "factor": 4.0,
                                         "original_max_position_embeddings": 16}}]), "safetensors", {}),
    "rope_dynamic_ntk": (dict(n_ctx=8, position_encoding=[{
        "type": "rope", "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}]), "safetensors", {}),
    "hope": (dict(d_model=64, position_encoding=[{"type": "hope", "L": 48}]), "safetensors", {}),
    "alibi_6_heads": (dict(d_model=48, n_heads=6, position_encoding=[{"type": "alibi"}]), "safetensors", {}),
    "alibi_bidirectional": (dict(causal=False, position_encoding=[{"type": "alibi"}]), "safetensors", {}),
    "shaw_values": (dict(d_head=12, position_encoding=[{"type": "shaw", "max_distance": 5, "values": True}]),
                    "safetensors", {}),
    "t5_shared": (dict(attn_scale=1.0,
                       position_encoding=[{"type": "t5", "num_buckets": 8, "max_distance": 10}]),
                  "safetensors", {"qk_std": 0.15}),
    "t5_bidirectional": (dict(causal=False, position_encoding=[{
        "type": "t5", "num_buckets": 8, "max_distance": 10, "shared": False}]), "safetensors", {}),
    "transformer_xl": (dict(position_encoding=[{"type": "transformer_xl"}]), "safetensors", {}),
    "transformer_xl_bidirectional": (dict(causal=False, position_encoding=[{
        "type": "transformer_xl", "shared": True}]), "safetensors", {}),
    "kerple_log": (dict(position_encoding=[{"type": "kerple"}]), "safetensors", {}),
    "kerple_power": (dict(position_encoding=[{"type": "kerple", "variant": "power", "shared": True}]),
                     "safetensors", {}),
    "fire": (dict(position_encoding=[{"type": "fire", "hidden": 16}]), "safetensors", {}),
    "cope_keys": (dict(position_encoding=[{"type": "cope", "npos_max": 6}]), "safetensors", {}),
    "cope_sep_keys_no_div": (dict(position_encoding=[{
        "type": "cope", "npos_max": 16, "gates": "sep_keys", "logit_scale": "no_div"}]), "safetensors", {}),
    "cope_values": (dict(n_kv_heads=2, position_encoding=[{
        "type": "cope", "npos_max": 8, "gates": "values", "shared": True}]), "safetensors", {}),
    "cope_alibi": (dict(position_encoding=[{"type": "cope", "npos_max": 10, "position": "alibi"}]),
                   "safetensors", {}),
    "cope_alibi_default_slopes": (dict(position_encoding=[{"type": "cope", "npos_max": 10,
                                                           "position": "alibi"}]),
                                  "safetensors", {"cope_slopes": False}),
    "cope_rope": (dict(position_encoding=[{"type": "rope"}, {"type": "cope", "npos_max": 8}]),
                  "safetensors", {}),
    "cope_t5_shared": (dict(position_encoding=[{"type": "cope", "npos_max": 8},
                                               {"type": "t5", "num_buckets": 8, "max_distance": 10}]),
                       "safetensors", {}),
    "gqa_layernorm_plain_gelu_biases_tied": (dict(
        n_kv_heads=2, norm="layernorm", norm_eps=1e-6, mlp="plain", activation="gelu", qkv_bias=True,
        attn_out_bias=True, mlp_bias=True, tie_word_embeddings=True,
        position_encoding=[{"type": "rope", "pairing": "interleaved"}]), "safetensors", {}),
    "rope_pt": (dict(position_encoding=[{"type": "rope"}]), "pt", {}),
}


def randomize_(model: PosLensModel, generator: torch.Generator, qk_std: float = 0.35) -> None:
    """Deterministic non-trivial weights: projections ~ N(0, (1.8/sqrt(fan_in))^2) (std ~0.3 at
    D=32), norms 1 ± 0.1, biases N(0, 0.1^2), position weights chosen so patterns are far from
    uniform (KERPLE/FIRE include negative raw values to exercise the clamps / |c|, |L_thr|)."""
    def randn(shape, std):
        return torch.randn(shape, generator=generator) * std

    def uniform(shape, lo, hi):
        return lo + (hi - lo) * torch.rand(shape, generator=generator)

    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.split(".")[-1]
            parent = name.split(".")[-2] if "." in name else ""
            if "norm" in parent:
                p.copy_(1 + randn(p.shape, 0.1) if leaf == "weight" else randn(p.shape, 0.1))
            elif parent in ("q_proj", "k_proj") and leaf == "weight":
                p.copy_(randn(p.shape, qk_std * math.sqrt(32 / p.shape[1])))
            elif name == "tok_embed.weight":
                p.copy_(randn(p.shape, 1.0))
            elif leaf == "kerple_p":
                p.copy_(uniform(p.shape, 0.3, 2.0))
                p[0] = -0.5  # clamped to 1e-2
            elif leaf == "kerple_a":
                p.copy_(uniform(p.shape, 0.2, 1.5))
                p[-1] = 0.001  # clamped to 1e-2
            elif leaf == "fire_c":
                p.fill_(float(uniform((), 0.3, 1.0)) * (-1 if "blocks.1" in name else 1))
            elif leaf == "fire_l_thr":
                p.fill_(float(uniform((), 4.0, 8.0)) * (-1 if "blocks.1" in name else 1))
            elif leaf == "cope_slopes":
                p.copy_(randn(p.shape, 0.4) - 0.2)
            elif leaf in ("cope_pos_emb", "shaw_key", "shaw_value", "txl_u", "txl_v", "pos_embed"):
                p.copy_(randn(p.shape, 0.7))
            elif leaf == "t5_bias":
                p.copy_(randn(p.shape, 1.0))
            elif leaf == "bias":
                p.copy_(randn(p.shape, 0.5 if ("heinsen" in parent or "fire" in parent) else 0.1))
            elif p.dim() == 2:
                p.copy_(randn(p.shape, 1.8 / math.sqrt(p.shape[1])))
            else:
                p.copy_(randn(p.shape, 0.5))


def make_test_models(outdir: str, seed: int = 0, cases: Optional[List[str]] = None) -> List[str]:
    """Writes OUTDIR/<case>/{config.json, model.safetensors|model.pt, reference.safetensors} and
    OUTDIR/cases.json (a JSON array of the case names). reference.safetensors holds input_ids
    (int64 [1, T]) and every capture of the forward pass (float32) under its hook name."""
    os.makedirs(outdir, exist_ok=True)
    names = cases or list(TEST_CASES)
    for name in names:
        overrides, weights, options = TEST_CASES[name]
        config = PosLensConfig(**{**BASE, **overrides})
        generator = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
        model = PosLensModel(config, cope_slopes=options.get("cope_slopes", True)).eval()
        randomize_(model, generator, options.get("qk_std", 0.35))
        folder = os.path.join(outdir, name)
        save_pretrained(model, folder, weights)
        input_ids = torch.randint(0, config.vocab_size, (1, SEQ_LEN), generator=generator)
        with torch.no_grad():
            _, caps = model(input_ids, capture=True)
        tensors = OrderedDict(input_ids=input_ids)
        tensors.update((k, v.float().contiguous()) for k, v in caps.items())
        save_safetensors(tensors, os.path.join(folder, "reference.safetensors"),
                         {"case": name, "seed": str(seed), "torch": torch.__version__})
    with open(os.path.join(outdir, "cases.json"), "w") as f:
        json.dump(names, f, indent=1)
        f.write("\n")
    return names



def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Write the PosLens test models and their captures")
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--case", action="append", help="only this case (repeatable)")
    args = ap.parse_args(argv)
    start = time.time()
    names = make_test_models(args.outdir, args.seed, args.case)
    print(f"wrote {len(names)} cases to {args.outdir} in {time.time() - start:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
