#!/usr/bin/env python3
"""torch.compile against eager on one CUDA GPU: five workloads, default and reduce-overhead.

Workloads (snippets/pytorch_compile_stack/models.py): a memory-bound chain of seven
pointwise ops (fp32), an MLP with LayerNorm and GELU, a GPT-2 block forward, a ResNet
convolution block (eval, NHWC), and the GPT-2 block forward+backward (bf16).
Modes: default and reduce-overhead (CUDA graphs). max-autotune compiles take tens of
seconds to minutes per case and live in their own weekly dataset (gpu_autotune.py),
measured the same way.

Every case (workload, mode) runs in two fresh processes (_case.py) that share one new,
empty TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR:
  cold  the first compile of the process into the empty cache (the FX graph, AOTAutograd
        and Triton caches all miss), and the generated kernels from the output code;
  warm  a new process with the cache the cold one filled: compile time, the kernels again
        (read from the wrapper loaded from the cache), correctness against eager and a float
        reference, then eager and compiled timed in turn for --rounds rounds (do_bench
        medians; each side keeps its best round; the spread between rounds is recorded),
        peak memory of a call, memory held between calls (CUDA graph pools).
Both compile times include Inductor's one-time start-up in a new process, which is measured
on its own (a two-op function, first compile of this process) and recorded as kind=startup.
The case set is fixed: every case is measured in every run; a case that fails is recorded
with its error, and a compiled case whose kernel list comes back empty stops the run
before anything is written.

    python scripts/measure/pytorch_compile_stack/gpu_workloads.py [--out PATH] [--rounds 3] [--quick]
    python scripts/measure/pytorch_compile_stack/gpu_workloads.py --device cpu --quick --only pointwise
        (the same orchestration on the CPU at tiny sizes: what the tests run; writes nothing)

A run that must fit a shorter slot than the whole case set (a lent GPU with a per-command limit)
can be split: with COMPILE_STACK_RESUME_DIR=DIR every finished case is kept in DIR, keyed by the
hash of the code, the arguments, torch and the GPU, and a later run with the same DIR measures only
the cases still missing; with COMPILE_STACK_DEADLINE_S=S a run starts no case it cannot finish
before S seconds (estimated from the slowest case so far) and exits with status 3, writing no
dataset. The dataset records each case's own wall time and how many runs the set took.
"""
from __future__ import annotations

# budget: on the H200 (2026-12-01, commit 2fdd182) the first case, pointwise/default, took 53 s for its
# two processes (import, CUDA start, compile, three timing rounds, profiler) after a 6 s start-up; the
# run then stopped at reduce-overhead's empty kernel list (the parser fix came after). 10 cases x ~55 s.
META = {"needs": "gpu", "tier": "weekly", "budget_s": 520}

import hashlib
import json
import os
import sys
import time
from pathlib import Path

from sitekit import data  # noqa: E402

from measure.pytorch_compile_stack import _common as C  # noqa: E402

NAME = "pytorch_compile_stack/gpu_workloads"
WORKLOADS = ("pointwise", "mlp", "gpt2_fwd", "conv", "gpt2_train")
MODES = ("default", "reduce-overhead")
# each case's wall time (its two processes), kept so the registry budget comes from a measurement
METRICS = {**C.METRICS, "case_wall_s": {"unit": "s", "noise": 0.5, "better": "lower", "fmt": ".0f", "check": False}}


def measure(name: str, modes: tuple, doc: str, argv=None) -> int:
    """The producer shared by gpu_workloads.py and gpu_autotune.py: same cases, other modes."""
    ap = data.arg_parser(doc, name)
    ap.add_argument("--rounds", type=int, default=3, help="timing rounds per case (default 3)")
    ap.add_argument("--only", default=None, help=f"comma-separated workloads, for a smoke test only ({','.join(WORKLOADS)})")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda",
                    help="cpu runs the same orchestration at tiny sizes (needs --quick)")
    args = ap.parse_args(argv)
    if args.rounds < 2:
        ap.error("--rounds must be at least 2 (a spread needs two rounds)")
    if args.device == "cpu" and not args.quick:
        ap.error("--device cpu is a smoke test of the orchestration: add --quick")
    if args.only and not args.quick:
        ap.error("--only would write a dataset with a partial case set: only with --quick")
    wls = list(WORKLOADS)
    if args.only:
        want = args.only.split(",")
        unknown = sorted(set(want) - set(WORKLOADS))
        if unknown:
            ap.error(f"unknown workload(s) {unknown}; known: {list(WORKLOADS)}")
        wls = [w for w in WORKLOADS if w in want]

    import torch
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit(f"{name}: needs a CUDA GPU (torch.cuda.is_available() is False); "
                 "--device cpu --quick runs the orchestration on the CPU")
    dev = torch.device(args.device)
    size = "tiny" if args.quick else "gpu"
    shapes = {w.name: w.extra["shape"] for w in C.workloads(dev, size)}
    t_start = time.perf_counter()
    rows, krows = [], []
    first = C.first_compile_s(dev)
    rows.append({"kind": "startup", "workload": "first_compile", "mode": "default", "compile_cold_s": first})
    print(f"first compile in this process (Inductor's one-time start-up): {first:.1f} s", flush=True)

    if dev.type == "cuda":   # the ceiling the pointwise chain is held against: a device-to-device copy
        from triton.testing import do_bench
        n = 1 << 28
        src = torch.randn(n // 4, device=dev)
        dst = torch.empty_like(src)
        dst.copy_(src)
        assert torch.equal(dst, src)
        ms = do_bench(lambda: dst.copy_(src), warmup=25, rep=150, return_mode="median")
        rows.append({"kind": "ceiling", "workload": "copy", "mode": "torch", "tbps": 2 * n / ms / 1e9, "ms": ms})
        del src, dst
    bytes_min = {w.name: w.bytes_min for w in C.workloads(dev, size) if w.bytes_min}
    parts = Parts(args, name)
    deadline = float(os.environ.get("COMPILE_STACK_DEADLINE_S") or 0)
    case_walls: list[float] = []

    for wl in wls:
        for mode in modes:
            t0 = time.perf_counter()
            kept = parts.get(wl, mode)
            if kept is None and deadline and case_walls and \
                    time.perf_counter() - t_start + max(case_walls) > deadline:
                done, total = parts.count(wls, modes), len(wls) * len(modes)
                print(f"{name}: stopping before {wl}/{mode}: {time.perf_counter() - t_start:.0f} s spent, the slowest "
                      f"case took {max(case_walls):.0f} s, COMPILE_STACK_DEADLINE_S={deadline:.0f}; {done} of {total} "
                      f"cases kept in {parts.dir}: run again with the same COMPILE_STACK_RESUME_DIR", file=sys.stderr)
                return 3
            try:
                if kept is not None:
                    res = kept
                    print(f"{wl:<11} {mode:<15} kept from an earlier run ({res['case_wall_s']:.0f} s)", flush=True)
                else:
                    res = C.run_case(wl, mode, size=size, device=args.device, rounds=args.rounds)
                    res["case_wall_s"] = time.perf_counter() - t0
                    case_walls.append(res["case_wall_s"])
                row, k = C.case_rows(res, shapes[wl])
                if kept is None:
                    parts.put(wl, mode, res)
            except C.NoKernels:
                raise
            except Exception as e:   # recorded with its error; the case stays in the set
                msg = f"{type(e).__name__}: {str(e)[:300]}"
                print(f"{wl:<11} {mode:<15} FAILED {msg}", file=sys.stderr, flush=True)
                rows.append({"kind": "timing", "workload": wl, "mode": mode, "shape": shapes[wl], "error": msg})
                continue
            row["case_wall_s"] = res["case_wall_s"]
            if wl in bytes_min and row.get("ms"):
                row["tbps"] = bytes_min[wl] / row["ms"] / 1e9
            if mode == modes[0] and row.get("eager_ms") is not None:   # eager's own row, from this case's rounds
                warm = res["warm"]
                erow = {"kind": "timing", "workload": wl, "mode": "eager", "shape": shapes[wl],
                        "ms": warm["eager_ms"], "ms_spread": warm["eager_ms_spread"],
                        "peak_mib": warm.get("eager_peak_mib")}
                if warm.get("eager_gpu_ops") is not None:
                    erow["gpu_ops"] = warm["eager_gpu_ops"]
                if wl in bytes_min:
                    erow["tbps"] = bytes_min[wl] / erow["ms"] / 1e9
                rows.append(erow)
            rows.append(row)
            krows += k
            print(f"{wl:<11} {mode:<15} {row.get('ms') or float('nan'):8.3f} ms  x{row.get('vs_eager') or float('nan'):5.2f}"
                  f" (spread {row.get('vs_eager_spread') or 0:.1%})  cold {row['compile_cold_s']:6.1f} s  "
                  f"warm {row['compile_warm_s']:5.1f} s  hits {row['warm_fxgraph_hits']}  ok={row.get('correct')}  "
                  f"kernels={row['kernels']}+{row['extern_calls']} match={row['warm_kernels_match']}  "
                  f"[{time.perf_counter() - t0:.0f} s]", flush=True)

    rows = [C.clean(r) for r in rows + krows]
    C.require_kernels(rows)
    ds = data.new(name, METRICS, rows, argv=[sys.argv[0], *(argv if argv is not None else sys.argv[1:])],
                  cpu_count=os.cpu_count(), rounds=args.rounds, wall_s=round(time.perf_counter() - t_start, 1),
                  cases_wall_s=round(sum(r.get("case_wall_s") or 0 for r in rows), 1), runs=parts.runs(),
                  method="each (workload, mode) compiled cold, then warm, each in a fresh process with its own "
                         "new TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR (scripts/measure/pytorch_compile_stack/_case.py)")
    bad = [f"{r['workload']}/{r['mode']}" for r in rows if r.get("correct") is False]
    if bad:
        print(f"compiled results that disagree with eager (kept as not met, not timed): {bad}", file=sys.stderr)
    return data.save(ds, args.out, quick=args.quick)


class Parts:
    """Finished cases kept between runs (COMPILE_STACK_RESUME_DIR), valid only for the same code, arguments,
    torch build and GPU: anything else starts the case set again."""

    def __init__(self, args, name: str):
        self.dir = os.environ.get("COMPILE_STACK_RESUME_DIR") or None
        if not self.dir:
            return
        import torch
        from sitekit.measure import source_hash, sources
        here = Path(__file__).resolve().parent
        code = {**sources(), "_case.py": source_hash((here / "_case.py").read_bytes())}
        gpu = torch.cuda.get_device_name() if args.device == "cuda" else "cpu"
        key = json.dumps([name, code, args.rounds, args.quick, args.device, torch.__version__, gpu], sort_keys=True)
        self.key = hashlib.sha256(key.encode()).hexdigest()[:16]
        Path(self.dir).mkdir(parents=True, exist_ok=True)
        self.run_id = time.strftime("%Y-%m-%dT%H:%M:%S")

    def _path(self, wl: str, mode: str) -> Path:
        return Path(self.dir) / f"{self.key}__{wl}__{mode}.json"

    def get(self, wl: str, mode: str) -> dict | None:
        if not self.dir or not self._path(wl, mode).exists():
            return None
        return json.loads(self._path(wl, mode).read_text(encoding="utf-8"))

    def put(self, wl: str, mode: str, res: dict) -> None:
        if self.dir:
            tmp = self._path(wl, mode).with_suffix(".tmp")
            tmp.write_text(json.dumps({**res, "run": self.run_id}), encoding="utf-8")
            tmp.replace(self._path(wl, mode))

    def count(self, wls, modes) -> int:
        return sum(self.get(w, m) is not None for w in wls for m in modes)

    def runs(self) -> int:
        if not self.dir:
            return 1
        return len({json.loads(p.read_text(encoding="utf-8")).get("run") for p in Path(self.dir).glob(f"{self.key}__*.json")}
                   | {self.run_id})


def main(argv=None) -> int:
    return measure(NAME, MODES, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
