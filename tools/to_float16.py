#!/usr/bin/python3
"""Copies a PosLens model folder with its weights stored as float16 (half the bytes), for the
demos (resources/demos/README.md): config.json and tokenizer.json as they are, model.safetensors
converted. PosLens computes in float32 whatever the stored dtype, so only the weights' rounding
(relative 2^-11) differs; docs/experiments.md says where that is enough.

    /usr/bin/python3 tools/to_float16.py SOURCE_FOLDER TARGET_FOLDER
"""
import os
import shutil
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from poslens_safetensors import load_safetensors, save_safetensors  # noqa: E402


def main(source, target):
    os.makedirs(target, exist_ok=True)
    for name in ("config.json", "tokenizer.json"):
        shutil.copyfile(os.path.join(source, name), os.path.join(target, name))
    tensors, metadata = load_safetensors(os.path.join(source, "model.safetensors"))
    half = {k: (v.to(torch.float16) if v.is_floating_point() else v) for k, v in tensors.items()}
    save_safetensors(half, os.path.join(target, "model.safetensors"), metadata)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
