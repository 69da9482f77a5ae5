#!/usr/bin/env python3
"""torch.compile against eager on the CPU (Inductor's C++/OpenMP backend), one process.

The same workloads as the GPU dataset at CPU sizes, in float32, with the modes that
mean something on a CPU: default, max-autotune, and max-autotune with freezing
(weights become constants, which is what lets Inductor's C++ GEMM template compete
with oneDNN/MKL; inference only). reduce-overhead is left out: it only adds CUDA
graphs, which a CPU does not have.

Timings: eager and compiled calls alternate, and each side keeps its fastest wall time
(the machine this was measured on is shared with other jobs; the minimum is the run they
disturbed least). Peak memory comes from the profiler's allocator events. Slow on a small machine (max-autotune compiles take minutes): this dataset
is measured once and committed, not re-measured by CI.

    python scripts/measure/pytorch_compile_stack/cpu_workloads.py [--out PATH] [--only mlp,pointwise] [--quick]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 1800}

import os
import platform
import sys
import time

from sitekit import data  # noqa: E402

from measure.pytorch_compile_stack import _common as C  # noqa: E402

NAME = "pytorch_compile_stack/cpu_workloads"
CPU_MODES = ("default", "max-autotune", C.FREEZING)


def cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--only", default="pointwise,mlp,gpt2_fwd,conv",
                    help="comma-separated workloads (default: pointwise,mlp,gpt2_fwd,conv)")
    ap.add_argument("--modes", default=",".join(CPU_MODES), help=f"comma-separated modes (default {','.join(CPU_MODES)})")
    args = ap.parse_args(argv)

    import torch
    dev = torch.device("cpu")
    wls = C.workloads(dev, "tiny" if args.quick else "cpu")
    want = args.only.split(",")
    unknown = sorted(set(want) - {w.name for w in wls})
    if unknown:
        ap.error(f"unknown workload(s) {unknown}; known: {[w.name for w in wls]}")
    modes = args.modes.split(",")
    if set(modes) - set(CPU_MODES):
        ap.error(f"--modes takes {CPU_MODES}, got {modes}")
    wls = [w for w in wls if w.name in want]

    t_start = time.perf_counter()
    rows, krows = [], []
    first = C.first_compile_s(dev)
    rows.append({"kind": "startup", "workload": "first_compile", "mode": "default", "compile_cold_s": first})
    print(f"first compile in this process (one-time cost, kept out of every case): {first:.1f} s", flush=True)
    for wl in wls:
        r = C.Runner(wl, dev)
        row = C.measure_eager(r, count_ops=False)
        # eager's own row keeps its peak memory; its time is only a reference, the speed-ups use
        # the eager times measured alternately with each compiled variant (eager_ms)
        row["kind"] = "eager_ref"
        row["shape"] = wl.extra["shape"]
        if wl.bytes_min:
            row["gbps"] = wl.bytes_min / row["ms"] / 1e6
        rows.append(row)
        print(f"{wl.name:<11} eager        {row['ms']:8.3f} ms", flush=True)
        for mode in modes:
            crow, k = C.measure_compiled(r, mode, row["ms"])
            crow["shape"] = wl.extra["shape"]
            if wl.bytes_min and crow.get("ms"):
                crow["gbps"] = wl.bytes_min / crow["ms"] / 1e6
            rows.append(crow)
            krows += k
            print(f"{wl.name:<11} {mode:<13} {crow.get('ms') or float('nan'):8.3f} ms  "
                  f"x{crow.get('vs_eager') or float('nan'):5.2f}  cold {crow['compile_cold_s']:6.1f} s  "
                  f"warm {crow['compile_warm_s']:5.1f} s  ok={crow['correct']}  "
                  f"kernels={crow['kernels']}+{crow['extern_calls']}", flush=True)

    rows = [C.clean(r) for r in rows + krows]
    ds = data.new(NAME, C.METRICS, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
                  cpu=cpu_name(), threads=torch.get_num_threads(), cores=os.cpu_count(),
                  wall_s=round(time.perf_counter() - t_start, 1))
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
