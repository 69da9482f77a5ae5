"""Shared by the torch.compile measurement scripts of the page `pytorch-compile-stack`.

One *case* is (workload, mode). For each case, in one process:

1. compile with a fresh, empty TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR and time the
   first call (Dynamo + AOTAutograd + Inductor + kernel compilation + first run): cold;
2. check the compiled result against eager on fresh random inputs (same dtype), and
   both against a float32/float64 reference: a wrong result is never timed;
3. time steady-state calls (GPU: triton.testing.do_bench median; CPU: the fastest of
   40 wall-clock timings, eager and compiled alternating), record peak memory and the generated kernels (from the output code);
4. reset Dynamo and Inductor's in-memory caches and compile again with the same cache
   directory: warm (what a restarted job with a kept cache pays).

This module holds no dataset: the scripts next to it decide sizes and write JSON.
"""
from __future__ import annotations

import contextlib
import gc
import math
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

from sitekit import (
    measure,  # noqa: E402
)

measure.snippet_path("pytorch_compile_stack")

import torch  # noqa: E402
import torch._dynamo  # noqa: E402
import torch._inductor.utils as ind_utils  # noqa: E402

MODES = ("default", "reduce-overhead", "max-autotune")


# ------------------------------------------------------------------------ workloads

@dataclass
class Workload:
    name: str
    build: Callable[[torch.device, torch.dtype], tuple]   # -> (module or function, [input tensors])
    train: bool = False          # forward + backward (parameter gradients) instead of inference
    dtype: torch.dtype = torch.bfloat16
    bytes_min: int | None = None  # fewest bytes a fused version must move (pointwise roofline)
    extra: dict = field(default_factory=dict)


def rel_err(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.double().flatten(), b.double().flatten()
    if not torch.isfinite(a).all():
        return math.inf
    return float((a - b).norm() / b.norm().clamp_min(1e-30))


def _flat(xs) -> torch.Tensor:
    return torch.cat([x.detach().reshape(-1).double() for x in xs])


class Runner:
    """Calls a workload eagerly or compiled: inference under no_grad, or a training step."""

    def __init__(self, wl: Workload, device: torch.device, seed: int = 0):
        torch.manual_seed(seed)
        self.wl, self.device = wl, device
        self.target, self.inputs = wl.build(device, wl.dtype)
        self.params = [p for p in self.target.parameters()] if isinstance(self.target, torch.nn.Module) else []

    def refresh_inputs(self, seed: int):
        """New random values in the same tensors (same addresses: CUDA graphs stay valid)."""
        g = torch.Generator(device="cpu").manual_seed(seed)
        with torch.no_grad():
            for t in self.inputs:
                t.copy_(torch.randn(t.shape, generator=g, dtype=torch.float32).to(t.dtype))

    def step(self, fn):
        # a new iteration: lets reduce-overhead's CUDA graphs reuse their memory pool
        # (a no-op when no CUDA graph is involved)
        torch.compiler.cudagraph_mark_step_begin()
        if self.wl.train:
            for p in self.params:
                p.grad = None
            out = fn(*self.inputs)
            out.float().square().mean().backward()
            return None
        with torch.no_grad():
            return fn(*self.inputs)

    def result(self, fn) -> torch.Tensor:
        """What the correctness check compares: the output, or every parameter gradient."""
        if self.wl.train:
            self.step(fn)
            return _flat([p.grad for p in self.params])
        return self.step(fn).detach().double().clone()

    def reference_result(self) -> torch.Tensor:
        return float_reference(self)


def float_reference(runner: Runner) -> torch.Tensor:
    """The same computation in float32 on a float32 copy of the module (TF32 off), or float64
    for a plain function: the yardstick both eager and compiled results are measured against."""
    import copy
    target = runner.target
    prev = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        if isinstance(target, torch.nn.Module):
            ref = copy.deepcopy(target).float()
            inputs = [t.float() for t in runner.inputs]
            if runner.wl.train:
                out = ref(*inputs)
                out.float().square().mean().backward()
                return _flat([p.grad for p in ref.parameters()])
            with torch.no_grad():
                return ref(*inputs).double()
        with torch.no_grad():
            return target(*[t.double() for t in runner.inputs]).double()
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = prev


# ------------------------------------------------------------------------ caches

def reset_compiler():
    """Forget every compiled artifact held in this process (not the on-disk caches)."""
    torch._dynamo.reset()
    with contextlib.suppress(Exception):
        from torch._inductor import cudagraph_trees
        cudagraph_trees.reset_cudagraph_trees()
    clear = getattr(ind_utils, "clear_inductor_caches", None) or getattr(ind_utils, "clear_caches", None)
    if clear is not None:
        clear()
    gc.collect()


@contextlib.contextmanager
def fresh_cache_dir():
    """A new empty Inductor + Triton cache for the duration (what 'cold' means here)."""
    d = tempfile.mkdtemp(prefix="inductor-cold-")
    old = {k: os.environ.get(k) for k in ("TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")}
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = d
    os.environ["TRITON_CACHE_DIR"] = os.path.join(d, "triton")
    try:
        yield d
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def capture_output_code(codes: list):
    """Collect Inductor's generated wrapper code (on a cache hit too) while active."""
    from torch._inductor.graph import GraphLowering
    old = GraphLowering.save_output_code
    GraphLowering.save_output_code = staticmethod(codes.append)
    try:
        yield codes
    finally:
        GraphLowering.save_output_code = old


def all_output_code(codes: list[str]) -> list[str]:
    """Every wrapper (output_code.py) this process compiled or loaded: what the save_output_code hook
    collected, plus each module PyCodeCache loaded that holds a wrapper's call(). On a warm cache
    (FX graph or AOTAutograd cache hit) some torch versions never call the hook; the loaded module
    is there either way. kernel_rows() drops duplicates by graph id."""
    out = list(codes)
    try:
        from torch._inductor.codecache import PyCodeCache
        mods = list(PyCodeCache.modules)
    except (ImportError, AttributeError):
        mods = []
    for mod in mods:
        path = getattr(mod, "__file__", None)
        if not path or not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            src = f.read()
        if re.search(r"^\s*def call\(", src, re.M) and "async_compile" in src:
            out.append(src)
    return out


class NoKernels(RuntimeError):
    """A compiled case whose kernel list came back empty: the dataset would be wrong, so it is not written."""


def require_kernels(rows: list[dict]) -> None:
    """Refuse a dataset in which a compiled case lists no generated kernel and no library call
    (the capture failed: every compiled graph runs at least one of them)."""
    cases = {(r["workload"], r["mode"]) for r in rows
             if r.get("kind") == "timing" and r.get("mode") not in ("eager", "torch") and r.get("error") is None}
    listed = {(r["workload"], r["mode"]) for r in rows if r.get("kind") == "kernel"}
    empty = sorted(cases - listed)
    if empty:
        raise NoKernels(f"compiled case(s) with no kernels captured: {empty}; refusing to write the dataset "
                        "(the kernel capture failed, see _common.all_output_code)")


def check_and_time(runner: "Runner", compiled, *, rounds: int = 3, count_ops: bool = False,
                   check_seed: int = 1234) -> dict:
    """Correctness first (compiled and eager against a float reference on fresh inputs), then
    eager and compiled timed in turn for `rounds` rounds: each side keeps its best round, and the
    spread between rounds is recorded for the ratio too."""
    wl, dev = runner.wl, runner.device
    runner.refresh_inputs(check_seed)
    got = runner.result(compiled)
    want = runner.result(runner.target)
    ref = runner.reference_result()
    err_c, err_e = rel_err(got, ref), rel_err(want, ref)
    row = {"err_vs_eager": rel_err(got, want), "err_compiled": err_c, "err_eager": err_e,
           "correct": bool(err_c <= 2 * err_e + tolerance(wl.dtype))}
    got = want = ref = None
    if not row["correct"]:
        print(f"  {wl.name}: compiled result differs from eager beyond tolerance "
              f"(err {err_c:.2e} vs eager {err_e:.2e}); not timed", file=sys.stderr)
        return row
    eager, comp = [], []
    for _ in range(rounds):
        if dev.type == "cuda":
            eager.append(bench_ms(runner, runner.target))
            comp.append(bench_ms(runner, compiled))
        else:
            e, c = bench_pair_ms(runner, compiled)
            eager.append(e)
            comp.append(c)
    ratios = sorted(e / c for e, c in zip(eager, comp))
    row.update({"eager_ms": min(eager), "ms": min(comp), "vs_eager": min(eager) / min(comp),
                "eager_ms_spread": _spread(eager), "ms_spread": _spread(comp),
                "vs_eager_spread": (ratios[-1] - ratios[0]) / ratios[len(ratios) // 2],
                "eager_rounds_ms": eager, "rounds_ms": comp})
    if dev.type == "cuda":
        row["peak_mib"] = gpu_memory(runner, compiled)
        row["eager_peak_mib"] = gpu_memory(runner, runner.target)
        if count_ops:
            row["gpu_ops"] = gpu_ops(runner, compiled)
            row["eager_gpu_ops"] = gpu_ops(runner, runner.target)
    else:
        row["peak_mib"] = cpu_memory(runner, compiled)
        row["eager_peak_mib"] = cpu_memory(runner, runner.target)
    return row


def _spread(ts: list[float]) -> float:
    return (max(ts) - min(ts)) / min(ts) if ts and min(ts) > 0 else 0.0


def run_case(workload: str, mode: str, *, size: str, device: str, rounds: int = 3,
             timeout_s: float = 900) -> dict:
    """(workload, mode) compiled cold and then warm, each in a fresh process (_case.py) whose
    TORCHINDUCTOR_CACHE_DIR / TRITON_CACHE_DIR are a new empty directory, shared by the two
    processes and removed afterwards. Returns {"cold": {...}, "warm": {...}}."""
    import json
    import shutil
    import subprocess
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_case.py")
    d = tempfile.mkdtemp(prefix=f"inductor-{workload}-{mode}-")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": d, "TRITON_CACHE_DIR": os.path.join(d, "triton"),
           "PYTHONUNBUFFERED": "1"}
    res = {"cache_dir_was_empty": not os.listdir(d)}
    try:
        for phase in ("cold", "warm"):
            out = os.path.join(d, f"{phase}.json")
            cmd = [sys.executable, worker, "--workload", workload, "--mode", mode, "--size", size,
                   "--device", device, "--phase", phase, "--rounds", str(rounds), "--out", out]
            t0 = time.perf_counter()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s)
            if p.returncode != 0 or not os.path.exists(out):
                tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
                raise RuntimeError(f"{workload}/{mode} {phase} process failed (exit {p.returncode}): {' | '.join(tail)}")
            with open(out, encoding="utf-8") as f:
                res[phase] = json.load(f)
            res[phase]["wall_s"] = time.perf_counter() - t0
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return res


def case_rows(res: dict, shape: str) -> tuple[dict, list[dict]]:
    """The dataset's timing row and kernel rows of one case from run_case()'s result."""
    cold, warm = res["cold"], res["warm"]
    if not cold["kernel_rows"] or not warm["kernel_rows"]:
        raise NoKernels(f"{cold['workload']}/{cold['mode']}: no kernels captured "
                        f"(cold {len(cold['kernel_rows'])}, warm {len(warm['kernel_rows'])} rows)")
    key = lambda rs: sorted((r["graph"], r["kernel"], r["launches"]) for r in rs)  # noqa: E731
    row = {"kind": "timing", "workload": cold["workload"], "mode": cold["mode"], "shape": shape,
           "compile_cold_s": cold["compile_s"], "compile_warm_s": warm["compile_s"],
           "cold_fxgraph_misses": cold["fxgraph_misses"], "warm_fxgraph_hits": warm["fxgraph_hits"],
           "warm_fxgraph_misses": warm["fxgraph_misses"],
           "process_cold_s": cold["process_s"], "import_s": warm["import_s"],
           "kernels": cold["kernels"], "extern_calls": cold["extern_calls"],
           "warm_kernels_match": key(cold["kernel_rows"]) == key(warm["kernel_rows"])}
    for k in ("correct", "err_vs_eager", "err_compiled", "err_eager", "eager_ms", "ms", "vs_eager",
              "eager_ms_spread", "ms_spread", "vs_eager_spread", "peak_mib", "gpu_ops", "held_mib"):
        if k in warm:
            row[k] = warm[k]
    return row, cold["kernel_rows"]


def cache_hits() -> dict:
    from torch._dynamo.utils import counters
    ind = counters["inductor"]
    return {"fxgraph_hit": ind.get("fxgraph_cache_hit", 0), "fxgraph_miss": ind.get("fxgraph_cache_miss", 0)}


# ------------------------------------------------------------------------ output code

GRAPH_ID = re.compile(r"^# AOT ID: \['(?P<id>[^']+)'\]", re.M)
KERNEL_DEF = re.compile(r"^(?P<name>\w+) = async_compile\.(?P<kind>triton|cpp_pybinding|cpp|cuda)\(", re.M)
EXTERN_CALL = re.compile(r"\b(?P<name>extern_kernels\.\w+|torch\.ops\.(?:aten|mkldnn|mkl|onednn|inductor)\.\w+(?:\.\w+)?|aten\.\w+\.\w+)\(")


def kernels_in(code: str) -> tuple[str, list[tuple[str, int]]]:
    """(graph id, [(kernel, launches per call)]) from one output_code.py.

    Generated kernels are the async_compile definitions; their launches are the calls in
    the wrapper. Library calls (cuBLAS/oneDNN GEMMs, convolutions, attention) are counted
    under their extern name. Kernels defined but never launched (autotuning leftovers) are
    dropped."""
    m = GRAPH_ID.search(code)
    graph = m.group("id") if m else "graph"
    defined = [d.group("name") for d in KERNEL_DEF.finditer(code)]
    # the wrapper: call(), and with graph partitions (on by default with CUDA graphs) the
    # partition_N() launchers that call() invokes through self.partitions[N], which come first;
    # launches are counted there only (a kernel's own source holds `def <name>(` and must not count)
    m = re.search(r"^(?:def partition_\d+\(|class Runner\b|\s*def call\()", code, re.M)
    body = code[m.start():] if m else code
    body = body.split("\ndef get_args", 1)[0].split("\ndef benchmark_compiled_module", 1)[0]
    out = []
    for name in defined:
        n = len(re.findall(rf"\b{re.escape(name)}(?:\.run)?\(", body))
        if n:
            out.append((name, n))
    ext: dict[str, int] = {}
    for e in EXTERN_CALL.finditer(body):
        name = e.group("name")
        if name.endswith((".default",)):
            name = name[: -len(".default")]
        if any(s in name for s in ("_alloc_from_pool", "empty_strided", "as_strided", "reinterpret", "record_stream",
                                   "set_", "resize_", "copy_")):
            continue
        ext[name] = ext.get(name, 0) + 1
    out += sorted(ext.items())
    return graph, out


def kernel_rows(codes: list[str], workload: str, mode: str) -> list[dict]:
    rows, seen = [], set()
    for code in codes:
        graph, ks = kernels_in(code)
        if graph in seen:
            continue
        seen.add(graph)
        role = "backward" if "backward" in graph else ("forward" if "forward" in graph else "inference")
        for name, n in ks:
            rows.append({"kind": "kernel", "workload": workload, "mode": mode, "graph": role, "kernel": name,
                         "launches": n})
    return rows


def launches(rows: list[dict]) -> tuple[int, int]:
    gen = sum(r["launches"] for r in rows if not r["kernel"].startswith(("extern_kernels", "torch.ops", "aten.")))
    ext = sum(r["launches"] for r in rows) - gen
    return gen, ext


# ------------------------------------------------------------------------ timing

def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def time_first_call(runner: Runner, fn) -> float:
    sync(runner.device)
    t0 = time.perf_counter()
    runner.step(fn)
    sync(runner.device)
    return time.perf_counter() - t0


def bench_ms(runner: Runner, fn, cpu_reps: int = 40) -> float:
    """Milliseconds of one call in steady state: the median of do_bench on a GPU, the fastest of
    cpu_reps calls on a CPU (see bench_pair_ms for why)."""
    call = lambda: runner.step(fn)  # noqa: E731
    if runner.device.type == "cuda":
        from triton.testing import do_bench
        return float(do_bench(call, warmup=25, rep=150, return_mode="median"))
    for _ in range(3):
        call()
    ts = []
    for _ in range(cpu_reps):
        t0 = time.perf_counter()
        call()
        ts.append(time.perf_counter() - t0)
    return min(ts) * 1e3


def bench_pair_ms(runner: Runner, compiled, reps: int = 40) -> tuple[float, float]:
    """CPU: eager and compiled calls timed alternately (eager, compiled, eager, ...); the fastest
    of each. On a machine shared with other jobs the minimum is the run least disturbed by them,
    and alternating gives both sides the same chances."""
    eager, comp = [], []
    for _ in range(3):
        runner.step(runner.target)
        runner.step(compiled)
    for _ in range(reps):
        for fn, out in ((runner.target, eager), (compiled, comp)):
            t0 = time.perf_counter()
            runner.step(fn)
            out.append(time.perf_counter() - t0)
    return min(eager) * 1e3, min(comp) * 1e3


def gpu_memory(runner: Runner, fn) -> float:
    """Peak bytes allocated during one steady-state call, above what was live before it."""
    sync(runner.device)
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    runner.step(fn)
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def cpu_memory(runner: Runner, fn) -> float | None:
    """Peak bytes the CPU allocator held during one call above what was live before it,
    replayed from the profiler's allocation events (each alloc and free, in time order)."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        runner.step(fn)
    try:
        events = sorted((e for e in prof.profiler.kineto_results.events()
                         if e.name() == "[memory]" and e.device_type() == DeviceType.CPU), key=lambda e: e.start_ns())
    except AttributeError as e:   # the profiler's internals moved: report nothing rather than a wrong number
        print(f"  cpu memory events unavailable: {e!r}", file=sys.stderr)
        return None
    cur = peak = 0
    for e in events:
        cur += e.nbytes()
        peak = max(peak, cur)
    return peak / 2**20


def held_mib(device) -> float:
    """Memory the caching allocator cannot give back: CUDA graph pools, for one."""
    gc.collect()
    if device.type != "cuda":
        return 0.0
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return torch.cuda.memory_reserved() / 2**20


def gpu_ops(runner: Runner, fn) -> int | None:
    """GPU operations (kernels, copies, memsets) one call launches, counted by the profiler."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile
    try:
        runner.step(fn)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA, ProfilerActivity.CPU]) as prof:
            runner.step(fn)
            torch.cuda.synchronize()
        return sum(1 for e in prof.events() if e.device_type == DeviceType.CUDA)
    except Exception as e:  # profiler unavailable: say so in the data, never guess
        print(f"  profiler failed: {e!r}", file=sys.stderr)
        return None


# ------------------------------------------------------------------------ one case

def first_compile_s(device) -> float:
    """Compile a two-op function once, in its own empty cache: the one-time cost a process
    pays on its first compile (importing Inductor, probing the C++ compiler and vector ISA,
    starting the kernel-compile workers). Done first, so that no case below is charged it."""
    def tiny(x):
        return torch.relu(x) * 2
    x = torch.randn(64, device=device)
    with fresh_cache_dir():
        sync(device)
        t0 = time.perf_counter()
        torch.compile(tiny)(x)
        sync(device)
        t = time.perf_counter() - t0
    reset_compiler()
    return t



# CPU only: max-autotune's C++ GEMM template competes only when the weight is a constant,
# that is with freezing (inference; torch/_inductor/utils.py, use_cpp_gemm_template).
# Set through the global config for the whole case: passed as torch.compile(options=...)
# freezing did not take effect in our runs (torch 2.13, CPU).
FREEZING = "max-autotune+freezing"


def compile_for(target, mode: str):
    if mode == FREEZING:
        return torch.compile(target)          # the settings come from mode_config()
    return torch.compile(target, mode=mode)


def mode_config(mode: str):
    import torch._inductor.config as icfg
    if mode == FREEZING:
        return icfg.patch(freezing=True, max_autotune=True, coordinate_descent_tuning=True)
    return contextlib.nullcontext()


def tolerance(dtype) -> float:
    return 2e-3 if dtype in (torch.bfloat16, torch.float16) else 1e-5


def measure_eager(runner: Runner, count_ops: bool) -> dict:
    dev = runner.device
    reset_compiler()
    h0 = held_mib(dev)
    ms = bench_ms(runner, runner.target)
    peak = gpu_memory(runner, runner.target) if dev.type == "cuda" else cpu_memory(runner, runner.target)
    row = {"kind": "timing", "workload": runner.wl.name, "mode": "eager", "ms": ms, "peak_mib": peak,
           "held_mib": max(0.0, held_mib(dev) - h0)}
    if count_ops and dev.type == "cuda":
        row["gpu_ops"] = gpu_ops(runner, runner.target)
    return row


def measure_compiled(runner: Runner, mode: str, eager_ms: float, *, count_ops: bool = False,
                     check_seed: int = 1234) -> tuple[dict, list[dict]]:
    wl, dev = runner.wl, runner.device
    reset_compiler()
    h0 = held_mib(dev)
    row = {"kind": "timing", "workload": wl.name, "mode": mode}
    codes: list[str] = []
    with fresh_cache_dir(), mode_config(mode):
        compiled = compile_for(runner.target, mode)
        with capture_output_code(codes):
            row["compile_cold_s"] = time_first_call(runner, compiled)
        for _ in range(3):              # reduce-overhead records its CUDA graph on a later call
            runner.step(compiled)
        # correctness first: fresh random inputs, compiled vs eager vs a float reference
        runner.refresh_inputs(check_seed)
        got = runner.result(compiled)
        want = runner.result(runner.target)
        ref = runner.reference_result()
        err_c, err_e = rel_err(got, ref), rel_err(want, ref)
        row["err_vs_eager"] = rel_err(got, want)
        row["err_compiled"], row["err_eager"] = err_c, err_e
        row["correct"] = bool(err_c <= 2 * err_e + tolerance(wl.dtype))
        if row["correct"] and dev.type == "cpu":
            # a shared CPU's load drifts: time eager and compiled alternately, so both see the same load
            row["eager_ms"], row["ms"] = bench_pair_ms(runner, compiled)
            row["vs_eager"] = row["eager_ms"] / row["ms"]
            row["peak_mib"] = cpu_memory(runner, compiled)
        elif row["correct"]:
            row["ms"] = bench_ms(runner, compiled)
            row["vs_eager"] = eager_ms / row["ms"]
            if dev.type == "cuda":
                row["peak_mib"] = gpu_memory(runner, compiled)
                if count_ops:
                    row["gpu_ops"] = gpu_ops(runner, compiled)
            else:
                row["peak_mib"] = cpu_memory(runner, compiled)
        else:
            print(f"  {wl.name}/{mode}: compiled result differs from eager beyond tolerance "
                  f"(err {err_c:.2e} vs eager {err_e:.2e}); not timed", file=sys.stderr)
        got = want = ref = None
        row["held_mib"] = max(0.0, held_mib(dev) - h0)
        del compiled
        # warm: same on-disk cache, nothing in memory
        reset_compiler()
        before = cache_hits()
        compiled = compile_for(runner.target, mode)
        row["compile_warm_s"] = time_first_call(runner, compiled)
        after = cache_hits()
        row["warm_fxgraph_hits"] = after["fxgraph_hit"] - before["fxgraph_hit"]
        del compiled
        reset_compiler()
    krows = kernel_rows(codes, wl.name, mode)
    row["kernels"], row["extern_calls"] = launches(krows)
    return row, krows


METRICS = {
    "ms": {"unit": "ms", "noise": 0.15, "better": "lower", "fmt": ".3f"},
    "eager_ms": {"unit": "ms", "noise": 0.15, "better": "lower", "fmt": ".3f"},
    "vs_eager": {"unit": "×", "noise": 0.15, "better": "higher", "fmt": ".2f"},
    "compile_cold_s": {"unit": "s", "noise": 0.5, "better": "lower", "fmt": ".1f"},
    "compile_warm_s": {"unit": "s", "noise": 0.5, "better": "lower", "fmt": ".1f"},
    "peak_mib": {"unit": "MiB", "noise": 0.1, "better": "lower", "fmt": ".0f"},
    "held_mib": {"unit": "MiB", "noise": 0.25, "better": "lower", "fmt": ".0f", "check": False},
    "gpu_ops": {"unit": "ops", "noise": 0.0, "fmt": "d"},
    "kernels": {"unit": "launches", "noise": 0.0, "fmt": "d"},
    "extern_calls": {"unit": "calls", "noise": 0.0, "fmt": "d"},
    "launches": {"unit": "launches", "noise": 0.0, "fmt": "d"},
    "correct": {"unit": "", "noise": 0.0},
    "err_vs_eager": {"unit": "", "noise": 1.0, "fmt": ".1e", "check": False},
    "err_compiled": {"unit": "", "noise": 1.0, "fmt": ".1e", "check": False},
    "err_eager": {"unit": "", "noise": 1.0, "fmt": ".1e", "check": False},
    "warm_fxgraph_hits": {"unit": "hits", "noise": 0.0, "fmt": "d", "check": False},
    "warm_fxgraph_misses": {"unit": "misses", "noise": 0.0, "fmt": "d", "check": False},
    "cold_fxgraph_misses": {"unit": "misses", "noise": 0.0, "fmt": "d", "check": False},
    "process_cold_s": {"unit": "s", "noise": 0.5, "better": "lower", "fmt": ".1f", "check": False},
    "import_s": {"unit": "s", "noise": 0.5, "better": "lower", "fmt": ".1f", "check": False},
    "warm_kernels_match": {"unit": "", "noise": 0.0},
    "tbps": {"unit": "TB/s", "noise": 0.1, "better": "higher", "fmt": ".2f"},
    "gbps": {"unit": "GB/s", "noise": 0.15, "better": "higher", "fmt": ".1f"},
}


def clean(row: dict) -> dict:
    """JSON-safe: floats rounded to what the page can show, non-finite numbers become null."""
    out = {}
    for k, v in row.items():
        if isinstance(v, float):
            v = None if not math.isfinite(v) else float(f"{v:.6g}")
        out[k] = v
    return out


# ------------------------------------------------------------------------ the four workloads

def workloads(device: torch.device, size: str) -> list[Workload]:
    """size: 'gpu' (fills an H200 without taking seconds per call), 'cpu' (2 cores), 'tiny' (smoke test)."""
    from models import ConvBlock, GPT2Block, LayerNormMLP, pointwise_chain, randomize_norms

    S = {
        "gpu": dict(pw=(8192, 8192), mlp=(16, 1024, 1024, 4096), gpt=(8, 1024, 1024, 16), conv=(32, 128, 56)),
        "cpu": dict(pw=(2048, 2048), mlp=(4, 256, 512, 2048), gpt=(2, 256, 512, 8), conv=(8, 64, 28)),
        "tiny": dict(pw=(64, 256), mlp=(2, 16, 64, 256), gpt=(2, 16, 64, 4), conv=(2, 8, 8)),
    }[size]
    low = torch.bfloat16 if device.type == "cuda" else torch.float32

    def rand(*shape, dtype):
        return torch.randn(*shape, device=device, dtype=dtype)

    def pw(dev, dtype):
        M, N = S["pw"]
        return pointwise_chain, [rand(M, N, dtype=dtype), rand(N, dtype=dtype), rand(M, N, dtype=dtype)]

    def mlp(dev, dtype):
        B, T, D, H = S["mlp"]
        return randomize_norms(LayerNormMLP(D, H)).to(dev, dtype), [rand(B, T, D, dtype=dtype)]

    def gpt(dev, dtype):
        B, T, D, H = S["gpt"]
        return randomize_norms(GPT2Block(D, H)).to(dev, dtype), [rand(B, T, D, dtype=dtype)]

    def conv(dev, dtype):
        N, C, HW = S["conv"]
        m = randomize_norms(ConvBlock(C)).eval().to(dev, dtype).to(memory_format=torch.channels_last)
        x = rand(N, C, HW, HW, dtype=dtype).to(memory_format=torch.channels_last)
        return m, [x]

    M, N = S["pw"]
    return [
        Workload("pointwise", pw, dtype=torch.float32, bytes_min=3 * M * N * 4 + N * 4,
                 extra={"shape": f"{M}x{N} fp32"}),
        Workload("mlp", mlp, dtype=low,
                 extra={"shape": "B{} T{} d{} h{}".format(*S["mlp"])}),
        Workload("gpt2_fwd", gpt, dtype=low, extra={"shape": "B{} T{} d{} heads{}".format(*S["gpt"])}),
        Workload("conv", conv, dtype=low, extra={"shape": "N{} C{} {}x{} NHWC".format(*S["conv"], S["conv"][2])}),
        Workload("gpt2_train", gpt, train=True, dtype=low, extra={"shape": "B{} T{} d{} heads{}".format(*S["gpt"])}),
    ]
