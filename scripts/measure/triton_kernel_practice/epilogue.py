#!/usr/bin/env python3
"""Fused epilogue of "Triton Kernel Practice": y = gelu_tanh(x @ W.T + b) in one kernel, beside the
ways PyTorch computes the same layer, same run.

Shapes (M tokens, N outputs, K inputs): 4096^3; an LLM MLP up-projection, 4096 x 11008 x 4096; and
GPT-2 medium's, 8192 x 4096 x 1024. fp16 and bf16. Implementations:
  fused            gemm_epilogue.linear_gelu: bias and GELU applied to the accumulator before the store
  ours_gemm        the same kernel with neither (the floor for ours)
  ours_unfused     ours_gemm, then y + b and the GELU as two PyTorch kernels
  cublas_gemm      F.linear(x, W) (the floor for the library)
  eager            F.gelu(F.linear(x, W, b), approximate="tanh"): cuBLASLt adds the bias in its epilogue,
                   the GELU is a second kernel
  addmm_gelu       torch._addmm_activation(b, x, W.t(), use_gelu=True): cuBLASLt's bias + GELU epilogue,
                   one kernel
  compiled         torch.compile of the eager function (default mode)
Every output is checked against a float64 reference with PyTorch's tanh GELU first (err_tanh; err_erf
against the exact GELU says which one a library kernel computes). The GPU runs dense GEMMs for a second
before each shape (sitekit.measure.settle), then the versions are timed in turn over ROUNDS rounds,
each keeping its best median. kernels = how many GPU kernels one call launched (profiler).

    python scripts/measure/triton_kernel_practice/epilogue.py [--out data/triton_kernel_practice/epilogue.json]
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 90}

import sys

from sitekit.measure import settle

from measure.triton_kernel_practice._common import bench_each_round, need_gpu, parse, snippet, write

NAME = "triton_kernel_practice/epilogue"
SHAPES = ((4096, 4096, 4096), (4096, 11008, 4096), (8192, 4096, 1024))
ROUNDS = 3


def n_kernels(fn) -> int:
    """How many GPU kernels one call of fn launches (memsets excluded)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type.name == "CUDA" and "memset" not in e.name.lower())


def main(argv=None) -> int:
    args = parse(__doc__, NAME, argv)
    need_gpu("epilogue")
    import torch
    import torch.nn.functional as F

    ep = snippet("gemm_epilogue")
    torch.manual_seed(0)
    rows = []
    for dtype, tag in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        for M, N, K in SHAPES:
            x = torch.randn(M, K, device="cuda", dtype=dtype)
            w = torch.randn(N, K, device="cuda", dtype=dtype) / K**0.5
            b = torch.randn(N, device="cuda", dtype=dtype)

            def eager():
                return F.gelu(F.linear(x, w, b), approximate="tanh")

            torch._dynamo.reset()
            compiled = torch.compile(lambda: F.gelu(F.linear(x, w, b), approximate="tanh"))
            fns = {
                "fused": lambda: ep.linear_gelu(x, w, b),
                "ours_gemm": lambda: ep.linear_gelu(x, w, None, False),
                "ours_unfused": lambda: F.gelu(ep.linear_gelu(x, w, None, False) + b, approximate="tanh"),
                "cublas_gemm": lambda: F.linear(x, w),
                "eager": eager,
                "addmm_gelu": lambda: torch._addmm_activation(b, x, w.t(), use_gelu=True),
                "compiled": compiled,
            }
            lin = F.linear(x.double(), w.double(), b.double())
            refs = {"tanh": F.gelu(lin, approximate="tanh"), "erf": F.gelu(lin)}
            errs = {}
            for impl, fn in fns.items():
                if impl.endswith("_gemm"):
                    continue
                y = fn().double()
                errs[impl] = {k: ((y - r).norm() / r.norm()).item() for k, r in refs.items()}
                tol = 1e-2 if dtype == torch.bfloat16 else 2e-3
                if min(errs[impl].values()) > tol:
                    sys.exit(f"epilogue: {impl} {tag} {M}x{N}x{K}: relative error {errs[impl]} > {tol}")
            floor = F.linear(x.double(), w.double())
            for impl in ("ours_gemm", "cublas_gemm"):
                err = ((fns[impl]().double() - floor).norm() / floor.norm()).item()
                if err > (1e-2 if dtype == torch.bfloat16 else 2e-3):
                    sys.exit(f"epilogue: {impl} {tag} {M}x{N}x{K}: relative error {err:.2e}")
            del lin, refs, floor
            kernels = {impl: n_kernels(fn) for impl, fn in fns.items()}
            settle()
            each = bench_each_round(fns, rounds=ROUNDS)
            t = {impl: min(ts) for impl, ts in each.items()}
            flops = 2 * M * N * K
            for impl, ms in t.items():
                row = {
                    "dtype": tag,
                    "shape": f"{M}x{N}x{K}",
                    "M": M,
                    "N": N,
                    "K": K,
                    "impl": impl,
                    "us": ms * 1e3,
                    "tflops": flops / ms / 1e9,
                    "ratio_fused": t["fused"] / ms,  # > 1: faster than the fused kernel
                    "ratio_fused_spread": max(each[impl]) / ms - 1,
                    "over_floor": ms / t["ours_gemm" if impl.startswith(("fused", "ours")) else "cublas_gemm"],
                    "kernels": kernels[impl],
                }
                if impl in errs:
                    row.update(err_tanh=errs[impl]["tanh"], err_erf=errs[impl]["erf"])
                rows.append(row)
                print(
                    f"{tag} {M}x{N}x{K} {impl:<13} {row['us']:8.1f} us {row['tflops']:6.0f} TFLOP/s "
                    f"{row['ratio_fused']:.3f}x fused  {row['over_floor']:.3f}x floor  {kernels[impl]} kernels",
                    flush=True,
                )
            del x, w, b
    metrics = {
        "us": {"unit": "µs", "noise": 0.1, "better": "lower", "fmt": ",.0f"},
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "fmt": ".0f"},
        "ratio_fused": {"unit": "×", "noise": 0.05, "fmt": ".2f"},
        "over_floor": {"unit": "×", "noise": 0.05, "better": "lower", "fmt": ".2f"},
        "kernels": {"unit": "count", "noise": 0, "fmt": "d"},
        "err_tanh": {"unit": "relative", "noise": 1.0, "fmt": ".1e", "check": False},
        "err_erf": {"unit": "relative", "noise": 1.0, "fmt": ".1e", "check": False},
    }
    write(NAME, metrics, rows, args.out, argv, __file__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
