#!/usr/bin/env python3
"""What a compiled call costs the host on the H200 (torch 2.11): call_overhead.py's measurement with
a CUDA tensor, so the GPT-2 section can set guard and wrapper time against a GPU block's wall time.

The function is one add on 16 floats, so its GPU work is a couple of microseconds and the host is
the bottleneck: calls are issued back to back (the GPU runs them asynchronously) and the loop's
time per call is the host's cost of one call. Variants:

  eager            the function called directly (one ATen launch)
  dynamo_guards    torch.compile(backend="eager"): Dynamo's frame hook and guard check, then the
                   captured graph run as Python (the same ATen launch)
  inductor         torch.compile() (default mode): guards, AOTAutograd's and Inductor's runtime
                   wrappers, then the generated Triton kernel's launch
  inductor_nograd  the same under torch.no_grad()
  reduce_overhead  torch.compile(mode="reduce-overhead"): guards, wrappers and a CUDA graph replay,
                   including the copy of the (non-static) input into the graph's buffer

Each is timed as the median of five batches of back-to-back calls, in ROUNDS rounds taken in turn;
each keeps its best round and records the round-to-round spread.

    python scripts/measure/pytorch_compile_stack/call_overhead_gpu.py [--out PATH] [--quick]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 30}

import sys
import time

from sitekit import data

NAME = "pytorch_compile_stack/call_overhead_gpu"
CALLS, ROUNDS = 2000, 7


def per_call_us(fn, x, calls: int) -> float:
    import torch
    for _ in range(50):
        fn(x)
    torch.cuda.synchronize()
    t = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls // 5):
            fn(x)
        torch.cuda.synchronize()
        t.append((time.perf_counter() - t0) / (calls // 5) * 1e6)
    return sorted(t)[2]


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        sys.exit(f"{NAME}: needs a CUDA GPU (torch.cuda.is_available() is False); "
                 "call_overhead.py measures the same on the CPU")
    torch.manual_seed(0)
    calls, rounds = (200, 2) if args.quick else (CALLS, ROUNDS)

    def f(x):
        return x + 1

    x = torch.randn(16, device="cuda")
    compiled = torch.compile(f)
    guarded = torch.compile(f, backend="eager")
    graphed = torch.compile(f, mode="reduce-overhead")
    for fn in (compiled, guarded, graphed, graphed, graphed):   # compile (and record the graph) first
        if not torch.equal(fn(x), f(x)):
            sys.exit(f"{NAME}: compiled result differs from eager")

    def nograd(x):
        with torch.no_grad():
            return compiled(x)
    nograd(x)
    sides = {"eager": f, "dynamo_guards": guarded, "inductor": compiled, "inductor_nograd": nograd,
             "reduce_overhead": graphed}
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
        "us": {"unit": "µs", "noise": 0.3, "fmt": ".1f"},
        "overhead_us": {"unit": "µs", "noise": 0.5, "fmt": ".1f", "check": False},
    }
    import os
    ds = data.new(NAME, metrics, rows, argv=[sys.argv[0], *(argv if argv is not None else sys.argv[1:])],
                  calls=calls, rounds=rounds, threads=torch.get_num_threads(), cores=os.cpu_count())
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
