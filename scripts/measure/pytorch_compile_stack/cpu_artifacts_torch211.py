#!/usr/bin/env python3
"""The same CPU artifacts captured with torch 2.11 (the GPU machine's torch, on its CPU), under
data/pytorch_compile_stack/ir/cpu_torch211, so the page can compare 2.11 with 2.13.

The capture itself lives in _artifacts.py (shared by the three artifact datasets).

    python scripts/measure/pytorch_compile_stack/cpu_artifacts_torch211.py [--out PATH]
"""
META = {"needs": "gpu", "tier": "weekly", "budget_s": 120, "timed": False}

from measure.pytorch_compile_stack import _artifacts

if __name__ == "__main__":
    raise SystemExit(_artifacts.main_for("cpu_artifacts_torch211"))
