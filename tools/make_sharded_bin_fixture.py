#!/usr/bin/env python3
"""Writes tests/data/models/qwen3_sharded_bin/: the weights of tests/data/models/qwen3 as a sharded
pickle checkpoint, `pytorch_model-0000k-of-0000n.bin` files (torch.save zips) behind
`pytorch_model.bin.index.json` — the layout transformers < 4.35 saved by default and many
checkpoints on the Hub still ship (Pythia's larger models, GPT-J, OPT, Llama-2's first uploads).

    ~/.local/share/poslens/venv/bin/python tools/make_sharded_bin_fixture.py [--out tests/data/models]

The shards and the index are written by huggingface_hub's `save_torch_state_dict` with
`safe_serialization=False` (the code transformers 4.x's `save_pretrained(safe_serialization=False)`
called; transformers 5 writes safetensors only), 40 kB per shard so qwen3's 99 kB of weights make
three shards. Then transformers loads the folder back with `from_pretrained` and runs the qwen3
fixture's input_ids: its logits must equal qwen3's reference.safetensors (they do to 2e-6), which
is therefore this folder's reference too; no reference file is written. torch.save puts a random
serialization id in each zip, so the shards differ byte-wise on re-run; their tensors do not.
"""
import argparse
import os
import shutil

import torch
import transformers
from huggingface_hub import save_torch_state_dict
from safetensors.torch import load_file


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data", "models"))
    args = parser.parse_args()
    source = os.path.join(args.out, "qwen3")
    out = os.path.join(args.out, "qwen3_sharded_bin")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)

    model = transformers.AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    save_torch_state_dict(model.state_dict(), out, safe_serialization=False, max_shard_size="40KB")
    for name in ("config.json", "generation_config.json"):
        shutil.copy(os.path.join(source, name), out)

    reloaded = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
    reference = load_file(os.path.join(source, "reference.safetensors"))
    with torch.no_grad():
        logits = reloaded(reference["input_ids"].long()).logits
    gap = (logits - reference["logits"]).abs().max().item()
    assert gap < 1e-5, f"transformers' forward of the sharded folder differs from qwen3's reference by {gap}"
    shards = sorted(f for f in os.listdir(out) if f.endswith(".bin"))
    print(f"{out}: {len(shards)} shards ({', '.join(shards)}); transformers {transformers.__version__} "
          f"reads them back, logits within {gap:.1e} of qwen3's reference")


if __name__ == "__main__":
    main()
