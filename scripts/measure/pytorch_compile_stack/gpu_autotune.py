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

META = {"needs": "gpu", "tier": "weekly", "budget_s": 400}

from sitekit import data  # noqa: E402

from measure.pytorch_compile_stack.gpu_workloads import measure  # noqa: E402

NAME = data.name_of(__file__) if hasattr(data, "name_of") else "pytorch_compile_stack/gpu_autotune"
MODES = ("max-autotune",)


SPLIT_NOTE = ("rows of mode max-autotune, with the eager, start-up and ceiling rows they refer to, moved here from "
              "gpu_workloads.json as measured at a762dcdba9fc (2026-11-30), when one process measured every mode in "
              "turn: 'cold' there means an empty cache directory, not a fresh process; conv and gpt2_train were not "
              "measured (wall-clock budget). Re-measure with this producer to replace them.")


def split_committed() -> None:
    """One-off, documented repair (--split-committed): move the max-autotune cases of the committed
    gpu_workloads.json (measured 2026-11-30) into this dataset, so each dataset holds the cases its
    producer measures. Figures are copied, never changed."""
    import json
    from pathlib import Path
    src = Path(data.path_of("pytorch_compile_stack/gpu_workloads"))
    ds = json.loads(src.read_text(encoding="utf-8"))
    if ds["provenance"]["commit"] != "a762dcdba9fc":
        raise SystemExit("--split-committed applies to the gpu_workloads.json of commit a762dcdba9fc only")
    mine = lambda r: r.get("mode") in MODES  # noqa: E731
    shared = lambda r: r.get("kind") in ("startup", "ceiling") or (r.get("kind") == "timing" and r.get("mode") == "eager")  # noqa: E731
    auto = {**ds, "name": NAME, "rows": [r for r in ds["rows"] if mine(r) or shared(r)],
            "repairs": {**ds.get("repairs", {}), "split": SPLIT_NOTE}}
    rest = {**ds, "rows": [r for r in ds["rows"] if not mine(r)],
            "repairs": {**ds.get("repairs", {}), "split": "max-autotune rows moved to gpu_autotune.json (" + SPLIT_NOTE + ")"}}
    data.write(data.validate(auto, "gpu_autotune"), data.path_of(NAME))
    data.write(data.validate(rest, "gpu_workloads"), src)
    print("split", src, "->", data.path_of(NAME))


def main(argv=None) -> int:
    import sys
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--split-committed"]:
        split_committed()
        return 0
    return measure(NAME, MODES, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
