#!/usr/bin/python3
"""Reference ids for PosLens' SentencePiece tokenizer (core/tokenizers/sentencepiece_tokenizer.h).

Run from the repository root, with Debian's python3-sentencepiece (0.1.97):

    /usr/bin/python3 tools/make_spm_reference.py ../shared/fixtures/tokenizers

It writes, under tests/data/tokenizers/:
  - spm_{unigram,char,word,bpe_suffix}_tiny.model: four tiny models trained here on the
    inline corpus below (model types and options the real fixtures do not cover: Unigram with
    user-defined pieces and no byte fallback, CHAR, WORD, BPE with treat_whitespace_as_suffix);
  - <name>_spm_reference.json for the fixtures llama2 and tiny-spm and the four tiny models:
    for every text of TEXTS, SentencePiece's ids (sp.encode, no BOS), pieces, byte offsets
    [begin, end) into the UTF-8 text (from the immutable proto's character offsets) and
    sp.decode(ids).
The C++ tests (tests/core/tokenizers/test_sentencepiece_reference.cpp) read these files and
need no python. HF's slow LlamaTokenizer gives [bos_id] + sp.encode(text) for these texts.
"""
import json
import os
import sys

import sentencepiece as spm

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "data",
                       "tokenizers")

# Varied texts: prose, accents, emoji (ZWJ sequences, flags, skin tones), CJK, digit runs,
# whitespace runs, tabs, newlines, leading/trailing spaces, code, special-token strings, empty.
TEXTS = [
    "",
    "Hello world!",
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time, there was a little girl named Lily. She loved to play outside.",
    " leading space",
    "trailing space ",
    "   three leading and two trailing  ",
    "multiple   spaces    between\twords",
    "tabs\tand\nnewlines\n\nand\r\nCRLF",
    "\n",
    " ",
    "     ",
    "Café naïve résumé façade jalapeño Ångström",
    "Ünïcödé with combining e\u0301 and precomposed \u00e9",
    "emoji 😀 and family 👨‍👩‍👧‍👦 and flag 🇫🇷 and thumbs 👍🏽",
    "中文分词测试：你好，世界！",
    "日本語のテキストとカタカナ、ひらがな。",
    "한국어 텍스트입니다",
    "Привет, мир! Ελληνικά κείμενα.",
    "مرحبا بالعالم",
    "digits 1234567890 and 3.14159 and 2024-01-01",
    "000000000011111111112222222222",
    "def f(x):\n    return x ** 2  # square\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }",
    "<s> inside text </s> and <unk> and <pad>",
    "[MASK] and <sep> user symbols",
    "URL https://example.com/path?q=1&r=2#frag",
    "full-width ＡＢＣ１２３ and ligature ﬁ and ½ and ™",
    "zero\u200bwidth\u200dspace and nbsp\u00a0here",
    "a",
    "▁ already has the meta symbol ▁▁ twice",
    "MiXeD CaSe AND ALL CAPS",
    "repeated repeated repeated repeated words words",
    "punctuation!!! ??? ... --- ;;; '' \"\"",
]

CORPUS = """The quick brown fox jumps over the lazy dog.
Once upon a time, there was a little girl named Lily. She loved to play outside in the park.
One day, she saw a big, red ball. She ran to it and kicked it very hard.
The ball went up into the sky and came down in the middle of the pond.
Lily was sad, but her friend Tom came to help her get the ball back.
They played together all afternoon and went home happy.
Café naïve résumé: accents appear in borrowed words.
Numbers like 12, 345 and 6789 show up in text now and then.
def main(): return 0
[MASK] and <sep> are user defined symbols in this tiny model.
"""


def train_tiny_models():
    """Trains the four tiny models into OUT_DIR (deterministic: one thread, no sampling)."""
    corpus_path = os.path.join(OUT_DIR, "spm_tiny_corpus.txt")
    with open(corpus_path, "w", encoding="utf-8") as f:
        for i in range(20):  # repeated so the trainers see enough counts
            f.write(CORPUS)
    common = dict(input=corpus_path, num_threads=1, input_sentence_size=0,
                  shuffle_input_sentence=False, hard_vocab_limit=False,
                  normalization_rule_name="identity", character_coverage=1.0)
    specs = {
        "unigram": dict(model_type="unigram", vocab_size=200,
                        user_defined_symbols=["[MASK]", "<sep>"]),
        "char": dict(model_type="char", vocab_size=100),
        "word": dict(model_type="word", vocab_size=120),
        "bpe_suffix": dict(model_type="bpe", vocab_size=420, byte_fallback=True,
                           treat_whitespace_as_suffix=True),
    }
    for name, spec in specs.items():
        prefix = os.path.join(OUT_DIR, f"spm_{name}_tiny")
        spm.SentencePieceTrainer.train(model_prefix=prefix, **common, **spec)
        os.remove(prefix + ".vocab")
    os.remove(corpus_path)


def byte_offset(text, char_offset):
    return len(text[:char_offset].encode("utf-8"))


def reference(model_path, name):
    sp = spm.SentencePieceProcessor(model_file=model_path)
    cases = []
    for text in TEXTS:
        ids = sp.encode(text)
        pieces = sp.encode(text, out_type=str)
        proto = sp.encode(text, out_type="immutable_proto")
        offsets = [[byte_offset(text, p.begin), byte_offset(text, p.end)] for p in proto.pieces]
        assert [p.id for p in proto.pieces] == ids
        cases.append(dict(text=text, ids=ids, pieces=pieces, offsets=offsets,
                          decoded=sp.decode(ids)))
    out = dict(
        generator="tools/make_spm_reference.py with python3-sentencepiece " + spm.__version__,
        model=name, vocab_size=sp.get_piece_size(), bos_id=sp.bos_id(), eos_id=sp.eos_id(),
        unk_id=sp.unk_id(), cases=cases)
    path = os.path.join(OUT_DIR, f"{name}_spm_reference.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(f"{path}: {len(cases)} cases")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    fixtures = sys.argv[1]
    os.makedirs(OUT_DIR, exist_ok=True)
    train_tiny_models()
    reference(os.path.join(fixtures, "llama2", "tokenizer.model"), "llama2")
    reference(os.path.join(fixtures, "tiny-spm", "tokenizer.model"), "tiny-spm")
    for name in ("unigram", "char", "word", "bpe_suffix"):
        reference(os.path.join(OUT_DIR, f"spm_{name}_tiny.model"), f"spm_{name}_tiny")


if __name__ == "__main__":
    main()
