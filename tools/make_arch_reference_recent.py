#!/usr/bin/env python3
"""Writes tests/data/models/<case>/ for the architectures of 2024-26: small random models saved by HF
transformers itself (save_pretrained: config.json as transformers >= 5 writes it, model.safetensors), with
the outputs transformers' own modeling code computes for them (eager attention, float32).

    ~/.local/share/poslens/venv/bin/python tools/make_arch_reference_recent.py [--out tests/data/models]
        [--only CASE ...]

Unlike tools/make_arch_reference.py (Debian's torch 1.13 and stand-ins for the rest of transformers), this
runs the pinned venv of scripts/setup.sh: the real transformers and torch 2.x. Seeded; the C++ suite reads
only the folders it writes (tests/data/models/README.md).

reference.safetensors: input_ids int64 [1, T], logits float32 [1, T, vocab], attentions.{l} float32
[1, heads, T, T] (softmax probabilities); metadata format=poslens-arch-reference, case, source.
"""
import argparse
import copy
import json
import os
import shutil
from collections import OrderedDict

import torch
import transformers
from safetensors.torch import load_file, save_file

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
torch.set_num_threads(1)


def randomize_(model: torch.nn.Module, seed: int, std: float = 0.2, emb_std: float = 0.3) -> None:
    """Every parameter random: matrices N(0, std^2), embeddings N(0, emb_std^2), 1-D weights (norm
    gains) 1 + 0.1 N, 1-D biases 0.1 N — attention far from uniform, so a slip in a norm shows."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            n = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if p.dim() == 1:
                p.copy_(0.1 * n if name.endswith("bias") else 1.0 + 0.1 * n)
            else:
                p.copy_((emb_std if "embed" in name else std) * n)


def case_qwen3(out: str) -> None:
    """Qwen3ForCausalLM: q_norm / k_norm (RMSNorm per head, head_dim 12 != hidden 32 / 4 heads), GQA 4/2,
    rope_theta 50000 inside rope_parameters (where transformers >= 5 writes it), untied head."""
    config = transformers.Qwen3Config(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=12, max_position_embeddings=64, rope_theta=50000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=1)
    config._attn_implementation = "eager"
    model = transformers.Qwen3ForCausalLM(config).eval()
    randomize_(model, seed=31)
    ids = torch.randint(2, 96, (1, 13), generator=torch.Generator().manual_seed(32))
    save(out, "qwen3", model, ids)


def case_qwen3_sliding(out: str) -> None:
    """Qwen3ForCausalLM with use_sliding_window: 4 layers, max_window_layers 2, so layers 2 and 3 see the
    last 4 keys (sliding_window 4) and layers 0 and 1 every key; otherwise as qwen3. T = 13 > the window."""
    config = transformers.Qwen3Config(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=12, max_position_embeddings=64, rope_theta=50000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=False, bos_token_id=1, use_sliding_window=True,
        sliding_window=4, max_window_layers=2)
    config._attn_implementation = "eager"
    model = transformers.Qwen3ForCausalLM(config).eval()
    randomize_(model, seed=33)
    ids = torch.randint(2, 96, (1, 13), generator=torch.Generator().manual_seed(34))
    save(out, "qwen3_sliding", model, ids)


def case_qwen2_sliding(out: str) -> None:
    """Qwen2ForCausalLM with use_sliding_window: 4 layers, max_window_layers 2, so layers 2 and 3 see the
    last 4 keys (sliding_window 4); q/k/v biases and none on o_proj, GQA 4/2, head_dim 8. T = 13 > the
    window. (Qwen2's and Qwen3's configs derive their sliding layers the same way.)"""
    config = transformers.Qwen2Config(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rope_theta=20000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=False, bos_token_id=1, use_sliding_window=True, sliding_window=4,
        max_window_layers=2)
    config._attn_implementation = "eager"
    model = transformers.Qwen2ForCausalLM(config).eval()
    randomize_(model, seed=35)
    ids = torch.randint(2, 96, (1, 13), generator=torch.Generator().manual_seed(36))
    save(out, "qwen2_sliding", model, ids)


def case_olmo2(out: str) -> None:
    """Olmo2ForCausalLM: RMSNorm on the sublayers' outputs (none on their inputs), q/k RMSNorm over the
    whole projection (q_norm [4*8], k_norm [2*8]: GQA 4/2), rope_theta 20000 in rope_parameters."""
    config = transformers.Olmo2Config(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rope_theta=20000.0, rms_norm_eps=1e-6,
        tie_word_embeddings=False, bos_token_id=1, pad_token_id=0, eos_token_id=2)
    config._attn_implementation = "eager"
    model = transformers.Olmo2ForCausalLM(config).eval()
    randomize_(model, seed=41)
    ids = torch.randint(3, 96, (1, 12), generator=torch.Generator().manual_seed(42))
    save(out, "olmo2", model, ids)


def case_gemma3(out: str) -> None:
    """Gemma3ForCausalLM (text): 6 layers in Gemma 3's 5:1 pattern (layers 0-4 local with a window of 4
    keys, layer 5 global), local RoPE base 100 and global base 10000 with linear scaling x2 (each in
    rope_parameters per layer type), q/k RMSNorm per head (1 + w), sandwich norms, query_pre_attn_scalar
    10 (not head_dim 12), GeGLU, embeddings scaled by sqrt(32). T = 13 > the window."""
    config = transformers.Gemma3TextConfig(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=6, num_attention_heads=4,
        num_key_value_heads=2, head_dim=12, max_position_embeddings=64, sliding_window=4,
        query_pre_attn_scalar=10, rms_norm_eps=1e-6, tie_word_embeddings=True, bos_token_id=2,
        pad_token_id=0, eos_token_id=1,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
                         "full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 10000.0}})
    config._attn_implementation = "eager"
    model = transformers.Gemma3ForCausalLM(config).eval()
    randomize_(model, seed=51)
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(52))
    save(out, "gemma3", model, ids)


def case_gemma2(out: str) -> None:
    """Gemma2ForCausalLM: 4 layers alternating local (window 4) / global, one RoPE base 10000, attention
    logits soft-capped at 5 and output logits at 3 (small caps, so that tanh bends the random model's
    logits), sandwich norms, query_pre_attn_scalar 10, GeGLU, tied. T = 13 > the window."""
    config = transformers.Gemma2Config(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=12, max_position_embeddings=64, sliding_window=4,
        query_pre_attn_scalar=10, rms_norm_eps=1e-6, attn_logit_softcapping=5.0, final_logit_softcapping=3.0,
        tie_word_embeddings=True, bos_token_id=2, pad_token_id=0, eos_token_id=1)
    config._attn_implementation = "eager"
    model = transformers.Gemma2ForCausalLM(config).eval()
    randomize_(model, seed=71)
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(72))
    save(out, "gemma2", model, ids)


def case_cohere2(out: str) -> None:
    """Cohere2ForCausalLM: 4 layers, layers 0-2 local (window 4, interleaved RoPE base 1000) and layer 3
    global without RoPE, one bias-free LayerNorm feeding the parallel attention + MLP, logit_scale 0.25,
    GQA 4/2, tied."""
    config = transformers.Cohere2Config(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=64, sliding_window=4, rope_theta=1000.0,
        logit_scale=0.25, layer_norm_eps=1e-5, tie_word_embeddings=True, bos_token_id=1, pad_token_id=0,
        eos_token_id=2)
    config._attn_implementation = "eager"
    model = transformers.Cohere2ForCausalLM(config).eval()
    randomize_(model, seed=81)
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(82))
    save(out, "cohere2", model, ids)


def case_smollm3(out: str) -> None:
    """SmolLM3ForCausalLM: 4 layers, RoPE (base 5000) on layers 0-2 and none on layer 3
    (no_rope_layer_interval 4: no_rope_layers [1, 1, 1, 0]), GQA 4/2, tied embeddings."""
    config = transformers.SmolLM3Config(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, rope_theta=5000.0, rms_norm_eps=1e-6,
        no_rope_layer_interval=4, bos_token_id=1, pad_token_id=0, eos_token_id=2)
    config._attn_implementation = "eager"
    model = transformers.SmolLM3ForCausalLM(config).eval()
    randomize_(model, seed=61)
    ids = torch.randint(3, 96, (1, 12), generator=torch.Generator().manual_seed(62))
    save(out, "smollm3", model, ids)


def gpt_oss_config(**sizes) -> "transformers.GptOssConfig":
    """The gpt-oss cases' config, eager: 4 heads / 2 kv heads, layers alternating local (window 4) / full,
    4 experts top 2, YaRN (factor 4 over 16 positions, rope_theta 1000, truncate false), untied; `sizes`
    gives hidden_size, intermediate_size, num_hidden_layers and head_dim."""
    config = transformers.GptOssConfig(
        vocab_size=96, num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, sliding_window=4,
        num_local_experts=4, num_experts_per_tok=2, rms_norm_eps=1e-5, tie_word_embeddings=False,
        bos_token_id=1, pad_token_id=0, eos_token_id=2,
        rope_parameters={"rope_type": "yarn", "rope_theta": 1000.0, "factor": 4.0, "beta_fast": 32.0,
                         "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 16}, **sizes)
    config._attn_implementation = "eager"
    return config


def case_gpt_oss(out: str) -> None:
    """GptOssForCausalLM: 4 layers alternating local (window 4) / full, a learned sink per head (drawn
    N(0, 1.5^2), so some heads give the sink most of a row and some almost none), YaRN (factor 4 over 16
    positions, rope_theta 1000, truncate false), q/k/v/o biases, GQA 4/2, a mixture of 4 experts with top-2
    routing whose gate_up matrices are drawn wide (std 1.5) so the clamp at +-7 bites. T = 13 > the
    window."""
    config = gpt_oss_config(hidden_size=32, intermediate_size=16, num_hidden_layers=4, head_dim=8)
    model = transformers.GptOssForCausalLM(config).eval()
    randomize_(model, seed=91)
    gen = torch.Generator().manual_seed(93)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.sinks.copy_(1.5 * torch.randn(layer.self_attn.sinks.shape, generator=gen))
            gate_up = layer.mlp.experts.gate_up_proj
            gate_up.copy_(1.5 * torch.randn(gate_up.shape, generator=gen))
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(92))
    save(out, "gpt_oss", model, ids)


def case_gpt_oss_mxfp4(out: str) -> None:
    """GptOssForCausalLM as OpenAI ships it: the experts MXFP4-quantised (OCP Microscaling Formats v1.0:
    FP4 E2M1 elements, blocks of 32 sharing an E8M0 scale 2^(s - 127); config.json's quantization_config
    {"quant_method": "mxfp4"}), stored as mlp.experts.{gate_up,down}_proj_{blocks,scales} uint8 like
    gpt-oss-20b's files; every other tensor float32. 2 layers (local window 4 / full), hidden 64 and
    intermediate 32 (blocks of 32 along the input), 4 experts top 2, sinks. Blocks are random bytes (every
    FP4 code), scales s in [123, 125]. The reference is HF's own dequantisation
    (integrations.mxfp4.convert_moe_packed_tensors, float32) loaded into a float32 GptOssForCausalLM;
    what from_pretrained itself makes of the folder on a CPU (dequantised to bf16) is checked to be the
    same weights (exact: each value is an FP4 code times a power of two)."""
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    config = gpt_oss_config(hidden_size=64, intermediate_size=32, num_hidden_layers=2, head_dim=16)
    model = transformers.GptOssForCausalLM(config).eval()
    randomize_(model, seed=95)
    gen = torch.Generator().manual_seed(96)
    E, d, m = 4, 64, 32
    packed = {}
    with torch.no_grad():
        for l, layer in enumerate(model.model.layers):
            layer.self_attn.sinks.copy_(1.5 * torch.randn(layer.self_attn.sinks.shape, generator=gen))
            for proj, rows, cols in (("gate_up_proj", 2 * m, d), ("down_proj", d, m)):
                blocks = torch.randint(0, 256, (E, rows, cols // 32, 16), generator=gen, dtype=torch.int32).to(torch.uint8)
                scales = torch.randint(123, 126, (E, rows, cols // 32), generator=gen, dtype=torch.int32).to(torch.uint8)
                getattr(layer.mlp.experts, proj).copy_(convert_moe_packed_tensors(blocks, scales, dtype=torch.float32))
                name = f"model.layers.{l}.mlp.experts.{proj}"
                packed[name + "_blocks"], packed[name + "_scales"] = blocks, scales
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(97))
    save(out, "gpt_oss_mxfp4", model, ids)
    d_out = os.path.join(out, "gpt_oss_mxfp4")
    weights = load_file(os.path.join(d_out, "model.safetensors"))
    for name in list(weights):
        if name.endswith(("experts.gate_up_proj", "experts.down_proj")):
            del weights[name]
    weights.update(packed)
    save_file(weights, os.path.join(d_out, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(d_out, "config.json")) as f:
        cfg = json.load(f)
    cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    with open(os.path.join(d_out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    hf = transformers.GptOssForCausalLM.from_pretrained(d_out).eval()
    for l, layer in enumerate(hf.model.layers):
        for proj in ("gate_up_proj", "down_proj"):
            mine = getattr(model.model.layers[l].mlp.experts, proj)
            theirs = getattr(layer.mlp.experts, proj)
            assert torch.equal(theirs.float(), mine), f"from_pretrained dequantised layer {l} {proj} otherwise"
    print(f"gpt_oss_mxfp4: from_pretrained's dequantised experts ({hf.model.layers[0].mlp.experts.gate_up_proj.dtype}) equal ours")


def case_modernbert(out: str) -> None:
    """ModernBertForMaskedLM: 4 layers (layer 0 and 3 global, 1 and 2 local: global_attn_every_n_layers 3),
    bidirectional, local layers see |i - j| <= 2 (local_attention 4), RoPE base 5000 on global layers and 100
    on local ones (rope_parameters per layer type), layer 0 without an attention norm, fused Wqkv, GeGLU
    from one Wi, the head norm(gelu(dense)) and the tied decoder with its bias. T = 13."""
    config = transformers.ModernBertConfig(
        vocab_size=96, hidden_size=32, intermediate_size=24, num_hidden_layers=4, num_attention_heads=4,
        max_position_embeddings=64, local_attention=4, global_attn_every_n_layers=3, norm_eps=1e-5,
        pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2,
        rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 5000.0},
                         "sliding_attention": {"rope_type": "default", "rope_theta": 100.0}})
    config._attn_implementation = "eager"
    model = transformers.ModernBertForMaskedLM(config).eval()
    randomize_(model, seed=101)
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(102))
    save(out, "modernbert", model, ids)


def phi3_model(seed: int, sliding_window):
    """Phi3ForCausalLM: fused qkv_proj with GQA 4/2 (unequal parts), fused gate_up_proj, LongRoPE on 3
    of each head's 4 rotary pairs (partial_rotary_factor 0.75 of head_dim 8: Phi-4-mini's shape) with
    per-pair short and long factors over original_max_position_embeddings 16 of 64 (attention factor
    sqrt(1 + ln 4 / ln 16)), untied head."""
    config = transformers.Phi3Config(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=64, original_max_position_embeddings=16,
        rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=1, pad_token_id=0, eos_token_id=2,
        sliding_window=sliding_window,
        rope_parameters={"rope_type": "longrope", "rope_theta": 500.0, "partial_rotary_factor": 0.75,
                         "short_factor": [1.0, 1.5, 2.5], "long_factor": [1.2, 3.0, 7.0]})
    config._attn_implementation = "eager"
    model = transformers.Phi3ForCausalLM(config).eval()
    randomize_(model, seed=seed)
    return model


def case_phi3(out: str) -> None:
    """phi3_model at T = 13 <= 16: the short factors."""
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(112))
    save(out, "phi3", phi3_model(111, None), ids)


def case_phi3_long(out: str) -> None:
    """phi3_model at T = 24 > 16: the long factors, and a sliding window of 10 keys."""
    ids = torch.randint(3, 96, (1, 24), generator=torch.Generator().manual_seed(122))
    save(out, "phi3_long", phi3_model(121, 10), ids)


def case_mixtral(out: str) -> None:
    """MixtralForCausalLM: Mistral's block with a sparse mixture of 4 experts, top 2 (router without bias,
    renormalised softmax), experts stored one tensor each (block_sparse_moe.experts.{e}.w1/w2/w3), sliding
    window 6 < T = 13, GQA 4/2, rope_theta 10000. reference.safetensors also holds router_top.{l} int64
    [T, 2]: each token's two experts as HF's router picks them (sorted ascending)."""
    config = transformers.MixtralConfig(
        vocab_size=96, hidden_size=32, intermediate_size=24, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, max_position_embeddings=64, sliding_window=6,
        num_local_experts=4, num_experts_per_tok=2, rms_norm_eps=1e-5, tie_word_embeddings=False,
        bos_token_id=1, rope_parameters={"rope_type": "default", "rope_theta": 10000.0})
    config._attn_implementation = "eager"
    model = transformers.MixtralForCausalLM(config).eval()
    randomize_(model, seed=131)
    ids = torch.randint(2, 96, (1, 13), generator=torch.Generator().manual_seed(132))
    with torch.no_grad():
        routers = model(input_ids=ids, output_router_logits=True).router_logits
    tops = {f"router_top.{l}": r.topk(2, -1).indices.sort(-1).values.contiguous() for l, r in enumerate(routers)}
    save(out, "mixtral", model, ids, tops)


def llama4_text_config(interleave_moe_layer_step: int) -> "transformers.Llama4TextConfig":
    """The Llama 4 cases' text config, eager: 4 layers, hidden 32, 4 heads / 2 kv heads (head_dim 8), layer 3
    NoPE (no_rope_layer_interval 4) with temperature tuning (floor_scale 4, attn_scale 0.1), layers 0-2
    chunked (5) RoPE with llama3 scaling (x8 over 16 positions) and q/k L2 norm, 4 experts top 2 (d_mlp 24)
    on every `interleave_moe_layer_step`-th layer, dense MLPs 40 wide (intermediate_size_mlp) on the others."""
    config = transformers.Llama4TextConfig(
        vocab_size=96, hidden_size=32, intermediate_size=24, intermediate_size_mlp=40, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, max_position_embeddings=64,
        num_local_experts=4, num_experts_per_tok=2, interleave_moe_layer_step=interleave_moe_layer_step,
        use_qk_norm=True, no_rope_layer_interval=4, attention_chunk_size=5, attn_temperature_tuning=True,
        floor_scale=4, attn_scale=0.1, rms_norm_eps=1e-5, tie_word_embeddings=False, bos_token_id=1,
        pad_token_id=0,
        rope_parameters={"rope_type": "llama3", "rope_theta": 10000.0, "factor": 8.0, "low_freq_factor": 1.0,
                         "high_freq_factor": 4.0, "original_max_position_embeddings": 16})
    config._attn_implementation = "eager"
    return config


def case_llama4(out: str) -> None:
    """Llama4ForCausalLM (the text stack of Llama 4; iRoPE): 4 layers, layer 3 NoPE (no_rope_layer_interval
    4) with attention temperature tuning (floor_scale 4, attn_scale 0.1, so rows from #3 on are scaled),
    layers 0-2 RoPE (interleaved pairs, rope_theta 10000 with llama3 scaling x8 over 16 positions) with
    chunked attention (chunks of 5 < T = 13) and q/k L2 norm; every layer a mixture of 4 experts, top 2,
    sigmoid router scores multiplying the experts' inputs, plus a shared expert; GQA 4/2, head_dim 8.
    reference.safetensors also holds router_top.{l} int64 [T, 2] as in mixtral."""
    config = llama4_text_config(interleave_moe_layer_step=1)
    model = transformers.Llama4ForCausalLM(config).eval()
    randomize_(model, seed=141)
    ids = torch.randint(2, 96, (1, 13), generator=torch.Generator().manual_seed(142))
    routers = []  # Llama4ForCausalLM returns no router logits: read each Llama4Router's (scores, logits)
    hooks = [layer.feed_forward.router.register_forward_hook(lambda m, i, o: routers.append(o[1]))
             for layer in model.model.layers]
    with torch.no_grad():
        model(input_ids=ids)
    for h in hooks:
        h.remove()
    tops = {f"router_top.{l}": r.topk(2, -1).indices.sort(-1).values.contiguous() for l, r in enumerate(routers)}
    save(out, "llama4", model, ids, tops)


def case_llama4_maverick(out: str) -> None:
    """Llama 4 Maverick's interleaving on the llama4 case's shapes: interleave_moe_layer_step 2, so only
    layers 1 and 3 are mixtures of experts (HF moe_layers [1, 3]: 4 experts, top 2, sigmoid on the inputs,
    a shared expert 24 wide) and layers 0 and 2 dense gated SiLU MLPs intermediate_size_mlp = 40 wide
    (Llama4TextMLP); iRoPE as in llama4 (layers 0-2 chunked RoPE, layer 3 NoPE with temperature).
    reference.safetensors holds router_top.{l} for the MoE layers only."""
    config = llama4_text_config(interleave_moe_layer_step=2)
    assert list(config.moe_layers) == [1, 3], config.moe_layers
    model = transformers.Llama4ForCausalLM(config).eval()
    randomize_(model, seed=144)
    ids = torch.randint(2, 96, (1, 13), generator=torch.Generator().manual_seed(145))
    routers = {}  # each MoE layer's Llama4Router (scores, logits)
    hooks = [layer.feed_forward.router.register_forward_hook(lambda m, i, o, l=l: routers.__setitem__(l, o[1]))
             for l, layer in enumerate(model.model.layers) if hasattr(layer.feed_forward, "router")]
    with torch.no_grad():
        model(input_ids=ids)
    for h in hooks:
        h.remove()
    assert sorted(routers) == [1, 3], sorted(routers)
    tops = {f"router_top.{l}": r.topk(2, -1).indices.sort(-1).values.contiguous() for l, r in routers.items()}
    save(out, "llama4_maverick", model, ids, tops)


def case_llama4_multimodal(out: str) -> None:
    """Llama4ForConditionalGeneration, as Llama 4 Scout ships: the text stack of the llama4 case (its
    weights, loaded from tests/data/models/llama4, so run llama4 first) under `language_model.`, its config
    under `text_config`, beside a one-layer vision tower and projector (`vision_model.`,
    `multi_modal_projector.`) that a text-only forward never reads. The reference is the conditional
    model's own text-only forward (= llama4's; checked here), with llama4's router_top.{l}."""
    text = transformers.Llama4TextConfig.from_pretrained(os.path.join(out, "llama4"))
    vision = transformers.Llama4VisionConfig(
        hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, image_size=28,
        patch_size=14, vision_output_dim=32, projector_input_dim=32, projector_output_dim=32,
        pixel_shuffle_ratio=0.5)
    config = transformers.Llama4Config(text_config=text.to_dict(), vision_config=vision.to_dict(),
                                       bos_token_id=1, pad_token_id=0, tie_word_embeddings=False)
    config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    model = transformers.Llama4ForConditionalGeneration(config).eval()
    randomize_(model, seed=143)
    text_model = transformers.Llama4ForCausalLM.from_pretrained(os.path.join(out, "llama4")).eval()
    model.language_model.load_state_dict(text_model.state_dict())
    ref = load_file(os.path.join(out, "llama4", "reference.safetensors"))
    with torch.no_grad():
        logits = model(input_ids=ref["input_ids"]).logits
    assert torch.allclose(logits, ref["logits"], atol=1e-5), "the text-only forward differs from llama4's"
    save(out, "llama4_multimodal", model, ref["input_ids"], {k: v for k, v in ref.items() if k.startswith("router_top.")})


def gemma4_text_config(**overrides) -> "transformers.Gemma4TextConfig":
    """Gemma 4's text stack on 6 small layers: layer types local, local, global, local, local, global (a
    window of 4 keys), local heads of 8 and global heads of 16 values (`global_head_dim`), local RoPE base
    100, global "proportional" RoPE (p-RoPE) with partial_rotary_factor 0.25 and base 10000, output logits
    soft-capped at 30. `overrides` choose the variant."""
    sizes = dict(
        vocab_size=96, hidden_size=32, intermediate_size=48, num_hidden_layers=6, num_attention_heads=4,
        num_key_value_heads=2, head_dim=8, global_head_dim=16, sliding_window=4, max_position_embeddings=64,
        layer_types=["sliding_attention", "sliding_attention", "full_attention"] * 2,
        final_logit_softcapping=30.0, rms_norm_eps=1e-6, bos_token_id=2, pad_token_id=0, eos_token_id=1,
        rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 100.0},
                         "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                            "rope_theta": 10000.0}})
    sizes.update(overrides)
    config = transformers.Gemma4TextConfig(**sizes)
    config._attn_implementation = "eager"
    return config


def gemma4_model(config, seed: int):
    """Gemma4ForCausalLM with every parameter random and each layer's `layer_scalar` (a buffer) in [0.5, 1.5]."""
    model = transformers.Gemma4ForCausalLM(config).eval()
    randomize_(model, seed=seed)
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.layer_scalar.copy_(0.5 + torch.rand(1, generator=gen))
    return model


def case_gemma4(out: str) -> None:
    """Gemma4ForCausalLM as the small "E" models (gemma-4-E2B/E4B) are built: per-layer input embeddings
    (hidden_size_per_layer_input 8), the last 2 layers reusing the keys and values of the last earlier layer
    of their type (num_kv_shared_layers 2: layer 4 reads layer 3's, layer 5 layer 2's) with double-wide MLPs
    (use_double_wide_mlp), v_norm, scale 1, layer scalars. T = 13 > the window."""
    config = gemma4_text_config(hidden_size_per_layer_input=8, vocab_size_per_layer_input=96,
                                num_kv_shared_layers=2, use_double_wide_mlp=True)
    model = gemma4_model(config, seed=81)
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(82))
    save(out, "gemma4", model, ids)


def case_gemma4_dense(out: str) -> None:
    """Gemma4ForCausalLM as the large dense model (gemma-4-31B) is built: global layers whose values are
    their keys' projection (attention_k_eq_v) with one KV head (num_global_key_value_heads 1) of 16 values;
    no per-layer inputs, no shared keys and values. T = 13."""
    config = gemma4_text_config(hidden_size_per_layer_input=0, attention_k_eq_v=True, num_global_key_value_heads=1)
    model = gemma4_model(config, seed=83)
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(84))
    save(out, "gemma4_dense", model, ids)


def case_gemma4_moe(out: str) -> None:
    """Gemma4ForCausalLM as the mixture-of-experts model (gemma-4-26B-A4B) is built: every layer's dense MLP
    (48 wide) beside 4 GeGLU experts of 16, top 2 (enable_moe_block), a router with its own norm, scale and
    per-expert scale (all random), the extra norms post_feedforward_layernorm_1/_2 and
    pre_feedforward_layernorm_2; global layers with values from their keys (one KV head), no per-layer
    inputs. Experts run by transformers' eager loop. T = 13. reference.safetensors also holds router_top.{l}
    int64 [T, 2]: each token's two experts as HF's Gemma4TextRouter picks them (sorted ascending), and
    bf16_norm.{input,weight,output}: layer 0's pre_feedforward_layernorm (Gemma4RMSNorm, its gain multiplied in
    float32 before the cast) run in bfloat16 on a random [T, 32] input."""
    config = gemma4_text_config(hidden_size_per_layer_input=0, attention_k_eq_v=True, num_global_key_value_heads=1,
                                enable_moe_block=True, num_experts=4, top_k_experts=2, moe_intermediate_size=16)
    config._experts_implementation = "eager"
    model = gemma4_model(config, seed=87)
    ids = torch.randint(3, 96, (1, 13), generator=torch.Generator().manual_seed(88))
    tops = []  # each Gemma4TextRouter's (probabilities, top-k weights, top-k index)
    hooks = [layer.router.register_forward_hook(lambda m, i, o: tops.append(o[2])) for layer in model.model.layers]
    with torch.no_grad():
        model(input_ids=ids)
    for h in hooks:
        h.remove()
    extra = {f"router_top.{l}": t.sort(-1).values.contiguous() for l, t in enumerate(tops)}
    norm = copy.deepcopy(model.model.layers[0].pre_feedforward_layernorm).to(torch.bfloat16)
    x = (3 * torch.randn(13, 32, generator=torch.Generator().manual_seed(89))).to(torch.bfloat16)
    with torch.no_grad():
        extra.update({"bf16_norm.input": x, "bf16_norm.weight": norm.weight.detach().clone(), "bf16_norm.output": norm(x)})
    save(out, "gemma4_moe", model, ids, extra)


def case_gemma4_multimodal(out: str) -> None:
    """Gemma4ForConditionalGeneration, as every Gemma 4 ships: the gemma4 case's text stack (its weights, from
    tests/data/models/gemma4, so run gemma4 first) under `model.language_model.`, its config under
    `text_config`, beside a one-layer vision tower and its embedder (`model.vision_tower.`,
    `model.embed_vision.`) a text-only forward never reads. The reference is the conditional model's own
    text-only forward (= gemma4's; checked here)."""
    text = transformers.Gemma4TextConfig.from_pretrained(os.path.join(out, "gemma4"))
    vision = transformers.Gemma4VisionConfig(hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                                             num_attention_heads=2, num_key_value_heads=2, head_dim=8,
                                             position_embedding_size=16)
    config = transformers.Gemma4Config(text_config=text.to_dict(), vision_config=vision.to_dict(), audio_config=None)
    config._attn_implementation = "eager"
    config.text_config._attn_implementation = "eager"
    model = transformers.Gemma4ForConditionalGeneration(config).eval()
    randomize_(model, seed=85)
    text_model = transformers.Gemma4ForCausalLM.from_pretrained(os.path.join(out, "gemma4")).eval()
    model.model.language_model.load_state_dict(text_model.model.state_dict())
    ref = load_file(os.path.join(out, "gemma4", "reference.safetensors"))
    with torch.no_grad():
        logits = model(input_ids=ref["input_ids"]).logits
    assert torch.allclose(logits, ref["logits"], atol=1e-5), "the text-only forward differs from gemma4's"
    save(out, "gemma4_multimodal", model, ref["input_ids"])


def save(out: str, case: str, model, ids: torch.Tensor, extra=None) -> None:
    d = os.path.join(out, case)
    shutil.rmtree(d, ignore_errors=True)
    model.save_pretrained(d, safe_serialization=True)
    with torch.no_grad():
        o = model(input_ids=ids, output_attentions=True)
    ref = OrderedDict(input_ids=ids.contiguous(), logits=o.logits.float().contiguous())
    for l, a in enumerate(o.attentions):
        ref[f"attentions.{l}"] = a.float().contiguous()
    ref.update(extra or {})
    source = f"transformers {transformers.__version__} {type(model).__name__}, torch {torch.__version__}, eager"
    save_file(ref, os.path.join(d, "reference.safetensors"),
              metadata={"format": "poslens-arch-reference", "case": case, "source": source})
    row_max = torch.stack([a.max(-1).values.mean() for a in o.attentions]).mean().item()
    print(f"{case}: logits {tuple(o.logits.shape)}, mean row max {row_max:.2f} -> {d}")


CASES = {"qwen3": case_qwen3, "qwen3_sliding": case_qwen3_sliding, "qwen2_sliding": case_qwen2_sliding,
         "olmo2": case_olmo2, "gemma2": case_gemma2, "gemma3": case_gemma3,
         "smollm3": case_smollm3, "cohere2": case_cohere2, "gpt_oss": case_gpt_oss,
         "gpt_oss_mxfp4": case_gpt_oss_mxfp4,
         "modernbert": case_modernbert, "phi3": case_phi3, "phi3_long": case_phi3_long,
         "mixtral": case_mixtral, "llama4": case_llama4, "llama4_maverick": case_llama4_maverick,
         "llama4_multimodal": case_llama4_multimodal, "gemma4": case_gemma4, "gemma4_dense": case_gemma4_dense,
         "gemma4_moe": case_gemma4_moe,
         "gemma4_multimodal": case_gemma4_multimodal}


def main(cases: dict, description: str) -> None:
    """The command line of the reference generators: --out DIR (default tests/data/models), --only CASE ..."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--out", default=os.path.join(REPO, "tests/data/models"))
    ap.add_argument("--only", nargs="*", choices=sorted(cases), default=sorted(cases))
    args = ap.parse_args()
    for case in args.only:
        cases[case](args.out)


if __name__ == "__main__":
    main(CASES, __doc__.split("\n")[0])
