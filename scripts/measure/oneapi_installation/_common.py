"""What the oneAPI producers share: the environment the page's env.sh sets, builds, and source hashes.

The producers run the same C files the page compiles (snippets/oneapi_installation/*.c) with the same
variables as snippets/oneapi_installation/env.sh, so a figure and a block on the page agree.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from sitekit import ROOT, SNIPPETS

HERE = SNIPPETS / "oneapi_installation"
PREFIX = Path(sys.prefix)


class Missing(SystemExit):
    """A tool the measurement needs is not installed; the message says what to install."""


def env() -> dict:
    """os.environ plus what env.sh exports, for the Intel MPI / MKL / SYCL wheels in this Python."""
    if not (PREFIX / "bin" / "mpiexec.hydra").is_file():
        raise Missing(f"no Intel MPI under {PREFIX}: pip install -r requirements-oneapi.txt")
    e = dict(os.environ)
    e["I_MPI_ROOT"] = str(PREFIX)
    e["PATH"] = f"{PREFIX / 'bin'}:{e.get('PATH', '')}"
    e["LD_LIBRARY_PATH"] = ":".join(p for p in (str(PREFIX / "lib"), e.get("LD_LIBRARY_PATH")) if p)
    e["PKG_CONFIG_PATH"] = ":".join(p for p in (str(PREFIX / "lib" / "pkgconfig"), e.get("PKG_CONFIG_PATH")) if p)
    e["OCL_ICD_FILENAMES"] = str(PREFIX / "lib" / "libintelocl.so")
    if os.getuid() == 0:   # Open MPI refuses to start as root unless told (containers often are root)
        e["OMPI_ALLOW_RUN_AS_ROOT"] = e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return e


def need(tool: str, hint: str) -> str:
    path = shutil.which(tool, path=env()["PATH"])
    if not path:
        raise Missing(f"{tool} not found: {hint}")
    return path


def run(cmd: list[str], cwd: Path, timeout: int = 300) -> str:
    p = subprocess.run(cmd, cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def build(compiler: list[str], source: str, out: str, cwd: Path, extra: list[str] = ()) -> Path:
    shutil.copy(HERE / source, cwd / source)
    run([*compiler, "-O2", source, "-o", out, *extra], cwd)
    return cwd / out


def source_hashes(*names: str) -> dict[str, str]:
    """{repository path: sha256} of snippet files that are not Python modules (C sources)."""
    return {str((HERE / n).relative_to(ROOT)): hashlib.sha256((HERE / n).read_bytes()).hexdigest() for n in names}


def loadavg() -> float:
    """The 1-minute load average: on a shared 2-core machine, the first thing to read beside a timing."""
    return round(os.getloadavg()[0], 2)
