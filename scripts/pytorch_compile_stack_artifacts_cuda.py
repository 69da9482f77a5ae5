#!/usr/bin/env python3
"""Entry point for scripts/registry.py: the CUDA artifacts of the page pytorch-compile-stack.

    python scripts/pytorch_compile_stack_artifacts_cuda.py [--out PATH]

Same as `python scripts/pytorch_compile_stack_artifacts.py --device cuda` (see that file).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pytorch_compile_stack_artifacts import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["--device", "cuda", *sys.argv[1:]]))
