"""How fast can any kernel read a weight of the inference GEMMs' sizes? The producer behind
weight_read_h100.py (and any other card's dataset of the same rows).

inference_gemm.py's "read_w" rows time one plain read of each weight (_read.py) and find that on the
smallest, 4096 x 4096 fp16 (32 MiB), it reaches well under the 0.7 of the copy bandwidth that issue 12
asks of the GEMM's weight stream at M <= 16. Is that the kernel or the size? Here every weight is read
by several kernels that differ in how they keep memory busy, and by two library calls:

  read_w       _read.py's kernel, the faster of its two block sizes (one block per program, 16-byte loads);
  persistent   read_persistent below: one program per SM slot (PER_SM per SM), each walking the tensor with
               a grid stride and issuing UNROLL independent loads before it adds them; the fastest of
               PERSISTENT settings at each size (column "config");
  torch_sum    torch.sum with fp32 accumulation;
  cublas_m1    torch.nn.functional.linear with one row of x: cuBLAS's kernel for the M = 1 cell, whose
               traffic is the weight;
  copy_w       a copy of the weight (read + write bytes, as the copy bandwidth counts them).

Each is timed with L2 flushed before every call, in the two states of l2_flush.py: "dirty" (do_bench's
flush: L2 left full of modified lines, which the timed kernel's misses must write back) and "clean" (the
same flush, then a read of the buffer). ROUNDS rounds in turn, best median kept. Sizes: the four weights
of the inference GEMMs and a 1 GiB one (16384 x 32768), where any fixed cost per call is negligible.

Rows "fit": for each kernel and state, a straight line t = fixed + bytes / bandwidth through its five
times (least squares): "fixed_us" is what a call costs beyond its bytes, "incr_tbps" the bandwidth of its
bytes. Fixed cost is what separates a short read from a long one: at 32 MiB a few microseconds are a
large share of the call.
"""

from __future__ import annotations

import sys

import triton
import triton.language as tl

SHAPES = ((4096, 4096), (11008, 4096), (4096, 11008), (8192, 8192), (16384, 32768))
# (PER_SM, BLOCK, UNROLL, num_warps): from a probe of 12 settings on an H100 (2026-12-07); the three
# slowest there are left out, the rest span 2 to 8 programs per SM and 2 to 8 loads in flight per thread
PERSISTENT = (
    (8, 2048, 4, 8),
    (8, 4096, 4, 16),
    (8, 4096, 2, 8),
    (8, 1024, 8, 4),
    (4, 2048, 4, 8),
    (4, 4096, 4, 16),
    (4, 4096, 2, 8),
    (2, 4096, 4, 16),
)
ROUNDS = 3
STATES = ("dirty", "clean")
IMPLS = ("read_w", "persistent", "torch_sum", "cublas_m1", "copy_w")


@triton.jit
def read_persistent(src, out, n, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    """Sum of src[i] over every i this program visits: tiles of UNROLL * BLOCK elements, pid-th of each
    stretch of num_programs tiles. The UNROLL loads of a tile are independent, so they are in flight
    together; the sum keeps them from being dropped. One fp32 written per program."""
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    step = nprog.to(tl.int64) * BLOCK * UNROLL
    for base in range(pid.to(tl.int64) * BLOCK * UNROLL, n, step):
        for u in tl.static_range(UNROLL):
            offs = base + u * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(src + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(out + pid, tl.sum(acc, axis=0))


def persistent_call(t, programs: int, block: int, unroll: int, warps: int):
    """A zero-argument call reading contiguous t with read_persistent on `programs` programs, checked
    first program by program: each sum must match torch's sum of the elements that program visits, so
    a tile skipped or read twice is refused here, before anything is timed."""
    import torch

    if not t.is_contiguous():
        raise ValueError(f"persistent_call: needs a contiguous tensor, got strides {t.stride()}")
    if programs < 1 or block < 1 or unroll < 1:
        raise ValueError(f"persistent_call: programs, block and unroll must be >= 1, got {programs}, {block}, {unroll}")
    flat = t.reshape(-1)
    n = flat.numel()
    out = torch.empty(programs, device=t.device, dtype=torch.float32)

    def call():
        read_persistent[(programs,)](flat, out, n, BLOCK=block, UNROLL=unroll, num_warps=warps)
        return out

    tile = block * unroll
    stretches = triton.cdiv(n, tile * programs)
    ref = torch.nn.functional.pad(flat.float(), (0, stretches * programs * tile - n)).view(stretches, programs, tile)
    want = ref.sum(dim=(0, 2))
    err = (call() - want).abs() - 1e-5 * ref.abs().sum(dim=(0, 2)) - 1e-6
    if err.max().item() > 0:
        bad = int(err.argmax())
        raise RuntimeError(
            f"read_persistent {programs} programs, BLOCK={block}, UNROLL={unroll}: program {bad} sums to "
            f"{out[bad].item()}, torch to {want[bad].item()}"
        )
    return call


def fit_line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares t = fixed + bytes / bw through (bytes, seconds) points: (fixed in s, bw in bytes/s)."""
    if len(points) < 2 or len({b for b, _ in points}) < 2:
        raise ValueError(f"fit_line: needs points at two or more sizes, got {points}")
    k = len(points)
    mb = sum(b for b, _ in points) / k
    mt = sum(t for _, t in points) / k
    slope = sum((b - mb) * (t - mt) for b, t in points) / sum((b - mb) ** 2 for b, _ in points)
    if slope <= 0:
        raise ValueError(f"fit_line: time does not grow with size: {points}")
    return mt - slope * mb, 1 / slope


def main(argv, *, name: str, doc: str, card: str | None = None) -> int:
    from sitekit import data, measure

    args = data.arg_parser(doc, name).parse_args(argv)
    measure.need_gpu(name)
    import torch

    from measure.triton_kernel_practice._read import read_calls

    gpu = torch.cuda.get_device_name()
    if card and card not in gpu:
        sys.exit(f"{name}: measured on an {card} only; this GPU is {gpu}")
    torch.manual_seed(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    copy, _ = measure.copy_tbps()
    rows = [{"kind": "time", "impl": "copy", "shape": "1 GiB", "state": "dirty", "tbps": copy}]
    times = {}  # (impl, state) -> [(bytes counted, seconds)]
    shapes = SHAPES[:2] if args.quick else SHAPES
    for N, K in shapes:
        w = torch.randn(N, K, device="cuda", dtype=torch.float16)
        x = torch.randn(1, K, device="cuda", dtype=torch.float16)
        buf = torch.empty_like(w)
        wb = N * K * w.element_size()
        total = w.float().sum().item()
        got = w.sum(dtype=torch.float32).item()
        if abs(got - total) > 1e-3 * w.float().abs().sum().item():
            sys.exit(f"{name}: torch.sum {N}x{K}: {got} against {total}")
        err = measure.rel_err(torch.nn.functional.linear(x, w), x.float() @ w.float().t())
        if not err < 2e-3:
            sys.exit(f"{name}: cuBLAS M = 1 {N}x{K}: relative error {err:.2e}")
        fns = {f"read_w {k.split()[-1]}": f for k, f in read_calls(w).items()}
        for p, b, u, wp in PERSISTENT[:2] if args.quick else PERSISTENT:
            fns[f"persistent {p}x{b}x{u} w{wp}"] = persistent_call(w, p * sms, b, u, wp)
        fns["torch_sum"] = lambda: w.sum(dtype=torch.float32)
        fns["cublas_m1"] = lambda: torch.nn.functional.linear(x, w)
        fns["copy_w"] = lambda: buf.copy_(w)
        best = {(k, st): float("inf") for k in fns for st in STATES}
        spread = {(k, st): [] for k in fns for st in STATES}
        for r in range(1 if args.quick else ROUNDS):
            order = list(fns)[r % len(fns) :] + list(fns)[: r % len(fns)]
            for k in order:
                for st in STATES:
                    t = measure.bench_l2(fns[k], st)
                    best[k, st] = min(best[k, st], t)
                    spread[k, st].append(t)
        for impl in IMPLS:
            for st in STATES:
                cands = [k for k in fns if k.split()[0] == impl]
                k = min(cands, key=lambda c: best[c, st])
                t = best[k, st] / 1e3
                nb = 2 * wb if impl == "copy_w" else wb
                tb = nb / t / 1e12
                row = {
                    "kind": "time",
                    "impl": impl,
                    "shape": f"{N}x{K}",
                    "state": st,
                    "mib": wb / 2**20,
                    "us": t * 1e6,
                    "tbps": tb,
                    "frac_copy": tb / copy,
                    "us_spread": measure.spread(spread[k, st]),
                }
                if len(cands) > 1:
                    row["config"] = k.split(" ", 1)[1]
                rows.append(row)
                times.setdefault((impl, st), []).append((nb, t))
        here = {(r["impl"], r["state"]): r["frac_copy"] for r in rows if r.get("shape") == f"{N}x{K}"}
        line = "  ".join(f"{impl} {here[impl, 'dirty']:.2f}/{here[impl, 'clean']:.2f}" for impl in IMPLS)
        print(f"{N}x{K} ({wb / 2**20:.0f} MiB), x copy, dirty/clean L2: {line}", flush=True)
        del w, x, buf
    for (impl, st), pts in times.items():
        fixed, bw = fit_line(pts)
        rows.append(
            {"kind": "fit", "impl": impl, "shape": "fit", "state": st, "fixed_us": fixed * 1e6, "incr_tbps": bw / 1e12}
        )
        print(f"fit {impl:<10} {st:<5} fixed {fixed * 1e6:5.1f} us, {bw / 1e12:.2f} TB/s beyond it", flush=True)
    metrics = {
        "us": {"unit": "µs", "noise": 0.1, "fmt": ".1f"},
        "tbps": {"unit": "TB/s", "noise": 0.05, "fmt": ".2f"},
        "frac_copy": {"unit": "×", "noise": 0.1, "fmt": ".2f"},
        "us_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        # a line through five points, the smallest a few tens of microseconds: its intercept moves by
        # about a microsecond when one small size does; shown, and gated only loosely
        "fixed_us": {"unit": "µs", "noise": 0.4, "fmt": ".1f"},
        "incr_tbps": {"unit": "TB/s", "noise": 0.1, "fmt": ".2f"},
    }
    ds = data.new(name, metrics, rows, params={"mib": {"fmt": ".0f"}})
    return data.save(ds, args.out, quick=args.quick)
