#!/usr/bin/python3
"""Writes tests/data/models/<case>/: small random models of the architectures PosLens loads, in the files
their own ecosystems write, with the outputs that code we did not write computes for them.

    /usr/bin/python3 tools/make_arch_reference.py [--hf-src /work/hf_src] [--out tests/data/models]
        [--only CASE ...]

Expected values come from HuggingFace transformers' own modeling files (BLOOM, MPT, T5 v1.0 / v1.1, BERT,
RoBERTa) and from nanoGPT's own model.py, saved verbatim under HF_SRC (outside the repository, never
committed; tests/data/models/README.md says how it is made and from which commits). The rest of
`transformers` they import is replaced by minimal stand-ins of our own (tools/hf_parity/stubs, assembled by
hf_shim.py): the base class's embedding tying and additive attention masks, save_pretrained's removal of
tied duplicates, ModelOutput, and names that play no role here.
The TransformerLens cases (tl_nanogpt*) are the nanoGPT models converted by TransformerLens's own
convert_nanogpt_weights (run with the real einops, tools/hf_parity/tl_shim.py); HookedTransformer itself is
not run (TransformerLens needs torch>=2.6, transformers>=5, jaxtyping, ...; this machine has torch 1.13), so
their expected values are nanoGPT's, cross-checked by an einsum forward over the TL-layout tensors.

Each case folder holds the model as its ecosystem stores it (config.json + model.safetensors as
save_pretrained writes them; ckpt.pt as nanoGPT's train.py writes it; TL state dict + cfg JSON) and
reference.safetensors: input ids (int64), logits, every layer's attention probabilities [batch, head, T, T]
and the hidden states (output_hidden_states) in float32. The C++ suite needs neither network nor HF_SRC.
"""
import argparse
import json
import math
import os
import shutil
import sys
from collections import OrderedDict

import torch

TOOLS = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TOOLS)
sys.path.insert(0, os.path.join(TOOLS, "hf_parity"))

from poslens_safetensors import load_safetensors, save_safetensors  # noqa: E402

REPO = os.path.dirname(TOOLS)
torch.set_num_threads(1)


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------
def randomize_(model: torch.nn.Module, seed: int, std: float = 0.2, emb_std: float = 0.3,
               extra_std=None) -> None:
    """Every parameter random (tied ones once): matrices N(0, std^2), embeddings N(0, emb_std^2),
    1-D weights (norm gains) 1 + 0.1 N, 1-D biases 0.1 N. extra_std: {substring: std} overrides."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # named_parameters() lists a tied tensor once
            n = torch.randn(p.shape, generator=gen, dtype=torch.float32)
            if p.dim() == 1:
                p.copy_(0.1 * n if name.endswith("bias") else 1.0 + 0.1 * n)
                continue
            s = emb_std if any(k in name for k in ("embed", "wte", "wpe", "shared", "W_E", "W_pos")) else std
            for key, v in (extra_std or {}).items():
                if key in name:
                    s = v
            p.copy_(s * n)


def random_ids(seed: int, T: int, low: int, high: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(low, high, (1, T), generator=gen, dtype=torch.int64)


def folder(out: str, case: str) -> str:
    d = os.path.join(out, case)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    return d


def write_hf_config(config, arch: str, path: str, transform=None) -> dict:
    """config.json as PreTrainedModel.save_pretrained writes it: architectures and torch_dtype set, then
    PretrainedConfig.to_json_file(use_diff=True) of transformers' own configuration_utils.py."""
    config.architectures = [arch]
    config.torch_dtype = "float32"
    d = json.loads(config.to_json_string(use_diff=True))
    if transform is not None:
        d = transform(d)
    with open(path, "w", encoding="utf-8") as f:
        f.write(json.dumps(d, indent=2, sort_keys=True) + "\n")
    return d


def f32(t: torch.Tensor) -> torch.Tensor:
    return t.detach().to(torch.float32).contiguous()


def attn_stats(name: str, atts) -> None:
    m = torch.stack([a.max(-1).values.mean() for a in atts]).tolist()
    print(f"  {name}: mean row max prob per layer {[round(x, 3) for x in m]}")


def save_reference(path: str, tensors: "OrderedDict[str, torch.Tensor]", case: str, source: str) -> None:
    save_safetensors(tensors, path, metadata={"format": "poslens-arch-reference", "case": case,
                                              "source": source})


def check_close(what: str, a: torch.Tensor, b: torch.Tensor, tol: float = 1e-5) -> None:
    err = (a - b).abs().max().item()
    status = "ok" if err <= tol else "MISMATCH"
    print(f"  reload check {what}: max |diff| {err:.3g} {status}")
    if err > tol:
        raise SystemExit(f"{what}: reloaded model does not reproduce the reference ({err})")


def hf_outputs(model, **inputs):
    model.eval()
    with torch.no_grad():
        return model(**inputs, output_attentions=True, output_hidden_states=True, return_dict=True)


# ----------------------------------------------------------------------------------------------
# BLOOM
# ----------------------------------------------------------------------------------------------
def add_outputs(ref: "OrderedDict[str, torch.Tensor]", o) -> None:
    """Every layer's attention pattern and hidden state of HF outputs `o`, as float32 entries."""
    for l, a in enumerate(o.attentions):
        ref[f"attentions.{l}"] = f32(a)
    for i, h in enumerate(o.hidden_states):
        ref[f"hidden_states.{i}"] = f32(h)


def check_reload(name: str, d: str, model_cls, config_cls, tied: set, expected: torch.Tensor, **inputs) -> None:
    """Loads the saved folder `d` back into HF's `model_cls` (the `tied` keys may be missing:
    tie_weights restores them) and checks it reproduces the logits `expected`."""
    loaded, _ = load_safetensors(os.path.join(d, "model.safetensors"))
    m2 = model_cls(config_cls(**json.load(open(os.path.join(d, "config.json")))))
    missing, unexpected = m2.load_state_dict(loaded, strict=False)
    assert not unexpected and set(missing) <= tied, (missing, unexpected)
    m2.tie_weights()
    check_close(f"{name} logits", hf_outputs(m2, **inputs).logits, expected)


def case_bloom(out: str, tf, src: str) -> None:
    from transformers.models.bloom import modeling_bloom as mb
    from transformers.models.bloom.configuration_bloom import BloomConfig
    from transformers.modeling_utils import hf_state_dict_for_save

    # Keys of bigscience/bloom-560m's config.json beyond BloomConfig's own arguments are passed as kwargs:
    # PretrainedConfig keeps and writes them back, as a load + save_pretrained of a hub model does.
    config = BloomConfig(vocab_size=96, hidden_size=30, n_layer=2, n_head=6, layer_norm_epsilon=1e-5,
                         initializer_range=0.02, use_cache=True, bos_token_id=1, eos_token_id=2,
                         apply_residual_connection_post_layernorm=False, hidden_dropout=0.0,
                         attention_dropout=0.0, pretraining_tp=1, slow_but_exact=False,
                         pad_token_id=3, unk_token_id=0, masked_softmax_fusion=True,
                         attention_softmax_in_fp32=True, bias_dropout_fusion=True, offset_alibi=100,
                         skip_bias_add=True, skip_bias_add_qkv=False, n_inner=None)
    torch.manual_seed(0)
    model = mb.BloomForCausalLM(config)
    randomize_(model, seed=101)
    ids = random_ids(102, 12, 4, 96)
    o = hf_outputs(model, input_ids=ids)

    slopes = mb.build_alibi_tensor(torch.ones(1, 12), 6, torch.float32)[:, 0, 1]  # position 1 = slope
    print(f"  BLOOM slopes (n_head 6): {slopes.tolist()}")
    ref = OrderedDict(input_ids=ids, logits=f32(o.logits))
    add_outputs(ref, o)
    ref["alibi_slopes"] = f32(slopes)
    attn_stats("bloom", o.attentions)

    sd = hf_state_dict_for_save(model)
    d = folder(out, "bloom")
    write_hf_config(config, "BloomForCausalLM", os.path.join(d, "config.json"))
    save_safetensors(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    save_reference(os.path.join(d, "reference.safetensors"), ref, "bloom", src)
    print(f"  bloom keys: {list(sd)[:4]} ... ({len(sd)})")

    # the hub's BLOOM files (bigscience/bloom*) name the tensors without the `transformer.` prefix
    d2 = folder(out, "bloom_noprefix")
    sd2 = OrderedDict((k[len("transformer."):], v) for k, v in sd.items())
    assert all(k.startswith("transformer.") for k in sd)
    shutil.copy(os.path.join(d, "config.json"), os.path.join(d2, "config.json"))
    save_safetensors(sd2, os.path.join(d2, "model.safetensors"), metadata={"format": "pt"})
    save_reference(os.path.join(d2, "reference.safetensors"), ref, "bloom_noprefix", src)

    # reload both with the HF module and compare
    for sub, prefixed in ((d, True), (d2, False)):
        loaded, _ = load_safetensors(os.path.join(sub, "model.safetensors"))
        m2 = mb.BloomForCausalLM(config)
        target = m2 if prefixed else m2.transformer
        missing, unexpected = target.load_state_dict(loaded, strict=False)
        assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
        m2.tie_weights()
        check_close(os.path.basename(sub) + " logits", hf_outputs(m2, input_ids=ids).logits, o.logits)


# ----------------------------------------------------------------------------------------------
# MPT
# ----------------------------------------------------------------------------------------------
MPT_ATTN_KEYS = ["alibi", "alibi_bias_max", "attn_impl", "attn_pdrop", "attn_type", "attn_uses_sequence_id",
                 "clip_qkv", "prefix_lm", "qk_ln", "softmax_scale"]


def case_mpt(out: str, tf, src: str) -> None:
    from transformers.models.mpt import modeling_mpt as mm
    from transformers.models.mpt.configuration_mpt import MptConfig
    from transformers.modeling_utils import hf_state_dict_for_save

    clip = 1.5
    config = MptConfig(d_model=24, n_heads=6, n_layers=2, expansion_ratio=4, max_seq_len=32, vocab_size=96,
                       resid_pdrop=0.0, emb_pdrop=0.0, learned_pos_emb=False, no_bias=True,
                       layer_norm_epsilon=1e-5, logit_scale=None, norm_type="low_precision_layernorm",
                       attn_config=dict(attn_type="multihead_attention", attn_pdrop=0.0, attn_impl="torch",
                                        clip_qkv=clip, softmax_scale=None, prefix_lm=False, qk_ln=False,
                                        attn_uses_sequence_id=False, alibi=True, alibi_bias_max=8),
                       use_cache=False)
    model = mm.MptForCausalLM(config)
    randomize_(model, seed=201)
    ids = random_ids(202, 12, 0, 96)

    # count what clip_qkv clips: the Wqkv outputs of every block, seen by a forward hook
    seen = []
    hooks = [b.attn.Wqkv.register_forward_hook(lambda m, i, o: seen.append(o.detach()))
             for b in model.transformer.blocks]
    o = hf_outputs(model, input_ids=ids)
    for h in hooks:
        h.remove()
    clipped = [int((q.abs() > clip).sum()) for q in seen]
    print(f"  MPT clip_qkv {clip}: clipped entries per layer {clipped} of {seen[0].numel()}")
    assert all(c > 0 for c in clipped)
    for b in model.transformer.blocks:  # the clipping matters: without it the logits move
        b.attn.clip_qkv = None
    unclipped = hf_outputs(model, input_ids=ids).logits
    for b in model.transformer.blocks:
        b.attn.clip_qkv = clip
    print(f"  MPT logits without clip_qkv differ by up to {(unclipped - o.logits).abs().max().item():.3g}")
    alibi = mm.build_mpt_alibi_tensor(6, config.max_seq_len)  # [heads, 1, max_seq_len]
    slopes = -alibi[:, 0, -2]  # value at key distance 1 from the last position
    print(f"  MPT slopes (n_heads 6, alibi_bias_max 8): {slopes.tolist()}")

    ref = OrderedDict(input_ids=ids, logits=f32(o.logits))
    add_outputs(ref, o)
    ref["alibi_slopes"] = f32(slopes)
    ref["qkv_clipped_count"] = torch.tensor(clipped, dtype=torch.int64)
    attn_stats("mpt", o.attentions)

    def full_attn_config(dct):
        # transformers writes only the attn_config keys that differ from MptAttentionConfig's defaults
        # (here {"clip_qkv": 1.5, "model_type": ""}); hub MPT configs carry all of them: write all.
        dct["attn_config"] = {k: getattr(config.attn_config, k) for k in MPT_ATTN_KEYS}
        return dct

    d = folder(out, "mpt")
    write_hf_config(config, "MptForCausalLM", os.path.join(d, "config.json"), transform=full_attn_config)
    sd = hf_state_dict_for_save(model)
    save_safetensors(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    save_reference(os.path.join(d, "reference.safetensors"), ref, "mpt", src)

    check_reload("mpt", d, mm.MptForCausalLM, MptConfig, {"lm_head.weight"}, o.logits, input_ids=ids)


# ----------------------------------------------------------------------------------------------
# T5
# ----------------------------------------------------------------------------------------------
def case_t5(out: str, tf, src: str, v11: bool) -> None:
    from transformers.models.t5 import modeling_t5 as mt
    from transformers.models.t5.configuration_t5 import T5Config
    from transformers.modeling_utils import hf_state_dict_for_save

    case = "t5_v1_1" if v11 else "t5"
    kw = dict(vocab_size=96, d_model=32, d_kv=6, num_layers=2, num_decoder_layers=2, num_heads=4,
              dropout_rate=0.1, layer_norm_epsilon=1e-6, initializer_factor=1.0, is_encoder_decoder=True,
              use_cache=True, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    if v11:  # google/t5-v1_1-*: gated-gelu (gelu_new), untied lm_head, no d_model**-0.5 on the logits
        kw.update(d_ff=48, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
                  relative_attention_num_buckets=32, relative_attention_max_distance=128)
    else:  # t5-small style: relu, lm_head tied to `shared` and the decoder output scaled by d_model**-0.5
        kw.update(d_ff=64, feed_forward_proj="relu", relative_attention_num_buckets=8,
                  relative_attention_max_distance=10, n_positions=512, output_past=True)
    config = T5Config(**kw)
    model = mt.T5ForConditionalGeneration(config)
    randomize_(model, seed=301 if not v11 else 311, std=0.15, emb_std=0.5,
               extra_std={"relative_attention_bias": 0.5})
    T_enc, T_dec = (12, 10) if not v11 else (14, 11)
    enc = torch.cat([random_ids(302 + v11, T_enc - 1, 2, 96), torch.tensor([[1]])], dim=1)  # ends with </s>
    dec = torch.cat([torch.tensor([[0]]), random_ids(303 + v11, T_dec - 1, 2, 96)], dim=1)  # starts with pad
    o = hf_outputs(model, input_ids=enc, decoder_input_ids=dec)

    nb, md = config.relative_attention_num_buckets, config.relative_attention_max_distance
    for bidir, T in ((True, T_enc), (False, T_dec)):
        rel = torch.arange(T)[None, :] - torch.arange(T)[:, None]
        b = mt.T5Attention._relative_position_bucket(rel, bidirectional=bidir, num_buckets=nb, max_distance=md)
        print(f"  {case} {'encoder' if bidir else 'decoder'} buckets used: {sorted(set(b.flatten().tolist()))} "
              f"(query 0 row: {b[0].tolist()}, last row: {b[-1].tolist()})")

    ref = OrderedDict(input_ids=enc, decoder_input_ids=dec, logits=f32(o.logits),
                      encoder_last_hidden_state=f32(o.encoder_last_hidden_state))
    for name in ("encoder_attentions", "decoder_attentions", "cross_attentions",
                 "encoder_hidden_states", "decoder_hidden_states"):
        for l, a in enumerate(getattr(o, name)):
            ref[f"{name}.{l}"] = f32(a)
    attn_stats(case + " enc", o.encoder_attentions)
    attn_stats(case + " dec", o.decoder_attentions)
    attn_stats(case + " cross", o.cross_attentions)

    d = folder(out, case)
    write_hf_config(config, "T5ForConditionalGeneration", os.path.join(d, "config.json"))
    sd = hf_state_dict_for_save(model)
    save_safetensors(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    save_reference(os.path.join(d, "reference.safetensors"), ref, case, src)
    print(f"  {case}: embedding keys saved: {[k for k in sd if 'embed' in k or 'shared' in k or 'lm_head' in k]}")

    loaded, _ = load_safetensors(os.path.join(d, "model.safetensors"))
    m2 = mt.T5ForConditionalGeneration(T5Config(**json.load(open(os.path.join(d, "config.json")))))
    missing, unexpected = m2.load_state_dict(loaded, strict=False)
    allowed = {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"} | ({"lm_head.weight"} if not v11 else set())
    assert not unexpected and set(missing) <= allowed, (missing, unexpected)
    m2.tie_weights()
    check_close(case + " logits", hf_outputs(m2, input_ids=enc, decoder_input_ids=dec).logits, o.logits)


# ----------------------------------------------------------------------------------------------
# BERT / RoBERTa (masked LM)
# ----------------------------------------------------------------------------------------------
def case_bert(out: str, tf, src: str) -> None:
    from transformers.models.bert import modeling_bert as mb
    from transformers.models.bert.configuration_bert import BertConfig
    from transformers.modeling_utils import hf_state_dict_for_save

    config = BertConfig(vocab_size=96, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, hidden_act="gelu", hidden_dropout_prob=0.1,
                        attention_probs_dropout_prob=0.1, max_position_embeddings=32, type_vocab_size=2,
                        initializer_range=0.02, layer_norm_eps=1e-12, pad_token_id=0,
                        position_embedding_type="absolute", use_cache=True, gradient_checkpointing=False)
    model = mb.BertForMaskedLM(config)
    randomize_(model, seed=401)
    T = 12
    ids = random_ids(402, T, 5, 96)
    tt = torch.tensor([[0] * 7 + [1] * (T - 7)], dtype=torch.int64)
    o = hf_outputs(model, input_ids=ids, token_type_ids=tt)
    ref = OrderedDict(input_ids=ids, token_type_ids=tt, logits=f32(o.logits))
    add_outputs(ref, o)
    attn_stats("bert", o.attentions)

    d = folder(out, "bert")
    write_hf_config(config, "BertForMaskedLM", os.path.join(d, "config.json"))
    sd = hf_state_dict_for_save(model)
    save_safetensors(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    save_reference(os.path.join(d, "reference.safetensors"), ref, "bert", src)
    print(f"  bert head keys: {[k for k in sd if k.startswith('cls.')]}")

    check_reload("bert", d, mb.BertForMaskedLM, BertConfig,
                 {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias"}, o.logits,
                 input_ids=ids, token_type_ids=tt)


def case_roberta(out: str, tf, src: str) -> None:
    from transformers.models.roberta import modeling_roberta as mr
    from transformers.models.roberta.configuration_roberta import RobertaConfig
    from transformers.modeling_utils import hf_state_dict_for_save

    n_ctx = 16
    config = RobertaConfig(vocab_size=96, hidden_size=28, num_hidden_layers=2, num_attention_heads=4,
                           intermediate_size=112, hidden_act="gelu", hidden_dropout_prob=0.1,
                           attention_probs_dropout_prob=0.1, max_position_embeddings=n_ctx + 2,
                           type_vocab_size=1, initializer_range=0.02, layer_norm_eps=1e-5,
                           pad_token_id=1, bos_token_id=0, eos_token_id=2)
    model = mr.RobertaForMaskedLM(config)
    randomize_(model, seed=501)
    T = 13
    ids = torch.cat([torch.tensor([[0]]), random_ids(502, T - 2, 3, 96), torch.tensor([[2]])], dim=1)
    assert not (ids == config.pad_token_id).any()
    pos = mr.create_position_ids_from_input_ids(ids, config.pad_token_id)
    print(f"  roberta position ids: {pos.tolist()}")
    o = hf_outputs(model, input_ids=ids)
    ref = OrderedDict(input_ids=ids, position_ids=pos, logits=f32(o.logits))
    add_outputs(ref, o)
    attn_stats("roberta", o.attentions)

    d = folder(out, "roberta")
    write_hf_config(config, "RobertaForMaskedLM", os.path.join(d, "config.json"))
    sd = hf_state_dict_for_save(model)
    save_safetensors(sd, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    save_reference(os.path.join(d, "reference.safetensors"), ref, "roberta", src)
    print(f"  roberta head keys: {[k for k in sd if k.startswith('lm_head')]}")

    check_reload("roberta", d, mr.RobertaForMaskedLM, RobertaConfig,
                 {"lm_head.decoder.weight", "lm_head.decoder.bias"}, o.logits, input_ids=ids)


# ----------------------------------------------------------------------------------------------
# nanoGPT (+ TransformerLens layout of the same weights)
# ----------------------------------------------------------------------------------------------
def load_nanogpt(hf_src: str):
    path = os.path.join(hf_src, "nanogpt", "model.py")
    if not os.path.isfile(path):
        raise SystemExit(f"{path} is missing: see tests/data/models/README.md for how HF_SRC is made")
    import importlib.util
    spec = importlib.util.spec_from_file_location("nanogpt_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def nanogpt_forward(model, ids):
    """Full-sequence logits (nanoGPT computes them for every position when targets are given), the
    attention probabilities (the input of each block's attn_dropout, on the non-flash path torch 1.13
    takes) and the residual stream: hidden_states.0 = wte + wpe, hidden_states.l = output of block l-1
    for l < n_layer, hidden_states.n_layer = ln_f(output of the last block) (HF's GPT-2 convention)."""
    model.eval()
    atts, blocks, emb = [], [], []
    hooks = [model.transformer.drop.register_forward_hook(lambda m, i, o: emb.append(o.detach()))]
    for blk in model.transformer.h:
        assert not blk.attn.flash
        hooks.append(blk.attn.attn_dropout.register_forward_hook(lambda m, i, o: atts.append(i[0].detach())))
        hooks.append(blk.register_forward_hook(lambda m, i, o: blocks.append(o.detach())))
    with torch.no_grad():
        logits, _ = model(ids, targets=torch.zeros_like(ids))
    for h in hooks:
        h.remove()
    hidden = [emb[0]] + blocks[:-1] + [model.transformer.ln_f(blocks[-1]).detach()]
    return logits, atts, hidden


def nanogpt_checkpoint(mod, model, model_args, seed, compiled):
    """What train.py's torch.save writes: real AdamW (configure_optimizers) state after one step."""
    model.train()
    gen = torch.Generator().manual_seed(seed)
    x = torch.randint(0, model_args["vocab_size"], (2, 8), generator=gen)
    y = torch.randint(0, model_args["vocab_size"], (2, 8), generator=gen)
    params = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), "cpu")
    _, loss = model(x, y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    with torch.no_grad():  # put the reference weights back; the optimizer state stays that of the step
        for n, p in model.named_parameters():
            p.copy_(params[n])
    model.eval()
    sd = model.state_dict()
    if compiled:
        # torch.compile's OptimizedModule prefixes every key with `_orig_mod.`; it only exists on torch 2,
        # where nanoGPT takes the flash path and registers no `attn.bias` causal-mask buffer.
        sd = OrderedDict(("_orig_mod." + k, v) for k, v in sd.items() if not k.endswith(".attn.bias"))
    config = {"out_dir": "out", "eval_interval": 2000, "log_interval": 1, "eval_iters": 200, "eval_only": False,
              "always_save_checkpoint": True, "init_from": "scratch", "wandb_log": False,
              "wandb_project": "owt", "wandb_run_name": "gpt2", "dataset": "openwebtext",
              "gradient_accumulation_steps": 40, "batch_size": 12, "block_size": model_args["block_size"],
              "n_layer": model_args["n_layer"], "n_head": model_args["n_head"], "n_embd": model_args["n_embd"],
              "dropout": model_args["dropout"], "bias": model_args["bias"], "learning_rate": 6e-4,
              "max_iters": 600000, "weight_decay": 0.1, "beta1": 0.9, "beta2": 0.95, "grad_clip": 1.0,
              "decay_lr": True, "warmup_iters": 2000, "lr_decay_iters": 600000, "min_lr": 6e-5,
              "backend": "nccl", "device": "cpu", "dtype": "float32", "compile": compiled}
    return {"model": sd, "optimizer": opt.state_dict(), "model_args": model_args, "iter_num": 1,
            "best_val_loss": torch.tensor(float(loss.detach())), "config": config}


def tl_state_dict(hf_src: str, sd: "OrderedDict[str, torch.Tensor]", a: dict,
                  cfg: dict) -> "OrderedDict[str, torch.Tensor]":
    """The nanoGPT weights as TransformerLens's own convert_nanogpt_weights lays them out (W_Q/W_K/W_V
    [n_heads, d_model, d_head], W_O [n_heads, d_head, d_model], b_Q.. [n_heads, d_head], W_in [d_model, d_mlp],
    W_out [d_mlp, d_model], W_U [d_model, d_vocab], ln*.w/b, IGNORE), completed the way HookedTransformer's
    load_and_process_state_dict(fold_ln=False, ...) / state_dict() would: unembed.b_U zeros where the
    converter leaves it out (the bias=True case) and the blocks.{l}.attn.mask causal buffer
    ([n_ctx, n_ctx] bool, lower triangle, as TransformerLens 1.x/2.x register it)."""
    import types
    import tl_shim
    convert = tl_shim.load_convert_nanogpt_weights(hf_src)
    ns = types.SimpleNamespace(n_layers=cfg["n_layers"], n_heads=cfg["n_heads"], d_model=cfg["d_model"],
                               d_head=cfg["d_head"], d_mlp=cfg["d_mlp"], d_vocab=cfg["d_vocab"],
                               dtype=torch.float32)
    w = convert(OrderedDict((k, v.detach().clone()) for k, v in sd.items()), ns)
    w.setdefault("unembed.b_U", torch.zeros(cfg["d_vocab"]))
    for l in range(cfg["n_layers"]):
        w[f"blocks.{l}.attn.mask"] = torch.tril(torch.ones(cfg["n_ctx"], cfg["n_ctx"])).bool()
    # cross-check against the layout written out by hand
    nh, d = a["n_head"], a["n_embd"]
    dh = d // nh
    for l in range(a["n_layer"]):
        Wq = sd[f"transformer.h.{l}.attn.c_attn.weight"][:d]
        assert torch.equal(w[f"blocks.{l}.attn.W_Q"], Wq.T.reshape(d, nh, dh).permute(1, 0, 2))
        Wo = sd[f"transformer.h.{l}.attn.c_proj.weight"]
        assert torch.equal(w[f"blocks.{l}.attn.W_O"], Wo.T.reshape(nh, dh, d))
    return OrderedDict((k, w[k].detach().clone().contiguous()) for k in sorted(w))


def tl_config(a: dict, name: str) -> dict:
    """HookedTransformerConfig fields (TransformerLens's own names) for a nanoGPT model."""
    d, nh = a["n_embd"], a["n_head"]
    return {"model_name": name, "n_layers": a["n_layer"], "d_model": d, "n_ctx": a["block_size"],
            "d_head": d // nh, "n_heads": nh, "d_mlp": 4 * d, "d_vocab": a["vocab_size"],
            "d_vocab_out": a["vocab_size"], "act_fn": "gelu", "normalization_type": "LN", "eps": 1e-5,
            "positional_embedding_type": "standard", "attn_only": False, "use_attn_scale": True,
            "attn_scale": math.sqrt(d // nh), "use_attn_result": False, "final_rms": False,
            "parallel_attn_mlp": False, "original_architecture": "nanogpt", "tokenizer_name": None,
            "default_prepend_bos": True, "dtype": "float32", "attention_dir": "causal",
            "n_key_value_heads": None, "rotary_dim": None, "gated_mlp": False,
            "tie_word_embeddings": True}


def tl_forward(w: dict, cfg: dict, ids: torch.Tensor):
    """Independent check of the TL-layout tensors: HookedTransformer's forward written out in its own
    einsum conventions (LN -> attn -> resid, LN -> MLP -> resid, ln_final, unembed)."""
    def ln(x, g, b):
        x = x - x.mean(-1, keepdim=True)
        return x / (x.pow(2).mean(-1, keepdim=True) + cfg["eps"]).sqrt() * g + b
    T = ids.shape[1]
    x = w["embed.W_E"][ids] + w["pos_embed.W_pos"][:T][None]
    mask = torch.ones(T, T).tril().bool()
    atts = []
    for l in range(cfg["n_layers"]):
        t = f"blocks.{l}."
        h = ln(x, w[t + "ln1.w"], w[t + "ln1.b"])
        q = torch.einsum("bpd,ndh->bpnh", h, w[t + "attn.W_Q"]) + w[t + "attn.b_Q"]
        k = torch.einsum("bpd,ndh->bpnh", h, w[t + "attn.W_K"]) + w[t + "attn.b_K"]
        v = torch.einsum("bpd,ndh->bpnh", h, w[t + "attn.W_V"]) + w[t + "attn.b_V"]
        s = torch.einsum("bqnh,bknh->bnqk", q, k) / cfg["attn_scale"]
        p = s.masked_fill(~mask, float("-inf")).softmax(-1)
        atts.append(p)
        z = torch.einsum("bnqk,bknh->bqnh", p, v)
        x = x + torch.einsum("bqnh,nhd->bqd", z, w[t + "attn.W_O"]) + w[t + "attn.b_O"]
        h = ln(x, w[t + "ln2.w"], w[t + "ln2.b"])
        m = torch.nn.functional.gelu(h @ w[t + "mlp.W_in"] + w[t + "mlp.b_in"])
        x = x + m @ w[t + "mlp.W_out"] + w[t + "mlp.b_out"]
    x = ln(x, w["ln_final.w"], w["ln_final.b"])
    return x @ w["unembed.W_U"] + w["unembed.b_U"], atts


def case_nanogpt(out: str, hf_src: str, compiled: bool) -> None:
    mod = load_nanogpt(hf_src)
    case = "nanogpt_compiled" if compiled else "nanogpt"
    if compiled:
        a = dict(n_layer=2, n_head=3, n_embd=24, block_size=16, bias=False, vocab_size=96, dropout=0.0)
    else:
        a = dict(n_layer=2, n_head=4, n_embd=24, block_size=16, bias=True, vocab_size=96, dropout=0.0)
    torch.manual_seed(0)
    model = mod.GPT(mod.GPTConfig(**a))
    randomize_(model, seed=601 + compiled)
    ids = random_ids(603 + compiled, 12 if not compiled else 14, 0, 96)
    logits, atts, hidden = nanogpt_forward(model, ids)
    attn_stats(case, atts)
    ref = OrderedDict(input_ids=ids, logits=f32(logits))
    for l, p in enumerate(atts):
        ref[f"attentions.{l}"] = f32(p)
    for i, h in enumerate(hidden):
        ref[f"hidden_states.{i}"] = f32(h)
    src = "nanoGPT model.py (" + open(os.path.join(hf_src, "nanogpt", "SOURCE.txt")).read().strip() + ")"

    d = folder(out, case)
    ckpt = nanogpt_checkpoint(mod, model, a, 605 + compiled, compiled)
    torch.save(ckpt, os.path.join(d, "ckpt.pt"))
    save_reference(os.path.join(d, "reference.safetensors"), ref, case, src)
    print(f"  {case} ckpt keys: {list(ckpt['model'])[:3]} ... ({len(ckpt['model'])}), "
          f"optimizer groups {len(ckpt['optimizer']['param_groups'])}")

    # reload as train.py's resume / sample.py do
    c = torch.load(os.path.join(d, "ckpt.pt"), map_location="cpu")
    sd = c["model"]
    for k in list(sd):
        if k.startswith("_orig_mod."):
            sd[k[len("_orig_mod."):]] = sd.pop(k)
    m2 = mod.GPT(mod.GPTConfig(**c["model_args"]))
    missing, unexpected = m2.load_state_dict(sd, strict=False)
    assert not unexpected and all(k.endswith(".attn.bias") for k in missing), (missing, unexpected)
    check_close(case + " logits", nanogpt_forward(m2, ids)[0], logits)

    # TransformerLens layout of the same weights, checked by an einsum forward in TL's conventions
    tl_case = "tl_" + case
    cfg = tl_config(a, tl_case)
    w = tl_state_dict(hf_src, model.state_dict(), a, cfg)
    tl_logits, tl_atts = tl_forward(w, cfg, ids)
    check_close(tl_case + " logits (TL-layout einsum forward vs nanoGPT)", tl_logits, logits, 1e-4)
    d2 = folder(out, tl_case)
    save_safetensors(w, os.path.join(d2, "model.safetensors"), metadata={"format": "pt"})
    with open(os.path.join(d2, "hooked_transformer_config.json"), "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
    save_reference(os.path.join(d2, "reference.safetensors"), ref, tl_case, src + " via TL-layout conversion")


# ----------------------------------------------------------------------------------------------
CASES = ["bloom", "mpt", "t5", "t5_v1_1", "bert", "roberta", "nanogpt", "nanogpt_compiled"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hf-src", default="/work/hf_src",
                    help="folder with transformers/ and nanogpt/ sources (see tests/data/models/README.md)")
    ap.add_argument("--out", default=os.path.join(REPO, "tests", "data", "models"))
    ap.add_argument("--only", nargs="*", choices=CASES, help="cases to write (default all; bloom also "
                    "writes bloom_noprefix, nanogpt* also tl_nanogpt*)")
    args = ap.parse_args()
    if not os.path.isdir(args.hf_src):
        raise SystemExit(f"--hf-src {args.hf_src} does not exist: see tests/data/models/README.md")
    os.makedirs(args.out, exist_ok=True)
    cases = args.only or CASES
    tf = None
    src = ""
    if any(c not in ("nanogpt", "nanogpt_compiled") for c in cases):
        import hf_shim
        tf = hf_shim.load_transformers(args.hf_src)
        first = hf_shim.source_note(args.hf_src).splitlines()[0]
        src = "transformers " + tf.__version__ + " modeling files, " + first
    for c in cases:
        print(f"== {c}")
        if c == "bloom":
            case_bloom(args.out, tf, src)
        elif c == "mpt":
            case_mpt(args.out, tf, src)
        elif c in ("t5", "t5_v1_1"):
            case_t5(args.out, tf, src, v11=(c == "t5_v1_1"))
        elif c == "bert":
            case_bert(args.out, tf, src)
        elif c == "roberta":
            case_roberta(args.out, tf, src)
        else:
            case_nanogpt(args.out, args.hf_src, compiled=(c == "nanogpt_compiled"))


if __name__ == "__main__":
    main()
