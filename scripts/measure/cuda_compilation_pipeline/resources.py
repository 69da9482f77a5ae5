#!/usr/bin/env python3
"""The register table of the page "CUDA Compilation Pipeline Deep Dive", read off ptxas and cuobjdump.

Runs the page's `registers` block (snippets/cuda_compilation_pipeline/registers.sh): registers.cu
compiled for sm_90 with no register limit, with __launch_bounds__(256, 6) and (256, 8), and with
-maxrregcount=24, each through `nvcc -Xptxas -v` and `cuobjdump -res-usage`. Parses registers,
stack frame, spill stores and loads, and the count of local-memory instructions (LDL/STL) in the
SASS, and checks that the two tools agree.

    python scripts/measure/cuda_compilation_pipeline/resources.py [--out data/cuda_compilation_pipeline/resources.json]
        [--from FILE]   # parse that output of the block instead of running it
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 15}

import re
import sys
import tempfile
from pathlib import Path

from sitekit import data  # noqa: E402

from measure.cuda_compilation_pipeline import _pipeline as cp  # noqa: E402

NAME = "cuda_compilation_pipeline/resources"
THREADS = 256                   # registers.cu's block size
REGS_PER_SM = 65536             # Hopper's register file per multiprocessor
MAX_THREADS_PER_SM = 2048


def parse(text: str) -> list[dict]:
    rows = []
    for chunk in re.split(r"(?m)^== ", text)[1:]:
        flags = re.match(r"nvcc -arch=sm_90 -Xptxas -v\s*(.*?)\s*-c registers\.cu", chunk).group(1)
        props = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", chunk)
        used = re.search(r"Used (\d+) registers", chunk)
        res = re.search(r"REG:(\d+) STACK:(\d+)", chunk)
        local = re.search(r"local-memory instructions in SASS: (\d+)", chunk)
        if not (props and used and res and local):
            raise ValueError(f"cannot parse the block's output for {flags!r}:\n{chunk}")
        regs, stack = int(used.group(1)), int(props.group(1))
        if (int(res.group(1)), int(res.group(2))) != (regs, stack):
            raise ValueError(f"{flags!r}: ptxas says {regs} registers / {stack} B stack, cuobjdump {res.groups()}")
        # blocks of 256 threads that fit one multiprocessor by registers alone (allocated per warp, 256 at a time)
        per_warp = -(-regs * 32 // 256) * 256
        blocks = min(REGS_PER_SM // (per_warp * THREADS // 32), MAX_THREADS_PER_SM // THREADS)
        rows.append({"reg_budget": {"": "default", "-DMIN_BLOCKS=6": "min_blocks_6", "-DMIN_BLOCKS=8": "min_blocks_8",
                                 "-maxrregcount=24": "maxrregcount_24"}.get(flags, flags),
                     "nvcc_flags": f"-arch=sm_90 {flags}".strip(),
                     "registers_used": regs, "stack_bytes": stack, "spill_store_bytes": int(props.group(2)),
                     "spill_load_bytes": int(props.group(3)), "local_instructions": int(local.group(1)),
                     "blocks_per_sm_by_registers": blocks})
    if not rows:
        raise ValueError("the block printed no variant")
    return rows


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--from", dest="src", type=Path, help="parse this saved output of the registers block")
    args = ap.parse_args(argv)
    try:
        tc = cp.toolchain()
        if args.src:
            text = args.src.read_text(encoding="utf-8")
        else:
            with tempfile.TemporaryDirectory(prefix="resources_") as t:
                text = cp.run_section("registers.sh", "registers", Path(t))
        rows = parse(text)
    except (cp.ToolchainError, ValueError, OSError) as e:
        sys.exit(f"cuda_pipeline_resources: {e}")
    metrics = {k: {"unit": u, "noise": 0, "fmt": "d"} for k, u in [
        ("registers_used", "registers"), ("stack_bytes", "B"), ("spill_store_bytes", "B"), ("spill_load_bytes", "B"),
        ("local_instructions", "instructions"), ("blocks_per_sm_by_registers", "blocks")]}
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
                  toolchain=f"nvcc {tc.version} ({tc.source.split(' in ')[0]})")
    print("wrote", data.write(ds, args.out))
    for r in rows:
        print(r)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
