#!/usr/bin/env python3
"""torch.compile's artifacts (FX, ATen, Inductor IR, Triton kernels) for the LayerNorm-MLP on the GPU,
written under data/pytorch_compile_stack/ir/cuda.

The capture itself lives in _artifacts.py (shared by the three artifact datasets).

    python scripts/measure/pytorch_compile_stack/gpu_artifacts.py [--out PATH]
"""
META = {"needs": "gpu", "tier": "nightly", "budget_s": 25, "timed": False}

from measure.pytorch_compile_stack import _artifacts

if __name__ == "__main__":
    raise SystemExit(_artifacts.main_for("gpu_artifacts"))
