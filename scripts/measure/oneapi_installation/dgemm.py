#!/usr/bin/env python3
"""Double-precision GEMM on this machine's CPU: oneMKL (PyPI wheels) against NumPy's OpenBLAS, same run.

oneMKL: snippets/oneapi_installation/dgemm.c (cblas_dgemm, result spot-checked), linked with the
pkg-config line of the mkl-devel wheel, sequential (mkl-dynamic-lp64-seq) and threaded on Intel's
OpenMP (mkl-dynamic-lp64-iomp, MKL_NUM_THREADS=2). NumPy: `a @ b` on float64, with its bundled
OpenBLAS limited by OPENBLAS_NUM_THREADS (set before NumPy is imported, in a child process).
GFLOP/s = 2·n³ / best time. The implementations run in turn, several rounds; each figure keeps its
best round and records the spread between rounds. CPU timings on a shared machine: not drift-checked.

    python scripts/measure/oneapi_installation/dgemm.py [--rounds 3] [--sizes 512 1024 2048] [--out PATH]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "weekly", "budget_s": 90}

import subprocess
import sys
import tempfile
from pathlib import Path

from sitekit import data

from measure.oneapi_installation import _common as c

NAME = data.name_of(__file__)

NUMPY = r"""
import sys, time, numpy as np
n, reps = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(1)
a, b = rng.random((n, n)) - 0.5, rng.random((n, n)) - 0.5
c = a @ b
assert abs(c[3, 5] - a[3] @ b[:, 5]) < 1e-9 * n
best = 1e30
for _ in range(reps):
    t0 = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t0)
print(f"{n},{best:.6f},{2 * n**3 / best / 1e9:.2f}")
"""


def numpy_blas() -> tuple[str, str]:
    """The BLAS NumPy was built with, (name, version), e.g. ("scipy-openblas", "0.3.30")."""
    import numpy as np
    cfg = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return cfg["name"], str(cfg.get("version", ""))


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every implementation (default 3)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[512, 1024, 2048], help="matrix sizes n (n×n·n×n)")
    ap.add_argument("--allow-busy", action="store_true",
                    help="measure even when the 1-minute load is above %.2f per core (it is recorded either way)" % c.BUSY)
    args = ap.parse_args(argv)
    if args.rounds < 1 or any(n < 16 for n in args.sizes):
        ap.error("--rounds must be >= 1 and every size >= 16")
    rounds, sizes, reps = (1, [128], 2) if args.quick else (args.rounds, args.sizes, 5)
    c.need("pkg-config", "apt-get install pkg-config")
    env = c.env()
    with tempfile.TemporaryDirectory(prefix="oneapi_dgemm_") as t:
        work = Path(t)
        mkl_version = c.run(["pkg-config", "--modversion", "mkl-dynamic-lp64-seq"], work).strip()
        flags = {}
        for kind in ("seq", "iomp"):
            pc = c.run(["pkg-config", "--cflags", "--libs", f"mkl-dynamic-lp64-{kind}"], work).split()
            flags[kind] = c.build(["gcc"], "dgemm.c", f"dgemm_{kind}", work, pc)
        impls = {("blas_mkl", 1): ([str(flags["seq"])], {}),
                 ("blas_mkl", 2): ([str(flags["iomp"])], {"MKL_NUM_THREADS": "2"}),
                 ("blas_openblas", 1): ([sys.executable, "-c", NUMPY], {"OPENBLAS_NUM_THREADS": "1"}),
                 ("blas_openblas", 2): ([sys.executable, "-c", NUMPY], {"OPENBLAS_NUM_THREADS": "2"})}
        seen: dict[tuple, list[float]] = {}
        loads = []
        for _ in range(rounds):
            loads.append(c.loadavg() if args.quick else c.wait_until_quiet(NAME, args.allow_busy))
            for n in sizes:
                for key, (cmd, extra) in impls.items():
                    p = subprocess.run([*cmd, str(n), str(reps)], cwd=work, env={**env, **extra},
                                       capture_output=True, text=True, timeout=600)
                    if p.returncode != 0:
                        raise SystemExit(f"{key} n={n} failed:\n{p.stderr[-2000:]}")
                    seen.setdefault((*key, n), []).append(float(p.stdout.strip().split(",")[2]))
    rows = []
    for (blas, threads, n), g in sorted(seen.items()):
        best = max(g)
        rows.append({"blas": blas, "threads": threads, "matrix_n": n, "gflops": best,
                     "gflops_spread": round((best - min(g)) / best, 3)})
    metrics = {"gflops": {"unit": "GFLOP/s", "noise": 0.3, "better": "higher", "fmt": ".1f", "check": False}}
    import numpy as np

    ds = data.new(NAME, metrics, rows, rounds=rounds, loadavg_1min=loads,
                  libraries={"oneMKL": mkl_version, "NumPy": np.__version__, **dict([numpy_blas()])})
    ds["sources"].update(c.source_hashes("dgemm.c"))
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
