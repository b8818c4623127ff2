"""A DeepSeek-V2-Lite-shaped checkpoint cut to two layers, for timing PosLens's forward beside HF
transformers' at length (docs/performance.md, "DeepSeek's latent attention at length"):

  ~/.local/share/poslens/venv/bin/python tools/bench_deepseek_forward.py write DIR
  ~/.local/share/poslens/venv/bin/python tools/bench_deepseek_forward.py ids T FILE
  ~/.local/share/poslens/venv/bin/python tools/bench_deepseek_forward.py write-fp8 DIR FP8DIR
  farm-bench -n 2 --timeout 585 --vs "$VENV/bin/python tools/bench_deepseek_forward.py hf DIR FILE float32" -- \\
      build-cuda/app/cli/poslens-cli run DIR --dtype float32 --tokens-file FILE --capture ln_final.hook_normalized \\
      --out /tmp/ds.h5

DeepSeek-V2-Lite's sizes (hidden 2048, 16 heads, q_proj without a low-rank q, kv_lora_rank 512, 64 rotary +
128 no-position channels per head, values 128, YaRN factor 40 with mscale 0.707) with a 1024-token
vocabulary: layer 0 dense (intermediate 10944), layer 1 a mixture of 64 experts (1408 wide, top 6, 2 shared)
— 0.7B parameters, random (HF's init), stored bf16. `hf` loads it with DeepseekV2ForCausalLM.from_pretrained
(SDPA attention) in DTYPE (default float32) and runs the same ids, printing the last position's top token, as
PosLens's run does (`--capture ln_final.hook_normalized` keeps its output O(T·d_model)).
`write-fp8` writes DIR's model as DeepSeek-V3's release stores its weights: every layer projection F8_E4M3
with a float32 scale per 128×128 block, quantised by HF's own Fp8Quantize (which leaves the 576-row
kv_a_proj_with_mqa unquantised: 128 does not divide it); `hf` on that folder dequantises on load.
"""
import argparse
import os

import torch
import transformers


def write(out: str) -> None:
    config = transformers.DeepseekV2Config(
        vocab_size=1024, hidden_size=2048, intermediate_size=10944, moe_intermediate_size=1408,
        num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=16, q_lora_rank=None, kv_lora_rank=512,
        qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128, n_routed_experts=64, n_shared_experts=2,
        num_experts_per_tok=6, first_k_dense_replace=1, topk_method="greedy", max_position_embeddings=163840,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0, "beta_fast": 32.0,
                         "beta_slow": 1.0, "mscale": 0.707, "mscale_all_dim": 0.707,
                         "original_max_position_embeddings": 4096},
        tie_word_embeddings=False, bos_token_id=0, eos_token_id=1)
    torch.manual_seed(7)
    model = transformers.DeepseekV2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    print(f"wrote {out}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters")


def write_fp8(model_dir: str, out: str) -> None:
    import json
    import shutil
    import types
    from safetensors.torch import load_file, save_file
    from transformers.integrations.finegrained_fp8 import Fp8Quantize
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    config["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3",
                                     "weight_block_size": [128, 128]}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    shutil.copy(os.path.join(model_dir, "generation_config.json"), out)
    op = Fp8Quantize(types.SimpleNamespace(quantization_config=transformers.FineGrainedFP8Config()))
    stored = {}
    for name, t in load_file(os.path.join(model_dir, "model.safetensors")).items():
        projection = ".layers." in name and name.endswith(".weight") and t.ndim == 2 and not name.endswith(".gate.weight")
        stored.update(op._quantize_one(name, t) if projection else {name: t})
    save_file(stored, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    print(f"wrote {out}: {sum(t.dtype == torch.float8_e4m3fn for t in stored.values())} F8_E4M3 weights")


def ids(T: int, path: str) -> None:
    gen = torch.Generator().manual_seed(T)
    with open(path, "w") as f:
        f.write(" ".join(str(i) for i in torch.randint(2, 1024, (T,), generator=gen).tolist()) + "\n")


def hf(model_dir: str, ids_path: str, dtype: str = "float32") -> None:
    with open(ids_path) as f:
        tokens = torch.tensor([[int(x) for x in f.read().split()]])
    model = transformers.DeepseekV2ForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype),
                                                               attn_implementation="sdpa").eval()
    with torch.no_grad():
        logits = model(input_ids=tokens, logits_to_keep=1).logits
    print(tokens.shape[1], "tokens, next token", logits[0, -1].argmax().item())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["write", "write-fp8", "ids", "hf"])
    ap.add_argument("args", nargs="+")
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    if a.what == "write":
        write(a.args[0])
    elif a.what == "write-fp8":
        write_fp8(*a.args)
    elif a.what == "ids":
        ids(int(a.args[0]), a.args[1])
    else:
        hf(*a.args)


if __name__ == "__main__":
    main()
