#!/usr/bin/env python3
"""The fused softmax's launch settings (rows per program, num_warps) at 4,096 rows, and its launch cost.

Times every candidate (ROWS, num_warps) of snippets/triton_kernel_practice/softmax.py's
softmax_row_kernel on fp32 M=4096 rows, N in {1024, 2048, 4096, 8192, 12288}, beside
torch.softmax, with the same method as the softmax dataset (do_bench median, L2 flushed,
output checked first). Writes every timing to data/triton_kernel_practice/softmax_launch.json and prints the
fastest setting per power-of-two block width. (The launch table the snippet uses, FUSED_LAUNCH, comes
from the wider sweep of softmax_widths.py, at 4,096 and 32,768 rows.)

It also times, at N=1024, the whole Python wrapper against a bare kernel launch and torch,
with do_bench and inside a CUDA graph over eight rotating inputs: the graph leaves out the
host-side launch cost that do_bench's per-call timing can include for a kernel this short.
And it measures that host cost itself: CPU microseconds per call of each launch path (the
wrapper, a bare JIT launch, a precompiled kernel handle, torch.softmax, torch.empty), beside
the GPU time of the 256 MB L2 flush do_bench runs before every timed call. While a call's host
cost stays below the flush, the GPU never waits for the host and do_bench times the kernel alone.

    python scripts/measure/triton_kernel_practice/softmax_launch.py [--out PATH]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 38}

import sys

from sitekit import data  # noqa: E402

from measure.triton_kernel_practice._common import bench_rounds, need_gpu, snippet, write

NAME = "triton_kernel_practice/softmax_launch"

M = 4096
WIDTHS = (1024, 2048, 4096, 8192, 12288)


def candidates(block: int):
    rows = (1, 2, 4, 8) if block <= 2048 else (1,)
    for r in rows:
        for w in (1, 2, 4, 8, 16, 32):
            per_thread = block * r // (32 * w)
            if 4 <= per_thread <= 128:
                yield r, w


def graph_ms(fn, xs, reps: int = 20) -> float:
    """Time one call inside a CUDA graph that runs fn over len(xs) rotating inputs."""
    import torch
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for x in xs:
            fn(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for x in xs:
            fn(x)
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        g.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / len(xs))
    return sorted(times)[len(times) // 2]


def host_us(fns: dict, calls: int = 300, rounds: int = 7) -> dict:
    """CPU time per call of each fn, median of `rounds` loops of `calls` calls. The loops are short
    enough that the GPU queue never fills, so the host never waits on the GPU."""
    import time

    import torch
    out = {}
    for name, fn in fns.items():
        fn()
        torch.cuda.synchronize()
        per = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            per.append((time.perf_counter() - t0) / calls * 1e6)
            torch.cuda.synchronize()
        out[name] = sorted(per)[rounds // 2]
    return out


def flush_us() -> float:
    """GPU time of do_bench's L2 flush: zeroing the 256 MB buffer Triton's driver hands it."""
    import torch
    import triton
    drv = triton.runtime.driver.active
    cache = drv.get_empty_cache_for_benchmark()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(21):
        start.record()
        drv.clear_cache(cache)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3)
    return sorted(times)[10]


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    need_gpu("softmax_launch")
    import torch
    import triton
    sm = snippet("softmax")
    torch.manual_seed(0)
    best: dict[int, tuple[int, int]] = {}
    rows = []
    for N in WIDTHS:
        x = 4 * torch.randn(M, N, device="cuda")
        ref = torch.softmax(x.double(), dim=-1)
        out = torch.empty_like(x)
        BLOCK = triton.next_power_of_2(N)

        def launch(r, w, x=x, out=out, N=N, BLOCK=BLOCK):
            sm.softmax_row_kernel[(triton.cdiv(M, r),)](out, x, x.stride(0), x.stride(1), out.stride(0), M, N,
                                                        BLOCK=BLOCK, ROWS=r, num_warps=w)
            return out
        fns = {"torch": lambda x=x: torch.softmax(x, dim=-1)}
        for r, w in candidates(BLOCK):
            err = (launch(r, w).double() - ref).abs().max().item()
            if not err < 1e-5:
                sys.exit(f"softmax_launch: N={N} ROWS={r} num_warps={w}: max abs error {err:.2e}")
            fns[(r, w)] = lambda r=r, w=w: launch(r, w)
        times = bench_rounds(fns)
        t_torch = times.pop("torch")
        ranked = sorted(times.items(), key=lambda kv: kv[1])
        best[BLOCK] = ranked[0][0]
        for (r, w), t in ranked:
            rows.append({"table": "sweep", "N": N, "ROWS": r, "num_warps": w, "ms": t,
                         "tbps": 2 * 4 * M * N / t / 1e9, "ratio_torch": t_torch / t})
            print(f"N={N:<6} ROWS={r} num_warps={w:<2} {2 * 4 * M * N / t / 1e9:5.2f} TB/s  {t_torch / t:.2f}x torch")
        del x, ref, out

    # N=1024: how much of the wrapper's time is launch cost rather than kernel time?
    xs = [4 * torch.randn(M, 1024, device="cuda") for _ in range(8)]
    # the wrapper's own plan for these inputs: the bare and precompiled launches below run the kernel it runs
    # (rows per program, warps, vector width, offset width), so the comparison is launch cost only
    sm._PLANS.clear()
    sm.softmax_fused(xs[0])
    (plan,) = sm._PLANS.values()
    assert not plan["TAIL"] and plan["BLOCK"] == 1024, plan
    r, w, vec, wide = plan["ROWS"], plan["num_warps"], plan["VEC"], plan["WIDE"]
    out = torch.empty_like(xs[0])
    bare = lambda x: sm.softmax_row_kernel[(triton.cdiv(M, r),)](out, x, x.stride(0), x.stride(1), out.stride(0),
                                                                 M, 1024, BLOCK=1024, ROWS=r, VEC=vec, WIDE=wide,
                                                                 num_warps=w)
    t = bench_rounds({"wrapper": lambda: sm.softmax_fused(xs[0]), "bare": lambda: bare(xs[0]),
                      "torch": lambda: torch.softmax(xs[0], dim=-1)}, rounds=5)
    print(f"N=1024 do_bench: wrapper {t['wrapper'] * 1e3:.1f} us, bare launch {t['bare'] * 1e3:.1f} us, torch {t['torch'] * 1e3:.1f} us")
    g = {"bare": graph_ms(bare, xs), "torch": graph_ms(lambda x: torch.softmax(x, dim=-1), xs)}
    print(f"N=1024 CUDA graph, 8 rotating inputs: kernel {g['bare'] * 1e3:.1f} us, torch {g['torch'] * 1e3:.1f} us")
    # the kernel compiled once for these arguments, launched without the JIT's argument binding and
    # cache lookup (the route torch.compile's generated code takes); every argument positional
    compiled = sm.softmax_row_kernel.warmup(out, xs[0], 1024, 1, 1024, M, 1024, BLOCK=1024, ROWS=r, VEC=vec,
                                            WIDE=wide, num_warps=w, grid=(triton.cdiv(M, r),))
    handle = compiled[(triton.cdiv(M, r), 1, 1)]
    out.zero_()
    handle(out, xs[0], 1024, 1, 1024, M, 1024, 1024, r, vec, wide)
    err = (out.double() - torch.softmax(xs[0].double(), dim=-1)).abs().max().item()
    if not err < 1e-5:
        sys.exit(f"softmax_launch: precompiled handle: max abs error {err:.2e}")
    host = host_us({
        "wrapper": lambda: sm.softmax_fused(xs[0]),
        "bare": lambda: bare(xs[0]),
        "handle": lambda: handle(out, xs[0], 1024, 1, 1024, M, 1024, 1024, r, vec, wide),
        "torch": lambda: torch.softmax(xs[0], dim=-1),
        "empty": lambda: torch.empty_like(xs[0]),
    })
    flush = flush_us()
    print("host us per call:", {k: round(v, 1) for k, v in host.items()}, f"L2 flush {flush:.1f} us on the GPU")
    for path, us in host.items():
        rows.append({"table": "host", "N": 1024, "path": path, "host_us": us})
    for path, timing, ms in (("wrapper", "do_bench", t["wrapper"]), ("bare", "do_bench", t["bare"]),
                             ("torch", "do_bench", t["torch"]), ("bare", "cuda_graph", g["bare"]),
                             ("torch", "cuda_graph", g["torch"]), ("flush", "events", flush / 1e3)):
        rows.append({"table": "launch", "N": 1024, "path": path, "timing": timing, "us": ms * 1e3})
    write(NAME, {"ms": {"unit": "ms", "noise": 0.15, "fmt": ".4f", "check": False},
                 "tbps": {"unit": "TB/s", "noise": 0.08, "fmt": ".2f"},
                 "ratio_torch": {"unit": "×", "noise": 0.08, "fmt": ".2f"},
                 "us": {"unit": "µs", "noise": 0.2, "fmt": ".1f"},
                 # CPU time depends on the host machine and its load far more than GPU time does
                 "host_us": {"unit": "µs", "noise": 0.5, "fmt": ".1f", "check": False}},
          rows, args.out, argv, __file__)

    print("fastest per block width:", best)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
