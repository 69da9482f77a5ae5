#!/usr/bin/env python3
"""Entry point for scripts/registry.py: the CPU artifacts of the page pytorch-compile-stack.

    python scripts/pytorch_compile_stack_artifacts_cpu.py [--out PATH]

Same as `python scripts/pytorch_compile_stack_artifacts.py --device cpu` (see that file).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pytorch_compile_stack_artifacts import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(["--device", "cpu", *sys.argv[1:]]))
