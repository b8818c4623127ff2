#!/usr/bin/python3
"""Writes a randomly initialised BLOOM, BERT or T5 checkpoint folder in its real HF layout
(config.json + model.safetensors, names as save_pretrained writes them) for screenshots and
long-input benchmarks, with a tokenizer.json copied in. Weights N(0, 0.02^2) (T5: N(0, 0.5^2)
so its unscaled attention is not uniform), norms 1, biases 0, from a seeded torch.Generator.

    /usr/bin/python3 tools/make_random_arch_model.py FAMILY OUT_DIR --tokenizer FILE
        [--d-model 256] [--layers 4] [--heads 8] [--seed 0]

FAMILY: bloom (ALiBi), bert (BertForMaskedLM) or t5 (v1.1 gated-GELU, untied).
The vocabulary size is the tokenizer's.
"""
import argparse
import json
import os
import shutil
import struct

import torch


def tokenizer_vocab(path):
    j = json.load(open(path, encoding="utf-8"))
    ids = [i for _, i in j["model"]["vocab"].items()] if isinstance(j["model"]["vocab"], dict) \
        else list(range(len(j["model"]["vocab"])))
    ids += [t["id"] for t in j.get("added_tokens", [])]
    return max(ids) + 1


def bloom(d, L, H, V):
    cfg = {"architectures": ["BloomForCausalLM"], "model_type": "bloom", "hidden_size": d, "n_layer": L,
           "n_head": H, "vocab_size": V, "layer_norm_epsilon": 1e-5, "seq_length": 2048,
           "apply_residual_connection_post_layernorm": False, "tie_word_embeddings": True}
    t = [("word_embeddings.weight", (V, d)), ("word_embeddings_layernorm.weight", (d,)),
         ("word_embeddings_layernorm.bias", (d,))]
    for i in range(L):
        p = f"h.{i}."
        t += [(p + "input_layernorm.weight", (d,)), (p + "input_layernorm.bias", (d,)),
              (p + "self_attention.query_key_value.weight", (3 * d, d)),
              (p + "self_attention.query_key_value.bias", (3 * d,)),
              (p + "self_attention.dense.weight", (d, d)), (p + "self_attention.dense.bias", (d,)),
              (p + "post_attention_layernorm.weight", (d,)), (p + "post_attention_layernorm.bias", (d,)),
              (p + "mlp.dense_h_to_4h.weight", (4 * d, d)), (p + "mlp.dense_h_to_4h.bias", (4 * d,)),
              (p + "mlp.dense_4h_to_h.weight", (d, 4 * d)), (p + "mlp.dense_4h_to_h.bias", (d,))]
    return cfg, t + [("ln_f.weight", (d,)), ("ln_f.bias", (d,))]


def bert(d, L, H, V):
    cfg = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "hidden_size": d,
           "num_hidden_layers": L, "num_attention_heads": H, "intermediate_size": 4 * d,
           "hidden_act": "gelu", "max_position_embeddings": 512, "type_vocab_size": 2,
           "layer_norm_eps": 1e-12, "vocab_size": V, "pad_token_id": 0, "position_embedding_type": "absolute"}
    e = "bert.embeddings."
    t = [(e + "word_embeddings.weight", (V, d)), (e + "position_embeddings.weight", (512, d)),
         (e + "token_type_embeddings.weight", (2, d)), (e + "LayerNorm.weight", (d,)), (e + "LayerNorm.bias", (d,))]
    for i in range(L):
        p = f"bert.encoder.layer.{i}."
        for n in ("query", "key", "value"):
            t += [(p + f"attention.self.{n}.weight", (d, d)), (p + f"attention.self.{n}.bias", (d,))]
        t += [(p + "attention.output.dense.weight", (d, d)), (p + "attention.output.dense.bias", (d,)),
              (p + "attention.output.LayerNorm.weight", (d,)), (p + "attention.output.LayerNorm.bias", (d,)),
              (p + "intermediate.dense.weight", (4 * d, d)), (p + "intermediate.dense.bias", (4 * d,)),
              (p + "output.dense.weight", (d, 4 * d)), (p + "output.dense.bias", (d,)),
              (p + "output.LayerNorm.weight", (d,)), (p + "output.LayerNorm.bias", (d,))]
    c = "cls.predictions."
    return cfg, t + [(c + "bias", (V,)), (c + "transform.dense.weight", (d, d)), (c + "transform.dense.bias", (d,)),
                     (c + "transform.LayerNorm.weight", (d,)), (c + "transform.LayerNorm.bias", (d,))]


def t5(d, L, H, V):
    dkv, ff = d // H, 2 * d
    cfg = {"architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "d_model": d, "d_kv": dkv,
           "d_ff": ff, "num_layers": L, "num_decoder_layers": L, "num_heads": H, "vocab_size": V,
           "relative_attention_num_buckets": 32, "relative_attention_max_distance": 128,
           "feed_forward_proj": "gated-gelu", "layer_norm_epsilon": 1e-6, "tie_word_embeddings": False,
           "decoder_start_token_id": 0, "eos_token_id": 1, "pad_token_id": 0, "is_encoder_decoder": True}
    t = [("shared.weight", (V, d))]
    for stack in ("encoder", "decoder"):
        for i in range(L):
            p = f"{stack}.block.{i}.layer."
            for n in ("q", "k", "v"):
                t.append((p + f"0.SelfAttention.{n}.weight", (H * dkv, d)))
            t += [(p + "0.SelfAttention.o.weight", (d, H * dkv)), (p + "0.layer_norm.weight", (d,))]
            if i == 0:
                t.append((p + "0.SelfAttention.relative_attention_bias.weight", (32, H)))
            m = p + "1."
            if stack == "decoder":
                for n in ("q", "k", "v"):
                    t.append((p + f"1.EncDecAttention.{n}.weight", (H * dkv, d)))
                t += [(p + "1.EncDecAttention.o.weight", (d, H * dkv)), (p + "1.layer_norm.weight", (d,))]
                m = p + "2."
            t += [(m + "DenseReluDense.wi_0.weight", (ff, d)), (m + "DenseReluDense.wi_1.weight", (ff, d)),
                  (m + "DenseReluDense.wo.weight", (d, ff)), (m + "layer_norm.weight", (d,))]
        t.append((f"{stack}.final_layer_norm.weight", (d,)))
    return cfg, t + [("lm_head.weight", (V, d))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("family", choices=["bloom", "bert", "t5"])
    ap.add_argument("out_dir")
    ap.add_argument("--tokenizer", required=True, help="a tokenizer.json to copy in")
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    V = tokenizer_vocab(a.tokenizer)
    cfg, tensors = {"bloom": bloom, "bert": bert, "t5": t5}[a.family](a.d_model, a.layers, a.heads, V)
    os.makedirs(a.out_dir, exist_ok=True)
    json.dump(cfg, open(os.path.join(a.out_dir, "config.json"), "w"), indent=2)
    shutil.copyfile(a.tokenizer, os.path.join(a.out_dir, "tokenizer.json"))
    header, offset = {}, 0
    for name, shape in tensors:
        n = 4
        for x in shape:
            n *= x
        header[name] = {"dtype": "F32", "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    gen = torch.Generator().manual_seed(a.seed)
    std = 0.5 if a.family == "t5" else 0.02
    with open(os.path.join(a.out_dir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in tensors:
            norm = name.endswith(("layernorm.weight", "LayerNorm.weight", "layer_norm.weight"))
            bias = name.endswith(("bias", "layernorm.bias", "LayerNorm.bias")) and "relative" not in name
            t = torch.ones(shape) if norm else torch.zeros(shape) if bias else torch.randn(shape, generator=gen) * std
            f.write(t.numpy().tobytes())
    print(f"{a.out_dir}: {a.family}, d_model {a.d_model}, {a.layers} layers, {a.heads} heads, vocab {V}, "
          f"{offset / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
