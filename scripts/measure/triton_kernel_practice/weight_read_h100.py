#!/usr/bin/env python3
"""How fast any kernel reads the inference GEMMs' weights, on an NVIDIA H100: the rows of _weight_read.py
(the page's read of the weight, a persistent read with several loads in flight, torch.sum, cuBLAS at
M = 1 and a copy, each with L2 left dirty and clean, and a fixed cost per call fitted over five sizes).
It answers, on the other Hopper card, a question the H200's inference_gemm rows leave open: whether a
better read than _read.py's reaches 0.7 of the copy bandwidth on a 32 MiB weight. It runs on an H100
only (META gpu): GPU CI's tiers leave it out, and `gpu_ci.py --only triton_kernel_practice/weight_read_h100`
runs it there.

    python scripts/measure/triton_kernel_practice/weight_read_h100.py [--out data/triton_kernel_practice/weight_read_h100.json]
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 35, "gpu": "H100", "chosen": {"time": ["config"]}}  # 26 s and 23 s on the H100 (2026-12-07)

from sitekit import data

from measure.triton_kernel_practice import _weight_read as producer

NAME = data.name_of(__file__)


def main(argv=None) -> int:
    return producer.main(argv, name=NAME, doc=__doc__, card="H100")


if __name__ == "__main__":
    raise SystemExit(main())
