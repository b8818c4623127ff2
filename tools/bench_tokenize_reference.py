"""Encode speed of HF's Rust `tokenizers` (PyPI binding, in the venv of scripts/setup.sh) on one
text, the reference for bench/bench_tokenize.cpp (scripts/bench_tokenize.sh runs both):

    ${POSLENS_VENV:-$HOME/.local/share/poslens/venv}/bin/python \\
        tools/bench_tokenize_reference.py TOKENIZER.json TEXT_FILE [ROUNDS]

prints one JSON line {"impl":"hf","median_s":...,"ids":...,"bytes":...}: the median seconds of
ROUNDS (default 5) encodes of the whole text after one warm-up, the number of ids (special
tokens added, as the binding's default) and the text's UTF-8 bytes.
"""
import json
import sys
import time

from tokenizers import Tokenizer


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__)
    tokenizer = Tokenizer.from_file(argv[1])
    with open(argv[2], encoding="utf-8") as f:
        text = f.read()
    rounds = max(1, int(argv[3]) if len(argv) == 4 else 5)
    ids = len(tokenizer.encode(text).ids)  # warm-up
    seconds = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        ids = len(tokenizer.encode(text).ids)
        seconds.append(time.perf_counter() - t0)
    seconds.sort()
    print(json.dumps({"impl": "hf", "median_s": seconds[rounds // 2], "ids": ids,
                      "bytes": len(text.encode("utf-8"))}, separators=(",", ":")))


if __name__ == "__main__":
    main(sys.argv)
