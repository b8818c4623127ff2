#!/usr/bin/env python3
"""Writes tests/data/models/deepseek_v3_fp8/: tests/data/models/deepseek_v3 block-quantised to FP8 as
DeepSeek-V3, Kimi K2 and the Qwen3-*-FP8 models ship (config.json quantization_config {"quant_method":
"fp8", "weight_block_size": [rows, cols]}; every linear projection's weight F8_E4M3 beside a float32
`weight_scale_inv` per block), and the outputs HF transformers computes for that folder.

    ~/.local/share/poslens/venv/bin/python tools/make_fp8_reference.py [--out tests/data/models]

The quantisation is HF's own (integrations.finegrained_fp8.Fp8Quantize, as `save_pretrained` of an FP8
model writes it) with weight_block_size [2, 4]: row blocks of 2, column blocks of 4, so a transposed
reading fails. Like HF, it leaves a weight whose shape the block does not divide unquantised (kv_b_proj,
10 columns), so the file mixes F8_E4M3 and F32 as real releases do (their norms, router, embeddings).
The multi-token-prediction layer the deepseek_v3 file carries is quantised too. The reference is what
HF computes after loading the folder with from_pretrained on a CPU (it dequantises: codes · scale_inv of
their block, float32), eager attention, float32 — checked here to be PyTorch's float8_e4m3fn values times
the scales, exactly.

reference.safetensors as tools/make_arch_reference_recent.py writes it, router_top.{l} as
tools/make_arch_reference_deepseek.py, and e4m3_values float32 [256]: each byte's value as PyTorch reads
it as float8_e4m3fn (NaN for 0x7F and 0xFF).
"""
import argparse
import json
import os
import shutil
import types
from collections import OrderedDict

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers.integrations.finegrained_fp8 import Fp8Quantize

from make_arch_reference_deepseek import routed
from make_arch_reference_recent import REPO

torch.set_num_threads(1)
BLOCK = [2, 4]


def quantise(tensors: dict) -> dict:
    """Every layer's 2-D projection weight (not the router's mlp.gate.weight) through HF's Fp8Quantize
    (weight_block_size BLOCK), as DeepSeek-V3's release has them; the rest as they are."""
    config = transformers.FineGrainedFP8Config(weight_block_size=tuple(BLOCK))
    op = Fp8Quantize(types.SimpleNamespace(quantization_config=config))
    out = {}
    for name, t in tensors.items():
        projection = ".layers." in name and name.endswith(".weight") and t.ndim == 2 and not name.endswith(".gate.weight")
        out.update(op._quantize_one(name, t) if projection else {name: t})
    return out


def check_dequantised(model, stored: dict) -> None:
    """HF's loaded weights = float8_e4m3fn codes · scale_inv of their block (float32), bit for bit."""
    params = dict(model.named_parameters())
    checked = 0
    for name, codes in stored.items():
        if codes.dtype != torch.float8_e4m3fn or name not in params:
            continue  # the MTP layer (HF does not build it) and fused experts are checked via the logits
        scale = stored[name[: -len("weight")] + "weight_scale_inv"]
        mine = codes.float() * scale.repeat_interleave(BLOCK[0], 0).repeat_interleave(BLOCK[1], 1)
        assert torch.equal(params[name].detach(), mine), name
        checked += 1
    print(f"  HF's dequantised weights equal codes x scale_inv on {checked} tensors")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests/data/models"))
    args = ap.parse_args()
    source = os.path.join(args.out, "deepseek_v3")
    d = os.path.join(args.out, "deepseek_v3_fp8")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(source, "config.json")) as f:
        config = json.load(f)
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic",
                                     "fmt": "e4m3", "weight_block_size": BLOCK}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copy(os.path.join(source, "generation_config.json"), d)
    stored = quantise(load_file(os.path.join(source, "model.safetensors")))
    save_file(stored, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    n_fp8 = sum(t.dtype == torch.float8_e4m3fn for t in stored.values())
    print(f"deepseek_v3_fp8: {n_fp8} F8_E4M3 weights of {len(stored)} tensors")

    model = transformers.DeepseekV3ForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                               attn_implementation="eager").eval()
    check_dequantised(model, stored)
    ids = load_file(os.path.join(source, "reference.safetensors"))["input_ids"]
    with torch.no_grad():
        o = model(input_ids=ids, output_attentions=True)
    ref = OrderedDict(input_ids=ids.contiguous(), logits=o.logits.float().contiguous())
    for l, a in enumerate(o.attentions):
        ref[f"attentions.{l}"] = a.float().contiguous()
    ref.update(routed(model, ids))
    ref["e4m3_values"] = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(torch.float8_e4m3fn).float()
    src = (f"transformers {transformers.__version__} DeepseekV3ForCausalLM.from_pretrained (fp8, dequantised on "
           f"CPU), torch {torch.__version__}, eager")
    save_file(ref, os.path.join(d, "reference.safetensors"),
              metadata={"format": "poslens-arch-reference", "case": "deepseek_v3_fp8", "source": src})
    print(f"deepseek_v3_fp8: logits {tuple(o.logits.shape)} -> {d}")


if __name__ == "__main__":
    main()
