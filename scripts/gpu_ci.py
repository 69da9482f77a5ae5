#!/usr/bin/env python3
"""GPU CI: run every GPU-marked code block and re-measure every GPU dataset.

    python scripts/gpu_ci.py                 # blocks + all datasets; replace data/ on success
    python scripts/gpu_ci.py --check         # also list figures that drifted beyond noise; exit 1 if any
    python scripts/gpu_ci.py --only foundation/ceilings --no-blocks
    python scripts/gpu_ci.py --tier nightly  # leave out the datasets marked weekly in the registry

Each dataset is measured into a temporary file by its script (scripts/registry.py),
validated, compared against the committed file, and only then moved over it, so
a failed, aborted or invalid run never replaces good data. With --check, data/ is
left as it was and drift is only reported (pass --write to write anyway).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from registry import DATASETS, by_name  # noqa: E402
from sitekit import ROOT, data  # noqa: E402


def run_blocks(junit: Path | None) -> int:
    cmd = [sys.executable, "-m", "pytest", "-q", "tests/test_codeblocks.py", "-m", "gpu_block", "-p", "no:cacheprovider"]
    if junit:
        cmd += [f"--junitxml={junit}"]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def measure(ds, tmpdir: Path, log) -> tuple[dict | None, str]:
    out = tmpdir / (ds.name.replace("/", "__") + ".json")
    cmd = [sys.executable, ds.script, "--out", str(out)]
    print("+", " ".join(cmd), flush=True)
    t0 = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    log.write(f"### {ds.name} ({time.time() - t0:.0f} s, rc={proc.returncode})\n{proc.stdout}\n{proc.stderr}\n")
    if proc.returncode != 0:
        return None, f"script failed (rc={proc.returncode}): {proc.stderr.strip().splitlines()[-1:] }"
    try:
        obj = data.validate(json.loads(out.read_text()), str(out))
    except (OSError, ValueError) as e:
        return None, f"invalid output: {e}"
    return obj, f"ok in {time.time() - t0:.0f} s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="report drift against committed data; exit 1 on drift")
    ap.add_argument("--write", action="store_true", help="with --check, still replace data/ with the new results")
    ap.add_argument("--only", action="append", default=[], metavar="NAME", help="re-measure only this dataset (repeatable)")
    ap.add_argument("--no-blocks", action="store_true", help="skip running the GPU-marked code blocks")
    ap.add_argument("--tier", choices=["nightly", "all"], default="all",
                    help="nightly: only datasets whose registry tier is nightly (under 10 minutes); all: every GPU dataset")
    ap.add_argument("--log", type=Path, default=ROOT / "test-artifacts" / "gpu_ci.log", help="full output of every script")
    args = ap.parse_args(argv)

    try:
        import torch
        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except (ImportError, RuntimeError) as e:
        print(f"gpu_ci: needs a CUDA GPU and torch with CUDA ({e})", file=sys.stderr)
        return 2

    chosen = [by_name(n) for n in args.only] if args.only else \
        [d for d in DATASETS if d.needs == "gpu" and (args.tier == "all" or d.tier == "nightly")]
    status = 0
    if not args.no_blocks:
        rc = run_blocks(ROOT / "test-artifacts" / "gpu_blocks.xml")
        if rc not in (0, 5):
            print(f"gpu_ci: GPU code blocks failed (pytest rc={rc})")
            status = 1
    args.log.parent.mkdir(parents=True, exist_ok=True)
    drift, failed = [], []
    with tempfile.TemporaryDirectory() as t, open(args.log, "w") as log:
        for ds in chosen:
            new, msg = measure(ds, Path(t), log)
            print(f"  {ds.name}: {msg}", flush=True)
            if new is None:
                failed.append(ds.name)
                continue
            committed = data.path_of(ds.name)
            if committed.exists():
                try:
                    old = data.validate(json.loads(committed.read_text()), str(committed))
                    moved = data.compare(old, new)
                except ValueError as e:
                    moved = [f"{ds.name}: committed file invalid ({e})"]
                drift += moved
            if not args.check or args.write:
                data.write(new, committed)
                print(f"  wrote {committed.relative_to(ROOT)}")
    if failed:
        print("\nFAILED measurements (committed data left untouched):\n  " + "\n  ".join(failed))
        status = 1
    if args.check:
        if drift:
            print(f"\nDRIFT beyond noise thresholds ({len(drift)}):\n  " + "\n  ".join(drift))
            status = 1
        else:
            print("\nno figure moved beyond its noise threshold")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
