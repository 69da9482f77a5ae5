#!/usr/bin/env python3
"""Compile the page's add_kernel for sm_90 on the CPU: the PTX excerpt and the table of what it contains.

No GPU needed: triton.compile builds TTIR, TTGIR, LLVM IR, PTX and a cubin for a named target.
The kernel is compiled with the wrapper's default BLOCK_SIZE and num_warps, twice per dtype:
once with the hint "n_elements is a multiple of 16" (what the JIT compiles for n = 2**28) and
once without (n = 2**28 - 1).

    python scripts/measure/triton_getting_started/ptx.py [--out PATH] [--ptx-out PATH]

tests/test_triton_getting_started_ptx.py runs it again and fails if either file changed.
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 10}

import argparse
import inspect
import sys
from pathlib import Path

from sitekit import (
    ROOT,  # noqa: E402
    measure,  # noqa: E402
)

measure.snippet_path("triton_getting_started")
from sitekit import data  # noqa: E402

NAME = "triton_getting_started/ptx"
PTX_OUT = ROOT / "data" / "triton_getting_started" / "ir" / "add_kernel.sm_90a.ptx"


def defaults() -> tuple[int, int]:
    import vector_add
    sig = inspect.signature(vector_add.add).parameters
    return sig["block_size"].default, sig["num_warps"].default


def build() -> tuple[list[dict], str]:
    import inspect_kernel as ik
    block_size, num_warps = defaults()
    rows, excerpt = [], None
    for dtype in ("fp32", "fp16"):
        for multiple in (True, False):
            k = ik.compile_add(multiple, block_size, num_warps, dtype)
            s = ik.summary(k)
            rows.append({"dtype": dtype, "n_elements": "multiple_of_16" if multiple else "any",
                         "target": s["target"], "block_size": block_size, "num_warps": num_warps,
                         **{m: s[m] for m in ("size_per_thread", "ld_vector", "ld_scalar", "st_vector", "st_scalar")}})
            if dtype == "fp32" and multiple:
                excerpt = ik.ptx_excerpt(k.asm["ptx"])
    return rows, excerpt


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None, help=f"dataset path (default data/{NAME}.json)")
    ap.add_argument("--ptx-out", type=Path, default=PTX_OUT, help=f"PTX excerpt path (default {PTX_OUT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    rows, excerpt = build()
    instr = {"unit": "instructions in the PTX", "noise": 0, "fmt": "d"}
    metrics = {"size_per_thread": {"unit": "elements per thread (TTGIR layout)", "noise": 0, "fmt": "d"},
               "ld_vector": instr, "ld_scalar": instr, "st_vector": instr, "st_scalar": instr}
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])])
    out = data.write(ds, args.out)
    args.ptx_out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.ptx_out.with_suffix(".tmp")
    tmp.write_text(excerpt, encoding="utf-8")
    tmp.replace(args.ptx_out)
    print("wrote", out, "and", args.ptx_out)
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
