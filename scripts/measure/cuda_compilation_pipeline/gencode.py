#!/usr/bin/env python3
"""The gencode table of the page "CUDA Compilation Pipeline Deep Dive", built from real builds.

For each nvcc target option in cuda_pipeline.COMBOS, compile snippets/cuda_compilation_pipeline/
saxpy.cu to a fatbinary with the pinned nvcc 13.0, list what is inside with
`cuobjdump --list-elf --list-ptx` (and the ELF headers, which name family targets exactly), and
derive where it runs: SASS runs on the same major compute capability at the same or a later
minor one ('a' targets only on their own), PTX is JIT-compiled on any later GPU ('a': only
that one; 'f': its family). The column for the H200 (compute capability 9.0) follows the same
rules; scripts/measure/cuda_compilation_pipeline/h200.py checks it on the real card.

    python scripts/measure/cuda_compilation_pipeline/gencode.py [--out data/cuda_compilation_pipeline/gencode.json]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 30}

import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sitekit import data  # noqa: E402

from measure.cuda_compilation_pipeline import _pipeline as cp  # noqa: E402

NAME = "cuda_compilation_pipeline/gencode"
H200 = (9, 0)


def build(name: str, flags: str, tmp: Path) -> dict:
    out = tmp / f"{name}.fatbin"
    cmd = [cp.toolchain().tool("nvcc"), *flags.split(), "-fatbin", str(cp.SNIPPETS / "saxpy.cu"), "-o", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
    if p.returncode != 0:
        raise RuntimeError(f"nvcc {flags} failed:\n{p.stderr}")
    sass, ptx, _ = cp.fatbin_contents(out)
    if not sass and not ptx:
        raise RuntimeError(f"nvcc {flags}: cuobjdump found nothing in {out}")
    return {
        "combo": name,
        "nvcc_flags": flags or "(no target option)",
        "sass_targets": ", ".join(sass) or "—",
        "ptx_targets": ", ".join(ptx) or "—",
        "sass_runs_on": "; ".join(f"{t}: {cp.sass_runs_on(t)}" for t in sass) or "—",
        "ptx_jit_on": "; ".join(f"{t}: {cp.ptx_jit_on(t)}" for t in ptx) or "—",
        "on_h200": "h200_" + cp.runs_on_cc(sass, ptx, H200),
        "sass_images": len(sass),
        "ptx_images": len(ptx),
        "fatbin_bytes": out.stat().st_size,
    }


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--jobs", type=int, default=2, help="builds in parallel (default 2)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs {args.jobs}: expected at least 1 (the number of nvcc builds run at once)")
    try:
        tc = cp.toolchain()
    except cp.ToolchainError as e:
        sys.exit(f"cuda_pipeline_gencode: {e}")
    with tempfile.TemporaryDirectory(prefix="gencode_") as t:
        with ThreadPoolExecutor(max_workers=args.jobs) as ex:
            rows = list(ex.map(lambda c: build(c[0], c[1], Path(t)), cp.COMBOS))
    metrics = {
        "sass_images": {"unit": "cubins", "noise": 0, "fmt": "d"},
        "ptx_images": {"unit": "PTX", "noise": 0, "fmt": "d"},
        "fatbin_bytes": {"unit": "bytes", "noise": 0, "fmt": ",d"},
    }
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
                  toolchain=f"nvcc {tc.version} ({tc.source.split(' in ')[0]})")
    print("wrote", data.write(ds, args.out))
    for r in rows:
        print(f"{r['nvcc_flags']:<50} SASS {r['sass_targets']:<40} PTX {r['ptx_targets']:<28} H200: {r['on_h200']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
