#!/usr/bin/env python3
"""Times one MoE expert's product x @ W (20 tokens x 2048 . 2048 x 2816, a DeepSeek-V2-Lite expert's
gate/up shape) in float32 and bfloat16 with W row-major [in, out] and with W a transposed view of
nn.Linear's [out, in] rows — the choice core/models/weight_table.cpp's experts_in_gemm_layout makes per
LibTorch (docs/performance.md, "DeepSeek's latent attention at length"). Run it with each torch:

    ~/.local/share/poslens/venv/bin/python tools/bench_expert_layout.py   # the wheel's LibTorch 2.x
    /usr/bin/python3 tools/bench_expert_layout.py                        # Debian's 1.13
"""
import time

import torch


def ms(f, n: int = 3) -> float:
    f()
    start = time.perf_counter()
    for _ in range(n):
        f()
    return (time.perf_counter() - start) / n * 1000


def main() -> None:
    torch.manual_seed(0)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(20, 2048).to(dtype)
        row_major = torch.randn(2048, 2816).to(dtype)
        transposed_view = row_major.t().contiguous().t()
        print(f"torch {torch.__version__} {dtype}: W row-major {ms(lambda: x.mm(row_major)):.1f} ms, "
              f"W transposed view {ms(lambda: x.mm(transposed_view)):.1f} ms")


if __name__ == "__main__":
    main()
