#!/usr/bin/env python3
"""What the page "CUDA Compilation Pipeline Deep Dive" says happens at run time, observed on the GPU.

Builds snippets/cuda_compilation_pipeline/*.cu with the pinned nvcc 13.0 (scripts/measure/cuda_compilation_pipeline/_pipeline.py
finds it: the PyPI wheels, or CUDA_PIPELINE_HOME on a machine with its own CUDA 13.0), then:

  compat     every gencode combination of the page's table, run as its own process with an
             empty JIT cache (CUDA_CACHE_PATH): did it run, from which code, and how long did the
             first launch take (median of --procs processes). A run that left files in the cache
             JIT-compiled PTX; one that left none ran SASS from the binary. Also: a warm cache,
             CUDA_CACHE_DISABLE=1 and CUDA_FORCE_PTX_JIT=1.
  jit_size   the same for a larger kernel (registers.cu): SASS against PTX with a cold cache.
  ptx_isa    PTX handed to the driver's JIT at run time (load_ptx.cu): what nvcc 13.0 writes
             (ISA 9.0), the same with `.version 9.1`, and what nvcc 13.5 writes (ISA 9.5).
  vector     4-byte against 16-byte loads (vector_loads.cu), 1 GiB per array, two processes.
  registers  the four register budgets of registers.cu: registers, local memory, blocks per
             multiprocessor and the median time of the sort.

    python scripts/measure/cuda_compilation_pipeline/h200.py [--out data/cuda_compilation_pipeline/h200.json]
        [--arch sm_90] [--procs 3] [--quick]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "nightly", "budget_s": 70}

import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sitekit import data  # noqa: E402

from measure.cuda_compilation_pipeline import _pipeline as cp  # noqa: E402

NAME = "cuda_compilation_pipeline/h200"
SAXPY = re.compile(r"saxpy ok: device sm_(?P<dev>\d+), kernel binary sm_(?P<bin>\d+) from ptx compute_(?P<ptx>\d+), "
                   r"context (?P<ctx>[\d.]+) ms, first launch (?P<first>[\d.]+) ms, second launch (?P<second>[\d.]+) ms")
REGS = re.compile(r"sort_columns ok: (?P<regs>\d+) registers, (?P<local>\d+) bytes local memory per thread, "
                  r"(?P<blocks>\d+) blocks of \d+ threads per multiprocessor, first launch (?P<first>[\d.]+) ms, "
                  r"median (?P<ms>[\d.]+) ms")
VEC = re.compile(r"(?P<kernel>scale_f32x4|scale_f32) ok: n=(?P<n>\d+), median (?P<ms>[\d.]+) ms over \d+ runs, (?P<tbps>[\d.]+) TB/s")
ERROR = re.compile(r"\((cuda[A-Za-z]+)\)")
REGISTER_VARIANTS = [("default", ""), ("min_blocks_6", "-DMIN_BLOCKS=6"), ("min_blocks_8", "-DMIN_BLOCKS=8"),
                     ("maxrregcount_24", "-maxrregcount=24")]


def log(*a):
    print(*a, flush=True)


class Builder:
    def __init__(self, work: Path, arch: str):
        self.tc = cp.toolchain()
        self.work, self.arch = work, arch
        self.virtual = "compute_" + arch[3:]

    def nvcc(self, src: str, out: str, flags: str, link: bool = True) -> Path:
        o = self.work / out
        cmd = [self.tc.tool("nvcc"), *flags.split(), str(cp.SNIPPETS / src), "-o", str(o)]
        if link:
            cmd.append(f"-L{self.tc.lib}")
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=self.work)
        if p.returncode != 0:
            raise RuntimeError(f"build failed: {' '.join(cmd)}\n{p.stderr}")
        return o


def run(binary: Path, args: list[str], env: dict, cwd: Path) -> tuple[int, str, str]:
    p = subprocess.run([str(binary), *args], capture_output=True, text=True, env={**os.environ, **env}, cwd=cwd,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def cache_size(path: Path) -> tuple[int, int]:
    files = [f for f in path.rglob("*") if f.is_file()] if path.exists() else []
    return len(files), sum(f.stat().st_size for f in files)


def saxpy_runs(binary: Path, work: Path, procs: int, cache: str, extra_env: dict | None = None) -> dict:
    """Run a saxpy build `procs` times, each as a new process. cache: 'cold' (a new, empty JIT cache
    per process: files appearing in it mean the driver compiled PTX), 'warm' (one cache, filled by an
    untimed run first: it must not grow) or 'disabled' (CUDA_CACHE_DISABLE=1)."""
    tag = f"{binary.name}-{cache}-{'-'.join(extra_env or {})}"
    shared = work / f"cache-{tag}"
    if cache == "warm":
        run(binary, [], {**(extra_env or {}), "CUDA_CACHE_PATH": str(shared)}, work)
    outcomes, firsts, seconds, binv, ptxv, files, nbytes = [], [], [], None, None, 0, 0
    for i in range(procs):
        env = dict(extra_env or {})
        cdir = shared if cache == "warm" else work / f"cache-{tag}-{i}"
        env["CUDA_CACHE_PATH"] = str(cdir)
        if cache == "disabled":
            env["CUDA_CACHE_DISABLE"] = "1"
        before = cache_size(cdir)
        rc, out, err = run(binary, [], env, work)
        after = cache_size(cdir)
        m = SAXPY.search(out)
        if rc == 0 and m:
            if cache == "cold":
                outcomes.append("outcome_jit" if after[0] > 0 else "outcome_sass")
            elif cache == "warm":
                outcomes.append("outcome_cache_hit" if after == before and after[0] > 0 else "outcome_cache_miss")
            else:
                outcomes.append("outcome_no_cache" if after[0] == 0 else "outcome_cache_written")
            firsts.append(float(m["first"]))
            seconds.append(float(m["second"]))
            binv, ptxv = int(m["bin"]), int(m["ptx"])
            files, nbytes = max(files, after[0]), max(nbytes, after[1])
        else:
            e = ERROR.search(err)
            outcomes.append(e.group(1) if e else f"exit {rc}")
            log(f"    {binary.name} ({cache}, {extra_env or ''}): exit {rc}: {err.strip()[-300:]}")
    if len(set(outcomes)) != 1:
        raise RuntimeError(f"{binary.name} ({cache}, {extra_env}): outcome changed between processes: {outcomes}")
    return {"run_outcome": outcomes[0], "binary_sm": binv, "ptx_cc": ptxv,
            "first_launch_ms": statistics.median(firsts) if firsts else None,
            "second_launch_ms": statistics.median(seconds) if seconds else None,
            "jit_cache_files": files if firsts else None, "jit_cache_kib": round(nbytes / 1024, 1) if firsts else None}


def stage_compat(work: Path, procs: int, rows: list) -> None:
    """Every gencode combination with a cold cache, then the cache and JIT switches."""
    for name, flags in cp.COMBOS:
        r = saxpy_runs(work / f"saxpy_{name}", work, procs, "cold")
        rows.append({"group": "compat", "combo": name, "nvcc_flags": flags or "(no target option)",
                     "run_condition": "cond_cold", **r})
        log(f"  compat {name:<22} {r['run_outcome']:<34} first {r['first_launch_ms']} ms")
    for name, cache, env in [("ptx90", "warm", {}), ("ptx90", "disabled", {}),
                             ("arch_sm90", "cold", {"CUDA_FORCE_PTX_JIT": "1"}),
                             ("sass90", "cold", {"CUDA_FORCE_PTX_JIT": "1"})]:
        r = saxpy_runs(work / f"saxpy_{name}", work, procs, cache, env)
        cond = "cond_force_jit" if env else f"cond_{cache}"
        rows.append({"group": "compat", "combo": name, "nvcc_flags": dict(cp.COMBOS)[name],
                     "run_condition": cond, **r})
        log(f"  compat {name:<22} {cond:<16} {r['run_outcome']:<34} first {r['first_launch_ms']} ms")


def stage_jit_size(work: Path, procs: int, rows: list) -> None:
    """A larger kernel: first launch from SASS against first launch through the JIT (cold cache)."""
    small = ["4096", "3"]          # few columns: the first launch is then mostly loading or compiling
    for name in ("default", "ptx"):
        firsts, regs = [], None
        for i in range(procs):
            cdir = work / f"cache-registers-{name}-{i}"
            rc, out, err = run(work / f"registers_{name}", small, {"CUDA_CACHE_PATH": str(cdir)}, work)
            m = REGS.search(out)
            if rc != 0 or not m:
                raise RuntimeError(f"registers_{name} failed: {out}{err}")
            firsts.append(float(m["first"]))
            regs = int(m["regs"])
        rows.append({"group": "jit_size", "jit_kernel": "sort_columns",
                     "jit_build": "build_sass" if name == "default" else "build_ptx",
                     "registers_used": regs, "first_launch_ms": statistics.median(firsts)})
        log(f"  jit_size sort_columns {name}: first launch {statistics.median(firsts):.2f} ms")


def stage_ptx_isa(work: Path, rows: list) -> None:
    """PTX of three ISA versions handed to the driver's JIT at run time."""
    ptx90 = work / "saxpy.ptx"
    text = ptx90.read_text()
    if not re.search(r"^\.version 9\.0$", text, re.M):
        raise RuntimeError("saxpy.ptx from nvcc 13.0 does not declare .version 9.0")
    (work / "saxpy_isa9.1.ptx").write_text(re.sub(r"^\.version 9\.0$", ".version 9.1", text, flags=re.M))
    newer = cp.IR / "saxpy_nvcc13.5.ptx"
    for label, f in [("ptx_nvcc13.0", ptx90), ("ptx_edited_9.1", work / "saxpy_isa9.1.ptx"), ("ptx_nvcc13.5", newer)]:
        rc, out, err = run(work / "load_ptx", [str(f)], {"CUDA_CACHE_DISABLE": "1"}, work)
        isa = re.search(r"PTX ISA ([\d.]+)", out)
        jit = re.search(r"JIT compiled in ([\d.]+) ms", out)
        e = re.search(r"^[\w ]+: (cuda\w+) \(", out, re.M)
        outcome = "outcome_loaded" if rc == 0 else (e.group(1) if e else f"exit {rc}")
        rows.append({"group": "ptx_isa", "ptx_file": label, "ptx_isa": isa.group(1) if isa else "?",
                     "run_outcome": outcome, "driver_jit_ms": float(jit.group(1)) if jit else None})
        log(f"  ptx_isa {label}: {outcome} | {out.strip()} | {err.strip()}")


def stage_vector(work: Path, quick: bool, rows: list) -> None:
    """4-byte against 16-byte loads, 1 GiB per array, in two separate processes."""
    n = (1 << 24) if quick else (1 << 28)
    for rep in (1, 2):
        rc, out, err = run(work / "vector_loads", [str(n), "50"], {}, work)
        got = {m["kernel"]: m for m in VEC.finditer(out)}
        if rc != 0 or len(got) != 2:
            raise RuntimeError(f"vector_loads failed: {out}{err}")
        for k in ("scale_f32", "scale_f32x4"):
            rows.append({"group": "vector", "vector_kernel": k, "n": n, "process": rep,
                         "ms": float(got[k]["ms"]), "tbps": float(got[k]["tbps"])})
        rows.append({"group": "vector", "vector_kernel": "speedup", "n": n, "process": rep,
                     "vector_speedup": float(got["scale_f32"]["ms"]) / float(got["scale_f32x4"]["ms"])})
        log(f"  vector run {rep}: {out.strip()}")


def stage_registers(work: Path, arch: str, quick: bool, rows: list) -> None:
    """The four register budgets of registers.cu, timed."""
    cols = str(1 << 18) if quick else str(1 << 22)
    for name, flags in REGISTER_VARIANTS:
        rc, out, err = run(work / f"registers_{name}", [cols, "20"], {}, work)
        m = REGS.search(out)
        if rc != 0 or not m:
            raise RuntimeError(f"registers_{name} failed: {out}{err}")
        rows.append({"group": "registers", "reg_budget": name, "nvcc_flags": f"-arch={arch} {flags}".strip(),
                     "registers_used": int(m["regs"]), "local_bytes": int(m["local"]),
                     "blocks_per_sm": int(m["blocks"]), "ms": float(m["ms"])})
        log(f"  registers {name}: {out.strip()}")


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--arch", default=None, help="the GPU's real architecture, e.g. sm_90 (default: read from the GPU)")
    ap.add_argument("--procs", type=int, default=3, help="processes per timed case (default 3)")
    args = ap.parse_args(argv)
    if args.procs < 1:
        ap.error("--procs must be at least 1")
    try:
        tc = cp.toolchain()
        if args.arch:
            cp.check_arch(args.arch)
    except (cp.ToolchainError, ValueError) as e:
        sys.exit(f"cuda_compilation_pipeline: {e}")
    import torch
    if not torch.cuda.is_available():
        sys.exit("cuda_compilation_pipeline: needs a CUDA GPU (torch.cuda.is_available() is False)")
    major, minor = torch.cuda.get_device_capability()
    arch = args.arch or f"sm_{major}{minor}"
    if arch.rstrip("af") != f"sm_{major}{minor}":
        sys.exit(f"cuda_compilation_pipeline: --arch {arch} does not match this GPU (sm_{major}{minor})")
    procs = 2 if args.quick else args.procs
    log(f"toolchain: nvcc {tc.version} ({tc.source}); GPU {torch.cuda.get_device_name()} sm_{major}{minor}")
    rows, failures = [], []
    with tempfile.TemporaryDirectory(prefix="ccp_h200_") as t:
        work = Path(t)
        b = Builder(work, arch)
        jobs = [("saxpy.cu", f"saxpy_{name}", flags, True) for name, flags in cp.COMBOS]
        jobs += [("registers.cu", f"registers_{name}", f"-arch={arch} {flags}", True) for name, flags in REGISTER_VARIANTS]
        jobs += [("registers.cu", "registers_ptx", f"-gencode arch={b.virtual},code={b.virtual}", True),
                 ("vector_loads.cu", "vector_loads", f"-arch={arch}", True),
                 ("load_ptx.cu", "load_ptx", f"-arch={arch}", True),
                 ("saxpy.cu", "saxpy.ptx", f"-arch={arch} -ptx", False)]
        with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 2)) as ex:
            list(ex.map(lambda j: b.nvcc(*j), jobs))
        log(f"built {len(jobs)} programs with nvcc {tc.version}")
        for name, fn in [("compat", lambda: stage_compat(work, procs, rows)),
                         ("jit_size", lambda: stage_jit_size(work, procs, rows)),
                         ("ptx_isa", lambda: stage_ptx_isa(work, rows)),
                         ("vector", lambda: stage_vector(work, args.quick, rows)),
                         ("registers", lambda: stage_registers(work, arch, args.quick, rows))]:
            try:                          # one stage failing must not hide what the others saw
                fn()
            except Exception as e:        # noqa: BLE001 - reported, and the run exits 1 below
                failures.append(f"{name}: {e}")
                log(f"STAGE FAILED {name}: {e}")

    metrics = {
        "first_launch_ms": {"unit": "ms", "noise": 0.5, "better": "lower", "fmt": ".2f"},
        "second_launch_ms": {"unit": "ms", "noise": 1.0, "better": "lower", "fmt": ".3f", "check": False},
        "jit_cache_files": {"unit": "files", "noise": 0, "fmt": "d", "check": False},
        "jit_cache_kib": {"unit": "KiB", "noise": 0.5, "fmt": ".1f", "check": False},
        "driver_jit_ms": {"unit": "ms", "noise": 0.5, "better": "lower", "fmt": ".2f"},
        "ms": {"unit": "ms", "noise": 0.07, "better": "lower", "fmt": ".3f"},
        "tbps": {"unit": "TB/s", "noise": 0.05, "better": "higher", "fmt": ".2f"},
        "vector_speedup": {"unit": "×", "noise": 0.07, "better": "higher", "fmt": ".2f"},
    }
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
                  toolchain=f"nvcc {tc.version} ({tc.source})")
    if failures:
        log("FAILED stages, nothing written to --out:\n  " + "\n  ".join(failures))
        if args.out:                      # what the other stages saw, for the diagnosis
            Path(str(args.out) + ".failed.json").write_text(json.dumps(ds, indent=1))
        return 1
    if args.quick:
        log("quick run: not writing data")
    else:
        log("wrote", data.write(ds, args.out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
