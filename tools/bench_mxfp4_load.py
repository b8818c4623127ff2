"""Writes a gpt-oss-20b-shaped MXFP4 checkpoint cut to a few layers, for timing how PosLens and HF
transformers load it side by side (docs/performance.md, "Loading MXFP4 experts"):

  ~/.local/share/poslens/venv/bin/python tools/bench_mxfp4_load.py write DIR [--layers 1]
  farm-bench -n 3 --timeout 900 -- build/app/cli/poslens-cli run DIR --dtype bfloat16 --tokens 5,6,7,8,9 --out /tmp/mx.h5 \\
      --vs "$HOME/.local/share/poslens/venv/bin/python tools/bench_mxfp4_load.py hf DIR"

gpt-oss-20b's sizes (hidden 2880, 32 experts of intermediate 2880, 64 heads / 8 kv heads of 64) with a
1024-token vocabulary, so the experts (MXFP4 `*_blocks` + `*_scales`, random bytes, scales 118-122) are
nearly the whole file. `hf` loads it with GptOssForCausalLM.from_pretrained on the CPU, which (without a
GPU for the MXFP4 kernels) dequantises the experts to bf16, and runs the same five tokens `poslens-cli run
--dtype bfloat16 --tokens 5,6,7,8,9` does.
"""
import argparse
import json
import os

import torch
import transformers
from safetensors.torch import save_file


def write(out: str, layers: int) -> None:
    config = transformers.GptOssConfig(
        vocab_size=1024, hidden_size=2880, intermediate_size=2880, num_hidden_layers=layers,
        num_attention_heads=64, num_key_value_heads=8, head_dim=64, num_local_experts=32,
        num_experts_per_tok=4, max_position_embeddings=131072, tie_word_embeddings=False)
    E, d, m = 32, 2880, 2880
    gen = torch.Generator().manual_seed(7)
    model = transformers.GptOssForCausalLM(config)  # small tensors as HF names them (random init)
    tensors = {k: v.detach().to(torch.bfloat16).contiguous() for k, v in model.state_dict().items()
               if not k.endswith(("experts.gate_up_proj", "experts.down_proj"))}
    for l in range(layers):
        for proj, rows, cols in (("gate_up_proj", 2 * m, d), ("down_proj", d, m)):
            name = f"model.layers.{l}.mlp.experts.{proj}"
            tensors[name + "_blocks"] = torch.randint(0, 256, (E, rows, cols // 32, 16), generator=gen,
                                                      dtype=torch.uint8)
            tensors[name + "_scales"] = torch.randint(118, 123, (E, rows, cols // 32), generator=gen,
                                                      dtype=torch.uint8)
    os.makedirs(out, exist_ok=True)
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    cfg = config.to_dict()
    cfg["architectures"] = ["GptOssForCausalLM"]
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    print(f"wrote {out}: {layers} layer(s), {sum(t.numel() for t in tensors.values()) / 1e6:.0f}M stored elements")


def hf_load(path: str) -> None:
    model = transformers.GptOssForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([[5, 6, 7, 8, 9]])).logits
    print(sum(p.numel() for p in model.parameters()), "parameters, next token", logits[0, -1].argmax().item())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["write", "hf"])
    ap.add_argument("dir")
    ap.add_argument("--layers", type=int, default=1)
    a = ap.parse_args()
    write(a.dir, a.layers) if a.what == "write" else hf_load(a.dir)


if __name__ == "__main__":
    main()
