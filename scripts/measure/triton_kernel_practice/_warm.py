"""Compile many Triton configurations in parallel before a sweep times them (not a producer).

A sweep over block sizes and split counts compiles dozens of kernels; one after the other that is
minutes of a lent GPU's time. `warm(module, tasks)` runs `module.make_call(task)()` once per task in
a pool of worker processes: each compiles into Triton's on-disk cache, and the timing process then
loads the compiled kernels from there instead of compiling them itself.
"""
from __future__ import annotations

import importlib
import os
import time


def _one(args):
    modname, task = args
    try:
        importlib.import_module(modname).make_call(task)()
        return None
    except Exception as e:  # reported, and the timing process meets the same error with context
        return f"{task}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"


def warm(modname: str, tasks: list, workers: int | None = None) -> None:
    import multiprocessing as mp
    if not tasks or os.environ.get("TKP_NO_WARM"):
        return
    workers = workers or max(1, min(len(tasks), (os.cpu_count() or 2) - 2, 14))
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(workers) as pool:
        errors = [e for e in pool.map(_one, [(modname, t) for t in tasks], chunksize=1) if e]
    print(f"warm: {len(tasks)} calls compiled in {time.perf_counter() - t0:.1f} s on {workers} processes"
          + (f"; {len(errors)} failed, first: {errors[0]}" if errors else ""), flush=True)
