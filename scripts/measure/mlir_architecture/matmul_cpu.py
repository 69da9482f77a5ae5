#!/usr/bin/env python3
"""512×512×512 f32 matmul on the CPU, compiled by MLIR 22 three ways: untiled loops, tiled (16×16×16),
tiled 8×32×8 and vectorized (vector.fma on vector<32xf32>). Wall time of one @matmul call, timed inside
the program with rtclock().

Runs the page's own block (snippets/mlir_architecture/bench.sh, section `time`) for several rounds;
each round runs the three programs in turn, and each variant keeps its best time, and as its spread how far the
second-best round is from the best (a shared machine has slow spells; the best round is the figure). Both checked results (C[0,0] and C[511,511] = 256) must be right in every run.
Measured once on the CPU machine the provenance names (set MEASURED_ON), not in CI.

    MEASURED_ON="..." python scripts/measure/mlir_architecture/matmul_cpu.py [--rounds 5] [--out PATH]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "weekly", "budget_s": 60}

import sys

from sitekit import data

from measure.mlir_architecture._common import run_block

NAME = data.name_of(__file__)
N = 512
VARIANTS = {"untiled": "mm_untiled", "tile": "mm_tiled", "vectorize": "mm_vectorized"}


def one_round() -> dict[str, float]:
    out = {}
    for line in run_block("bench.sh", "time").splitlines():
        variant, first, last, seconds = line.split()
        if variant not in VARIANTS:
            sys.exit(f"matmul_cpu: unexpected line from bench.sh: {line!r}")
        if float(first) != 256.0 or float(last) != 256.0:
            sys.exit(f"matmul_cpu: {variant} computed C[0,0]={first}, C[511,511]={last}; expected 256")
        out[variant] = float(seconds)
    if set(out) != set(VARIANTS):
        sys.exit(f"matmul_cpu: bench.sh printed {sorted(out)}, expected {sorted(VARIANTS)}")
    return out


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of the three programs (default 5)")
    args = ap.parse_args(argv)
    if args.rounds < 2:
        ap.error(f"--rounds must be at least 2 (the spread needs two), got {args.rounds}")
    rounds = [one_round() for _ in range(1 if args.quick else args.rounds)]
    if args.quick:
        rounds = rounds * 2
    flops = 2 * N ** 3
    best = {v: min(r[v] for r in rounds) for v in VARIANTS}
    rows = []
    for v, label in VARIANTS.items():
        times = sorted(r[v] for r in rounds)
        rows.append({"variant": label, "n": N, "ms": best[v] * 1e3, "mm_gflops": flops / best[v] / 1e9,
                     "mm_speedup": best["untiled"] / best[v],
                     # the noise of a best-of-rounds time: how far the second-best round is from it
                     "ms_spread": (times[1] - times[0]) / times[0]})
        print(f"{label:<14} {best[v] * 1e3:8.1f} ms  {flops / best[v] / 1e9:6.2f} GFLOP/s  "
              f"{best['untiled'] / best[v]:5.1f}x  (rounds: {', '.join(f'{t * 1e3:.0f}' for t in times)} ms)")
    metrics = {"ms": {"unit": "ms", "noise": 0.3, "fmt": ".1f", "check": False},
               "mm_gflops": {"unit": "GFLOP/s", "noise": 0.3, "fmt": ".2f", "check": False},
               "mm_speedup": {"unit": "×", "noise": 0.3, "fmt": ".1f", "check": False},
               "ms_spread": {"unit": "relative", "noise": 1.0, "fmt": ".2f", "check": False}}
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
                  rounds=len(rounds))
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
