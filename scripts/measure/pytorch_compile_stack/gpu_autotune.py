#!/usr/bin/env python3
"""torch.compile mode="max-autotune" against eager on one CUDA GPU: the five workloads of
gpu_workloads.py, measured the same way (each case cold, then warm, in fresh processes with
their own empty Inductor/Triton caches; eager and compiled timed in turn for several rounds).

max-autotune benchmarks Triton GEMM/convolution templates against the library kernels for
every matrix shape, tunes the generated kernels by coordinate descent and adds CUDA graphs;
its cold compiles took 40 s (MLP) and 93 s (GPT-2 forward) on the H200 on 2026-11-30, so this
dataset is weekly, apart from the nightly-sized default/reduce-overhead cases.

    python scripts/measure/pytorch_compile_stack/gpu_autotune.py [--out PATH] [--rounds 3] [--quick]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 900}

from measure.pytorch_compile_stack.gpu_workloads import measure  # noqa: E402
from sitekit import data  # noqa: E402

NAME = data.name_of(__file__) if hasattr(data, "name_of") else "pytorch_compile_stack/gpu_autotune"
MODES = ("max-autotune",)


def main(argv=None) -> int:
    return measure(NAME, MODES, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
