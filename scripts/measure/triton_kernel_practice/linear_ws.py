#!/usr/bin/env python3
"""The warp-specialized Gluon GEMM (snippets/triton_kernel_practice/linear_ws.py) on the M = 128 inference
cells, beside cuBLAS and linear(), in the same process.

y = x @ W.T, W (N, K) in nn.Linear layout, M = 128, (N, K) in {(4096, 4096), (11008, 4096), (4096, 11008),
(8192, 8192)}, fp16 and bf16: the cells where linear() stays below cuBLAS (inference_gemm.json). Each
setting in CONFIGS (weight rows per consumer BN, K step BK, consumers per program, ring depth) is checked
against an fp32 product, then cuBLAS (torch.nn.functional.linear), linear() and every setting are timed
in turn in ROUNDS rounds (do_bench with its L2 flush, best median), and once more captured in a CUDA
graph. Rows "ws": one per setting; row "ws_best": the fastest setting of the cell, with its target
(>= 1.0x cuBLAS, issue 12). linear() does not dispatch to this kernel yet.

    python scripts/measure/triton_kernel_practice/linear_ws.py [--out data/triton_kernel_practice/linear_ws.json]
"""

META = {"needs": "gpu", "tier": "weekly", "budget_s": 60}

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
M = 128
SHAPES = ((4096, 4096), (11008, 4096), (4096, 11008), (8192, 8192))
# BN, BK, CONSUMERS, STAGES: the fastest settings of a wider probe on the H200 (not in data/)
CONFIGS = ((64, 64, 1, 8), (64, 64, 1, 13), (128, 64, 1, 8), (128, 128, 1, 4), (32, 64, 2, 8), (64, 64, 2, 8))
ROUNDS = 3
TARGET = 1.0


def main(argv=None) -> int:
    args = data.arg_parser(__doc__, NAME).parse_args(argv)
    measure.need_gpu(NAME)
    import torch

    ws = measure.snippet("triton_kernel_practice/linear_ws")
    lin = measure.snippet("triton_kernel_practice/linear")
    torch.manual_seed(0)
    shapes = SHAPES[:1] if args.quick else SHAPES
    rows = []
    for tag, dtype in (("fp16", torch.float16), ("bf16", torch.bfloat16)):
        tol = 1e-2 if tag == "bf16" else 2e-3
        for N, K in shapes:
            w = torch.randn(N, K, device="cuda", dtype=dtype) / K**0.5
            x = torch.randn(M, K, device="cuda", dtype=dtype)
            ref = x.float() @ w.float().t()
            calls = {"cublas": lambda: torch.nn.functional.linear(x, w), "linear": lambda: lin.linear(x, w)}
            for bn, bk, cons, stages in CONFIGS:
                cfg = dict(BN=bn, BK=bk, CONSUMERS=cons, STAGES=stages)
                calls[f"ws {bn}x{bk} C{cons} S{stages}"] = lambda cfg=cfg: ws.linear_ws(x, w, **cfg)
            for impl, fn in calls.items():
                err = measure.rel_err(fn(), ref)
                if not err < tol:
                    sys.exit(f"{NAME}: {impl} {tag} M={M} N={N} K={K}: relative error {err:.2e}")
            graphs = {f"{impl} graph": measure.graphed(fn) for impl, fn in calls.items()}
            each = measure.bench_each_round({**calls, **graphs}, rounds=ROUNDS, warmup=3, rep=12)
            t_cb, g_cb = min(each["cublas"]), min(each["cublas graph"])
            cell = []
            for impl in calls:
                t, tg = min(each[impl]), min(each[f"{impl} graph"])
                row = {
                    "dtype": tag,
                    "shape": f"{N}x{K}",
                    "M": M,
                    "impl": "ws" if impl.startswith("ws") else impl,
                    "us": t * 1e3,
                    "ratio_cublas": t_cb / t,
                    "ratio_cublas_spread": measure.spread(each[impl]),
                    "us_graph": tg * 1e3,
                    "ratio_cublas_graph": g_cb / tg,
                }
                if impl.startswith("ws"):
                    row["config"] = impl.removeprefix("ws ")
                    cell.append(row)
                rows.append(row)
            best = max(cell, key=lambda r: r["ratio_cublas"])
            rows.append({**best, "impl": "ws_best", "met_cublas": best["ratio_cublas"] >= TARGET})
            print(
                f"{tag} {N}x{K}: cuBLAS {t_cb * 1e3:.1f} us; linear() {rows[-len(calls)]['ratio_cublas']:.2f}x; "
                f"best ws {best['config']} {best['ratio_cublas']:.2f}x (graph {best['ratio_cublas_graph']:.2f}x)",
                flush=True,
            )
            del w, x, ref, graphs
    metrics = {
        "us": {"unit": "µs", "noise": 0.1, "fmt": ".1f"},
        "ratio_cublas": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "ratio_cublas_spread": {"unit": "", "noise": 1.0, "fmt": ".1%", "check": False},
        "us_graph": {"unit": "µs", "noise": 0.1, "fmt": ".1f"},
        "ratio_cublas_graph": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "met_cublas": {"unit": "bool", "noise": 0, "of": "ratio_cublas", "target": TARGET},
    }
    return data.save(data.new(NAME, metrics, rows), args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
