#!/usr/bin/env python3
"""Writes tests/data/models/qwen3_fp8_compressed/: tests/data/models/qwen3 quantised to FP8 by the
compressed-tensors library as llm-compressor saves it (RedHat / Neural Magic's "-FP8", "-FP8-dynamic"
and "-FP8-block" releases: config.json quantization_config {"quant_method": "compressed-tensors",
"format": "float-quantized", "config_groups": ...}; each quantised projection's weight F8_E4M3 beside
a `weight_scale`), and the outputs HF transformers computes for that folder.

    ~/.local/share/poslens/venv/bin/python tools/make_compressed_fp8_reference.py [--out tests/data/models]

One file holds the three weight strategies those releases use, one config group each (real releases
use one): layer 0's projections per output channel with dynamic per-token activations (the preset
FP8_DYNAMIC), layer 1's attention per tensor with static per-tensor input scales (the preset FP8; calibrated on the
reference's ids),
layer 1's MLP in blocks of [16, 12] (rows != columns, partial last blocks: 48 rows x 32 columns)
with dynamic groups of 16 as activations (FP8_BLOCK's shape). lm_head stays float32, as in releases.
The scales are compressed-tensors' own `calculate_qparams` of each channel's / tensor's / block's
min and max (llm-compressor's min-max observer), the codes its `ModelCompressor.compress_model`.

The reference is HF's forward after `from_pretrained` loads the folder on a CPU: compressed-tensors
decompresses every weight to code . scale (float32) on the first forward (checked here: the loaded
weights equal PyTorch's float8_e4m3fn values times their scale, bit for bit). Its projections also
fake-quantise their inputs to FP8 as the config asks; that is switched off for the reference
(`quantization_enabled = False`, compressed-tensors' own switch), so the reference is the forward of
the dequantised weights, which is what PosLens runs. The script prints how far the logits move with
the activations quantised.
"""
import argparse
import json
import os
import shutil
from collections import OrderedDict

import compressed_tensors
import torch
import transformers
from compressed_tensors.compressors import ModelCompressor
from compressed_tensors.quantization import (QuantizationArgs, QuantizationConfig, QuantizationScheme,
                                             QuantizationStatus, apply_quantization_config)
from compressed_tensors.quantization.quant_scheme import FP8, FP8_DYNAMIC
from compressed_tensors.quantization.utils import calculate_qparams
from safetensors.torch import load_file, save_file

from make_arch_reference_recent import REPO

torch.set_num_threads(1)
BLOCK = [16, 12]


def config() -> QuantizationConfig:
    block = QuantizationArgs(num_bits=8, type="float", strategy="block", symmetric=True, dynamic=False,
                             block_structure=BLOCK)
    groups = QuantizationArgs(num_bits=8, type="float", strategy="group", group_size=16, symmetric=True,
                              dynamic=True)
    return QuantizationConfig(config_groups={
        "channel": QuantizationScheme(targets=[r"re:.*layers\.0\..*"], **FP8_DYNAMIC),
        "tensor": QuantizationScheme(targets=[r"re:.*layers\.1\.self_attn\..*"], **FP8),
        "block": QuantizationScheme(targets=[r"re:.*layers\.1\.mlp\..*"], weights=block, input_activations=groups),
    }, ignore=["lm_head"], format="float-quantized")


def min_max(w: torch.Tensor, args: QuantizationArgs):
    """Each scale's range of `w` [R, C] as the strategy tiles it."""
    if args.strategy == "tensor":
        return w.min().reshape(1), w.max().reshape(1)
    if args.strategy == "channel":
        return w.amin(1, keepdim=True), w.amax(1, keepdim=True)
    br, bc = args.block_structure
    padded = torch.nn.functional.pad(w, (0, (-w.shape[1]) % bc, 0, (-w.shape[0]) % br))
    blocks = padded.reshape(padded.shape[0] // br, br, padded.shape[1] // bc, bc)
    return blocks.amin((1, 3)), blocks.amax((1, 3))


def input_ranges(model, ids: torch.Tensor) -> dict:
    """Each linear projection's largest input magnitude on `ids` (llm-compressor's static calibration)."""
    ranges, hooks = {}, []
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Linear):
            hooks.append(module.register_forward_pre_hook(
                lambda m, args, name=name: ranges.__setitem__(name, args[0].abs().max())))
    with torch.no_grad():
        model(input_ids=ids)
    for h in hooks:
        h.remove()
    return ranges


def quantise(model, ids: torch.Tensor) -> ModelCompressor:
    """Scales from each weight's min and max (calculate_qparams), static input scales from the inputs' range
    on `ids`, then the weights compressed to F8_E4M3 codes."""
    ranges = input_ranges(model, ids)
    apply_quantization_config(model, config())
    for name, module in model.named_modules():
        scheme = getattr(module, "quantization_scheme", None)
        if scheme is None:
            continue
        scale, _ = calculate_qparams(*min_max(module.weight.data, scheme.weights), scheme.weights)
        module.weight_scale.data = scale.to(module.weight_scale.dtype).reshape(module.weight_scale.shape)
        if hasattr(module, "input_scale"):
            scale, _ = calculate_qparams(-ranges[name].reshape(1), ranges[name].reshape(1), scheme.input_activations)
            module.input_scale.data = scale.to(module.input_scale.dtype).reshape(module.input_scale.shape)
        module.quantization_status = QuantizationStatus.FROZEN
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    return compressor


def check_dequantised(model, stored: dict) -> None:
    """HF's loaded weights = float8_e4m3fn codes . weight_scale of their channel / tensor / block, bit for bit."""
    params = dict(model.named_parameters())
    for name, codes in stored.items():
        if codes.dtype != torch.float8_e4m3fn:
            continue
        scale = stored[name + "_scale"]
        R, C = codes.shape
        rows, cols = -(-R // scale.shape[0]), -(-C // scale.shape[-1]) if scale.ndim == 2 else C
        if name.startswith("model.layers.1.mlp."):
            rows, cols = BLOCK
        full = scale.reshape(-1, 1) if scale.ndim == 1 else scale
        full = full.repeat_interleave(rows, 0)[:R].repeat_interleave(cols, 1)[:, :C]
        assert torch.equal(params[name].detach(), codes.float() * full), name
    print("  HF's decompressed weights equal codes x weight_scale, every F8_E4M3 tensor")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(REPO, "tests/data/models"))
    args = ap.parse_args()
    source = os.path.join(args.out, "qwen3")
    d = os.path.join(args.out, "qwen3_fp8_compressed")
    shutil.rmtree(d, ignore_errors=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32).eval()
    ids = load_file(os.path.join(source, "reference.safetensors"))["input_ids"]
    compressor = quantise(model, ids)
    model.save_pretrained(d)
    compressor.update_config(d)
    stored = load_file(os.path.join(d, "model.safetensors"))
    n_fp8 = sum(t.dtype == torch.float8_e4m3fn for t in stored.values())
    print(f"qwen3_fp8_compressed: {n_fp8} F8_E4M3 weights of {len(stored)} tensors")

    loaded = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32,
                                                               attn_implementation="eager").eval()
    with torch.no_grad():
        quantised_activations = loaded(input_ids=ids).logits  # its first forward decompresses the weights
        switched_off = 0
        for module in loaded.modules():
            if getattr(module, "quantization_scheme", None) is not None:
                module.quantization_enabled = False  # compressed-tensors' forward: no activation QDQ
                switched_off += 1
        o = loaded(input_ids=ids, output_attentions=True)
    check_dequantised(loaded, stored)
    print(f"  activation quantisation switched off in {switched_off} projections; with it on the logits move by "
          f"{(quantised_activations - o.logits).abs().max():.4f}")
    ref = OrderedDict(input_ids=ids.contiguous(), logits=o.logits.float().contiguous())
    for l, a in enumerate(o.attentions):
        ref[f"attentions.{l}"] = a.float().contiguous()
    src = (f"transformers {transformers.__version__} Qwen3ForCausalLM.from_pretrained (compressed-tensors "
           f"{compressed_tensors.__version__}, decompressed on CPU), "
           f"torch {torch.__version__}, eager")
    save_file(ref, os.path.join(d, "reference.safetensors"),
              metadata={"format": "poslens-arch-reference", "case": "qwen3_fp8_compressed", "source": src})
    original = load_file(os.path.join(source, "reference.safetensors"))["logits"]
    print(f"  logits: max |dequantised - float32 original| {(o.logits - original).abs().max():.4f}")
    for name in os.listdir(d):
        os.chmod(os.path.join(d, name), 0o644)  # save_pretrained and save_file write 0600
    print(f"qwen3_fp8_compressed: logits {tuple(o.logits.shape)} -> {d}")


if __name__ == "__main__":
    main()
