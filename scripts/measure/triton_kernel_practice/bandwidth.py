#!/usr/bin/env python3
"""Bandwidth baseline of "Triton Kernel Practice": copy, torch.add and the page's Triton add.

fp32 vectors of 2^28 elements (1 GiB each); bandwidth counts 3 arrays for an add (two read,
one written) and read + write for the copy. Target (issue 3): Triton add >= 0.97x torch.add.

    python scripts/measure/triton_kernel_practice/bandwidth.py [--out data/triton_kernel_practice/bandwidth.json]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 8}

import sys

from measure.triton_kernel_practice._common import bench_rounds, copy_tbps, need_gpu, parse, snippet, write

NAME = "triton_kernel_practice/bandwidth"
TARGET = 0.97


def main(argv=None) -> int:
    args = parse(__doc__, NAME, argv)
    need_gpu("bandwidth")
    import torch
    va = snippet("vector_add")
    torch.manual_seed(0)
    n = 1 << 28
    rows = []
    tbps, ms = copy_tbps(4 * n)
    rows.append({"impl": "copy", "n": n, "tbps": tbps, "ms": ms, "frac_copy": 1.0})
    copy = tbps
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    ref = x + y
    got = va.add(x, y)
    if not torch.equal(got, ref):
        sys.exit("bandwidth: Triton add differs from torch.add")
    del got
    times = bench_rounds({"torch": lambda: torch.add(x, y, out=out), "triton": lambda: va.add(x, y)})
    t_torch, t_triton = times["torch"], times["triton"]
    for impl, t in (("torch_add", t_torch), ("triton_add", t_triton)):
        bw = 3 * 4 * n / t / 1e9
        row = {"impl": impl, "n": n, "tbps": bw, "ms": t, "frac_copy": bw / copy}
        if impl == "triton_add":
            row.update(ratio=t_torch / t, target=TARGET, met=t_torch / t >= TARGET)
        rows.append(row)
    for r in rows:
        print(f"{r['impl']:<12} {r['tbps']:.2f} TB/s  {r['frac_copy']:.2f} of copy")
    metrics = {
        "tbps": {"unit": "TB/s", "noise": 0.05, "fmt": ".2f"},
        "frac_copy": {"unit": "×", "noise": 0.05, "fmt": ".2f"},
        "ratio": {"unit": "×", "noise": 0.05, "fmt": ".3f"},
        "met": {"unit": "bool", "noise": 0, "of": "ratio"},   # the row's `target` column is its target
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".3f", "check": False},
    }
    write(NAME, metrics, rows, args.out, argv, __file__, params={"n": {"fmt": "pow2"}, "target": {"fmt": ".2f"}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
