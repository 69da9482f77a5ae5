#!/usr/bin/env python3
"""Softmax steps of "Triton Kernel Practice" against torch.softmax and the copy bandwidth.

fp32, M = 4096 rows, N in {1024, 2048, 4096, 8192, 12288} (the targets) and the long rows
N in {32768, 65536}. Bandwidth counts the fewest bytes any softmax must move: one read and
one write of M*N elements. Targets (issue 3): >= 1.0x torch.softmax at every target N, and
>= 0.85x the copy bandwidth measured in this run for N >= 4096.

    python scripts/measure/triton_kernel_practice_softmax.py [--out data/triton_kernel_practice/softmax.json]
"""
from __future__ import annotations

import sys

from triton_kernel_practice_common import bench_rounds, copy_tbps, need_gpu, parse, snippet, write

NAME = "triton_kernel_practice/softmax"
M = 4096
TARGET_N = (1024, 2048, 4096, 8192, 12288)
LONG_N = (32768, 65536)
TARGET_TORCH, TARGET_COPY = 1.0, 0.85
# Each version is timed ROUNDS times in turn and keeps its best median. At N = 1024 a call lasts
# about 12 us; when the host is slow, the Python launch can outlast do_bench's L2 flush and the GPU
# waits for it (softmax_launch.json measures both), so more rounds give a slow spell less weight.
ROUNDS = 5


def main(argv=None) -> int:
    args = parse(__doc__, NAME, argv)
    need_gpu("softmax")
    import torch
    sm = snippet("softmax")
    torch.manual_seed(0)
    copy, t_copy = copy_tbps()
    rows = [{"impl": "copy", "bytes": 1 << 30, "tbps": copy, "ms": t_copy, "frac_copy": 1.0}]   # the ceiling
    # passes: element reads + writes per input element (8 for torch's five-kernel composition)
    impls = [("torch", lambda x: torch.softmax(x, dim=-1), 2), ("naive", sm.softmax_naive, 8),
             ("fused", sm.softmax_fused, 2), ("online", sm.softmax_online, 3)]
    for N in TARGET_N + LONG_N:
        x = 4 * torch.randn(M, N, device="cuda")
        ref = torch.softmax(x.double(), dim=-1)
        run = [(impl, fn, passes) for impl, fn, passes in impls if not (impl == "naive" and N in LONG_N)]
        for impl, fn, passes in run:
            err = (fn(x).double() - ref).abs().max().item()
            if not err < 1e-5:
                sys.exit(f"softmax: {impl} N={N}: max abs error {err:.2e}")
        y = torch.empty_like(x)
        times = bench_rounds({"copy_same": lambda: y.copy_(x), **{impl: (lambda fn=fn: fn(x)) for impl, fn, _ in run}},
                             rounds=ROUNDS)
        t = times["copy_same"]     # a plain copy of the same bytes: the ceiling at this size
        rows.append({"impl": "copy_same", "M": M, "N": N, "passes": 2, "tbps": 2 * 4 * M * N / t / 1e9, "ms": t,
                     "frac_copy": 2 * 4 * M * N / t / 1e9 / copy, "ratio_torch": times["torch"] / t})
        for impl, fn, passes in run:
            t = times[impl]
            bw = 2 * 4 * M * N / t / 1e9
            row = {"impl": impl, "M": M, "N": N, "passes": passes, "tbps": bw, "ms": t,
                   "frac_copy": bw / copy, "ratio_torch": times["torch"] / t}
            if impl == "fused" and N in TARGET_N:
                row["met_torch"] = times["torch"] / t >= TARGET_TORCH
                if N >= 4096:
                    row["met_copy"] = bw / copy >= TARGET_COPY
            rows.append(row)
            print(f"N={N:<6} {impl:<7} {bw:5.2f} TB/s  {bw / copy:.2f} of copy  {times['torch'] / t:.2f}x torch", flush=True)
        del x, y, ref
    metrics = {
        "tbps": {"unit": "TB/s", "noise": 0.06, "fmt": ".2f"},
        "frac_copy": {"unit": "×", "noise": 0.06, "fmt": ".3f"},
        "ratio_torch": {"unit": "×", "noise": 0.06, "fmt": ".2f"},
        "met_torch": {"unit": "bool", "noise": 0},
        "met_copy": {"unit": "bool", "noise": 0},
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".3f", "check": False},
    }
    write(NAME, metrics, rows, args.out, argv, __file__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
