#!/usr/bin/env python3
"""Entry point for scripts/registry.py: the CPU artifacts as torch 2.11 writes them.

    python scripts/pytorch_compile_stack_artifacts_torch211.py [--out PATH]

The page compares torch 2.11 (the GPU machine's) with torch 2.13 (CI's) on the same
captures; this snapshot is taken on the GPU machine's CPU. It refuses to run under any
other torch, so that a newer torch can never be filed under 2.11's name.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

if __name__ == "__main__":
    import torch
    if not torch.__version__.startswith("2.11."):
        sys.exit(f"pytorch_compile_stack_artifacts_torch211: needs torch 2.11, this is {torch.__version__}")
    from pytorch_compile_stack_artifacts import ROOT, main
    raise SystemExit(main(["--device", "cpu", "--keep-going", "--name", "pytorch_compile_stack/cpu_artifacts_torch211",
                           "--ir-dir", str(ROOT / "data" / "pytorch_compile_stack" / "ir" / "cpu_torch211"),
                           *sys.argv[1:]]))
