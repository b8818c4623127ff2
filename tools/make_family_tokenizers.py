#!/usr/bin/env python3
"""Writes tests/data/tokenizers/families_reference.json: tokenizer.json files in the layouts the model
families of 2024-26 ship (the normalizer, pre-tokenizer, model options, post-processor and decoder each
family's converter in transformers builds), each with a small BPE vocabulary trained by HF's own trainer on
the seed papers, and what HF's Rust `tokenizers` (the PyPI binding) gives for them on 55 texts.

    ~/.local/share/poslens/venv/bin/python tools/make_family_tokenizers.py ../shared/seeds tests/data/tokenizers

The layouts (transformers 5.17, `tokenizers` 0.23.3, the pinned venv of scripts/setup.sh):
  llama3      Llama 3.x, SmolLM3: convert_slow_tokenizer.TikTokenConverter's default pattern (cl100k's),
              Split isolated + ByteLevel(use_regex false), BPE with ignore_merges; post-processor
              ByteLevel + TemplateProcessing "<|begin_of_text|> $A"; ByteLevel decoder.
  o200k       gpt-oss (o200k_harmony): the same converter with tiktoken's o200k pattern (case-aware
              letter runs with an optional contraction, digits in runs of up to 3, "/" kept with
              punctuation); post-processor ByteLevel(trim_offsets false), no BOS.
  qwen2       Qwen2, Qwen2.5, Qwen3 (tokenization_qwen2.py): NFC, Split with Qwen's pattern (one digit
              per piece), ByteLevel(use_regex false); no BOS.
  cohere      Command R / R7B, Cohere 2 (tokenization_cohere.py): NFC, Digits(individual), ByteLevel
              with its own regex; TemplateProcessing "<BOS_TOKEN> $A".
  gemma       Gemma 2/3 (tokenization_gemma.py): Replace(" " -> "▁") normalizer, Split(" ",
              merged_with_previous), BPE with byte_fallback and fuse_unk (<0x00>..<0xFF> pieces);
              decoder Replace("▁" -> " "), ByteFallback, Fuse; TemplateProcessing "<bos> $A".
  modernbert  ModernBERT (OLMo's GPT-NeoX-style BPE): ByteLevel(add_prefix_space false, trim_offsets
              true), TemplateProcessing "[CLS] $A [SEP]".
  deepseek_v3 DeepSeek-V3 / V3.2, Kimi-style V3 checkpoints: three Isolated regex Splits — digit runs of up
              to 3, Han/kana runs, DeepSeek's word/punctuation pattern — then ByteLevel(add_prefix_space
              false, trim_offsets true, use_regex false); TemplateProcessing "<｜begin▁of▁sentence｜> $A".

    ... tools/make_family_tokenizers.py SEEDS OUT_DIR [FAMILY ...] rewrites only those families'
    components of the existing file (the others keep their trained vocabularies).

Each case holds, with and without special tokens, the ids, tokens, UTF-8 byte offsets [start, end) and
decode(ids, skip_special_tokens=True), the format of tests/data/tokenizers/components_reference.json
(read by tests/core/tokenizers/test_hf_tokenizer.cpp). HF's trainer breaks count ties in hash order: a
new run may give other vocabularies, and references made from them.
"""
import glob
import json
import os
import sys

import tokenizers
from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE
from tokenizers.trainers import BpeTrainer

CL100K = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
O200K = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])
QWEN2 = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
DEEPSEEK_V3 = [r"\p{N}{1,3}", "[一-龥぀-ゟ゠-ヿ]+",
               r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""]
VOCAB = 1200


def tiktoken_style(pattern):
    t = Tokenizer(BPE(fuse_unk=False))
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    return t


def llama3():
    t = tiktoken_style(CL100K)
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|eot_id|>"]
    post = processors.Sequence([
        processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
        processors.TemplateProcessing(single="<|begin_of_text|> $A", special_tokens=[("<|begin_of_text|>", 0)])])
    return t, specials, post, True


def o200k():
    t = tiktoken_style(O200K)
    specials = ["<|endoftext|>", "<|start|>", "<|message|>", "<|end|>", "<|return|>", "<|channel|>"]
    return t, specials, processors.ByteLevel(trim_offsets=False), True


def qwen2():
    t = Tokenizer(BPE(unk_token=None, continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False,
                      byte_fallback=False))
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    return t, specials, processors.ByteLevel(trim_offsets=False), False


def cohere():
    t = Tokenizer(BPE(continuing_subword_prefix="", end_of_word_suffix="", fuse_unk=False))
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True)])
    t.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=True)
    specials = ["<PAD>", "<UNK>", "<CLS>", "<SEP>", "<MASK_TOKEN>", "<BOS_TOKEN>", "<EOS_TOKEN>"]
    post = processors.TemplateProcessing(single="<BOS_TOKEN> $A", special_tokens=[("<BOS_TOKEN>", 5)])
    return t, specials, post, False


def gemma():
    t = Tokenizer(BPE(fuse_unk=True, unk_token="<unk>", byte_fallback=True))
    t.normalizer = normalizers.Replace(" ", "▁")
    t.pre_tokenizer = pre_tokenizers.Split(pattern=" ", behavior="merged_with_previous", invert=False)
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
    post = processors.TemplateProcessing(single="<bos> $A", special_tokens=[("<bos>", 2)])
    return t, specials, post, False


def modernbert():
    t = Tokenizer(BPE(fuse_unk=False))
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True)
    t.decoder = decoders.ByteLevel()
    specials = ["|||IP_ADDRESS|||", "<|padding|>", "[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    post = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 3), ("[SEP]", 4)])
    return t, specials, post, False


def deepseek_v3():
    t = Tokenizer(BPE(fuse_unk=False))
    t.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex(p), behavior="isolated", invert=False) for p in DEEPSEEK_V3] +
        [pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    specials = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<｜▁pad▁｜>"]
    post = processors.TemplateProcessing(single="<｜begin▁of▁sentence｜> $A",
                                         special_tokens=[("<｜begin▁of▁sentence｜>", 0)])
    return t, specials, post, False


FAMILIES = {"llama3": llama3, "o200k": o200k, "qwen2": qwen2, "cohere": cohere, "gemma": gemma,
            "modernbert": modernbert, "deepseek_v3": deepseek_v3}


def trained(name, lines):
    t, specials, post, ignore_merges = FAMILIES[name]()
    byte_level = name != "gemma"
    trainer = BpeTrainer(vocab_size=VOCAB, special_tokens=specials, show_progress=False,
                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if byte_level else [])
    t.train_from_iterator(lines, trainer=trainer)
    t.post_processor = post
    j = json.loads(t.to_str())
    if ignore_merges:
        j["model"]["ignore_merges"] = True
    if name == "gemma":  # SentencePiece's byte pieces, which byte_fallback encodes unknown text to
        vocab = j["model"]["vocab"]
        for b in range(256):
            vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    return Tokenizer.from_str(json.dumps(j)), j


def byte_offsets(text, offsets):
    cut = [0]
    for ch in text:
        cut.append(cut[-1] + len(ch.encode("utf-8")))
    return [[cut[a], cut[b]] for a, b in offsets]


def case(t, text):
    out = {"text": text}
    for key, special in (("with_special", True), ("without_special", False)):
        e = t.encode(text, add_special_tokens=special)
        out[key] = {"ids": e.ids, "tokens": e.tokens, "offsets": byte_offsets(text, e.offsets),
                    "decoded": t.decode(e.ids, skip_special_tokens=True)}
    return out


def main():
    seeds, out_dir = sys.argv[1], sys.argv[2]
    lines = []
    for path in sorted(glob.glob(os.path.join(seeds, "*.txt"))):
        with open(path, encoding="utf-8") as f:
            lines += [line.rstrip("\n") for line in f if line.strip()]
    lines += ["Gröſse, naïve café — déjà vu; Ünïcödé façade, 東京 123 4567 89.0 don't I'm we'll"]
    with open(os.path.join(out_dir, "bert_uncased_reference.json"), encoding="utf-8") as f:
        texts = [c["text"] for c in json.load(f)["cases"]]
    texts += ["HTTPS://Example.com/a/b?c=1 CamelCaseWords XMLHttpRequest I'M WE'LL", "12345678 3.14159 1,000,000"]
    only = sys.argv[3:]
    out_path = os.path.join(out_dir, "families_reference.json")
    components = []
    if only:  # the other families as the file has them
        with open(out_path, encoding="utf-8") as f:
            components = [c for c in json.load(f)["components"] if c["name"] not in only]
    for name in only or FAMILIES:
        t, j = trained(name, lines)
        components.append({"name": name, "tokenizer": j, "cases": [case(t, x) for x in texts]})
        print(f"{name}: {len(j['model']['vocab'])} tokens, {len(j['model']['merges'])} merges")
    components.sort(key=lambda c: list(FAMILIES).index(c["name"]))
    data = {"generator": "tools/make_family_tokenizers.py",
            "reference": f"HF tokenizers (PyPI `tokenizers` {tokenizers.__version__})",
            "source": "BPE trained on ../shared/seeds in each family's layout (see the generator)",
            "offsets": "UTF-8 byte offsets [start, end), converted from the binding's character offsets",
            "components": components}
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
