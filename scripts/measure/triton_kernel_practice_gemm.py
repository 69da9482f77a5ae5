#!/usr/bin/env python3
"""GEMM steps of "Triton Kernel Practice" against cuBLAS (torch.matmul), same run.

M = N = K in {4096, 8192}, fp16 and bf16, row-major A and B, fp32 accumulation. Each step
(naive, grouped, autotuned, TMA + persistent) is checked against an fp32 product first; the
versions are timed in turn, twice, keeping each one's best median.
Target (issue 3): the Hopper step >= 0.95x torch.matmul.

    python scripts/measure/triton_kernel_practice_gemm.py [--out data/triton_kernel_practice/gemm.json]
"""
from __future__ import annotations

import sys

from triton_kernel_practice_common import bench_rounds, need_gpu, parse, rel_err, snippet, write

NAME = "triton_kernel_practice/gemm"
TARGET = 0.95
SIZES = (4096, 8192)


def main(argv=None) -> int:
    args = parse(__doc__, NAME, argv)
    need_gpu("gemm")
    import torch
    g = snippet("gemm")
    torch.manual_seed(0)
    steps = [("naive", g.matmul_naive), ("grouped", g.matmul_grouped),
             ("autotuned", g.matmul_autotuned), ("tma_persistent", g.matmul_tma)]
    rows = []
    for dtype, tag in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        for s in SIZES:
            a = torch.randn(s, s, device="cuda", dtype=dtype)
            b = torch.randn(s, s, device="cuda", dtype=dtype)
            ref = a.float() @ b.float()
            flops = 2 * s ** 3
            tol = 1e-2 if dtype == torch.bfloat16 else 2e-3
            err = rel_err(torch.matmul(a, b), ref)
            if err > tol:
                sys.exit(f"gemm: torch.matmul {tag} {s}: relative error {err:.2e}")
            for impl, fn in steps:
                err = rel_err(fn(a, b), ref)
                if err > tol:
                    sys.exit(f"gemm: {impl} {tag} {s}: relative error {err:.2e} > {tol}")
            fns = {"cublas": lambda: torch.matmul(a, b), **{impl: (lambda fn=fn: fn(a, b)) for impl, fn in steps}}
            times = bench_rounds(fns)
            for impl, t in times.items():
                row = {"dtype": tag, "size": s, "impl": impl, "tflops": flops / t / 1e9, "ms": t,
                       "ratio": times["cublas"] / t}
                if impl == "tma_persistent":
                    row.update(target=TARGET, met=times["cublas"] / t >= TARGET)
                rows.append(row)
            del a, b, ref
            for r in rows[-5:]:
                print(f"{tag} {s} {r['impl']:<15} {r['tflops']:7.1f} TFLOP/s  {r['ratio']:.3f}x cuBLAS", flush=True)
    metrics = {
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "fmt": ".0f"},
        "ratio": {"unit": "×", "noise": 0.07, "fmt": ".3f"},
        "met": {"unit": "bool", "noise": 0},
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".3f", "check": False},
    }
    write(NAME, metrics, rows, args.out, argv, __file__, params={"target": {"fmt": ".2f"}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
