#!/usr/bin/env python3
"""MPI latency and bandwidth on one machine: Intel MPI (PyPI wheels) against Open MPI (Debian).

Three programs, each on 2 ranks: IMB-MPI1 PingPong and Allreduce from the impi-rt wheel (Intel MPI
only: IMB is built against it), and snippets/oneapi_installation/bench.c, the same ping-pong and
allreduce loop compiled once with Intel's mpicc and once with Debian's mpicc.openmpi. The three run
in turn, several rounds; each figure keeps its best round, and the relative spread between rounds is
recorded beside it. CPU timings on a shared machine: nothing here is drift-checked, and the
1-minute load average before each round is recorded.

    python scripts/measure/oneapi_installation/mpi_bench.py [--rounds 3] [--max-bytes 1048576] [--out PATH]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "weekly", "budget_s": 120}

import re
import tempfile
from pathlib import Path

from sitekit import data

from measure.oneapi_installation import _common as c

NAME = data.name_of(__file__)


def parse_bench(out: str, mpi: str) -> list[dict]:
    rows = []
    for line in out.splitlines():
        test, nbytes, usec, mbps = line.split(",")
        rows.append({"mpi_test": f"mpi_{test}", "mpi": mpi, "mpi_program": "prog_bench_c", "bytes": int(nbytes),
                     "usec": float(usec), "mbps": float(mbps)})
    return rows


def parse_imb(out: str) -> list[dict]:
    rows, test = [], None
    for line in out.splitlines():
        if line.startswith("# Benchmarking "):
            test = line.split()[2].lower()
            continue
        f = line.split()
        if test and len(f) >= 4 and f[0].isdigit() and f[1].isdigit():
            nbytes = int(f[0])
            if nbytes == 0:
                continue
            usec = float(f[2]) if test == "pingpong" else float(f[4])   # Allreduce: t_avg over ranks
            rows.append({"mpi_test": f"mpi_{test}", "mpi": "impi", "mpi_program": "prog_imb", "bytes": nbytes,
                         "usec": usec, "mbps": round(nbytes / usec, 1)})
    return rows


def versions(work: Path) -> dict:
    """The two MPIs' versions as their launchers report them (first line of --version)."""
    impi = c.run(["mpiexec", "--version"], work).splitlines()[0]          # "... Version 2021.18.1 Build ..."
    ompi = c.run(["mpirun.openmpi", "--version"], work, environ=c.env_system()).splitlines()[0]  # "... 4.1.4"
    m = re.search(r"Version (\S+)", impi)
    if not m or not ompi.split():
        raise SystemExit(f"{NAME}: could not read the MPI versions from {impi!r} and {ompi!r}")
    return {"Intel MPI": m.group(1), "Open MPI": ompi.split()[-1]}


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of all three programs (default 3)")
    ap.add_argument("--max-bytes", type=int, default=1 << 20, help="largest message (default 1 MiB)")
    ap.add_argument("--allow-busy", action="store_true",
                    help="measure even when the 1-minute load is above %.2f per core (it is recorded either way)" % c.BUSY)
    args = ap.parse_args(argv)
    if args.rounds < 1:
        ap.error(f"--rounds must be at least 1, got {args.rounds}")
    if args.max_bytes < 1024 or args.max_bytes & (args.max_bytes - 1):
        ap.error(f"--max-bytes must be a power of two >= 1024, got {args.max_bytes}")
    rounds, max_bytes, iters = (1, 1024, 20) if args.quick else (args.rounds, args.max_bytes, 200)
    mpicc = c.need("mpicc", "pip install -r requirements-oneapi.txt")
    ompicc = c.need("mpicc.openmpi", "apt-get install openmpi-bin libopenmpi-dev")
    with tempfile.TemporaryDirectory(prefix="oneapi_bench_") as t:
        work = Path(t)
        impi_bin = c.build([mpicc], "bench.c", "bench_impi", work)
        ompi_bin = c.build([ompicc], "bench.c", "bench_ompi", work, environ=c.env_system())
        libs = versions(work)
        msglog = f"0:{max_bytes.bit_length() - 1}"
        runs: dict[tuple, list[dict]] = {}
        loads = []
        for _ in range(rounds):
            loads.append(c.loadavg() if args.quick else c.wait_until_quiet(NAME, args.allow_busy))
            got = parse_bench(c.run(["mpiexec", "-n", "2", str(impi_bin), str(max_bytes), str(iters)], work), "impi")
            got += parse_bench(c.run(["mpirun.openmpi", "-n", "2", str(ompi_bin), str(max_bytes), str(iters)], work,
                                     environ=c.env_system()), "openmpi")
            got += parse_imb(c.run(["mpiexec", "-n", "2", "IMB-MPI1", "-msglog", msglog, "-iter", str(iters),
                                    "-iter_policy", "off", "PingPong", "Allreduce"], work))
            for r in got:
                runs.setdefault((r["mpi_test"], r["mpi"], r["mpi_program"], r["bytes"]), []).append(r)
    rows = []
    for (test, mpi, program, nbytes), rs in sorted(runs.items()):
        ts = [r["usec"] for r in rs]
        best = min(ts)
        rows.append({"mpi_test": test, "mpi": mpi, "mpi_program": program,
                     "mpi_series": f"{mpi}_{program.removeprefix('prog_')}", "bytes": nbytes, "usec": best,
                     "mbps": round(nbytes / best, 1), "usec_spread": round((max(ts) - best) / best, 3)})
    metrics = {
        "usec": {"unit": "µs", "noise": 0.5, "better": "lower", "fmt": ".2f", "check": False},
        "mbps": {"unit": "MB/s", "noise": 0.5, "better": "higher", "fmt": ".0f", "check": False},
    }
    ds = data.new(NAME, metrics, rows, params={"bytes": {"fmt": "pow2"}}, ranks=2, rounds=rounds,
                  loadavg_1min=loads, libraries=libs)
    ds["sources"].update(c.source_hashes("bench.c"))
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
