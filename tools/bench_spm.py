#!/usr/bin/python3
"""Encoding speed of PosLens' SentencePieceTokenizer against python3-sentencepiece, same text,
same run; also checks that the ids are identical.

    /usr/bin/python3 tools/bench_spm.py build/bench/poslens_bench_spm \\
        ../shared/fixtures/tokenizers/llama2/tokenizer.model [MB=1]

The text is ~MB megabytes of varied English (the fortunes files when installed, else the
reference texts of make_spm_reference.py repeated) with some accents, CJK and emoji mixed in.
"""
import os
import subprocess
import sys
import tempfile
import time

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_spm_reference import TEXTS  # noqa: E402


def make_text(megabytes):
    parts = []
    fortunes = "/usr/share/games/fortunes"
    if os.path.isdir(fortunes):
        for name in sorted(os.listdir(fortunes)):
            path = os.path.join(fortunes, name)
            if os.path.isfile(path) and "." not in name:
                with open(path, encoding="utf-8", errors="replace") as f:
                    parts.append(f.read())
    parts.append("\n".join(TEXTS))
    base = "\n".join(parts)
    text = base
    while len(text.encode("utf-8")) < megabytes * 1_000_000:
        text += base
    return text.encode("utf-8")[: int(megabytes * 1_000_000)].decode("utf-8", errors="ignore")


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    binary, model = sys.argv[1], sys.argv[2]
    megabytes = float(sys.argv[3]) if len(sys.argv) > 3 else 1.0
    text = make_text(megabytes)
    sp = spm.SentencePieceProcessor(model_file=model)
    best = 1e30
    for _ in range(5):
        t0 = time.perf_counter()
        ids = sp.encode(text)
        best = min(best, time.perf_counter() - t0)
    size = len(text.encode("utf-8"))
    print(f"sentencepiece {spm.__version__}: {size} bytes -> {len(ids)} ids, best of 5: "
          f"{best:.4f} s ({size / best / 1e6:.1f} MB/s)")
    with tempfile.TemporaryDirectory() as tmp:
        text_path = os.path.join(tmp, "text.txt")
        ids_path = os.path.join(tmp, "ids.txt")
        with open(text_path, "w", encoding="utf-8") as f:
            f.write(text)
        out = subprocess.run([binary, model, text_path, ids_path, "5"], check=True,
                             capture_output=True, text=True).stdout
        print(out.strip())
        with open(ids_path) as f:
            ours = [int(line) for line in f]
    same = ours == ids
    print("ids identical:", same)
    theirs = best
    ours_s = float(out.split("best of 5: ")[1].split(" s")[0])
    print(f"ratio poslens / sentencepiece time: {ours_s / theirs:.2f}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
