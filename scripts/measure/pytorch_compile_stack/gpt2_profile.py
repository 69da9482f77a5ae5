#!/usr/bin/env python3
"""Where the GPU time of the GPT-2 block forward goes, eager against torch.compile (default mode).

The page "PyTorch compile stack" found the GPT-2 block forward (bf16, B8 T1024 d1024, 16 heads, the
gpu_workloads dataset's size) no faster compiled than eager. This script looks inside one call of
each, in one process:

- wall time per call: do_bench median, eager and compiled in turn for ROUNDS rounds, best kept,
  with the spread between rounds;
- GPU time per call from torch.profiler: every kernel and copy the GPU ran, summed, and split into
  categories by kernel name (GEMM library kernels, attention kernels, Triton kernels Inductor
  generated, other ATen kernels);
- the longest kernels of each side.

The compiled result is checked against eager first. The profiled calls run back to back, without
do_bench's L2 flush, so their GPU time is a breakdown, not a second measurement of the wall time.
The CPU time one call takes on the host is measured too, in the same rounds as the wall time (calls
issued back to back without waiting for the GPU, few enough that the launch queue never fills):
while it stays below the wall time of a call, the host is not what limits the block.

    python scripts/measure/pytorch_compile_stack/gpt2_profile.py [--out PATH] [--quick]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 35}   # 32 s on the H200, 2026-12-01, process start included

import sys
import time

from sitekit import data  # noqa: E402

from measure.pytorch_compile_stack import _common as C  # noqa: E402

NAME = "pytorch_compile_stack/gpt2_profile"
CALLS = 20            # profiled calls per side
ROUNDS = 5            # wall-time rounds per side
TOP = 6               # longest kernels listed per side
CATEGORIES = (        # first match wins; names as the profiler reports them
    ("attention", ("flash", "fmha", "sdpa", "attention", "attn")),
    ("gemm", ("gemm", "nvjet", "cutlass", "xmma", "cublas", "sm90_")),
    ("inductor_triton", ("triton_",)),
)


def category(name: str) -> str:
    low = name.lower()
    for cat, keys in CATEGORIES:
        if any(k in low for k in keys):
            return cat
    return "other_aten"


def gpu_kernels(runner, fn, calls: int) -> dict[str, list[float]]:
    """{kernel name: [µs of each launch]} over `calls` steady-state calls."""
    import torch
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    for _ in range(3):
        runner.step(fn)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            runner.step(fn)
        torch.cuda.synchronize()
    out: dict[str, list[float]] = {}
    for e in prof.events():
        if e.device_type == DeviceType.CUDA:
            out.setdefault(e.name, []).append(e.time_range.elapsed_us())
    if not out:
        sys.exit("gpt2_profile: the profiler recorded no GPU activity")
    return out


def host_us(runner, fn, calls: int = 40, rounds: int = 5) -> float:
    """CPU time of one call: `calls` calls back to back without waiting for the GPU (few enough
    that the launch queue never fills), median over `rounds`."""
    import torch
    per = []
    for _ in range(rounds):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(calls):
            runner.step(fn)
        per.append((time.perf_counter() - t) / calls * 1e6)
    torch.cuda.synchronize()
    return sorted(per)[rounds // 2]


def short(name: str, n: int = 90) -> str:
    return name if len(name) <= n else name[: n - 1] + "…"


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        sys.exit("gpt2_profile: needs a CUDA GPU (torch.cuda.is_available() is False)")
    dev = torch.device("cuda")
    t0 = time.perf_counter()
    wl = next(w for w in C.workloads(dev, "tiny" if args.quick else "gpu") if w.name == "gpt2_fwd")
    runner = C.Runner(wl, dev)
    C.reset_compiler()
    compiled = torch.compile(runner.target)
    runner.step(compiled)                                 # compile (cold or cached: not timed here)
    err = C.rel_err(runner.result(compiled), runner.result(runner.target))
    if not err < 2e-2:
        sys.exit(f"gpt2_profile: compiled and eager disagree (relative error {err:.2e})")

    sides = {"eager": runner.target, "compiled": compiled}
    wall = {k: [] for k in sides}
    host = {k: [] for k in sides}
    # wall time and host time in the same rounds, side by side: the two figures of one side are then
    # taken under the same host load (measured apart, host time once came out above wall time)
    for _ in range(ROUNDS):
        for k, fn in sides.items():
            wall[k].append(C.bench_ms(runner, fn) * 1e3)
            host[k].append(host_us(runner, fn, rounds=1))
    rows = []
    for impl, fn in sides.items():
        kernels = gpu_kernels(runner, fn, CALLS)
        per_call = {name: sum(ts) / CALLS for name, ts in kernels.items()}
        launches = {name: len(ts) / CALLS for name, ts in kernels.items()}
        gpu_us = sum(per_call.values())
        best = min(wall[impl])
        total = {"kind": "total", "impl": impl, "wall_us": best, "gpu_us": gpu_us,
                 # slowest round over the fastest: the call-to-call spread of this block
                 "spread": max(wall[impl]) / best - 1, "host_us": sorted(host[impl])[ROUNDS // 2],
                 "host_frac": sorted(h / w for h, w in zip(host[impl], wall[impl]))[ROUNDS // 2],
                 "launches": sum(launches.values()),
                 "vs_eager": min(wall["eager"]) / best}
        ratios = sorted(e / c for e, c in zip(wall["eager"], wall[impl]))
        if impl != "eager":   # round-to-round spread of the ratio: its noise for verdicts and the drift gate
            total["vs_eager_spread"] = (ratios[-1] - ratios[0]) / ratios[len(ratios) // 2]
        rows.append(total)
        by_cat: dict[str, list[float]] = {}
        for name, us in per_call.items():
            c = by_cat.setdefault(category(name), [0.0, 0.0])
            c[0] += us
            c[1] += launches[name]
        for cat, (us, n) in sorted(by_cat.items()):
            rows.append({"kind": "category", "impl": impl, "category": cat, "us": us, "launches": n})
        for name, us in sorted(per_call.items(), key=lambda kv: -kv[1])[:TOP]:
            rows.append({"kind": "kernel", "impl": impl, "kernel": short(name), "category": category(name),
                         "us": us, "launches": launches[name]})
        print(f"{impl:<9} wall {best:7.1f} us  GPU {gpu_us:7.1f} us  host {total['host_us']:7.1f} us  launches {sum(launches.values()):.0f}  "
              + "  ".join(f"{c} {v[0]:.1f}" for c, v in sorted(by_cat.items())), flush=True)

    metrics = {
        "wall_us": {"unit": "µs", "noise": 0.1, "fmt": ".0f"},
        "gpu_us": {"unit": "µs", "noise": 0.1, "fmt": ".0f"},
        "spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        # CPU time depends on the host and its load far more than GPU time does
        "host_us": {"unit": "µs", "noise": 0.5, "fmt": ".0f", "check": False},
        # host time of a call over its wall time, median of the rounds (both taken in the same round)
        "host_frac": {"unit": "", "noise": 0.5, "fmt": ".0%", "check": False},
        "us": {"unit": "µs", "noise": 0.15, "fmt": ".1f"},
        "launches": {"unit": "launches per call", "noise": 0, "fmt": ".0f"},
        "vs_eager": {"unit": "×", "noise": 0.1, "fmt": ".2f"},
    }
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
                  shape=wl.extra["shape"], calls=CALLS, rounds=ROUNDS, wall_s=round(time.perf_counter() - t0, 1))
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
