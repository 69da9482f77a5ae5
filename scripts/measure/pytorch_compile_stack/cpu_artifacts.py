#!/usr/bin/env python3
"""torch.compile's artifacts (FX, ATen, Inductor IR, C++ kernels, Dynamo logs) on the CPU with the test
environment's torch, written under data/pytorch_compile_stack/ir/cpu; regenerated and compared by the CPU tests.

The capture itself lives in _artifacts.py (shared by the three artifact datasets).

    python scripts/measure/pytorch_compile_stack/cpu_artifacts.py [--out PATH]
"""
META = {"needs": "cpu", "tier": "nightly", "budget_s": 60}

from measure.pytorch_compile_stack import _artifacts

if __name__ == "__main__":
    raise SystemExit(_artifacts.main_for("cpu_artifacts"))
