"""An HF Llama folder quantised to FP8 as llm-compressor's "-FP8-dynamic" releases ship it, for timing how
PosLens and HF transformers load and run it side by side (docs/performance.md, "Loading FP8 files"):

  /usr/bin/python3 tools/make_random_hf_model.py llama-3.2-1b SRC
  ~/.local/share/poslens/venv/bin/python tools/bench_fp8_compressed_load.py write SRC DIR
  farm-bench -n 2 --timeout 900 -- build-cuda/app/cli/poslens-cli run DIR --dtype bfloat16 --tokens 5,6,7,8,9 \\
      --out /tmp/ct.h5 --vs "$HOME/.local/share/poslens/venv/bin/python tools/bench_fp8_compressed_load.py hf DIR"

`write` quantises every linear projection but lm_head with compressed-tensors' preset FP8_DYNAMIC (F8_E4M3
weights, a bf16 `weight_scale` per output channel from each row's min and max, `calculate_qparams`; dynamic
per-token FP8 activations, no activation scales stored) and saves the folder as llm-compressor does
(`ModelCompressor.compress_model`, `save_pretrained`, `update_config`). `hf` loads it with
AutoModelForCausalLM.from_pretrained in bfloat16 on the CPU, switches compressed-tensors' activation
quantisation off (PosLens runs the dequantised weights, activations unquantised), runs the five tokens
`poslens-cli run --tokens 5,6,7,8,9` does (its first forward decompresses the weights) and prints the
last position's top token.
"""
import argparse
import time

import torch
import transformers
from compressed_tensors.compressors import ModelCompressor
from compressed_tensors.quantization import (QuantizationConfig, QuantizationScheme, QuantizationStatus,
                                             apply_quantization_config)
from compressed_tensors.quantization.quant_scheme import FP8_DYNAMIC
from compressed_tensors.quantization.utils import calculate_qparams


def write(source: str, out: str) -> None:
    model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.bfloat16).eval()
    config = QuantizationConfig(config_groups={"group_0": QuantizationScheme(targets=["Linear"], **FP8_DYNAMIC)},
                                ignore=["lm_head"], format="float-quantized")
    apply_quantization_config(model, config)
    for module in model.modules():
        if getattr(module, "quantization_scheme", None) is None:
            continue
        w = module.weight.data
        scale, _ = calculate_qparams(w.amin(1, keepdim=True), w.amax(1, keepdim=True), module.quantization_scheme.weights)
        module.weight_scale.data = scale.to(module.weight_scale.dtype).reshape(module.weight_scale.shape)
        module.quantization_status = QuantizationStatus.FROZEN
    compressor = ModelCompressor.from_pretrained_model(model)
    compressor.compress_model(model)
    model.save_pretrained(out)
    compressor.update_config(out)
    print(f"FP8-dynamic copy of {source} -> {out}")


def hf(model_dir: str) -> None:
    t0 = time.time()
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).eval()
    for module in model.modules():
        if getattr(module, "quantization_scheme", None) is not None:
            module.quantization_enabled = False
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([[5, 6, 7, 8, 9]])).logits
    print(f"HF: top token {int(logits[0, -1].argmax())} in {time.time() - t0:.1f} s")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write")
    w.add_argument("source")
    w.add_argument("out")
    h = sub.add_parser("hf")
    h.add_argument("model_dir")
    args = ap.parse_args()
    if args.cmd == "write":
        write(args.source, args.out)
    else:
        hf(args.model_dir)


if __name__ == "__main__":
    main()
