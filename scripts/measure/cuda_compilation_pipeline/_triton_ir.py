#!/usr/bin/env python3
"""Triton's half of the page "CUDA Compilation Pipeline Deep Dive": the IR of every stage.

Compiles snippets/cuda_compilation_pipeline/triton_saxpy.py for compute capability 9.0 (no GPU
needed) and writes data/cuda_compilation_pipeline/ir/triton_{ttir,ttgir,llir,ptx,sass,summary}.txt.
Source locations and debug sections are removed from the IR (they name the folder the file sits
in); the summary is the snippet's own output, run as a script.

    python scripts/measure/cuda_compilation_pipeline/_triton_ir.py [--out-dir data/cuda_compilation_pipeline/ir]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from sitekit import ROOT  # noqa: E402

SNIPPET = ROOT / "snippets" / "cuda_compilation_pipeline" / "triton_saxpy.py"
IR = ROOT / "data" / "cuda_compilation_pipeline" / "ir"


def strip_mlir(text: str) -> str:
    text = re.sub(r"(?m)^#loc.*\n", "", text)
    text = re.sub(r"(?m)^\s*#loc\d* = .*\n", "", text)
    loc = r" loc\((?:[^()\"]|\"[^\"]*\"|\((?:[^()\"]|\"[^\"]*\"|\([^()]*\))*\))*\)"
    return re.sub(loc, "", text)


def strip_llir(text: str) -> str:
    text = re.sub(r", !dbg !\d+", "", text)
    text = re.sub(r" !dbg !\d+", "", text)
    return re.sub(r"(?m)^!.*\n", "", text).rstrip() + "\n"


def strip_ptx(text: str) -> str:
    text = re.sub(r"(?ms)^\t\.section\t\.debug_\w+.*?^\t\}\n", "", text)
    text = re.sub(r"(?m)^\t\.section\t\.debug_\w+\t\{\t\}\n", "", text)
    text = re.sub(r"(?m)^\s*\.(loc|file)\b.*\n", "", text)
    text = re.sub(r"(?m)^\$L__(tmp|func_begin|func_end)\d+:\n", "", text)
    return re.sub(r"\n{3,}", "\n\n", text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=IR)
    args = ap.parse_args(argv)
    os.environ["TRITON_INTERPRET"] = "0"
    cache = tempfile.TemporaryDirectory(prefix="triton_cache_")   # compile for real, never from a cache
    os.environ["TRITON_CACHE_DIR"] = cache.name
    spec = importlib.util.spec_from_file_location("triton_saxpy", SNIPPET)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    k = mod.compile_saxpy(capability=90, aligned=True)
    out = {
        "triton_ttir": strip_mlir(k.asm["ttir"]),
        "triton_ttgir": strip_mlir(k.asm["ttgir"]),
        "triton_llir": strip_llir(k.asm["llir"]),
        "triton_ptx": strip_ptx(k.asm["ptx"]),
        "triton_sass": mod.sass(k.asm["cubin"]),
    }
    p = subprocess.run([sys.executable, str(SNIPPET)], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "TRITON_INTERPRET": "1"})
    if p.returncode != 0:
        sys.exit(f"cuda_pipeline_triton: {SNIPPET.name} failed:\n{p.stderr}")
    out["triton_summary"] = p.stdout
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for name, text in out.items():
        f = args.out_dir / f"{name}.txt"
        f.write_text(text.replace(str(ROOT), "<repo>"), encoding="utf-8")
        print("wrote", f)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
