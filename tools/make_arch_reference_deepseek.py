#!/usr/bin/env python3
"""Writes tests/data/models/deepseek_v2/ and deepseek_v3/: small random DeepSeek models saved by HF
transformers itself (save_pretrained), with the outputs its own modeling code (modeling_deepseek_v2 / _v3,
eager attention, float32) computes for them — multi-head latent attention with decoupled RoPE and YaRN,
dense layers before mixture-of-experts layers, V2's and V3's grouped routing.

    ~/.local/share/poslens/venv/bin/python tools/make_arch_reference_deepseek.py [--out tests/data/models]
        [--only CASE ...]

reference.safetensors as tools/make_arch_reference_recent.py writes it, plus router_top.{l} int64 [T, k]
for each mixture-of-experts layer: each token's experts as HF's router chose them (sorted ascending).
"""
import os

import torch
import transformers
from safetensors.torch import load_file, save_file

from make_arch_reference_recent import main, randomize_, save

torch.set_num_threads(1)

# Shared shapes: 4 heads of 8 rotary + 6 no-position channels (d_head 14), values 5 wide; a latent of 10;
# layer 0 dense (40 wide), layers 1-3 8 experts 12 wide in 4 groups, 2 of them kept, top 3, and 2 shared
# experts (one MLP 24 wide).
SIZES = dict(vocab_size=96, hidden_size=32, intermediate_size=40, moe_intermediate_size=12, num_hidden_layers=4,
             num_attention_heads=4, num_key_value_heads=4, kv_lora_rank=10, qk_rope_head_dim=8, qk_nope_head_dim=6,
             v_head_dim=5, n_routed_experts=8, n_shared_experts=2, num_experts_per_tok=3, n_group=4, topk_group=2,
             first_k_dense_replace=1, max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False,
             bos_token_id=1, pad_token_id=0, eos_token_id=2)


def routed(model, ids: torch.Tensor) -> dict:
    """router_top.{l} of each MoE layer (HF's TopkRouter indices, sorted), and the smallest gap between a
    token's k-th and (k+1)-th choice score, printed: the margin a float32 re-computation must stay inside."""
    picks = {}
    hooks = [layer.mlp.gate.register_forward_hook(lambda m, i, o, l=l: picks.__setitem__(l, (i[0], o)))
             for l, layer in enumerate(model.model.layers) if hasattr(layer.mlp, "gate")]
    with torch.no_grad():
        model(input_ids=ids)
    for h in hooks:
        h.remove()
    for l, (_, o) in picks.items():
        print(f"  layer {l}: smallest gap between groups kept and dropped {group_gap(model, l, o[0]):.4f}, "
              f"between the k-th and the next expert {expert_gap(model, l, o[0]):.4f}")
    return {f"router_top.{l}": o[2].sort(-1).values.contiguous() for l, (_, o) in picks.items()}


def choice_scores(model, l: int, logits: torch.Tensor) -> torch.Tensor:
    """What each router ranks experts by: V2 softmax(logits), V3 sigmoid(logits) + correction bias."""
    gate = model.model.layers[l].mlp.gate
    if hasattr(gate, "e_score_correction_bias"):
        return logits.sigmoid() + gate.e_score_correction_bias
    return logits.softmax(-1)


def group_scores(model, l: int, scores: torch.Tensor) -> torch.Tensor:
    grouped = scores.view(scores.shape[0], 4, 2)
    return grouped.topk(2, -1).values.sum(-1) if hasattr(model.model.layers[l].mlp.gate, "e_score_correction_bias") \
        else grouped.max(-1).values


def group_gap(model, l: int, logits: torch.Tensor) -> float:
    g = group_scores(model, l, choice_scores(model, l, logits)).sort(-1, descending=True).values
    return (g[:, 1] - g[:, 2]).min().item()  # topk_group 2


def expert_gap(model, l: int, logits: torch.Tensor) -> float:
    s = choice_scores(model, l, logits)
    kept = group_scores(model, l, s).topk(2, -1).indices
    mask = torch.zeros(s.shape[0], 4, dtype=torch.bool).scatter_(1, kept, True).repeat_interleave(2, 1)
    ranked = s.masked_fill(~mask, float("-inf")).sort(-1, descending=True).values
    return (ranked[:, 2] - ranked[:, 3]).min().item()  # top 3


def randomize_router_bias_(model, seed: int) -> None:
    """V3's e_score_correction_bias (a buffer, which randomize_ leaves at 0): N(0, 0.1^2), enough to move
    some choices away from the sigmoid's own top-k."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for layer in model.model.layers:
            if hasattr(layer.mlp, "gate"):
                layer.mlp.gate.e_score_correction_bias.copy_(0.1 * torch.randn(8, generator=gen))


def add_mtp_layer(out: str, case: str) -> None:
    """A multi-token-prediction layer after the stack, as DeepSeek-V3's files hold (model.layers.61.* of
    its 61 layers; HF ignores it): layer 3's tensors again as layer 4, plus eh_proj / enorm / hnorm."""
    path = os.path.join(out, case, "model.safetensors")
    tensors = load_file(path)
    for name in [n for n in tensors if n.startswith("model.layers.3.")]:
        tensors[name.replace("model.layers.3.", "model.layers.4.", 1)] = tensors[name].clone()
    tensors["model.layers.4.eh_proj.weight"] = torch.zeros(32, 64)
    tensors["model.layers.4.enorm.weight"] = torch.ones(32)
    tensors["model.layers.4.hnorm.weight"] = torch.ones(32)
    save_file(tensors, path, metadata={"format": "pt"})


def case_deepseek_v3(out: str) -> None:
    """DeepseekV3ForCausalLM: low-rank q (q_lora_rank 12), MLA as SIZES, interleaved RoPE on the rotary
    channels with YaRN (factor 4 over 16 positions, mscale 1 / mscale_all_dim 0.8: cos and sin scaled by
    their ratio, the softmax by mscale(4, 0.8)^2), sigmoid routing with a random correction bias, top 3 of
    the best 2 groups, renormalised, x 2.5; T = 21 > 16. A multi-token-prediction layer 4 is appended to
    the file (add_mtp_layer)."""
    config = transformers.DeepseekV3Config(
        **SIZES, q_lora_rank=12, routed_scaling_factor=2.5, norm_topk_prob=True, rope_interleave=True,
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 16, "beta_fast": 32.0, "beta_slow": 1.0,
                         "mscale": 1.0, "mscale_all_dim": 0.8})
    config._attn_implementation = "eager"
    model = transformers.DeepseekV3ForCausalLM(config).eval()
    randomize_(model, seed=161)
    randomize_router_bias_(model, seed=162)
    ids = torch.randint(3, 96, (1, 21), generator=torch.Generator().manual_seed(163))
    save(out, "deepseek_v3", model, ids, routed(model, ids))
    add_mtp_layer(out, "deepseek_v3")


def case_deepseek_v2(out: str) -> None:
    """DeepseekV2ForCausalLM as DeepSeek-V2-Lite is built: a plain q_proj (q_lora_rank null), MLA as SIZES,
    RoPE by complex products (interleaved pairs) with YaRN (factor 4 over 16, mscale = mscale_all_dim =
    0.707: cos and sin unscaled, the softmax by mscale(4, 0.707)^2); softmax routing over all 8 experts,
    "group_limited_greedy" (the best 2 of 4 groups by their best expert), top 3 not renormalised, x 1.5;
    T = 21."""
    config = transformers.DeepseekV2Config(
        **SIZES, q_lora_rank=None, routed_scaling_factor=1.5, topk_method="group_limited_greedy",
        rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                         "original_max_position_embeddings": 16, "beta_fast": 32.0, "beta_slow": 1.0,
                         "mscale": 0.707, "mscale_all_dim": 0.707})
    config._attn_implementation = "eager"
    model = transformers.DeepseekV2ForCausalLM(config).eval()
    randomize_(model, seed=171)
    ids = torch.randint(3, 96, (1, 21), generator=torch.Generator().manual_seed(172))
    save(out, "deepseek_v2", model, ids, routed(model, ids))


CASES = {"deepseek_v2": case_deepseek_v2, "deepseek_v3": case_deepseek_v3}


if __name__ == "__main__":
    main(CASES, __doc__.split("\n")[0])
