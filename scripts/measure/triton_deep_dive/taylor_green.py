#!/usr/bin/env python3
"""Taylor-Green vortex decay with the Triton lattice Boltzmann kernel of "Deep Dive into OpenAI Triton".

Periodic n x n grid (D2Q9; D3Q19 on n x n x 4), tau = 0.8, u0 = 1.6 / n, run to t = n^2 / 8 steps
(diffusive scaling: the velocity decays by the same factor e^-0.99 on every grid). Error: relative L2
norm of the velocity against u(0) exp(-2 nu k^2 t). Order: log2 of the error ratio between successive
grids (2 for a second-order scheme). Targets (issue 14): error < 1 % on the finest grids, order ~ 2.
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 22}

import math

from sitekit import data, measure

NAME = data.name_of(__file__)
GRIDS = {"D2Q9": [16, 32, 64, 128, 256], "D3Q19": [16, 32, 64, 128]}
TARGET = 0.01


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    measure.need_gpu(NAME)
    lbm = measure.snippet("triton_deep_dive/lbm")
    rows = []
    for name, grids in GRIDS.items():
        lat = getattr(lbm, name)
        prev = None
        for n in grids[:3 if args.quick else None]:
            err = lbm.taylor_green(n, lattice=lat, backend="triton", device="cuda", nz=1 if name == "D2Q9" else 4)
            row = {"lattice": name, "n": n, "steps": n * n // 8, "error": err, "met_error": err < TARGET}
            if prev is not None:
                row["order"] = math.log2(prev / err)
            rows.append(row)
            print(row, flush=True)
            prev = err
    metrics = {"error": {"unit": "", "noise": 0.05, "fmt": ".2e"},
               "order": {"unit": "", "noise": 0.05, "fmt": ".2f"},
               "met_error": {"unit": "bool", "noise": 0, "of": "error", "target": TARGET}}
    ds = data.new(NAME, metrics, rows, params={"n": {"fmt": "pow2"}})
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
