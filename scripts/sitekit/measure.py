"""What every producer under scripts/measure/ shares: importing the page's snippets, GPU checks, timing.

The producers import the page's own snippet files, so what is measured is exactly the code the page
shows. Every module loaded from snippets/ or scripts/measure/ is a *source* of the dataset:
`data.new()` records a content hash of each, and tests/test_data.py fails when a committed dataset's
sources no longer hash the same (the data is then older than its code: re-measure, or list it in
data/stale.yml, which the page shows beside the provenance line).

Timing: `triton.testing.do_bench` medians (it flushes L2 before every repetition), competing
versions timed in turn over several rounds, each keeping its best median (`bench_rounds`), with the
round-to-round spread kept when a ratio sits near a target (`bench_each_round`, `spread`).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import re
import sys
import tokenize
from pathlib import Path

from . import ROOT, SNIPPETS


def snippet(name: str):
    """Import snippets/<name>.py (e.g. "triton_kernel_practice/softmax") once per process.

    The module is registered in sys.modules (`@triton.jit` reads a kernel's source through its module),
    so data.new() sees it as a source of the dataset. Its checks sit under `__main__` and do not run."""
    path = SNIPPETS / f"{name}.py"
    if not path.is_file():
        raise SystemExit(f"snippet {path.relative_to(ROOT)} not found (expected snippets/<article>/<file>.py)")
    key = "snippet_" + name.replace("/", "__")
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[key]
        raise
    return mod


def snippet_path(article: str) -> Path:
    """Put snippets/<article>/ on sys.path, for snippet files that import each other by plain name."""
    d = SNIPPETS / article
    if not d.is_dir():
        raise SystemExit(f"no snippet folder {d.relative_to(ROOT)}")
    if str(d) not in sys.path:
        sys.path.insert(0, str(d))
    return d


META_LINE = re.compile(rb"(?m)^META = \{.*\}[ \t]*\n?")


def code_text(text: str) -> str:
    """Python source without what cannot change what it runs: comments, trailing spaces, and lines left
    empty (blank lines and comment-only lines). Lines inside a multi-line string are kept as they are, so
    a docstring's text still counts. The comments are found with tokenize, but only their positions are
    used, so the result is the same on every Python version (3.12's tokenizer splits f-strings into other
    tokens than 3.11's; the GPU machine runs 3.12, CI 3.11)."""
    cut: dict[int, int] = {}  # row -> column where its comment starts
    inside: set[int] = set()  # rows 2..n of a token that spans several rows (a multi-line string)
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            cut[tok.start[0]] = tok.start[1]
        elif tok.end[0] > tok.start[0]:
            inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    out = []
    for row, line in enumerate(text.splitlines(), 1):
        if row in inside:
            out.append(line)
            continue
        kept = line[: cut[row]].rstrip() if row in cut else line.rstrip()
        if kept:
            out.append(kept)
    return "\n".join(out) + "\n"


def source_hash(content: bytes, path: str | Path | None = None) -> str:
    """sha256 of a source file as far as it can change a measurement. Left out: the META dict (a
    producer's tier or budget does not change what it measures) and, in a Python file, comments and
    blank lines (`code_text`), so correcting a comment in a kernel the page shows leaves its data
    current. Any other file (a C source), a Python file that does not tokenize, and content given without
    a path are hashed as they are, less the META dict."""
    return _source_hash(content, path is not None and Path(path).suffix == ".py")


@functools.lru_cache(maxsize=4096)
def _source_hash(content: bytes, python: bool) -> str:
    """source_hash by content: tokenizing is the slow part, and the stale checks hash the same few hundred
    files once per dataset that records them."""
    body = META_LINE.sub(b"", content)
    if python:
        try:
            body = code_text(body.decode("utf-8")).encode("utf-8")
        except (UnicodeDecodeError, SyntaxError, tokenize.TokenError):
            pass
    return hashlib.sha256(body).hexdigest()


def sources() -> dict[str, str]:
    """{repository path: source_hash} of every module loaded so far from snippets/ or scripts/measure/."""
    roots = (SNIPPETS, ROOT / "scripts" / "measure")
    out = {}
    for mod in list(sys.modules.values()):
        f = getattr(mod, "__file__", None)
        if not f:
            continue
        p = Path(f).resolve()
        if p.suffix == ".py" and any(p.is_relative_to(r) for r in roots) and p.name != "__init__.py":
            out[str(p.relative_to(ROOT))] = source_hash(p.read_bytes(), p)
    return dict(sorted(out.items()))


def need_gpu(script: str, min_cc: int = 9) -> None:
    """Exit with one line unless a CUDA GPU of compute capability >= min_cc is usable."""
    try:
        import torch
    except ImportError:
        sys.exit(f"{script}: needs torch with CUDA (torch is not installed)")
    if not torch.cuda.is_available():
        sys.exit(f"{script}: needs a CUDA GPU (torch.cuda.is_available() is False)")
    if torch.cuda.get_device_capability()[0] < min_cc:
        sys.exit(f"{script}: needs compute capability {min_cc}.0 or newer; found {torch.cuda.get_device_name()}")


def bench(fn, warmup: int = 25, rep: int = 100) -> float:
    """Median time in ms of do_bench (warm-up and repetition arguments are milliseconds)."""
    import torch
    from triton.testing import do_bench

    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def bench_l2(fn, state: str = "dirty", reps: int = 100, warmup: int = 10) -> float:
    """Median time in ms of fn with L2 flushed before every call, in one of two states.

    "dirty": do_bench's flush (triton.testing: zero a 256 MB buffer), which leaves L2 full of modified
    lines of that buffer; the timed kernel's first misses must write them back to DRAM.
    "clean": the same zeroing, then a read of the whole buffer, which leaves L2 full of unmodified lines:
    the same capacity taken, nothing to write back. Only the call itself sits between the events."""
    import torch

    if state not in ("dirty", "clean"):
        raise ValueError(f"bench_l2: state must be 'dirty' or 'clean', got {state!r}")
    buf = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for _ in range(warmup):
        fn()
    for i in range(reps):
        buf.zero_()
        if state == "clean":
            buf.sum()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2]


def bench_each_round(fns: dict, rounds: int = 3, spans: dict | None = None, **kw) -> dict:
    """Time several versions in turn, `rounds` times: {name: [median of round 1, round 2, ...]}. Each
    round starts one version later than the one before (a rotation of the order).
    With `spans` (a dict), each version's (start, end) perf_counter() readings around its timings are
    appended to spans[name]: the windows in which a ClockLog's samples belong to that version."""
    import time

    times = {name: [] for name in fns}
    names = list(fns)
    for r in range(rounds):
        # round r starts with version r (mod the count): no version is always the one timed right after a
        # settle() or a correctness check, whose clock state differs from the rest of the round
        for name in names[r % len(names) :] + names[: r % len(names)]:
            fn = fns[name]
            t0 = time.perf_counter()
            times[name].append(bench(fn, **kw))
            if spans is not None:
                spans.setdefault(name, []).append((t0, time.perf_counter()))
    return times


def graphed(fn):
    """fn captured once in a CUDA graph; returns the graph's replay. Timing the replay (with bench, so with
    the same L2 flush) leaves out the host: the launch arguments were recorded at capture, and the replay
    is one host call however much Python fn runs. fn must be warmed up and must keep using the same
    buffers (it is replayed with the inputs it was captured with).

    scripts/measure/triton_kernel_practice/softmax_launch.py predates this helper and keeps its own
    graph_ms (rotating inputs, no flush) and host_us; moving it onto these would re-hash that producer
    and stale its data, so it waits for that dataset's next re-measurement."""
    import torch

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream, as capture requires
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    torch.cuda.synchronize()
    return graph.replay


def host_us(fn, calls: int = 100) -> float:
    """Host time of one call of fn in µs: `calls` calls issued while a spin kernel holds the GPU, so that
    all of them are queued before any of their kernels runs and no call waits on the GPU. What is left is
    the host's own cost: Python, argument handling, the driver's launch."""
    import time

    import torch

    fn()
    torch.cuda.synchronize()
    torch.cuda._sleep(int(4e7))  # 20 ms of GPU spin at the H200's 1.98 GHz (longer at lower clocks)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t = time.perf_counter() - t0
    torch.cuda.synchronize()
    return t / calls * 1e6


# nvidia-smi's clock, power and utilization fields, sampled while a producer runs (sitekit.measure.ClockLog).
# The driver refreshes them about every 100 ms, so sampling faster only repeats values.
CLOCK_QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active,utilization.gpu"
IDLE = 0x1  # clocks_event_reasons bits, as nvidia-smi --help-query-gpu lists them
SW_POWER_CAP = 0x4
SLOWDOWN = 0x8 | 0x20 | 0x40 | 0x80  # HW slowdown, SW thermal, HW thermal, HW power brake


def parse_clock_sample(line: str) -> dict | None:
    """One line of `nvidia-smi --query-gpu=<CLOCK_QUERY> --format=csv,noheader,nounits`, e.g.
    "1440, 438.24, 61, 0x0000000000000004, 100" (SM clock, power, temperature, clock-event reasons,
    utilization): {sm_mhz, power_w, temp_c, reasons, util_pct}; None for a line that is not such a sample
    (a header, an error, "[N/A]" in one of the first four fields). A line of the first four fields alone
    (the query before utilization was added), or one whose utilization is "[N/A]" (a driver or a
    virtualised GPU that does not report it), gives a sample without util_pct: busy() then goes by the
    idle reason alone, rather than every sample being dropped and the producer stopping."""
    parts = [x.strip() for x in line.split(",")]
    if len(parts) not in (4, 5):
        return None
    try:
        sample = {
            "sm_mhz": float(parts[0]),
            "power_w": float(parts[1]),
            "temp_c": float(parts[2]),
            "reasons": int(parts[3], 16),
        }
    except ValueError:
        return None
    if len(parts) == 5:
        try:
            sample["util_pct"] = float(parts[4])
        except ValueError:
            pass
    return sample


def busy(sample: dict) -> bool:
    """A sample of the GPU at work: the driver does not give "GPU idle" as a clock-event reason, and (where
    the sample has it) a kernel ran during nvidia-smi's last utilization period (1/6 s to 1 s). The idle
    reason alone lets through samples taken while the host compiles or prepares the next case, whose clock
    is on its way down to the 345 MHz idle clock."""
    return not sample["reasons"] & IDLE and sample.get("util_pct", 100.0) > 0


def clock_summary(samples: list[dict]) -> dict | None:
    """What the GPU's clocks did while it was busy (see busy()):
    SM clock [min, median, max] in MHz, power [median, max] in W, the hottest temperature, and the
    fraction of busy samples in which the driver held the clock down for its software power cap, or
    for a hardware slowdown or thermal reason. None when no sample was busy."""
    at_work = [s for s in samples if busy(s)]
    if not at_work:
        return None

    def med(xs):
        xs = sorted(xs)
        return xs[len(xs) // 2]

    sm = [s["sm_mhz"] for s in at_work]
    pw = [s["power_w"] for s in at_work]
    n = len(at_work)
    return {
        "samples": n,
        "sm_mhz": [min(sm), med(sm), max(sm)],
        "power_w": [round(med(pw), 1), round(max(pw), 1)],
        "temp_c_max": max(s["temp_c"] for s in at_work),
        "power_capped": round(sum(bool(s["reasons"] & SW_POWER_CAP) for s in at_work) / n, 3),
        "slowdown": round(sum(bool(s["reasons"] & SLOWDOWN) for s in at_work) / n, 3),
    }


class ClockLog:
    """Sample the GPU's SM clock, power, temperature, clock-event reasons and utilization with nvidia-smi in the
    background while a block runs:

        with ClockLog() as log:
            t0 = time.perf_counter(); run(); t1 = time.perf_counter()
        log.summary()            # the whole block
        log.summary(t0, t1)      # the samples taken between two perf_counter() readings

    Only reads: it never sets a clock or a limit. Without nvidia-smi (a CPU machine) it records
    nothing and summary() is None."""

    def __init__(self, interval_ms: int = 100, gpu: int = 0):
        self.cmd = [
            "nvidia-smi",
            f"--id={gpu}",
            f"--query-gpu={CLOCK_QUERY}",
            "--format=csv,noheader,nounits",
            f"--loop-ms={interval_ms}",
        ]
        self.samples: list[tuple[float, dict]] = []
        self.error: str | None = None
        self._proc = None
        self._thread = None

    def _read(self):
        import time

        for line in self._proc.stdout:
            s = parse_clock_sample(line)
            if s is not None:
                self.samples.append((time.perf_counter(), s))

    def __enter__(self):
        import subprocess
        import threading

        try:
            self._proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError as e:
            self.error = f"nvidia-smi could not start: {e}"
            return self
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except Exception:
                self._proc.kill()
            self._thread.join(timeout=5)
        return False

    def summary(self, t0: float | None = None, t1: float | None = None) -> dict | None:
        picked = [s for t, s in self.samples if (t0 is None or t >= t0) and (t1 is None or t <= t1)]
        return clock_summary(picked)

    def windows(self, spans: list[tuple[float, float]]) -> dict | None:
        """The summary of the samples that fall inside any of several (t0, t1) spans."""
        picked = [s for t, s in self.samples if any(a <= t <= b for a, b in spans)]
        return clock_summary(picked)


def settle(seconds: float = 1.0) -> None:
    """Run dense bf16 matrix products for `seconds` so the GPU's clock reaches the state sustained
    tensor-core work holds it in, before versions are timed against each other. On the H200 the first
    fraction of a second of dense GEMMs runs at the 1,980 MHz boost clock and the driver's software
    power cap then brings the SM clock down (seen with ClockLog); without this, whichever version is
    timed first in the first round gets the boost, and a best-of-rounds figure keeps it."""
    import time

    import torch

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(8):
            torch.mm(a, a)
        torch.cuda.synchronize()
    del a


def spread(ts: list[float]) -> float:
    """Relative round-to-round spread of one figure: (slowest - fastest) / fastest."""
    return (max(ts) - min(ts)) / min(ts) if ts and min(ts) > 0 else 0.0


def bench_rounds(fns: dict, rounds: int = 3, **kw) -> dict:
    """Each version's best median over `rounds` rounds in turn: a ratio between two versions then does
    not depend on which ran first or on a passing slow spell of the host."""
    return {name: min(ts) for name, ts in bench_each_round(fns, rounds, **kw).items()}


def rel_err(out, ref) -> float:
    import torch

    if not torch.isfinite(out).all():
        return float("inf")
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def copy_tbps(nbytes: int = 1 << 30) -> tuple[float, float]:
    """Device-to-device copy bandwidth (bytes read + bytes written), the memory ceiling: (TB/s, ms)."""
    import torch

    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    assert torch.equal(dst, src)
    ms = min(bench(lambda: dst.copy_(src)) for _ in range(2))
    return 2 * nbytes / ms / 1e9, ms


def _unspecialized(kernel) -> tuple[set, set]:
    """Names in the kernel's do_not_specialize and do_not_specialize_on_alignment lists, from a JITFunction's
    parameters or, under TRITON_INTERPRET=1, from the options the InterpretedFunction keeps."""
    params = getattr(kernel, "params", None)
    if params is not None:
        return (
            {p.name for p in params if p.do_not_specialize},
            {p.name for p in params if p.do_not_specialize_on_alignment},
        )
    kw = getattr(kernel, "kwargs", {}) or {}

    def names(key):
        return {kernel.arg_names[a] if isinstance(a, int) else a for a in (kw.get(key) or ())}

    return names("do_not_specialize"), names("do_not_specialize_on_alignment")


def launch_signature(kernel, args: dict, constants: dict) -> tuple[dict, dict, dict]:
    """(signature, constants, attrs) for triton.compile, specialized the way Triton's launcher specializes
    a launch of `kernel` with these argument values, so that a kernel compiled off the GPU is the one that
    runs. `args` maps each non-constexpr argument to its value: an int (sizes, strides), a float, or a type
    string for a pointer ("*fp16", taken as 16-byte aligned, as every tensor PyTorch's caching allocator
    returns is) or a tensor descriptor (passed through). Ints go through Triton's own specialization: a
    multiple of 16 is marked divisible by 16 and 1 becomes a compile-time constant. The kernel's own
    `do_not_specialize` and `do_not_specialize_on_alignment` lists are honoured as the launcher honours
    them: the first drops both hints (and a pointer's alignment), the second the divisibility one.
    Leaving pointers unmarked changes the code: without their alignment the compiler cannot use 16-byte
    copies, so a pointer-based loop gets neither vector loads nor cp.async."""
    import inspect

    from triton.backends.compiler import BaseBackend
    from triton.runtime.jit import native_specialize_impl

    signature, consts, attrs = {}, dict(constants), {}
    dns, dnsa = _unspecialized(kernel)
    params = inspect.signature(getattr(kernel, "fn", kernel)).parameters
    for i, name in enumerate(kernel.arg_names):
        p = params[name]
        if name not in consts and "constexpr" in str(p.annotation) and p.default is not inspect.Parameter.empty:
            consts[name] = p.default  # a constexpr left at its default, as a launch would leave it
        if name in consts:
            signature[name] = "constexpr"
            continue
        if name not in args:
            raise KeyError(f"launch_signature: no value for argument {name!r} of {kernel.fn.__name__}")
        v = args[name]
        specialize, align = name not in dns, name not in dnsa
        if isinstance(v, str):
            signature[name] = v
            if v.startswith("*") and specialize and align:
                attrs[(i,)] = [["tt.divisibility", 16]]
        elif isinstance(v, float):
            signature[name] = "fp32"
        elif isinstance(v, int) and not isinstance(v, bool):
            ty, key = native_specialize_impl(BaseBackend, v, False, specialize, align)
            if ty == "constexpr":
                signature[name] = "constexpr"
                consts[name] = key
            else:
                signature[name] = ty
                if key == "D":
                    attrs[(i,)] = [["tt.divisibility", 16]]
        else:
            raise TypeError(f"launch_signature: {name}={v!r}: expected an int, a float or a type string")
    return signature, consts, attrs


def sm90_compile(
    kernel,
    signature: dict,
    constants: dict,
    attrs: dict,
    num_warps: int,
    num_stages: int,
    *,
    gluon: bool = False,
    maxnreg: int | None = None,
) -> dict:
    """Compile a @triton.jit kernel (or a @gluon.jit one, gluon=True) for sm_90 on any machine (no GPU
    needed) and read what the cubin uses: {"regs", "spill_bytes" (stack), "smem_bytes", "num_warps",
    "sass", "ptx"}. maxnreg: the launch's register cap per thread, as `maxnreg=` at launch (warp-specialized
    kernels hand registers between partitions under it). cuobjdump comes with the Triton wheel. The caller
    sets TRITON_INTERPRET=0 before importing its kernels."""
    import os
    import subprocess
    import tempfile

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if gluon:
        from triton.experimental.gluon._runtime import GluonASTSource as ASTSource
    k = triton.compile(
        ASTSource(kernel, signature, constants, attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": num_warps, "num_stages": num_stages, **({"maxnreg": maxnreg} if maxnreg else {})},
    )
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(k.asm["cubin"])
    try:
        usage = subprocess.run(
            [str(tool), "--dump-resource-usage", f.name], capture_output=True, text=True, check=True
        ).stdout
        sass = subprocess.run([str(tool), "-sass", f.name], capture_output=True, text=True, check=True).stdout
    finally:
        os.unlink(f.name)
    return {
        "regs": int(re.search(r"REG:(\d+)", usage).group(1)),
        "spill_bytes": int(re.search(r"STACK:(\d+)", usage).group(1)),
        "smem_bytes": k.metadata.shared,
        "num_warps": k.metadata.num_warps,
        "sass": sass,
        "ptx": k.asm["ptx"],
    }
