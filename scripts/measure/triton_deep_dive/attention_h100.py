#!/usr/bin/env python3
"""The deep dive's attention forward on an NVIDIA H100, beside SDPA's cuDNN and flash backends in the same
run: attention.py's forward cells at D = 64 and 128 ((B, H, N) in {(4, 32, 4096), (2, 16, 16384)}, causal
and full, the "triton" and "gluon" forwards), timed as attention.py times them (three rounds in turn, a
second of dense GEMMs first, nvidia-smi sampled throughout for each row's clock and power). No target or
verdict columns: the issue's targets are set on the H200, whose rows attention.py writes; this dataset
shows how the same kernels and the same cuDNN fare on the other Hopper card. It runs on an H100 only
(META gpu): GPU CI's tiers leave it out, and `gpu_ci.py --only triton_deep_dive/attention_h100` runs it
there.
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 70, "gpu": "H100"}

from measure.triton_deep_dive import attention as producer
from sitekit import data

NAME = data.name_of(__file__)


def main(argv=None) -> int:
    return producer.main(
        argv, name=NAME, doc=__doc__, directions=("fwd",), head_dims=(64, 128), card="H100", targets=False
    )


if __name__ == "__main__":
    raise SystemExit(main())
