"""Trains a GPT-2-style byte-level BPE tokenizer.json on a `text` task corpus with HF's Rust
`tokenizers` (PyPI binding, in the venv of scripts/setup.sh), for language models over subwords
rather than characters:

    ${POSLENS_VENV:-$HOME/.local/share/poslens/venv}/bin/python tools/train_bpe_tokenizer.py \\
        CORPUS_DIR VOCAB_SIZE OUT_tokenizer.json

CORPUS_DIR is read as the text task reads it (core/train/text_corpus.cpp): its regular files
without an extension in name order, each followed by a "%" line; blocks are separated by a
line "%" and every 10th block is held out. Only the training blocks, without the "%" lines,
go to the trainer (a temporary copy), so the held-out text stays unseen and verifies it.

The trainer is HF's BpeTrainer with the settings of its default (BpeTrainer::default(), what
the npm binding's Tokenizer.train(files) runs, the binding this script replaces): 30000 tokens,
no special tokens, no initial alphabet, no alphabet limit, min_frequency 0; only the progress bar
is off. BPE learns merges greedily, most frequent pair first, so the first merges are exactly
what a trainer stopped at a smaller size learns. The tokenizer written has id 0 `<bos>`
(special), ids 1..256 the 256 byte-level symbols in byte order (all of them: unseen bytes still
encode, no <unk> needed), then the results of the trained merges in order until VOCAB_SIZE
tokens; the merges kept are those up to there (both parts and the result in the vocabulary).
Layout as the GPT-2 fixture (shared/fixtures/tokenizers/gpt2/tokenizer.json): ByteLevel
pre-tokenizer, post-processor and decoder without prefix space, merges as "a b" strings, written
compactly (no spaces, non-ASCII as UTF-8). Then it reloads the file with Tokenizer.from_file,
checks decode(encode(x)) == x on every held-out block and on every byte, and prints the
compression in characters (code points) per token. On the corpus of scripts/make_english_corpus.sh
at VOCAB_SIZE 4096 it writes byte for byte the file the npm version wrote (in the demos,
resources/demos/english-*/tokenizer.json, with the newline `poslens-cli train` adds at the end).
"""
import json
import os
import shutil
import sys
import tempfile
import time

from tokenizers import Tokenizer, models, pre_tokenizers, trainers


def corpus_blocks(folder):
    """The corpus as the text task splits it: (training blocks, held-out blocks)."""
    text = ""
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.splitext(name)[1] or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as f:
            text += f.read()
        if text and not text.endswith("\n"):
            text += "\n"
        text += "%\n"  # a file boundary is a block boundary
    train, test = [], []
    start, index = 0, 0
    while start < len(text):
        end = text.find("\n%\n", start)
        if end < 0:
            end = len(text)
        (test if index % 10 == 9 else train).append(text[start:end])
        start, index = end + 3, index + 1
    return train, test


def byte_symbols():
    """GPT-2's byte -> symbol map: printable Latin-1 bytes stand for themselves, the others
    (controls, space, 0x7f-0xa0, 0xad) take the code points from U+0100 on in byte order."""
    symbols, following = [], 256
    for b in range(256):
        if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or b >= 0xAE:
            symbols.append(chr(b))
        else:
            symbols.append(chr(following))
            following += 1
    return symbols


def train_merges(train):
    """Trains the default-sized BpeTrainer on the training blocks; returns its merges in order."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    # BpeTrainer::default() but the progress bar; limit_alphabet left unset is no limit.
    trainer = trainers.BpeTrainer(vocab_size=30000, min_frequency=0, show_progress=False,
                                  special_tokens=[], initial_alphabet=[])
    folder = tempfile.mkdtemp(prefix="bpe-")
    try:
        train_file = os.path.join(folder, "train.txt")
        with open(train_file, "w", encoding="utf-8", newline="") as f:
            f.write("\n".join(train) + "\n")
        t0 = time.perf_counter()
        tokenizer.train([train_file], trainer)
        seconds = time.perf_counter() - t0
    finally:
        shutil.rmtree(folder)
    trained = json.loads(tokenizer.to_str())["model"]
    print(f"trained the default BpeTrainer in {seconds:.1f} s: "
          f"{len(trained['vocab'])} tokens, {len(trained['merges'])} merges")
    return trained["merges"]


def cut(trained_merges, vocab_size):
    """<bos>, the 256 byte symbols, then the first merges up to vocab_size tokens."""
    symbols = byte_symbols()
    alphabet = set(pre_tokenizers.ByteLevel.alphabet())
    if len(alphabet) != 256 or not all(s in alphabet for s in symbols):
        sys.exit("ByteLevel.alphabet() differs from GPT-2's byte map")
    ids = {t: i for i, t in enumerate(["<bos>", *symbols])}  # token -> id, in id order
    merges = []
    for merge in trained_merges:
        a, b = merge if isinstance(merge, list) else merge.split(" ")  # pairs in 0.23, "a b" before
        result = a + b
        if result not in ids and len(ids) >= vocab_size:
            break  # where a smaller trainer stops
        if a not in ids or b not in ids:
            continue  # cannot happen: parts come first
        ids.setdefault(result, len(ids))
        merges.append(f"{a} {b}")
    if len(ids) < vocab_size:
        sys.exit(f"the trained merges give only {len(ids)} tokens, fewer than {vocab_size}")
    return ids, merges


def write(out, vocab, merges):
    """tokenizer.json in the GPT-2 fixture's layout (model.vocab listed in id order)."""
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    document = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": 0, "content": "<bos>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "", "fuse_unk": False,
                  "byte_fallback": False, "vocab": vocab, "merges": merges},
    }
    with open(out, "w", encoding="utf-8", newline="") as f:
        f.write(json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n")
    print(f"wrote {out}: {len(vocab)} tokens (<bos>, 256 bytes, {len(vocab) - 257} merged), "
          f"{len(merges)} merges")


def verify(out, vocab_size, test):
    """HF reads the file back, round-trips the held-out text and every byte."""
    tokenizer = Tokenizer.from_file(out)
    size = tokenizer.get_vocab_size(with_added_tokens=True)
    if size != vocab_size:
        sys.exit(f"reloaded vocabulary has {size} tokens, not {vocab_size}")
    if tokenizer.token_to_id("<bos>") != 0:
        sys.exit("<bos> is not id 0")
    samples = [*test, "bytes: \u0000\u0007\u007f\u00a0\u00ad é 漢字 🙂 \t\r\n"]
    chars = count = 0
    for i, text in enumerate(samples):
        encoding = tokenizer.encode(text)
        if tokenizer.decode(encoding.ids, skip_special_tokens=False) != text:
            sys.exit(f"round trip fails on held-out block {i}: {json.dumps(text[:80])}")
        if i < len(test):
            chars += len(text)
            count += len(encoding.ids)
    line = next((l for block in test for l in block.split("\n") if len(l) > 60), "")
    example = json.dumps(tokenizer.encode(line).tokens, ensure_ascii=False, separators=(",", ":"))
    print(f"verified: reloaded with {size} tokens; decode(encode(x)) == x on {len(test)} held-out "
          f"blocks and all bytes; held-out {chars} characters -> {count} tokens = "
          f"{chars / count:.3f} characters/token")
    print(f"example: {json.dumps(line, ensure_ascii=False)} -> {example}")


def main(argv):
    try:
        corpus, out, vocab_size = argv[1], argv[3], int(argv[2])
    except (IndexError, ValueError):
        vocab_size = 0
    if len(argv) != 4 or not 258 <= vocab_size <= 30000:
        print("usage: train_bpe_tokenizer.py CORPUS_DIR VOCAB_SIZE(258..30000) OUT_tokenizer.json",
              file=sys.stderr)
        sys.exit(2)
    train, test = corpus_blocks(corpus)
    print(f"corpus {corpus}: {len(train)} training blocks ({sum(map(len, train))} characters), "
          f"{len(test)} held-out blocks")
    vocab, merges = cut(train_merges(train), vocab_size)
    write(out, vocab, merges)
    verify(out, vocab_size, test)


if __name__ == "__main__":
    main(sys.argv)
