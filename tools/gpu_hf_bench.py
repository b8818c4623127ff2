#!/usr/bin/env python3
"""HF transformers' own LlamaForCausalLM on a random HF folder (tools/make_random_hf_model.py),
the reference side of tools/gpu_bench.sh: the forward's time and peak device memory with SDPA
(what a user runs) and with eager attention keeping every pattern (what TransformerLens's cache
does), a warm pass timed after a warm-up, synchronised; and, given PosLens's ln_final capture at
one length, its parity against HF's float32 forward beside HF's own bf16 error.

    python3 tools/gpu_hf_bench.py MODEL_DIR IDS_DIR NAME --lengths 2048,8192 [--eager-lengths 2048]
        [--parity-h5 FILE --parity-length 2048] >> results.tsv

IDS_DIR/ids_T.txt hold the token ids (comma-separated), the same PosLens reads with
--tokens-file. Prints tab-separated rows: NAME, T, what, seconds, peak GiB, note.
"""
import argparse
import sys
import time

import torch
from transformers import LlamaForCausalLM


DEVICE = "cuda"


def ids(folder, T):
    text = open(f"{folder}/ids_{T}.txt").read().replace("\n", ",")
    return torch.tensor([[int(x) for x in text.split(",") if x]], device=DEVICE)


def timed(model, x, **kw):
    cuda = DEVICE.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    with torch.no_grad():
        out = model(x, use_cache=False, **kw)
    if cuda:
        torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan")
    return out, time.perf_counter() - start, peak


def empty_cache():
    if DEVICE.startswith("cuda"):
        torch.cuda.empty_cache()


def gib(x):
    return "" if x != x else f"{x:.1f}"  # NaN: no device count (CPU)


def row(*cells):
    print("\t".join(str(c) for c in cells), flush=True)


def load(folder, dtype, attention):
    return LlamaForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation=attention).to(DEVICE).eval()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("ids")
    ap.add_argument("name")
    ap.add_argument("--lengths", required=True)
    ap.add_argument("--eager-lengths", default="")
    ap.add_argument("--parity-h5")
    ap.add_argument("--parity-length", type=int, default=2048)
    ap.add_argument("--device", default="cuda", help="cpu only to check the script without a GPU")
    a = ap.parse_args()
    global DEVICE
    DEVICE = a.device
    lengths = [int(t) for t in a.lengths.split(",") if t]
    eager = [int(t) for t in a.eager_lengths.split(",") if t]

    m = load(a.model, torch.bfloat16, "sdpa")
    if a.parity_h5:
        import h5py
        x = ids(a.ids, a.parity_length)
        hf_bf16 = timed(m, x, output_hidden_states=True)[0].hidden_states[-1][0].double()
        m32 = load(a.model, torch.float32, "sdpa")
        ref = timed(m32, x, output_hidden_states=True)[0].hidden_states[-1][0].double()
        del m32
        empty_cache()
        try:
            with h5py.File(a.parity_h5) as f:
                pl = torch.from_numpy(f["captures/ln_final.hook_normalized"][0]).to(DEVICE).double()
            rel = lambda t: float((t - ref).norm() / ref.norm())
            row(a.name, a.parity_length, "parity ln_final vs HF float32", "", "",
                f"PosLens bf16 {rel(pl):.3g}, HF bf16 {rel(hf_bf16):.3g}")
        except Exception as e:  # a missing capture is a result too
            row(a.name, a.parity_length, "parity ln_final vs HF float32", "", "", f"failed: {e}")
    for T in lengths:
        try:
            x = ids(a.ids, T)
            timed(m, x)  # warm-up
            _, t, mem = timed(m, x)
            row(a.name, T, "HF sdpa forward", f"{t:.3f}", gib(mem), "")
        except torch.OutOfMemoryError:
            row(a.name, T, "HF sdpa forward", "", "", "out of memory")
        empty_cache()
    del m
    empty_cache()
    if eager:
        me = load(a.model, torch.bfloat16, "eager")
        for T in eager:
            try:
                out, t, mem = timed(me, ids(a.ids, T), output_attentions=True)
                del out
                row(a.name, T, "HF eager keeping patterns", f"{t:.3f}", gib(mem), "")
            except torch.OutOfMemoryError:
                row(a.name, T, "HF eager keeping patterns", "", "", "out of memory")
            empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
