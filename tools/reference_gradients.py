#!/usr/bin/python3
"""Gradients of the training loss in the PyTorch reference, for the trainer's parity test.

    /usr/bin/python3 tools/reference_gradients.py MODEL_FOLDER TOKENS.safetensors OUT.safetensors

Loads a PosLens model folder with tools/poslens_reference.py, reads int64 "tokens" [batch, T],
computes the mean next-token cross-entropy over every position (the trainer's loss with
--loss all and no padding), back-propagates, and writes "loss" (float64 [1]) and every
parameter's gradient under its stored name (float32), as safetensors.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from poslens_reference import load_pretrained  # noqa: E402
from poslens_safetensors import load_safetensors, save_safetensors  # noqa: E402


def main(argv):
    folder, tokens_path, out = argv
    model = load_pretrained(folder)
    tokens = load_safetensors(tokens_path)[0]["tokens"]
    logits = model(tokens)
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))
    loss.backward()
    result = {"loss": loss.detach().double().reshape(1)}
    # state_dict names are the format's names; keep_vars gives the parameters with their grads.
    for name, p in model.state_dict(keep_vars=True).items():
        if isinstance(p, torch.nn.Parameter):
            result[name] = (p.grad if p.grad is not None else torch.zeros_like(p)).float().contiguous()
    save_safetensors(result, out, {"format": "pt"})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
