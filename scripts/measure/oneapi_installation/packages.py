#!/usr/bin/env python3
"""What the PyPI route installs: every distribution requirements-oneapi.txt brings, its version and
its size on disk (the byte counts in its RECORD file), grouped by what it is for; and the Debian
packages of the Open MPI comparison (dpkg's Installed-Size). Exact, not timed: a test regenerates it.

    python scripts/measure/oneapi_installation/packages.py [--out PATH]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 5}

import csv
import re
import subprocess
from importlib import metadata

from sitekit import ROOT, data

NAME = data.name_of(__file__)
REQUIREMENTS = ROOT / "requirements-oneapi.txt"
OPENMPI_DEBS = ["openmpi-bin", "openmpi-common", "libopenmpi3", "libopenmpi-dev"]

# what each distribution is for (the page's table groups by this)
GROUP = {
    "impi-rt": "grp_mpi", "impi-devel": "grp_mpi", "mpi4py": "grp_mpi",
    "mkl": "grp_mkl", "mkl-devel": "grp_mkl", "mkl-include": "grp_mkl", "intel-openmp": "grp_mkl",
    "tbb": "grp_mkl", "tbb-devel": "grp_mkl", "tcmlib": "grp_mkl", "umf": "grp_sycl",
    "intel-opencl-rt": "grp_sycl", "intel-sycl-rt": "grp_sycl", "intel-cmplr-lib-rt": "grp_sycl",
    "intel-cmplr-lib-ur": "grp_sycl", "intel-cmplr-lic-rt": "grp_sycl", "dpcpp-cpp-rt": "grp_sycl",
    "dpctl": "grp_sycl", "dpnp": "grp_sycl", "onemkl-sycl-blas": "grp_sycl", "onemkl-sycl-dft": "grp_sycl",
    "onemkl-sycl-lapack": "grp_sycl", "onemkl-sycl-rng": "grp_sycl", "onemkl-sycl-vm": "grp_sycl",
}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def wanted() -> list[str]:
    """The pinned names of requirements-oneapi.txt and, recursively, what they require (numpy excluded:
    the site's other requirements pin it too)."""
    todo = [_norm(line.split("==")[0]) for line in REQUIREMENTS.read_text().splitlines()
            if line.strip() and not line.startswith("#")]
    seen: list[str] = []
    while todo:
        n = todo.pop()
        if n in seen or n == "numpy":
            continue
        try:
            dist = metadata.distribution(n)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"{n} is not installed: pip install -r requirements-oneapi.txt") from None
        seen.append(n)
        for req in dist.requires or []:
            if "extra ==" not in req:
                todo.append(_norm(re.split(r"[ <>=!~;\[(]", req, maxsplit=1)[0]))
    return sorted(seen)


def size_mb(dist: metadata.Distribution) -> float:
    rec = dist.read_text("RECORD") or ""
    return round(sum(int(r[2]) for r in csv.reader(rec.splitlines()) if len(r) > 2 and r[2]) / 1e6, 1)


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    rows = []
    for n in wanted():
        if n not in GROUP:
            raise SystemExit(f"{n} (pulled in by requirements-oneapi.txt) has no group in {__file__}: add it")
        d = metadata.distribution(n)
        rows.append({"route": "route_pip", "package": n, "version": d.version, "group": GROUP[n], "mb": size_mb(d)})
    q = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Version} ${Installed-Size}\n", *OPENMPI_DEBS],
                       capture_output=True, text=True)
    if q.returncode != 0:
        raise SystemExit(f"Open MPI is not installed from Debian: apt-get install openmpi-bin libopenmpi-dev\n{q.stderr}")
    for line in q.stdout.splitlines():
        pkg, ver, kib = line.split()
        rows.append({"route": "route_apt_openmpi", "package": pkg, "version": ver, "group": "grp_mpi",
                     "mb": round(int(kib) * 1024 / 1e6, 1)})
    for route, group in [("route_pip", g) for g in ("grp_mpi", "grp_mkl", "grp_sycl", "grp_all")] + \
            [("route_apt_openmpi", "grp_mpi")]:
        rows.append({"route": route, "package": "total", "version": "", "group": group,
                     "mb": round(sum(r["mb"] for r in rows if r["route"] == route and r["package"] != "total"
                                     and group in (r["group"], "grp_all")), 1)})
    metrics = {"mb": {"unit": "MB", "noise": 0.0, "fmt": ".1f"}}
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
