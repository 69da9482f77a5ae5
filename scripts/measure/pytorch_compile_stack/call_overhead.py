#!/usr/bin/env python3
"""What a compiled call costs the host before any kernel runs: Dynamo's guards and Inductor's wrapper.

On the CPU, with a function so small that its own work is negligible (one add on 16 floats):

  eager           the function called directly
  dynamo_guards   torch.compile(backend="eager"): Dynamo's frame hook and guard check, then the
                  captured graph run as Python
  inductor        torch.compile() (default mode): the guards plus AOTAutograd's and Inductor's
                  runtime wrappers and the generated C++ kernel
  inductor_nograd the same call under torch.no_grad()

Each is timed as the median of CALLS back-to-back calls, in ROUNDS rounds taken in turn; each keeps
its best round, and the round-to-round spread is recorded. The difference to eager is the per-call
overhead the GPT-2 section of the page talks about (the GPU figures come from gpt2_profile).

    python scripts/measure/pytorch_compile_stack/call_overhead.py [--out PATH] [--quick]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 60}

import sys
import time

from sitekit import data

NAME = "pytorch_compile_stack/call_overhead"
CALLS, ROUNDS = 2000, 7


def per_call_us(fn, x, calls: int) -> float:
    for _ in range(50):
        fn(x)
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls // 5):
            fn(x)
        t.append((time.perf_counter() - t0) / (calls // 5) * 1e6)
    return sorted(t)[2]


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    import torch
    torch.manual_seed(0)
    calls, rounds = (200, 2) if args.quick else (CALLS, ROUNDS)

    def f(x):
        return x + 1

    x = torch.randn(16)
    compiled = torch.compile(f)
    guarded = torch.compile(f, backend="eager")
    for fn in (compiled, guarded):             # compile first; correctness before timing
        if not torch.equal(fn(x), f(x)):
            sys.exit(f"{NAME}: compiled result differs from eager")

    def nograd(x):
        with torch.no_grad():
            return compiled(x)
    nograd(x)
    sides = {"eager": f, "dynamo_guards": guarded, "inductor": compiled, "inductor_nograd": nograd}
    times = {k: [] for k in sides}
    for _ in range(rounds):
        for k, fn in sides.items():
            times[k].append(per_call_us(fn, x, calls))
    best = {k: min(v) for k, v in times.items()}
    rows = []
    for k, v in times.items():
        rows.append({"kind": "call", "variant": k, "us": best[k],
                     "us_spread": (max(v) - min(v)) / min(v),
                     "overhead_us": best[k] - best["eager"]})
        print(f"{k:<16} {best[k]:7.2f} us per call  (+{best[k] - best['eager']:.2f} over eager, "
              f"spread {(max(v) - min(v)) / min(v):.0%})")
    metrics = {
        # host time on a shared machine: figures for the page, not for the drift gate
        "us": {"unit": "µs", "noise": 0.3, "fmt": ".1f", "check": False},
        "overhead_us": {"unit": "µs", "noise": 0.5, "fmt": ".1f", "check": False},
    }
    import os
    ds = data.new(NAME, metrics, rows, argv=[sys.argv[0], *(argv if argv is not None else sys.argv[1:])],
                  calls=calls, rounds=rounds, threads=torch.get_num_threads(), cores=os.cpu_count())
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
