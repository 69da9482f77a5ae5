#!/usr/bin/env python3
"""Softmax launch sweep of "Triton Kernel Practice": every width, rows per program, warps, and the
streamed kernel where rows get long.

fp32. Table "fused": softmax_fused with explicit (ROWS, num_warps) for N = 256 ... 65536 (powers of
two) at 4,096 and 32,768 rows (matrices up to 2^28 elements), beside torch.softmax and a copy of the
same bytes. Table "fused16": the same at fp16 for the narrow rows, N = 256 ... 2048, where a row's
bytes halve and the best rows per program may move (bf16 moves the same bytes). Table "online": softmax_online's chunk, warps and programs per multiprocessor at
N = 32768 and 65536, beside the fused kernel. Table "ragged": softmax_fused at widths that are
multiples of 4 but not of 16 (1,000, 3,000, 5,000 at 4,096 rows), with its VEC divisibility hint
and with VEC = 1 (no hint), both in one padded block (split=False). Table "tail": widths between two powers of two (2,500 ... 24,576 at 4,096 rows),
where softmax_fused splits the row into a power-of-two head and a masked power-of-two tail
(softmax_tail_kernel), at each (ROWS, num_warps) of TAIL_CONFIGS, beside the row padded to the next power
of two in one block ("padded": split=False, fused_launch's setting). softmax.py's TAIL_LAUNCH is chosen from
these rows. Each version is checked against float64, then timed in
ROUNDS rounds in turn (best median kept, spread recorded). softmax.py's FUSED_LAUNCH (one
table for both element sizes) and FUSED_MAX_BLOCK are chosen from these rows; tests/test_triton_kernel_practice.py ties them.

    python scripts/measure/triton_kernel_practice/softmax_widths.py [--out data/triton_kernel_practice/softmax_widths.json]
"""
META = {"needs": "gpu", "tier": "weekly", "budget_s": 48}   # 31 s on the H200 (2026-12-01) before tables "fused16" and "tail"

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
WIDTHS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536)
WIDTHS_16 = (256, 512, 1024, 2048)
RAGGED = (1000, 3000, 5000)
TAIL_WIDTHS = (2500, 3000, 5000, 6000, 12288, 20000, 24576)
TAIL_CONFIGS = [(1, 2), (1, 4), (2, 4), (1, 8), (2, 8), (1, 16)]   # (ROWS, num_warps), 8-128 lanes per thread
ROW_COUNTS = (4096, 32768)
MAX_ELEMS = 1 << 28
ROUNDS = 3
ONLINE = [  # BLOCK, num_warps, programs per multiprocessor
    (4096, 8, 4), (4096, 8, 2), (8192, 16, 2), (8192, 16, 4), (8192, 8, 4), (4096, 8, 1)]


def fused_configs(N: int) -> list[tuple[int, int]]:
    out = []
    for rows in (1, 2, 4, 8, 16, 32):
        for w in (1, 2, 4, 8, 16, 32):
            elems = rows * N
            per_thread = elems // (32 * w)
            if N >= 4096 and rows == 1 and (4 <= per_thread <= 128 or (N == 65536 and w == 32)):
                out.append((rows, w))
            if N < 4096 and 1024 <= elems <= 16384 and w <= 8 and 8 <= per_thread <= 64:
                out.append((rows, w))
    return out


def fused16_configs(N: int) -> list[tuple[int, int]]:
    """16-bit rows: the same window of values per thread, with up to twice the rows per program."""
    return [(rows, w) for rows in (1, 2, 4, 8, 16, 32) for w in (1, 2, 4, 8)
            if 1024 <= rows * N <= 16384 and 8 <= rows * N // (32 * w) <= 64]


def tail_configs(N: int) -> list[tuple[int, int]]:
    head, tail = measure.snippet("triton_kernel_practice/softmax").tail_split(N)
    if not tail:
        sys.exit(f"{NAME}: tail_split keeps N={N} in one padded block: not a tail width")
    lanes = head + tail                                  # what softmax_tail_kernel holds for one row
    return [(r, w) for r, w in TAIL_CONFIGS if 8 <= r * lanes // (32 * w) <= 128]


def make_call(task):
    import torch
    sm = measure.snippet("triton_kernel_practice/softmax")
    kind, M, N, a, b, c = task
    x = torch.randn(M, N, device="cuda", dtype=torch.float16 if kind == "fused16" else torch.float32)
    if kind in ("fused", "fused16"):
        return lambda: sm.softmax_fused(x, ROWS=a, num_warps=b)
    if kind == "ragged":
        return lambda: sm.softmax_fused(x, VEC=a or None, split=False)
    if kind == "tail":
        return lambda: sm.softmax_fused(x, ROWS=a, num_warps=b)
    if kind == "padded":
        return lambda: sm.softmax_fused(x, split=False)
    return lambda: sm.softmax_online(x, BLOCK=a, num_warps=b, programs_per_sm=c)


def main(argv=None) -> int:
    args = data.arg_parser(__doc__, NAME).parse_args(argv)
    measure.need_gpu(NAME)
    import torch

    from measure.triton_kernel_practice._warm import warm
    sm = measure.snippet("triton_kernel_practice/softmax")
    torch.manual_seed(0)
    warm("measure.triton_kernel_practice.softmax_widths",
         [("fused", 64, N, r, w, 0) for N in WIDTHS for r, w in fused_configs(N)]
         + [("fused16", 64, N, r, w, 0) for N in WIDTHS_16 for r, w in fused16_configs(N)]
         + [("online", 64, N, b, w, p) for N in (32768, 65536) for b, w, p in ONLINE]
         + [("ragged", 64, N, v, 0, 0) for N in RAGGED for v in (1, 0)]
         + [("tail", 64, N, r, w, 0) for N in TAIL_WIDTHS for r, w in tail_configs(N)]
         + [("padded", 4096, N, 0, 0, 0) for N in TAIL_WIDTHS])
    copy, _ = measure.copy_tbps()
    rows = [{"table": "copy", "impl": "copy", "tbps": copy}]

    def timed(table, M, N, fns, extra):
        x = fns.pop("_x")
        ref = torch.softmax(x.double(), dim=-1)
        tol = 1e-5 if x.dtype == torch.float32 else 2e-3     # fp16 output: half an ulp of values up to 1
        for key, (fn, _) in fns.items():
            err = (fn().double() - ref).abs().max().item()
            if not err < tol:
                sys.exit(f"{NAME}: {key} M={M} N={N}: max abs error {err:.2e}")
        y = torch.empty_like(x)
        calls = {"copy_same": lambda: y.copy_(x), **{k: v[0] for k, v in fns.items()}}
        each = measure.bench_each_round(calls, rounds=ROUNDS, warmup=5, rep=20)
        t_torch = min(each["torch"])
        for key, ts in each.items():
            t = min(ts)
            bw = 2 * x.element_size() * M * N / t / 1e9
            r = {"table": table, "M": M, "N": N, "impl": key.split(" ")[0], "config": key, "us": t * 1e3, "tbps": bw,
                 "frac_copy": bw / copy, "ratio_torch": t_torch / t, "tbps_spread": measure.spread(ts)}
            r.update(fns[key][1] if key in fns else {})
            r.update(extra)
            rows.append(r)
        best = max(rows[-len(each):], key=lambda r: r["tbps"] if r["impl"] != "copy_same" else 0)
        print(f"{table} M={M:<6} N={N:<6} torch {2 * x.element_size() * M * N / t_torch / 1e9:5.2f} TB/s, best {best['config']:<22} "
              f"{best['tbps']:5.2f} TB/s ({best['ratio_torch']:.2f}x torch, {best['frac_copy']:.2f} of copy)", flush=True)
        del x, y, ref

    for N in WIDTHS:
        for M in ROW_COUNTS:
            if M * N > MAX_ELEMS:
                continue
            x = 4 * torch.randn(M, N, device="cuda")
            fns = {"_x": x, "torch": (lambda x=x: torch.softmax(x, dim=-1), {})}
            for r, w in fused_configs(N):
                fns[f"fused R{r} w{w}"] = (lambda x=x, r=r, w=w: sm.softmax_fused(x, ROWS=r, num_warps=w),
                                           {"ROWS": r, "num_warps": w})
            timed("fused", M, N, fns, {})
    for N in WIDTHS_16:
        for M in ROW_COUNTS:
            x = (4 * torch.randn(M, N, device="cuda")).half()
            fns = {"_x": x, "torch": (lambda x=x: torch.softmax(x, dim=-1), {})}
            for r, w in fused16_configs(N):
                fns[f"fused R{r} w{w}"] = (lambda x=x, r=r, w=w: sm.softmax_fused(x, ROWS=r, num_warps=w),
                                           {"ROWS": r, "num_warps": w})
            timed("fused16", M, N, fns, {})
    for N in RAGGED:
        M = 4096
        x = 4 * torch.randn(M, N, device="cuda")
        fns = {"_x": x, "torch": (lambda x=x: torch.softmax(x, dim=-1), {}),
               "fused VEC1": (lambda x=x: sm.softmax_fused(x, VEC=1, split=False), {"VEC": 1}),
               "fused default": (lambda x=x: sm.softmax_fused(x, split=False), {"VEC": sm.vec_width(x)})}
        timed("ragged", M, N, fns, {})
    for N in TAIL_WIDTHS:
        M = 4096
        x = 4 * torch.randn(M, N, device="cuda")
        fns = {"_x": x, "torch": (lambda x=x: torch.softmax(x, dim=-1), {"shown": "yes"}),
               "padded default": (lambda x=x: sm.softmax_fused(x, split=False), {"shown": "yes"})}
        used = sm.fused_launch(sm.tail_split(N)[0], M, tail=True)   # the setting softmax_fused uses at M rows
        for r, w in tail_configs(N):   # "shown": that setting, for the page's plot
            fns[f"tail R{r} w{w}"] = (lambda x=x, r=r, w=w: sm.softmax_fused(x, ROWS=r, num_warps=w),
                                      {"ROWS": r, "num_warps": w, "shown": "yes" if (r, w) == used else "no"})
        timed("tail", M, N, fns, {})
    for N in (32768, 65536):
        M = 4096
        x = 4 * torch.randn(M, N, device="cuda")
        fns = {"_x": x, "torch": (lambda x=x: torch.softmax(x, dim=-1), {}),
               "fused default": (lambda x=x: sm.softmax_fused(x), {})}
        for b, w, p in ONLINE:
            fns[f"online B{b} w{w} p{p}"] = (lambda x=x, b=b, w=w, p=p: sm.softmax_online(x, BLOCK=b, num_warps=w, programs_per_sm=p),
                                             {"BLOCK": b, "num_warps": w, "programs_per_sm": p})
        timed("online", M, N, fns, {})
    metrics = {
        "us": {"unit": "µs", "noise": 0.1, "fmt": ".1f"},
        "tbps": {"unit": "TB/s", "noise": 0.08, "fmt": ".2f"},
        "frac_copy": {"unit": "×", "noise": 0.08, "fmt": ".2f"},
        "ratio_torch": {"unit": "×", "noise": 0.08, "fmt": ".2f"},
        "tbps_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
    }
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
