#!/usr/bin/env python3
"""GEMM steps of "Triton Kernel Practice" against cuBLAS (torch.matmul), same run.

M = N = K in {4096, 8192}, fp16 and bf16, row-major A and B, fp32 accumulation. Each step
(naive, grouped, autotuned, TMA + persistent) is checked against an fp32 product first; the
versions are timed in turn, ROUNDS times, keeping each one's best median. On the H200 a single
do_bench median of the same GEMM moves by up to 10% from one call to the next (cuBLAS included),
so one round per version would rank them by luck. Before the rounds of each shape the GPU runs dense
GEMMs for a second (sitekit.measure.settle): the first fraction of a second of such work runs at the
boost clock, until the driver's software power cap brings the SM clock down, and without this the
version timed first would get the boost. nvidia-smi is sampled throughout (sitekit.measure.ClockLog):
each row records the median SM clock and power of the samples taken while that version was timed.
The name of the kernel cuBLAS ran is recorded from the profiler.
Target (issue 3): the Hopper step >= 0.95x torch.matmul.

    python scripts/measure/triton_kernel_practice/gemm.py [--out data/triton_kernel_practice/gemm.json]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "nightly", "budget_s": 38}

import sys

from sitekit.measure import ClockLog, settle

from measure.triton_kernel_practice._common import bench_each_round, need_gpu, parse, rel_err, snippet, write

NAME = "triton_kernel_practice/gemm"
TARGET = 0.95
SIZES = (4096, 8192)
ROUNDS = 5


def cublas_kernel(a, b) -> str:
    """The name of the GPU kernel torch.matmul launches for these operands."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    torch.matmul(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.matmul(a, b)
        torch.cuda.synchronize()
    names = [e.name for e in prof.events() if e.device_type.name == "CUDA" and "memset" not in e.name.lower()]
    if not names:
        sys.exit("gemm: the profiler saw no cuBLAS kernel")
    return names[0]


def main(argv=None) -> int:
    args = parse(__doc__, NAME, argv)
    need_gpu("gemm")
    import torch
    g = snippet("gemm")
    torch.manual_seed(0)
    steps = [("naive", g.matmul_naive), ("grouped", g.matmul_grouped),
             ("autotuned", g.matmul_autotuned), ("tma_persistent", g.matmul_tma)]
    rows, spans = [], {}
    with ClockLog() as clocks:  # nvidia-smi in the background, for each row's clock
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
                settle()
                case_spans = spans[(tag, s)] = {}
                each = bench_each_round(fns, rounds=ROUNDS, spans=case_spans)
                times = {impl: min(ts) for impl, ts in each.items()}
                for impl, t in times.items():
                    row = {"dtype": tag, "size": s, "impl": impl, "tflops": flops / t / 1e9, "ms": t,
                           "ratio": times["cublas"] / t,
                           # slowest round's median over the fastest one's: the call-to-call spread
                           "spread": max(each[impl]) / t - 1}
                    if impl == "cublas":
                        row["kernel"] = cublas_kernel(a, b)
                    if impl == "tma_persistent":
                        row.update(target=TARGET, met=times["cublas"] / t >= TARGET)
                    rows.append(row)
                del a, b, ref
                for r in rows[-5:]:
                    print(f"{tag} {s} {r['impl']:<15} {r['tflops']:7.1f} TFLOP/s  {r['ratio']:.3f}x cuBLAS", flush=True)
    for r in rows:  # the clock while this version was timed (samples land in a reader thread: read them now)
        c = clocks.windows(spans[(r["dtype"], r["size"])][r["impl"]])
        if c is None:
            sys.exit(f"gemm: no busy nvidia-smi sample while {r['impl']} {r['dtype']} {r['size']} was timed "
                     f"({clocks.error or 'nvidia-smi gave no sample'})")
        r.update(sm_mhz=c["sm_mhz"][1], power_w=c["power_w"][0], power_capped=c["power_capped"])
    metrics = {
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "fmt": ".0f"},
        "sm_mhz": {"unit": "MHz", "noise": 0.15, "fmt": ",.0f"},
        "power_w": {"unit": "W", "noise": 0.3, "fmt": ".0f"},
        "power_capped": {"unit": "fraction", "noise": 1.0, "fmt": ".0%", "check": False},
        "ratio": {"unit": "×", "noise": 0.07, "fmt": ".3f"},
        "met": {"unit": "bool", "noise": 0, "of": "ratio"},   # the row's `target` column is its target
        "spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".3f", "check": False},
    }
    write(NAME, metrics, rows, args.out, argv, __file__, params={"target": {"fmt": ".2f"}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
