#!/usr/bin/env python3
"""One torch.compile case (workload, mode) in a process of its own: the worker the
pytorch_compile_stack producers start, once per phase, with the cache directories set
in its environment before torch is imported.

  cold   TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR point at an empty directory: the first
         compile of this process builds everything (FX graph, AOTAutograd and Triton caches miss)
  warm   the same directories, filled by the cold process: what a restarted job with a kept
         cache pays; this phase also checks correctness and times eager against compiled

In both phases the case's compile is the first compile of the process, so the time includes
Inductor's one-time start-up (compile workers, C++ toolchain probe); the producer measures that
start-up on its own and records it beside the cases.

The generated kernels are read from the wrapper code of every graph the process compiled or
loaded from a cache (Inductor's save_output_code hook and PyCodeCache's loaded modules), so a
cache hit lists them too. Writes one JSON object to --out.

    python scripts/measure/pytorch_compile_stack/_case.py --workload mlp --mode default \
        --size tiny --device cpu --phase cold --out /tmp/case.json
"""
from __future__ import annotations

import time

T_START = time.perf_counter()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--size", choices=("gpu", "cpu", "tiny"), required=True)
    ap.add_argument("--device", choices=("cuda", "cpu"), required=True)
    ap.add_argument("--phase", choices=("cold", "warm"), required=True)
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds, eager and compiled in turn (warm phase)")
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    if not os.environ.get("TORCHINDUCTOR_CACHE_DIR") or not os.environ.get("TRITON_CACHE_DIR"):
        sys.exit("_case.py: set TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR (the producer gives each case its own)")

    import torch

    from measure.pytorch_compile_stack import _common as C
    t_import = time.perf_counter() - T_START
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        sys.exit("_case.py: --device cuda but torch.cuda.is_available() is False")
    modes = (*torch._inductor.list_mode_options(), C.FREEZING)     # what torch.compile(mode=...) takes, and ours
    if args.mode not in modes:
        sys.exit(f"_case.py: unknown --mode {args.mode!r}; known: {', '.join(modes)}")
    wls = {w.name: w for w in C.workloads(dev, args.size)}
    if args.workload not in wls:
        sys.exit(f"_case.py: unknown workload {args.workload!r}; known: {sorted(wls)}")
    runner = C.Runner(wls[args.workload], dev)
    runner.step(runner.target)                  # eager once: CUDA context, cuBLAS handles, allocator
    C.sync(dev)

    out: dict = {"workload": args.workload, "mode": args.mode, "phase": args.phase, "import_s": t_import}
    codes: list[str] = []
    h0 = C.held_mib(dev)
    before = C.cache_hits()
    with C.mode_config(args.mode):
        compiled = C.compile_for(runner.target, args.mode)
        with C.capture_output_code(codes):
            out["compile_s"] = C.time_first_call(runner, compiled)
            for _ in range(3):                  # reduce-overhead records its CUDA graph on a later call
                runner.step(compiled)
        C.sync(dev)
        after = C.cache_hits()
        out["fxgraph_hits"] = after["fxgraph_hit"] - before["fxgraph_hit"]
        out["fxgraph_misses"] = after["fxgraph_miss"] - before["fxgraph_miss"]
        krows = C.kernel_rows(C.all_output_code(codes), args.workload, args.mode)
        out["kernel_rows"] = krows
        out["kernels"], out["extern_calls"] = C.launches(krows)

        if args.phase == "warm":
            out.update(C.check_and_time(runner, compiled, rounds=args.rounds, count_ops=(args.mode == "default")))
            out["held_mib"] = max(0.0, C.held_mib(dev) - h0)    # CUDA graph pools, static inputs, outputs
    out["process_s"] = time.perf_counter() - T_START
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
