#!/usr/bin/python3
"""T5-style HF tokenizer.json files (Unigram + Precompiled) for PosLens' tokenizer tests.

Run once from the repository root, with Debian's python3-sentencepiece (0.1.97):

    /usr/bin/python3 tools/make_unigram_tokenizer_json.py ../shared/seeds tests/data/tokenizers

The fixture ../shared/fixtures/tokenizers/tiny-spm/tokenizer.model is a BPE model, so this
script trains its own SentencePiece *Unigram* models (deterministic: one thread, no sampling)
and converts them the way transformers' T5Converter (convert_slow_tokenizer.py) does:

  - t5_unigram_tokenizer.json: trained on the seed papers (SEEDS_DIR/*.txt) plus the inline
    multilingual text below, nmt_nfkc normalization (SentencePiece's default, the charsmap T5
    ships), T5's special ids (<pad> 0, </s> 1, <unk> 2, no BOS) and five <extra_id_N> tokens;
    normalizer Precompiled, pre-tokenizer WhitespaceSplit + Metaspace("▁", prepend_scheme
    "always"), post-processor TemplateProcessing "$A </s>", decoder Metaspace (t5-small's
    tokenizer.json layout).
  - unigram_tiny_charsmap.json: {"precompiled_charsmap": base64} of a tiny model trained with
    the custom rules of TINY_RULES (a few hundred bytes instead of nmt_nfkc's 237 KB), which
    tools/make_bert_t5_reference.js puts into its small hand-made Unigram tokenizers.

Pieces, scores and the charsmap are read from the ModelProto with the small protobuf wire
reader below (python3-sentencepiece ships no protobuf module to parse it with).
"""
import base64
import glob
import json
import os
import struct
import sys
import tempfile

import sentencepiece as spm

MULTILINGUAL = """Café au lait, crème brûlée, naïve façade, résumé and déjà vu are French loans.
Die Straße führt über die Brücke; Größe und Übermut sind deutsche Wörter.
El niño comió jalapeños en la montaña. São Paulo fica no Brasil, à beira-mar.
Ελληνικά: καλημέρα κόσμε. Русский текст: привет, мир.
日本語の文章と中文的句子，还有한국어 문장도 있습니다。東京は日本の首都です。
Full-width ＡＢＣ and ligatures ﬁ ﬂ, fractions ½ ¼ and the trade mark ™ sign.
"""

# Custom normalization rules for the tiny charsmap (SentencePiece's rule TSV: space-separated
# hex code points, source TAB target; an empty target deletes).
TINY_RULES = [
    ("41", "61"), ("42", "62"), ("FF21", "41"), ("FF22", "42"), ("FF43", "63"),
    ("FB01", "66 69"), ("2122", "54 4D"), ("BD", "31 2044 32"), ("2460", "31"),
    ("65 301", "E9"), ("301", ""), ("1E", ""), ("9", "20"), ("D", "20"), ("A", "20"),
    ("3000", "20"), ("E9", "65 301"),
]


# ---- protobuf wire format (sentencepiece_model.proto) --------------------------------------
def _varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return r, i


def _fields(b):
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        f, w = key >> 3, key & 7
        if w == 0:
            v, i = _varint(b, i)
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {w}")
        yield f, w, v


def read_model(path):
    """(pieces [(piece, score, type)], trainer {field: int}, precompiled_charsmap bytes)."""
    data = open(path, "rb").read()
    pieces, trainer, charsmap = [], {}, b""
    for f, w, v in _fields(data):
        if f == 1:  # SentencePiece
            piece, score, kind = "", 0.0, 1
            for ff, ww, vv in _fields(v):
                if ff == 1:
                    piece = vv.decode("utf-8")
                elif ff == 2:
                    score = struct.unpack("<f", vv)[0]
                elif ff == 3:
                    kind = vv
            pieces.append((piece, score, kind))
        elif f == 2:  # TrainerSpec
            trainer = {ff: vv for ff, ww, vv in _fields(v) if ww == 0}
        elif f == 3:  # NormalizerSpec
            for ff, ww, vv in _fields(v):
                if ff == 2:
                    charsmap = bytes(vv)
    return pieces, trainer, charsmap


def train(corpus, prefix, **spec):
    spm.SentencePieceTrainer.train(input=corpus, model_prefix=prefix, num_threads=1,
                                   input_sentence_size=0, shuffle_input_sentence=False,
                                   model_type="unigram", **spec)
    return prefix + ".model"


def t5_tokenizer_json(model_path, extra_ids):
    pieces, trainer, charsmap = read_model(model_path)
    assert trainer.get(3, 1) == 1, "not a Unigram model"
    unk_id = trainer.get(40, 0)
    # float32 score as a Python float (HF keeps f64 of the proto's f32), as T5Converter
    vocab = [[p, s] for p, s, _ in pieces]
    vocab += [[f"<extra_id_{i}>", 0.0] for i in range(extra_ids - 1, -1, -1)]
    ids = {p: i for i, (p, _) in enumerate(vocab)}
    special = ["<pad>", "</s>", "<unk>"] + [f"<extra_id_{i}>" for i in range(extra_ids - 1, -1, -1)]
    added = [dict(id=ids[t], content=t, single_word=False, lstrip=False, rstrip=False,
                  normalized=False, special=True) for t in special]
    added.sort(key=lambda a: a["id"])
    metaspace = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always",
                 "split": True}
    eos = {"id": "</s>", "ids": [ids["</s>"]], "tokens": ["</s>"]}
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Precompiled",
                       "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")},
        "pre_tokenizer": {"type": "Sequence",
                          "pretokenizers": [{"type": "WhitespaceSplit"}, metaspace]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}},
                       {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}},
                     {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {"</s>": eos}},
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": unk_id, "vocab": vocab, "byte_fallback": False},
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    seeds, out_dir = sys.argv[1:]
    os.makedirs(out_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "corpus.txt")
        with open(corpus, "w", encoding="utf-8") as f:
            for path in sorted(glob.glob(os.path.join(seeds, "*.txt"))):
                f.write(open(path, encoding="utf-8").read())
            for _ in range(5):
                f.write(MULTILINGUAL)
        model = train(corpus, os.path.join(tmp, "t5"), vocab_size=1000, pad_id=0, eos_id=1,
                      unk_id=2, bos_id=-1, character_coverage=0.9995,
                      normalization_rule_name="nmt_nfkc")
        j = t5_tokenizer_json(model, extra_ids=5)
        path = os.path.join(out_dir, "t5_unigram_tokenizer.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(j, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        print(f"{path}: {len(j['model']['vocab'])} pieces, "
              f"{os.path.getsize(path)} bytes")

        rules = os.path.join(tmp, "rules.tsv")
        with open(rules, "w", encoding="utf-8") as f:
            for source, target in TINY_RULES:
                f.write(f"{source}\t{target}\n")
        tiny = train(corpus, os.path.join(tmp, "tiny"), vocab_size=300,
                     normalization_rule_tsv=rules, hard_vocab_limit=False)
        _, _, charsmap = read_model(tiny)
        path = os.path.join(out_dir, "unigram_tiny_charsmap.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"generator": "tools/make_unigram_tokenizer_json.py",
                       "rules": [list(r) for r in TINY_RULES],
                       "precompiled_charsmap": base64.b64encode(charsmap).decode("ascii")},
                      f, indent=1)
            f.write("\n")
        print(f"{path}: charsmap of {len(charsmap)} bytes")


if __name__ == "__main__":
    main()
