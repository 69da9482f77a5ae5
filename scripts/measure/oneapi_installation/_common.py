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
import time
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


def env_system() -> dict:
    """os.environ without the wheels' library folder: what Debian's Open MPI runs with. With env()'s
    LD_LIBRARY_PATH it would load the wheels' libhwloc and Intel's libfabric instead of its own."""
    e = dict(os.environ)
    lib = str(PREFIX / "lib")
    e["LD_LIBRARY_PATH"] = ":".join(p for p in e.get("LD_LIBRARY_PATH", "").split(":") if p and p != lib)
    if not e["LD_LIBRARY_PATH"]:
        del e["LD_LIBRARY_PATH"]
    if os.getuid() == 0:
        e["OMPI_ALLOW_RUN_AS_ROOT"] = e["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    return e


def need(tool: str, hint: str) -> str:
    path = shutil.which(tool, path=env()["PATH"])
    if not path:
        raise Missing(f"{tool} not found: {hint}")
    return path


def run(cmd: list[str], cwd: Path, timeout: int = 300, environ: dict | None = None) -> str:
    p = subprocess.run(cmd, cwd=cwd, env=environ or env(), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with exit code {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return p.stdout


def build(compiler: list[str], source: str, out: str, cwd: Path, extra: list[str] = (), environ: dict | None = None) -> Path:
    shutil.copy(HERE / source, cwd / source)
    run([*compiler, "-O2", source, "-o", out, *extra], cwd, environ=environ)
    return cwd / out


def source_hashes(*names: str) -> dict[str, str]:
    """{repository path: sha256} of snippet files that are not Python modules (C sources)."""
    return {str((HERE / n).relative_to(ROOT)): hashlib.sha256((HERE / n).read_bytes()).hexdigest() for n in names}


def loadavg() -> float:
    """The 1-minute load average: on a shared 2-core machine, the first thing to read beside a timing."""
    return round(os.getloadavg()[0], 2)


BUSY = 0.75  # a 1-minute load above this many runnable tasks per core: the timings would measure the other jobs


def wait_until_quiet(script: str, allow_busy: bool = False, wait_s: float = 180.0) -> float:
    """The load average once it is below BUSY per core, waiting up to wait_s; else exit without writing data
    (a run on a machine with a load of 13 on 2 cores once showed two BLAS threads slower than one and Open
    MPI 400x slower than at rest). allow_busy measures anyway; the recorded load says what it was."""
    cores = os.cpu_count() or 1
    deadline = time.monotonic() + wait_s
    while (load := loadavg()) > BUSY * cores and not allow_busy:
        if time.monotonic() > deadline:
            raise SystemExit(f"{script}: the machine is busy (1-minute load {load} on {cores} cores, over {BUSY} "
                             f"per core after {wait_s:.0f} s of waiting); the timings would measure the other jobs, "
                             f"so nothing was written. Rerun when it is idle, or pass --allow-busy")
        time.sleep(5)
    return load
