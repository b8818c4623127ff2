#!/usr/bin/python3
"""Re-computes every case of tests/data/models/ from its files alone (config.json + model.safetensors, or
ckpt.pt, or the TL state dict + hooked_transformer_config.json) with plain torch ops written from the
semantics listed in tests/data/models/README.md, and compares with reference.safetensors. No transformers,
nanoGPT or TransformerLens code: it is the executable form of what a C++ implementation must match.

    /usr/bin/python3 tools/hf_parity/independent_forward.py [tests/data/models]
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from poslens_safetensors import load_safetensors  # noqa: E402


def ln(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def gelu_tanh(x):  # BLOOM's 0.79788456 constant and T5's gelu_new are the same tanh approximation
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


def alibi_slopes(n):
    """Press et al.: 2^(-8k/n) for a power of two; otherwise those of the closest lower power of two p,
    then every other one (odd k) of 2p's list, first n - p of them."""
    def pow2(m):
        return [2.0 ** (-8.0 * (k + 1) / m) for k in range(m)]
    p = 2 ** int(math.floor(math.log2(n)))
    s = pow2(p)
    if p != n:
        s += pow2(2 * p)[0::2][: n - p]
    return torch.tensor(s)


def attend(q, k, v, bias, causal, scale):
    """q, k, v [B, H, T, dh]; returns (context [B, T, H*dh], probs)."""
    s = (q @ k.transpose(-1, -2)) * scale
    if bias is not None:
        s = s + bias
    if causal:
        T = q.shape[-2]
        s = s.masked_fill(~torch.ones(T, k.shape[-2], dtype=torch.bool).tril(), float("-inf"))
    p = s.softmax(-1)
    ctx = (p @ v).transpose(1, 2).reshape(q.shape[0], q.shape[2], -1)
    return ctx, p


def heads(x, H):
    B, T, D = x.shape
    return x.view(B, T, H, D // H).transpose(1, 2)


def bloom(c, w, ref):
    if "word_embeddings.weight" in w:  # hub files: no `transformer.` prefix, no lm_head
        w = {"transformer." + k: v for k, v in w.items()}
    H, D, eps = c["n_head"], c["hidden_size"], c["layer_norm_epsilon"]
    dh = D // H
    ids = ref["input_ids"]
    T = ids.shape[1]
    g = lambda n: w["transformer." + n]  # noqa: E731
    x = ln(g("word_embeddings.weight")[ids], g("word_embeddings_layernorm.weight"),
           g("word_embeddings_layernorm.bias"), eps)
    hs, atts = [x], []
    bias = alibi_slopes(H)[:, None, None] * torch.arange(T)[None, None, :]  # slope * key position
    for l in range(c["n_layer"]):
        p = f"h.{l}."
        h = ln(x, g(p + "input_layernorm.weight"), g(p + "input_layernorm.bias"), eps)
        qkv = F.linear(h, g(p + "self_attention.query_key_value.weight"), g(p + "self_attention.query_key_value.bias"))
        qkv = qkv.view(1, T, H, 3, dh)  # fused per head: [q_h, k_h, v_h] blocks of dh, head-major
        q, k, v = (qkv[..., i, :].transpose(1, 2) for i in range(3))
        ctx, pr = attend(q, k, v, bias, True, 1.0 / math.sqrt(dh))
        atts.append(pr)
        x = x + F.linear(ctx, g(p + "self_attention.dense.weight"), g(p + "self_attention.dense.bias"))
        h = ln(x, g(p + "post_attention_layernorm.weight"), g(p + "post_attention_layernorm.bias"), eps)
        x = x + F.linear(gelu_tanh(F.linear(h, g(p + "mlp.dense_h_to_4h.weight"), g(p + "mlp.dense_h_to_4h.bias"))),
                         g(p + "mlp.dense_4h_to_h.weight"), g(p + "mlp.dense_4h_to_h.bias"))
        hs.append(x)
    x = ln(x, g("ln_f.weight"), g("ln_f.bias"), eps)
    hs[-1] = x
    return x @ g("word_embeddings.weight").T, atts, hs


def mpt(c, w, ref):
    H, D, eps = c["n_heads"], c["d_model"], c["layer_norm_epsilon"]
    clip = c["attn_config"]["clip_qkv"]
    ids = ref["input_ids"]
    T = ids.shape[1]
    g = lambda n: w["transformer." + n]  # noqa: E731
    x = g("wte.weight")[ids]
    hs, atts = [x], []
    # HF: alibi_bias_max fixed at 8 (config value not passed), bias = slope * (j - (T-1)), same softmax
    # as slope * j; slope order equals BLOOM's for alibi_bias_max 8
    bias = alibi_slopes(H)[:, None, None] * (torch.arange(T) - (T - 1))[None, None, :]
    for l in range(c["n_layers"]):
        p = f"blocks.{l}."
        h = ln(x, g(p + "norm_1.weight"), None, eps)
        qkv = F.linear(h, g(p + "attn.Wqkv.weight"))
        if clip:
            qkv = qkv.clamp(-clip, clip)
        q, k, v = (heads(t, H) for t in qkv.chunk(3, dim=-1))  # [q | k | v], each head-major
        ctx, pr = attend(q, k, v, bias, True, 1.0 / math.sqrt(D / H))
        atts.append(pr)
        x = x + F.linear(ctx, g(p + "attn.out_proj.weight"))
        h = ln(x, g(p + "norm_2.weight"), None, eps)
        x = x + F.linear(F.gelu(F.linear(h, g(p + "ffn.up_proj.weight"))), g(p + "ffn.down_proj.weight"))
        hs.append(x)
    x = ln(x, g("norm_f.weight"), None, eps)
    hs[-1] = x
    return x @ g("wte.weight").T, atts, hs


def t5_bucket(rel, bidirectional, nb, md):
    ret = torch.zeros_like(rel)
    if bidirectional:
        nb //= 2
        ret += (rel > 0).long() * nb
        n = rel.abs()
    else:
        n = -torch.clamp(rel, max=0)
    max_exact = nb // 2
    large = max_exact + (torch.log(n.float() / max_exact) / math.log(md / max_exact) * (nb - max_exact)).long()
    large = torch.clamp(large, max=nb - 1)
    return ret + torch.where(n < max_exact, n, large)


def t5(c, w, ref):
    H, dk, eps = c["num_heads"], c["d_kv"], c["layer_norm_epsilon"]
    nb, md = c["relative_attention_num_buckets"], c["relative_attention_max_distance"]
    gated = c["feed_forward_proj"].startswith("gated")
    act = gelu_tanh if gated else F.relu  # "gated-gelu" -> gelu_new

    def attn(x, kv, p, bias):
        q = heads(F.linear(x, w[p + "q.weight"]), H)
        k = heads(F.linear(kv, w[p + "k.weight"]), H)
        v = heads(F.linear(kv, w[p + "v.weight"]), H)
        ctx, pr = attend(q, k, v, bias, False, 1.0)  # no 1/sqrt(d_kv)
        return F.linear(ctx, w[p + "o.weight"]), pr

    def ff(x, p):
        h = rms(x, w[p + "layer_norm.weight"], eps)
        if gated:
            h = act(F.linear(h, w[p + "DenseReluDense.wi_0.weight"])) * F.linear(h, w[p + "DenseReluDense.wi_1.weight"])
        else:
            h = act(F.linear(h, w[p + "DenseReluDense.wi.weight"]))
        return x + F.linear(h, w[p + "DenseReluDense.wo.weight"])

    def rel_bias(table, Tq, Tk, bidir):
        rel = torch.arange(Tk)[None, :] - torch.arange(Tq)[:, None]
        return table[t5_bucket(rel, bidir, nb, md)].permute(2, 0, 1)[None]

    out = {}
    E = w["shared.weight"]
    # encoder
    ids = ref["input_ids"]
    x = E[ids]
    Te = ids.shape[1]
    bias = rel_bias(w["encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"], Te, Te, True)
    hs, atts = [x], []
    for l in range(c["num_layers"]):
        p = f"encoder.block.{l}.layer."
        a, pr = attn(rms(x, w[p + "0.layer_norm.weight"], eps), rms(x, w[p + "0.layer_norm.weight"], eps),
                     p + "0.SelfAttention.", bias)
        atts.append(pr)
        x = ff(x + a, p + "1.")
        hs.append(x)
    enc = rms(x, w["encoder.final_layer_norm.weight"], eps)
    hs[-1] = enc
    out["encoder_attentions"], out["encoder_hidden_states"] = atts, hs
    # decoder
    dids = ref["decoder_input_ids"]
    Td = dids.shape[1]
    x = E[dids]
    causal = torch.ones(Td, Td, dtype=torch.bool).tril()
    bias = rel_bias(w["decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight"], Td, Td, False)
    bias = bias.masked_fill(~causal, torch.finfo(torch.float32).min)
    hs, atts, cross = [x], [], []
    for l in range(c["num_decoder_layers"]):
        p = f"decoder.block.{l}.layer."
        h = rms(x, w[p + "0.layer_norm.weight"], eps)
        a, pr = attn(h, h, p + "0.SelfAttention.", bias)
        atts.append(pr)
        x = x + a
        a, pr = attn(rms(x, w[p + "1.layer_norm.weight"], eps), enc, p + "1.EncDecAttention.", None)
        cross.append(pr)
        x = ff(x + a, p + "2.")
        hs.append(x)
    x = rms(x, w["decoder.final_layer_norm.weight"], eps)
    hs[-1] = x
    out["decoder_attentions"], out["decoder_hidden_states"], out["cross_attentions"] = atts, hs, cross
    if c.get("tie_word_embeddings", True):
        logits = (x * c["d_model"] ** -0.5) @ E.T
    else:
        logits = x @ w["lm_head.weight"].T
    return logits, out


def bert_like(c, w, ref, roberta):
    H, eps = c["num_attention_heads"], c["layer_norm_eps"]
    pre = "roberta." if roberta else "bert."
    g = lambda n: w[pre + n]  # noqa: E731
    ids = ref["input_ids"]
    T = ids.shape[1]
    if roberta:  # padding_idx + cumulative count of non-pad tokens
        m = (ids != c["pad_token_id"]).long()
        pos = torch.cumsum(m, 1) * m + c["pad_token_id"]
        tt = torch.zeros_like(ids)
    else:
        pos = torch.arange(T)[None]
        tt = ref["token_type_ids"]
    x = g("embeddings.word_embeddings.weight")[ids] + g("embeddings.position_embeddings.weight")[pos] \
        + g("embeddings.token_type_embeddings.weight")[tt]
    x = ln(x, g("embeddings.LayerNorm.weight"), g("embeddings.LayerNorm.bias"), eps)
    hs, atts = [x], []
    act = F.gelu  # hidden_act "gelu" = erf GELU
    for l in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        q, k, v = (heads(F.linear(x, g(p + f"attention.self.{n}.weight"), g(p + f"attention.self.{n}.bias")), H)
                   for n in ("query", "key", "value"))
        ctx, pr = attend(q, k, v, None, False, 1.0 / math.sqrt(q.shape[-1]))
        atts.append(pr)
        x = ln(x + F.linear(ctx, g(p + "attention.output.dense.weight"), g(p + "attention.output.dense.bias")),
               g(p + "attention.output.LayerNorm.weight"), g(p + "attention.output.LayerNorm.bias"), eps)
        h = act(F.linear(x, g(p + "intermediate.dense.weight"), g(p + "intermediate.dense.bias")))
        x = ln(x + F.linear(h, g(p + "output.dense.weight"), g(p + "output.dense.bias")),
               g(p + "output.LayerNorm.weight"), g(p + "output.LayerNorm.bias"), eps)
        hs.append(x)
    if roberta:
        h = F.gelu(F.linear(x, w["lm_head.dense.weight"], w["lm_head.dense.bias"]))
        h = ln(h, w["lm_head.layer_norm.weight"], w["lm_head.layer_norm.bias"], eps)
        logits = h @ g("embeddings.word_embeddings.weight").T + w["lm_head.bias"]
    else:
        h = act(F.linear(x, w["cls.predictions.transform.dense.weight"], w["cls.predictions.transform.dense.bias"]))
        h = ln(h, w["cls.predictions.transform.LayerNorm.weight"], w["cls.predictions.transform.LayerNorm.bias"], eps)
        logits = h @ g("embeddings.word_embeddings.weight").T + w["cls.predictions.bias"]
    return logits, atts, hs


def nanogpt(ck, ref):
    a = ck["model_args"]
    w = {k[len("_orig_mod."):] if k.startswith("_orig_mod.") else k: v for k, v in ck["model"].items()}
    H, eps = a["n_head"], 1e-5
    ids = ref["input_ids"]
    T = ids.shape[1]
    b = lambda n: w.get(n)  # noqa: E731  (absent when bias=False; `attn.bias` is the mask buffer, not a bias)
    x = w["transformer.wte.weight"][ids] + w["transformer.wpe.weight"][:T]
    hs, atts = [x], []
    for l in range(a["n_layer"]):
        p = f"transformer.h.{l}."
        h = ln(x, w[p + "ln_1.weight"], b(p + "ln_1.bias"), eps)
        qkv = F.linear(h, w[p + "attn.c_attn.weight"], b(p + "attn.c_attn.bias"))
        q, k, v = (heads(t, H) for t in qkv.split(a["n_embd"], dim=-1))
        ctx, pr = attend(q, k, v, None, True, 1.0 / math.sqrt(q.shape[-1]))
        atts.append(pr)
        x = x + F.linear(ctx, w[p + "attn.c_proj.weight"], b(p + "attn.c_proj.bias"))
        h = ln(x, w[p + "ln_2.weight"], b(p + "ln_2.bias"), eps)
        x = x + F.linear(F.gelu(F.linear(h, w[p + "mlp.c_fc.weight"], b(p + "mlp.c_fc.bias"))),
                         w[p + "mlp.c_proj.weight"], b(p + "mlp.c_proj.bias"))
        hs.append(x)
    x = ln(x, w["transformer.ln_f.weight"], b("transformer.ln_f.bias"), eps)
    hs[-1] = x
    return x @ w["lm_head.weight"].T, atts, hs


def tl(cfg, w, ref):
    ids = ref["input_ids"]
    T = ids.shape[1]
    x = w["embed.W_E"][ids] + w["pos_embed.W_pos"][:T]
    atts = []
    for l in range(cfg["n_layers"]):
        t = f"blocks.{l}."
        h = ln(x, w[t + "ln1.w"], w[t + "ln1.b"], cfg["eps"])
        q, k, v = (torch.einsum("bpd,ndh->bnph", h, w[t + f"attn.W_{n}"]) + w[t + f"attn.b_{n}"][None, :, None]
                   for n in "QKV")
        s = q @ k.transpose(-1, -2) / cfg["attn_scale"]
        s = torch.where(w[t + "attn.mask"][:T, :T], s, w[t + "attn.IGNORE"])
        pr = s.softmax(-1)
        atts.append(pr)
        z = pr @ v  # [b, n, q, h]
        x = x + torch.einsum("bnqh,nhd->bqd", z, w[t + "attn.W_O"]) + w[t + "attn.b_O"]
        h = ln(x, w[t + "ln2.w"], w[t + "ln2.b"], cfg["eps"])
        x = x + F.gelu(h @ w[t + "mlp.W_in"] + w[t + "mlp.b_in"]) @ w[t + "mlp.W_out"] + w[t + "mlp.b_out"]
    x = ln(x, w["ln_final.w"], w["ln_final.b"], cfg["eps"])
    return x @ w["unembed.W_U"] + w["unembed.b_U"], atts, None


def compare(case, ref, name, got, tol=2e-5):
    err = (got - ref[name]).abs().max().item()
    ok = err <= tol
    print(f"  {case:22s} {name:26s} max|diff| {err:.2e} {'ok' if ok else 'MISMATCH'}")
    return ok


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "tests", "data", "models")
    ok = True
    for case in sorted(os.listdir(root)):
        d = os.path.join(root, case)
        if not os.path.isfile(os.path.join(d, "reference.safetensors")):
            continue
        ref, _ = load_safetensors(os.path.join(d, "reference.safetensors"))
        with torch.no_grad():
            if os.path.isfile(os.path.join(d, "ckpt.pt")):
                logits, atts, hs = nanogpt(torch.load(os.path.join(d, "ckpt.pt"), map_location="cpu"), ref)
            elif os.path.isfile(os.path.join(d, "hooked_transformer_config.json")):
                w, _ = load_safetensors(os.path.join(d, "model.safetensors"))
                logits, atts, hs = tl(json.load(open(os.path.join(d, "hooked_transformer_config.json"))), w, ref)
            else:
                c = json.load(open(os.path.join(d, "config.json")))
                mt = c["model_type"]
                if mt not in ("t5", "bloom", "mpt", "bert", "roberta"):
                    # the 2024-26 families: transformers' own modeling code is the reference
                    print(f"  {case:22s} model_type {mt!r}: not recomputed here")
                    continue
                w, _ = load_safetensors(os.path.join(d, "model.safetensors"))
                if mt == "t5":
                    logits, out = t5(c, w, ref)
                    ok &= compare(case, ref, "logits", logits)
                    for key, seq in out.items():
                        for i, t in enumerate(seq):
                            ok &= compare(case, ref, f"{key}.{i}", t)
                    continue
                fn = {"bloom": bloom, "mpt": mpt, "bert": lambda c, w, r: bert_like(c, w, r, False),
                      "roberta": lambda c, w, r: bert_like(c, w, r, True)}[mt]
                logits, atts, hs = fn(c, w, ref)
            ok &= compare(case, ref, "logits", logits)
            for i, a in enumerate(atts):
                ok &= compare(case, ref, f"attentions.{i}", a)
            for i, h in enumerate(hs or []):
                ok &= compare(case, ref, f"hidden_states.{i}", h)
    print("all cases reproduced" if ok else "SOME CASES DIFFER")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
