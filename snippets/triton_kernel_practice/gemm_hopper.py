"""Check the Hopper GEMM (TMA + persistent) on ragged and transposed shapes, then time it
against cuBLAS at one size.   Run: python snippets/triton_kernel_practice/gemm_hopper.py
"""
# needs: gpu
import sys
from pathlib import Path

import torch
from triton.testing import do_bench

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gemm import check, matmul_tma  # noqa: E402

if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 9:
    sys.exit("gemm_hopper.py: needs a Hopper (sm_90) or newer GPU")

for dtype in (torch.float16, torch.bfloat16):
    for M, N, K, tb in ((1000, 1000, 1000, False), (4096, 2048, 520, True), (300, 4104, 1992, False)):
        check(matmul_tma, dtype, M, N, K, tb)
print("tma persistent: fp16 and bf16, ragged and transposed shapes, match float64")

s = 4096
a = torch.randn(s, s, device="cuda", dtype=torch.float16)
b = torch.randn(s, s, device="cuda", dtype=torch.float16)
for name, fn in (("cuBLAS", torch.matmul), ("Triton TMA persistent", matmul_tma)):
    ms = do_bench(lambda: fn(a, b), return_mode="median")
    print(f"{name:<22} {2 * s**3 / ms / 1e9:6.0f} TFLOP/s")
