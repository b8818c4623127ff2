"""A gemma-4-E2B-shaped checkpoint cut to six layers (or a gemma-4-26B-A4B-shaped one cut to two), for timing
PosLens's forward beside HF transformers' at length (docs/performance.md, "Gemma 4 at length"):

  ~/.local/share/poslens/venv/bin/python tools/bench_gemma4_forward.py write DIR      (or write-moe DIR)
  ~/.local/share/poslens/venv/bin/python tools/bench_gemma4_forward.py ids T FILE
  farm-bench -n 2 --timeout 585 --vs "$VENV/bin/python tools/bench_gemma4_forward.py hf DIR FILE float32" -- \\
      build-cuda/app/cli/poslens-cli run DIR --dtype float32 --tokens-file FILE --capture ln_final.hook_normalized \\
      --out /tmp/g4.h5

gemma-4-E2B's sizes (hidden 1536, 8 heads, 1 KV head; local heads of 256 with a 512-token window and RoPE base
1e4, global heads of 512 with proportional RoPE over a quarter of their components, base 1e6; MLP 6144, twice
as wide on the KV-shared layers; per-layer inputs of 256) on six layers — local, local, global, local, local,
global, the last two reusing the keys and values of layers 3 and 2 — with a 4096-token vocabulary: 0.2B
parameters, random (HF's init, layer scalars 1), stored bf16. `hf` loads it with Gemma4ForCausalLM.from_pretrained
(SDPA attention) in DTYPE (default float32) and runs the same ids, printing the last position's top token, as
PosLens's run does (`--capture ln_final.hook_normalized` keeps its output O(T·d_model)).

`write-moe`: gemma-4-26B-A4B's sizes (hidden 2816, 16 heads; local heads of 256 with 8 KV heads and a 1024-token
window; global heads of 512 with 2 KV heads whose values are their keys' projection; a dense MLP of 2112 beside
128 experts of 704, top 8) on two layers, local and global, with a 4096-token vocabulary: 1.6B parameters (the
experts 1.5B), random, stored bf16.
"""
import argparse
import os

import torch
import transformers


def write(out: str) -> None:
    config = transformers.Gemma4TextConfig(
        vocab_size=4096, vocab_size_per_layer_input=4096, hidden_size=1536, intermediate_size=6144,
        num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=1, head_dim=256, global_head_dim=512,
        sliding_window=512, layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
        num_kv_shared_layers=2, use_double_wide_mlp=True, hidden_size_per_layer_input=256,
        final_logit_softcapping=30.0, max_position_embeddings=131072, bos_token_id=2, eos_token_id=1, pad_token_id=0)
    torch.manual_seed(7)
    model = transformers.Gemma4ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    print(f"wrote {out}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters")


def write_moe(out: str) -> None:
    config = transformers.Gemma4TextConfig(
        vocab_size=4096, hidden_size=2816, intermediate_size=2112, num_hidden_layers=2, num_attention_heads=16,
        num_key_value_heads=8, head_dim=256, global_head_dim=512, num_global_key_value_heads=2, attention_k_eq_v=True,
        sliding_window=1024, layer_types=["sliding_attention", "full_attention"], hidden_size_per_layer_input=0,
        enable_moe_block=True, num_experts=128, top_k_experts=8, moe_intermediate_size=704,
        final_logit_softcapping=30.0, max_position_embeddings=131072, bos_token_id=2, eos_token_id=1, pad_token_id=0)
    torch.manual_seed(7)
    model = transformers.Gemma4ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)
    print(f"wrote {out}: {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters")


def ids(T: int, path: str) -> None:
    gen = torch.Generator().manual_seed(T)
    with open(path, "w") as f:
        f.write(" ".join(str(i) for i in torch.randint(3, 4096, (T,), generator=gen).tolist()) + "\n")


def hf(model_dir: str, ids_path: str, dtype: str = "float32") -> None:
    with open(ids_path) as f:
        tokens = torch.tensor([[int(x) for x in f.read().split()]])
    model = transformers.Gemma4ForCausalLM.from_pretrained(model_dir, dtype=getattr(torch, dtype),
                                                           attn_implementation="sdpa").eval()
    with torch.no_grad():
        logits = model(input_ids=tokens, logits_to_keep=1, use_cache=False).logits
    print(tokens.shape[1], "tokens, next token", logits[0, -1].argmax().item())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["write", "write-moe", "ids", "hf"])
    ap.add_argument("args", nargs="+")
    a = ap.parse_args()
    torch.set_num_threads(os.cpu_count() or 1)
    if a.what == "write":
        write(a.args[0])
    elif a.what == "write-moe":
        write_moe(a.args[0])
    elif a.what == "ids":
        ids(int(a.args[0]), a.args[1])
    else:
        hf(*a.args)


if __name__ == "__main__":
    main()
