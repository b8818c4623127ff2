#!/usr/bin/python3
"""Writes a randomly initialised HF LlamaForCausalLM folder (config.json + model.safetensors)
for benchmarks, so that no real weights are ever committed. Linear and embedding weights are
N(0, 0.02^2) from a seeded torch.Generator, norm weights 1. The safetensors file is streamed
tensor by tensor (memory stays about one tensor: llama-3.2-1b is ~2.5 GB in bfloat16).

    /usr/bin/python3 tools/make_random_hf_model.py SHAPE OUT_DIR [--dtype float32|bfloat16]
        [--seed N] [--tokenizer-from DIR] [--cheap]

SHAPE: gpt2-small (GPT-2-small sizes, vocab 32000 = Llama-2's tokenizer, float32 by default)
or llama-3.2-1b (Llama-3.2-1B's config, GQA, llama3 rope scaling, tied embeddings, bfloat16)
or llama-3.1-8b (Llama-3.1-8B's config: 32 layers, 32 heads, 8 KV heads, d_model 4096, untied;
~16 GB in bfloat16, written in ~1-2 minutes on a GPU machine's CPU).
--tokenizer-from copies tokenizer.json / tokenizer.model / tokenizer_config.json /
special_tokens_map.json from DIR, e.g. ../shared/fixtures/tokenizers/llama2 for gpt2-small.
"""
import argparse
import json
import os
import shutil
import struct

import torch

SHAPES = {
    "gpt2-small": dict(
        hidden_size=768, num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=12,
        intermediate_size=3072, vocab_size=32000, max_position_embeddings=8192,
        rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=False, rope_scaling=None,
        bos_token_id=1, eos_token_id=2, dtype="float32"),
    "llama-3.2-1b": dict(
        hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
        intermediate_size=8192, vocab_size=128256, max_position_embeddings=131072,
        rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
        rope_scaling={"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        bos_token_id=128000, eos_token_id=128001, dtype="bfloat16"),
    "llama-3.1-8b": dict(
        hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
        intermediate_size=14336, vocab_size=128256, max_position_embeddings=131072,
        rope_theta=500000.0, rms_norm_eps=1e-5, tie_word_embeddings=False,
        rope_scaling={"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                      "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        bos_token_id=128000, eos_token_id=128001, dtype="bfloat16"),
}
TOKENIZER_FILES = ["tokenizer.json", "tokenizer.model", "tokenizer_config.json",
                   "special_tokens_map.json"]


def hf_config(s, dtype):
    """config.json as transformers writes it for LlamaForCausalLM."""
    return {
        "architectures": ["LlamaForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
        "bos_token_id": s["bos_token_id"], "eos_token_id": s["eos_token_id"],
        "head_dim": s["hidden_size"] // s["num_attention_heads"], "hidden_act": "silu",
        "hidden_size": s["hidden_size"], "initializer_range": 0.02,
        "intermediate_size": s["intermediate_size"],
        "max_position_embeddings": s["max_position_embeddings"], "mlp_bias": False,
        "model_type": "llama", "num_attention_heads": s["num_attention_heads"],
        "num_hidden_layers": s["num_hidden_layers"],
        "num_key_value_heads": s["num_key_value_heads"], "pretraining_tp": 1,
        "rms_norm_eps": s["rms_norm_eps"], "rope_scaling": s["rope_scaling"],
        "rope_theta": s["rope_theta"], "tie_word_embeddings": s["tie_word_embeddings"],
        "torch_dtype": dtype, "transformers_version": "4.45.0", "use_cache": True,
        "vocab_size": s["vocab_size"],
    }


def weight_shapes(s):
    """[(name, shape, is_norm)] in HF's order."""
    d, f, v = s["hidden_size"], s["intermediate_size"], s["vocab_size"]
    dh = d // s["num_attention_heads"]
    kv = s["num_key_value_heads"] * dh
    out = [("model.embed_tokens.weight", (v, d), False)]
    for i in range(s["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "self_attn.q_proj.weight", (d, d), False),
                (p + "self_attn.k_proj.weight", (kv, d), False),
                (p + "self_attn.v_proj.weight", (kv, d), False),
                (p + "self_attn.o_proj.weight", (d, d), False),
                (p + "mlp.gate_proj.weight", (f, d), False),
                (p + "mlp.up_proj.weight", (f, d), False),
                (p + "mlp.down_proj.weight", (d, f), False),
                (p + "input_layernorm.weight", (d,), True),
                (p + "post_attention_layernorm.weight", (d,), True)]
    out.append(("model.norm.weight", (d,), True))
    if not s["tie_word_embeddings"]:
        out.append(("lm_head.weight", (v, d), False))
    return out


def write_safetensors(path, shapes, dtype, seed, cheap=False):
    """Streams the tensors: header first (all offsets known from the shapes), then each one."""
    code, size = ("BF16", 2) if dtype == "bfloat16" else ("F32", 4)
    header, offset = {}, 0
    for name, shape, _ in shapes:
        n = size
        for x in shape:
            n *= x
        header[name] = {"dtype": code, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    gen = torch.Generator().manual_seed(seed)
    # --cheap: every tensor cut from one seeded 16M-value buffer (timing only: 8B in a minute)
    pool = torch.randn(1 << 24, generator=gen).mul_(0.02) if cheap else None
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape, is_norm in shapes:
            if is_norm:
                t = torch.ones(shape)
            elif cheap:
                n = 1
                for x in shape:
                    n *= x
                t = pool.repeat((n + pool.numel() - 1) // pool.numel())[:n].view(shape)
            else:
                t = torch.randn(shape, generator=gen).mul_(0.02)
            if dtype == "bfloat16":
                t = t.to(torch.bfloat16).view(torch.int16)
            f.write(t.numpy().tobytes())  # x86/ARM are little-endian, as safetensors wants
            del t
    return offset


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shape", choices=sorted(SHAPES))
    ap.add_argument("out_dir")
    ap.add_argument("--dtype", choices=["float32", "bfloat16"], help="default: the shape's")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer-from", metavar="DIR")
    ap.add_argument("--cheap", action="store_true",
                    help="cut every weight from one random 16M-value buffer (fast; for timing only)")
    ap.add_argument("--layers", type=int, help=argparse.SUPPRESS)  # fewer layers, for tests
    args = ap.parse_args()

    s = dict(SHAPES[args.shape])
    if args.layers is not None:
        s["num_hidden_layers"] = args.layers
    dtype = args.dtype or s["dtype"]
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "config.json"), "w") as f:
        json.dump(hf_config(s, dtype), f, indent=2)
        f.write("\n")
    nbytes = write_safetensors(os.path.join(args.out_dir, "model.safetensors"),
                               weight_shapes(s), dtype, args.seed, args.cheap)
    copied = []
    if args.tokenizer_from:
        for name in TOKENIZER_FILES:
            src = os.path.join(args.tokenizer_from, name)
            if os.path.isfile(src):
                shutil.copyfile(src, os.path.join(args.out_dir, name))
                copied.append(name)
        if not copied:
            ap.error(f"no tokenizer file in {args.tokenizer_from}")
    print(f"{args.out_dir}: {args.shape}, {s['num_hidden_layers']} layers, {dtype}, "
          f"{nbytes / 1e9:.2f} GB of weights, seed {args.seed}"
          + (f", tokenizer: {', '.join(copied)}" if copied else ""))


if __name__ == "__main__":
    main()
