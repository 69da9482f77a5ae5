#!/usr/bin/env python3
"""The gencode table of the page "CUDA Compilation Pipeline Deep Dive", built from real builds.

For each nvcc target option in cuda_pipeline.COMBOS, compile snippets/cuda_compilation_pipeline/
saxpy.cu to a fatbinary with the pinned nvcc 13.0, list what is inside with
`cuobjdump --list-elf --list-ptx` (and the ELF headers, which name family targets exactly), and
derive where it runs: SASS runs on the same major compute capability at the same or a later
minor one ('a' targets only on their own), PTX is JIT-compiled on any later GPU ('a': only
that one; 'f': its family). The column for the H200 (compute capability 9.0) follows the same
rules; scripts/measure/cuda_compilation_pipeline/h200.py checks it on the real card.

What each build costs, for the page's fleet recipe:
- size: the fatbinary built three ways, with nvcc's default compression (fatbin_bytes), with
  `--no-compress` (nocompress_bytes) and with `--compress-mode=size` (size_mode_bytes), the two
  options `nvcc --help` (13.0) lists for compressing the fatbinary, and each as a fraction of the
  uncompressed size;
- work: how many front-end passes (cicc runs) the build makes, counted in `nvcc --dryrun`;
- time: the wall time of the default build (nvcc alone, no cuobjdump), `--rounds` builds of each
  combination (default 5), one build at a time whatever --jobs says (round r starts with
  combination r), on the machine that runs the script: build_s is the median, build_s_spread the
  (slowest - fastest) / fastest of its rounds. CPU time on a shared machine: not drift-checked.
The untimed builds (contents and sizes) run --jobs at a time.

    python scripts/measure/cuda_compilation_pipeline/gencode.py [--out data/cuda_compilation_pipeline/gencode.json]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 60}

import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sitekit import data, measure  # noqa: E402

from measure.cuda_compilation_pipeline import _pipeline as cp  # noqa: E402

NAME = "cuda_compilation_pipeline/gencode"
H200 = (9, 0)
# the fatbinary compression settings compared, by the column they fill: nvcc's default, and the two
# options `nvcc --help` (13.0) lists: --no-compress, --compress-mode [default,size,speed,balance,none]
COMPRESSION = {"fatbin_bytes": [], "nocompress_bytes": ["--no-compress"], "size_mode_bytes": ["--compress-mode=size"]}


def nvcc_cmd(flags: str, extra: list[str], out: Path) -> list[str]:
    return [cp.toolchain().tool("nvcc"), *flags.split(), *extra, "-fatbin", str(cp.SNIPPETS / "saxpy.cu"), "-o", str(out)]


def compile_one(flags: str, extra: list[str], out: Path) -> float:
    """One nvcc build; its wall time in seconds."""
    t0 = time.perf_counter()
    p = subprocess.run(nvcc_cmd(flags, extra, out), capture_output=True, text=True, cwd=out.parent)
    dt = time.perf_counter() - t0
    if p.returncode != 0 or not out.is_file():
        raise RuntimeError(f"nvcc {flags} {' '.join(extra)} failed:\n{p.stderr}")
    return dt


def frontend_passes(flags: str, tmp: Path) -> int:
    """How many times the default build runs the front end (cicc), from `nvcc --dryrun`."""
    p = subprocess.run([*nvcc_cmd(flags, [], tmp / "dryrun.fatbin"), "--dryrun"], capture_output=True, text=True, cwd=tmp)
    if p.returncode != 0:
        raise RuntimeError(f"nvcc {flags} --dryrun failed:\n{p.stderr}")
    steps = [line[3:].lstrip() for line in (p.stdout + p.stderr).splitlines() if line.startswith("#$ ")]
    cicc = sum(1 for s in steps if s.startswith('"$CICC_PATH/cicc"'))
    if cicc == 0:
        raise RuntimeError(f"nvcc {flags} --dryrun: no cicc step found in\n{p.stdout}{p.stderr}")
    return cicc


def build(name: str, flags: str, tmp: Path) -> dict:
    sizes = {}
    for col, extra in COMPRESSION.items():
        out = tmp / f"{name}.{col}.fatbin"
        compile_one(flags, extra, out)
        sizes[col] = out.stat().st_size
    out = tmp / f"{name}.fatbin_bytes.fatbin"
    sass, ptx, _ = cp.fatbin_contents(out)
    if not sass and not ptx:
        raise RuntimeError(f"nvcc {flags}: cuobjdump found nothing in {out}")
    if not sizes["size_mode_bytes"] <= sizes["fatbin_bytes"] <= sizes["nocompress_bytes"]:
        raise RuntimeError(f"nvcc {flags}: sizes out of order (size mode <= default <= --no-compress): {sizes}")
    cicc = frontend_passes(flags, tmp / f"{name}.dryrun")
    return {
        "combo": name,
        "nvcc_flags": flags or "(no target option)",
        "sass_targets": ", ".join(sass) or "—",
        "ptx_targets": ", ".join(ptx) or "—",
        "sass_runs_on": "; ".join(f"{t}: {cp.sass_runs_on(t)}" for t in sass) or "—",
        "ptx_jit_on": "; ".join(f"{t}: {cp.ptx_jit_on(t)}" for t in ptx) or "—",
        "on_h200": "h200_" + cp.runs_on_cc(sass, ptx, H200),
        "sass_images": len(sass),
        "ptx_images": len(ptx),
        **sizes,
        "default_fraction": round(sizes["fatbin_bytes"] / sizes["nocompress_bytes"], 4),
        "size_mode_fraction": round(sizes["size_mode_bytes"] / sizes["nocompress_bytes"], 4),
        "cicc_runs": cicc,
    }


def time_builds(rounds: int, tmp: Path) -> dict[str, list[float]]:
    """Wall seconds of each combination's default build, `rounds` times, one build at a time."""
    times: dict[str, list[float]] = {name: [] for name, _ in cp.COMBOS}
    n = len(cp.COMBOS)
    for r in range(rounds):
        for i in range(n):
            name, flags = cp.COMBOS[(r + i) % n]
            times[name].append(compile_one(flags, [], tmp / f"{name}.timed.fatbin"))
    return times


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--jobs", type=int, default=2, help="untimed builds in parallel (default 2); timed builds run one at a time")
    ap.add_argument("--rounds", type=int, default=5, help="timed builds of each combination, build_s is their median (default 5)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs {args.jobs}: expected at least 1 (the number of nvcc builds run at once)")
    if args.rounds < 1:
        ap.error(f"--rounds {args.rounds}: expected at least 1 (the number of timed builds of each combination)")
    try:
        tc = cp.toolchain()
    except cp.ToolchainError as e:
        sys.exit(f"cuda_pipeline_gencode: {e}")
    with tempfile.TemporaryDirectory(prefix="gencode_") as t:
        tmp = Path(t)
        for name, _ in cp.COMBOS:
            (tmp / f"{name}.dryrun").mkdir()
        with ThreadPoolExecutor(max_workers=args.jobs) as ex:
            rows = list(ex.map(lambda c: build(c[0], c[1], tmp), cp.COMBOS))
        times = time_builds(args.rounds, tmp)   # after the untimed builds: nothing else runs meanwhile
    for r in rows:
        ts = times[r["combo"]]
        r["build_s"] = round(statistics.median(ts), 3)
        r["build_s_spread"] = round(measure.spread(ts), 3)
    metrics = {
        "sass_images": {"unit": "cubins", "noise": 0, "fmt": "d"},
        "ptx_images": {"unit": "PTX", "noise": 0, "fmt": "d"},
        "fatbin_bytes": {"unit": "bytes", "noise": 0, "fmt": ",d"},
        "nocompress_bytes": {"unit": "bytes", "noise": 0, "fmt": ",d"},
        "size_mode_bytes": {"unit": "bytes", "noise": 0, "fmt": ",d"},
        "default_fraction": {"unit": "of --no-compress", "noise": 0, "fmt": ".0%"},
        "size_mode_fraction": {"unit": "of --no-compress", "noise": 0, "fmt": ".0%"},
        "cicc_runs": {"unit": "runs", "noise": 0, "fmt": "d"},
        "build_s": {"unit": "s", "noise": 0.25, "fmt": ".2f", "check": False},  # CPU wall time: follows the host's load
    }
    timing = {"rounds": args.rounds, "statistic": "median", "builds_at_once": 1, "timed": "nvcc default build, -fatbin"}
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
                  toolchain=f"nvcc {tc.version} ({tc.source.split(' in ')[0]})", timing=timing)
    print("wrote", data.write(ds, args.out))
    for r in rows:
        print(f"{r['nvcc_flags']:<50} SASS {r['sass_targets']:<40} PTX {r['ptx_targets']:<28} H200: {r['on_h200']}")
    print(f"\n{'nvcc target options':<50} {'--no-compress':>13} {'default':>9} {'size mode':>9} {'cicc':>5} {'build s':>8} {'spread':>7}")
    for r in rows:
        print(f"{r['nvcc_flags']:<50} {r['nocompress_bytes']:>13,} {r['fatbin_bytes']:>9,} {r['size_mode_bytes']:>9,} "
              f"{r['cicc_runs']:>5} {r['build_s']:>8.3f} {r['build_s_spread']:>7.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
