#!/usr/bin/env python3
"""Inference-shaped GEMMs of "Triton Kernel Practice", technique by technique, and the FP8 configurations.

y = x @ W.T with W in nn.Linear layout (N, K), M in {1, 8, 16, 32, 64, 128} rows of x,
(N, K) in {(4096, 4096), (11008, 4096), (4096, 11008), (8192, 8192)}, fp16. Per cell:
cuBLAS (torch.nn.functional.linear), the large-tile TMA kernel of the GEMM section, then the
kernel of snippets/triton_kernel_practice/linear.py with small tiles, + split-K, swapped operands
(W's rows on the MMA's M side), swapped + split-K at several splits and tile widths, and the same
tiles loaded through TMA descriptors with 128-wide K steps (impl tma_swap, tma_plain), and at M >= 64
TMA tiles with the ring depth and warp count set by hand (impl tma_ring: deeper rings of narrower K
steps, the settings a wider search found fastest on these cells), and at M = 128 tiles of 64 rows of x,
the height cuBLAS runs there (inference_gemm.json names cuBLAS's kernels): two programs along M read
each weight tile, which cuBLAS's thread-block clusters load once for both. impl tma_half launches those
two programs side by side (M_FIRST), so the second finds the tile in L2; tma_half_nfirst is the same
kernel in the N-first order, where the two are a whole row of weight tiles apart. At M <= 16, impl
narrow: tiles that sm_90 runs on mma.sync instead of wgmma (NARROW): 8 rows of x with swapped operands at
M <= 8, and 16 x 32 tiles without the swap. Every version
is checked against an fp32 product, then timed in ROUNDS rounds in turn (best median kept, the
round-to-round spread recorded). The weight stream is N*K*bytes / time, against the copy bandwidth.
Table "fp8_tma": FP8 e4m3 TMA configurations at 4096^3 and 8192^3 beside torch._scaled_mm.
Table "fp8_sweep": the split-K kernel with e4m3 operands and per-tensor scales at M in {1, 16, 32, 64, 128}
on the four weights, FP8_CANDIDATES beside torch._scaled_mm (both accumulation modes), ratio against
the faster. linear.py's LINEAR_CONFIGS is chosen from the "sweep" rows and FP8_LINEAR_CONFIGS from
the "fp8_sweep" rows (tests tie them).

    python scripts/measure/triton_kernel_practice/inference_sweep.py [--out data/triton_kernel_practice/inference_sweep.json]
    python scripts/measure/triton_kernel_practice/inference_sweep.py --propose data/triton_kernel_practice/inference_sweep.json
        # measures nothing: prints the fastest setting of each cell in the form of linear.py's two tables
"""
META = {"needs": "gpu", "tier": "weekly", "budget_s": 130}

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
MS = (1, 8, 16, 32, 64, 128)
SHAPES = ((4096, 4096), (11008, 4096), (4096, 11008), (8192, 8192))
DTYPES = ("fp16",)         # the nightly inference_gemm.py checks the choices in bf16 as well
ROUNDS = 3
BENCH = dict(warmup=2, rep=8)
FP8_CONFIGS = [  # BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages, EPI_SPLIT
    (128, 256, 128, 8, 8, 3, True), (128, 256, 128, 8, 8, 4, True), (128, 128, 128, 8, 8, 4, False),
    (256, 128, 128, 8, 8, 3, True), (128, 256, 128, 16, 8, 3, True)]


FP8_MS = (1, 16, 32, 64, 128)
# e4m3 halves a K step's bytes: 256-wide steps and deeper rings are in the list beside the 16-bit
# table's 128-wide ones. (BLOCK_N, BLOCK_K, SWAP_AB, SPLIT_K, TMA, num_warps, num_stages); BLOCK_M is
# the bucket (at least 16): 16 for M <= 16, then 32, 64 and 128.
FP8_CANDIDATES = {
    16: [(64, 256, True, 1, False, 4, 6), (64, 256, True, 1, False, 4, 4), (64, 256, True, 2, False, 4, 4),
         (64, 256, True, 4, False, 4, 4), (64, 128, True, 1, True, 4, 6), (128, 128, True, 1, True, 4, 6),
         (64, 256, True, 1, True, 4, 6), (64, 256, True, 4, True, 4, 3), (128, 128, True, 1, False, 4, 6),
         (128, 256, True, 4, False, 4, 4), (64, 128, True, 4, False, 4, 4), (64, 128, True, 2, False, 4, 6)],
    128: [(64, 128, False, 1, False, 4, 4), (64, 256, True, 2, False, 4, 3), (64, 256, False, 1, False, 8, 3),
          (128, 256, False, 1, True, 4, 3), (64, 128, False, 1, False, 8, 4), (64, 256, False, 2, True, 8, 4),
          (64, 256, False, 2, False, 8, 4), (64, 256, True, 2, True, 4, 4), (64, 256, True, 1, True, 4, 4),
          (64, 256, False, 1, True, 4, 4), (64, 256, True, 1, False, 4, 4), (64, 256, False, 1, True, 8, 4),
          (128, 128, False, 1, True, 4, 6), (128, 128, False, 1, False, 4, 6), (128, 128, True, 1, False, 4, 6),
          (64, 256, True, 2, True, 8, 4), (64, 256, True, 2, False, 8, 4)],
    32: [(64, 256, True, 1, False, 4, 6), (128, 128, True, 1, False, 4, 6), (64, 256, True, 2, False, 8, 6),
         (64, 256, True, 2, False, 4, 6), (64, 128, True, 1, False, 8, 6), (128, 256, True, 1, False, 4, 4),
         (64, 128, True, 2, False, 4, 6), (64, 256, True, 1, True, 4, 6)],
    64: [(64, 256, True, 1, False, 4, 6), (128, 256, False, 1, False, 4, 4), (64, 256, False, 1, False, 4, 6),
         (64, 256, False, 1, True, 4, 6), (128, 128, False, 1, False, 4, 6), (128, 128, True, 1, False, 4, 6),
         (64, 256, False, 2, False, 8, 6), (64, 256, True, 2, False, 8, 6), (64, 256, True, 1, True, 4, 6)],
}


# and at M = 128, 64-row TMA tiles in the M-first order (as the 16-bit tma_half rows): (BLOCK_N, BLOCK_K, num_stages)
FP8_HALF = [(64, 256, 6), (64, 128, 10), (128, 128, 6), (128, 256, 4)]


def fp8_candidates(M: int) -> list[dict]:
    bm = max(16, next(b for b in FP8_MS if M <= b))
    keys = ("BLOCK_N", "BLOCK_K", "SWAP_AB", "SPLIT_K", "TMA", "num_warps", "num_stages")
    out = [dict(BLOCK_M=bm, **dict(zip(keys, c))) for c in FP8_CANDIDATES[bm]]
    if bm == 128:
        out += [dict(BLOCK_M=64, BLOCK_N=bn, BLOCK_K=bk, SWAP_AB=False, SPLIT_K=1, TMA=True, M_FIRST=True, num_warps=4,
                     num_stages=st) for bn, bk, st in FP8_HALF]
    return out


def fp8_label(cfg: dict) -> str:
    return (f"{'swap' if cfg['SWAP_AB'] else 'plain'}{' tma' if cfg['TMA'] else ''} {cfg['BLOCK_M']}x{cfg['BLOCK_N']}x"
            f"{cfg['BLOCK_K']} S{cfg['SPLIT_K']} w{cfg['num_warps']} s{cfg['num_stages']}"
            f"{' mf' if cfg.get('M_FIRST') else ''}")


# TMA settings with the ring depth and warps chosen by hand, from a search over BLOCK_N in {64, 128},
# BLOCK_K in {64, 128}, splits 1-4, 4 or 8 warps and the deepest ring that fits (or one that leaves
# room for two programs per SM): (SWAP_AB, BLOCK_N, BLOCK_K, SPLIT_K, num_warps, num_stages).
RING = {
    64: [(True, 64, 128, 1, 4, 6), (False, 64, 128, 1, 4, 6), (True, 64, 128, 2, 4, 6), (False, 128, 64, 1, 4, 8),
         (False, 64, 64, 2, 4, 8)],
    128: [(False, 64, 64, 2, 8, 8), (False, 64, 128, 2, 8, 4), (True, 64, 128, 2, 8, 4), (False, 64, 64, 1, 4, 8),
          (False, 128, 64, 1, 4, 6), (True, 128, 64, 1, 4, 6), (False, 128, 64, 1, 8, 6), (False, 64, 128, 1, 8, 4),
          (False, 128, 64, 2, 4, 6)],
}


# 64-row tiles at M = 128 (cuBLAS's 64 x 64 on 4096 x 4096, with a deep ring) without a cluster:
# (BLOCK_N, BLOCK_K, num_stages); the first is also timed in the N-first tile order
HALF = [(64, 128, 6), (64, 64, 12), (128, 64, 8), (128, 128, 4)]


def kernel_settings(M: int, BLOCK_N: int, SWAP_AB: bool, SPLIT_K: int, elt: int = 2, BLOCK_K: int | None = None,
                    TMA: bool = False) -> dict:
    bm = max(16, 1 << (M - 1).bit_length())
    bk = BLOCK_K or (128 if (bm <= 32 or elt == 1) else 64)
    stage = (bm + BLOCK_N) * bk * elt
    return dict(BLOCK_M=bm, BLOCK_N=BLOCK_N, BLOCK_K=bk, SWAP_AB=SWAP_AB, SPLIT_K=SPLIT_K, TMA=TMA,
                num_warps=4 if bm * BLOCK_N <= 64 * 128 else 8,
                num_stages=max(2, min(4, (200 if TMA else 160) * 1024 // stage)))


# Narrow tiles for M <= 16, which sm_90 runs on mma.sync (HMMA) rather than wgmma: 8 rows of x on the swapped
# MMA's N side at M <= 8 (cuBLAS's own tiles there are 8 tokens wide, see inference_gemm.json), and unswapped
# 16 x 32 tiles (an MMA M side of 16, below wgmma's 64), twice as many tiles as 64 weight rows give:
# (SWAP_AB, BLOCK_M, BLOCK_N, SPLIT_K, TMA, num_stages), BLOCK_K 128, 4 warps
NARROW = {
    8: [(True, 8, 64, 1, False, 4), (True, 8, 64, 2, False, 4), (True, 8, 64, 4, False, 4), (True, 8, 64, 2, False, 6),
        (True, 8, 128, 1, False, 4), (True, 8, 128, 2, False, 4), (True, 8, 64, 1, True, 6), (True, 8, 64, 2, True, 6),
        (True, 8, 128, 1, True, 4)],
    16: [(False, 16, 32, 1, False, 4), (False, 16, 32, 2, False, 4), (False, 16, 32, 1, True, 6)],
}


def narrow_candidates(M: int) -> list[dict]:
    rows = (NARROW[8] if M <= 8 else []) + (NARROW[16] if M <= 16 else [])
    return [dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=128, SWAP_AB=swap, SPLIT_K=s, TMA=tma, num_warps=4, num_stages=st)
            for swap, bm, bn, s, tma, st in rows]


def candidates(M: int) -> list[tuple[str, dict]]:
    c = [("cublas", {}), ("tma_large", {}), ("small_tile", kernel_settings(M, 64, False, 1))]
    c += [("split_k", kernel_settings(M, 64, False, s)) for s in (2, 4)]
    c += [("swap_ab", kernel_settings(M, 64, True, 1))]
    c += [("swap_split", kernel_settings(M, 64, True, s)) for s in (2, 4, 8)]
    c += [("swap_split", kernel_settings(M, 128, True, 4))]
    # the same tiles fed by TMA descriptors, with 128-wide K steps (a 256-byte row of fp16 per box)
    c += [("tma_swap", kernel_settings(M, 64, True, s, BLOCK_K=128, TMA=True)) for s in (1, 2, 4)]
    if M >= 64:
        c += [("tma_plain", kernel_settings(M, 64, False, s, BLOCK_K=128, TMA=True)) for s in (1, 2)]
        c += [("tma_plain", kernel_settings(M, 128, False, 1, BLOCK_K=128, TMA=True))]
        c += [("tma_swap", kernel_settings(M, 128, True, 1, BLOCK_K=128, TMA=True))]
        c += [("tma_ring", dict(BLOCK_M=M, BLOCK_N=bn, BLOCK_K=bk, SWAP_AB=swap, SPLIT_K=s, TMA=True, num_warps=w,
                                num_stages=st)) for swap, bn, bk, s, w, st in RING[M]]
    if M <= 64:   # stream-K: the K steps of all tiles shared evenly by one or two programs per SM
        bm = max(16, 1 << (M - 1).bit_length())
        for bn, st, per_sm in ((64, 4, 1), (64, 6, 1), (64, 4 if bm <= 32 else 3, 2), (128, 4, 1)):
            c += [("stream_k", dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True,
                                    STREAM_K=per_sm, num_warps=4, num_stages=st))]
    c += [("narrow", cfg) for cfg in narrow_candidates(M)]
    if M == 128:
        half = [dict(BLOCK_M=64, BLOCK_N=bn, BLOCK_K=bk, SWAP_AB=False, SPLIT_K=1, TMA=True, M_FIRST=True, num_warps=4,
                     num_stages=st) for bn, bk, st in HALF]
        c += [("tma_half", cfg) for cfg in half]
        c += [("tma_half_nfirst", {**half[0], "M_FIRST": False})]
    return c


def label(impl: str, cfg: dict) -> str:
    if not cfg:
        return impl
    tail = f" w{cfg['num_warps']} s{cfg['num_stages']}" if impl in ("tma_ring", "tma_half", "tma_half_nfirst", "stream_k") else ""
    if impl == "stream_k":
        tail += f" p{cfg['STREAM_K']}"
    if impl == "narrow":
        return (f"narrow {'swap' if cfg['SWAP_AB'] else 'plain'} {cfg['BLOCK_M']}x{cfg['BLOCK_N']}x{cfg['BLOCK_K']}"
                f"{' tma' if cfg['TMA'] else ''} S{cfg['SPLIT_K']} s{cfg['num_stages']}")
    swap = (" swap" if cfg["SWAP_AB"] else " plain") if impl == "tma_ring" else ""
    return f"{impl}{swap} {cfg['BLOCK_M']}x{cfg['BLOCK_N']}x{cfg['BLOCK_K']} S{cfg['SPLIT_K']}{tail}"


def make_call(task):
    """task -> a zero-argument call on fresh random inputs (used by the warm-up pool too)."""
    import torch
    lin = measure.snippet("triton_kernel_practice/linear")
    g = measure.snippet("triton_kernel_practice/gemm")
    kind, tag, M, N, K, impl, cfg = task
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[tag]
    x = torch.randn(M, K, device="cuda", dtype=dtype)
    w = torch.randn(N, K, device="cuda", dtype=dtype) / K ** 0.5
    if kind in ("fp8_tma", "fp8_sweep"):
        xq, sx = lin.quantize_fp8(x.float())
        wq, sw = lin.quantize_fp8(w.float())
        if kind == "fp8_sweep":
            return lambda: lin.linear_splitk(xq, wq, sx, sw, **cfg)
        return lambda: lin.matmul_fp8_tma(xq, wq, sx, sw, **cfg)
    if impl == "cublas":
        return lambda: torch.nn.functional.linear(x, w)
    if impl == "tma_large":
        return lambda: g.matmul_tma(x, w.t())
    return lambda: lin.linear_splitk(x, w, **cfg)


SETTING_KEYS = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "SWAP_AB", "SPLIT_K", "TMA", "M_FIRST", "STREAM_K", "num_warps",
                "num_stages")
OPTIONAL_KEYS = ("TMA", "M_FIRST", "STREAM_K")


def propose(rows: list[dict], table: str = "sweep", col: str = "ratio_cublas") -> dict:
    """{(M, N, K): settings} of the fastest Triton row of each cell of `table` (cuBLAS, _scaled_mm and the
    large-tile kernel left out): what LINEAR_CONFIGS (table "sweep") or FP8_LINEAR_CONFIGS ("fp8_sweep")
    should hold after a new run, before the tests tie them to it."""
    out, best = {}, {}
    for r in rows:
        if r.get("table") != table or r.get("impl") in ("cublas", "tma_large", "scaled_mm", "scaled_mm_fast") or col not in r:
            continue
        cell = (r["M"], r["N"], r["K"])
        if cell not in best or r[col] > best[cell]:
            best[cell] = r[col]
            # TMA, M_FIRST and STREAM_K are left out where off (their defaults), as in linear.py's tables
            out[cell] = {k: r.get(k, False) for k in SETTING_KEYS if r.get(k) or k not in OPTIONAL_KEYS}
    return dict(sorted(out.items()))


def print_proposal(path) -> None:
    """Print propose()'s tables for a sweep file, in the form of linear.py's (for pasting into it)."""
    import json

    rows = json.loads(open(path, encoding="utf-8").read())["rows"]
    for table in ("sweep", "fp8_sweep"):
        print(f"# {table}: the fastest Triton setting of each cell of {path}")
        for (m, n, k), cfg in propose(rows, table, "ratio_cublas" if table == "sweep" else "ratio_best").items():
            print(f"    ({m}, {n}, {k}): dict({', '.join(f'{key}={v!r}' for key, v in cfg.items())}),")


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--propose", metavar="JSON", help="measure nothing: print the fastest setting of each cell of a "
                    "sweep file, in the form of linear.py's tables")
    args = ap.parse_args(argv)
    if args.propose:
        print_proposal(args.propose)
        return 0
    measure.need_gpu(NAME)
    import torch

    from measure.triton_kernel_practice._warm import warm
    lin = measure.snippet("triton_kernel_practice/linear")
    g = measure.snippet("triton_kernel_practice/gemm")
    torch.manual_seed(0)
    tasks = [("sweep", tag, M, N, K, impl, cfg) for tag in DTYPES for M in MS for N, K in SHAPES
             for impl, cfg in candidates(M) if impl != "cublas"]
    fp8_tasks = [("fp8_tma", "bf16", s, s, s, "fp8_tma", dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, num_warps=w,
                                                              num_stages=st, EPI_SPLIT=ep))
                 for s in (4096,) for bm, bn, bk, gm, w, st, ep in FP8_CONFIGS]
    # linear_kernel and linear_tma_kernel take M at run time: one small shape compiles each setting
    fp8_tasks += [("fp8_sweep", "bf16", m, 256, 1024, "fp8", cfg) for m in (1, 32, 64, 128) for cfg in fp8_candidates(m)]
    # one compile per distinct kernel: M = 1, 8 and >= 16 specialize the TMA kernel differently,
    # linear_kernel takes M at run time, so one shape per configuration is enough there
    seen, uniq = set(), []
    for t in tasks + fp8_tasks:
        key = (t[0], t[1], t[5], tuple(sorted(t[6].items())), t[2] if t[5] == "tma_large" else 0)
        if key not in seen:
            seen.add(key)
            uniq.append(t)
    warm("measure.triton_kernel_practice.inference_sweep", uniq)
    copy, _ = measure.copy_tbps()
    rows = [{"table": "copy", "impl": "copy", "tbps": copy}]
    for tag in DTYPES:
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[tag]
        tol = 1e-2 if tag == "bf16" else 2e-3
        for N, K in SHAPES:
            w = torch.randn(N, K, device="cuda", dtype=dtype) / K ** 0.5
            for M in MS:
                x = torch.randn(M, K, device="cuda", dtype=dtype)
                ref = x.float() @ w.float().t()
                fns = {}
                for impl, cfg in candidates(M):
                    if impl == "cublas":
                        fn = lambda: torch.nn.functional.linear(x, w)  # noqa: E731
                    elif impl == "tma_large":
                        fn = lambda: g.matmul_tma(x, w.t())  # noqa: E731
                    else:
                        fn = lambda cfg=cfg: lin.linear_splitk(x, w, **cfg)  # noqa: E731
                    for _ in range(2):   # twice: the split-K counters must be back at zero
                        err = measure.rel_err(fn(), ref)
                    if not err < tol:
                        sys.exit(f"{NAME}: {label(impl, cfg)} {tag} M={M} N={N} K={K}: relative error {err:.2e}")
                    fns[label(impl, cfg)] = (impl, cfg, fn)
                each = measure.bench_each_round({k: v[2] for k, v in fns.items()}, rounds=ROUNDS, **BENCH)
                t_cublas = min(each["cublas"])
                for key, ts in each.items():
                    impl, cfg, _ = fns[key]
                    t = min(ts)
                    wb = N * K * x.element_size() / t / 1e9
                    row = {"table": "sweep", "dtype": tag, "M": M, "N": N, "K": K, "shape": f"{N}x{K}", "impl": impl,
                           "config": key, "us": t * 1e3, "tflops": 2 * M * N * K / t / 1e9, "w_tbps": wb,
                           "frac_copy": wb / copy, "ratio_cublas": t_cublas / t, "ratio_cublas_spread": measure.spread(ts)}
                    row.update({k: v for k, v in cfg.items()})
                    rows.append(row)
                best = max((r for r in rows[-len(each):]), key=lambda r: r["ratio_cublas"])
                print(f"{tag} M={M:<4} {N}x{K}: cuBLAS {t_cublas * 1e3:6.1f} us, best {best['config']:<28} "
                      f"{best['ratio_cublas']:.2f}x, {best['frac_copy']:.2f} of copy", flush=True)
                del x, ref
            del w
    # FP8 TMA configurations at 4096^3 and 8192^3 beside torch._scaled_mm
    for s in (4096, 8192):
        a = torch.randn(s, s, device="cuda")
        b = torch.randn(s, s, device="cuda") / s ** 0.5
        aq, sa = lin.quantize_fp8(a)
        bq, sb = lin.quantize_fp8(b)
        deq = (aq.float() * sa) @ (bq.float() * sb).t()
        fns = {"scaled_mm": lambda: torch._scaled_mm(aq, bq.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16),
               "scaled_mm_fast": lambda: torch._scaled_mm(aq, bq.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16,
                                                          use_fast_accum=True)}
        cfgs = {}
        for bm, bn, bk, gm, w_, st, ep in FP8_CONFIGS:
            cfg = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=gm, num_warps=w_, num_stages=st, EPI_SPLIT=ep)
            key = f"{bm}x{bn}x{bk} g{gm} w{w_} s{st}" + (" split" if ep else "")
            fn = lambda cfg=cfg: lin.matmul_fp8_tma(aq, bq, sa, sb, **cfg)  # noqa: E731
            try:
                err = measure.rel_err(fn(), deq)
            except Exception as e:       # e.g. out of shared memory: listed without a time
                print(f"fp8 {key}: {type(e).__name__}: {str(e).splitlines()[0]}", flush=True)
                rows.append({"table": "fp8_tma", "size": s, "impl": "triton", "config": key, "output": "error"})
                continue
            if not err < 1e-2:
                sys.exit(f"{NAME}: fp8 {key} at {s}: relative error {err:.2e}")
            fns[key], cfgs[key] = fn, cfg
        for k in ("scaled_mm", "scaled_mm_fast"):
            err = measure.rel_err(fns[k](), deq)
            if not err < 1e-2:
                sys.exit(f"{NAME}: {k} at {s}: relative error {err:.2e}")
        each = measure.bench_each_round(fns, rounds=ROUNDS, warmup=10, rep=40)
        for key, ts in each.items():
            t = min(ts)
            row = {"table": "fp8_tma", "size": s, "impl": key if key.startswith("scaled") else "triton", "config": key,
                   "output": "ok", "tflops": 2 * s ** 3 / t / 1e9, "us": t * 1e3,
                   "ratio_scaled_mm": min(each["scaled_mm"]) / t, "ratio_fast": min(each["scaled_mm_fast"]) / t,
                   "tflops_spread": measure.spread(ts)}
            row.update(cfgs.get(key, {}))
            rows.append(row)
            print(f"fp8 {s} {key:<28} {row['tflops']:6.0f} TFLOP/s  {row['ratio_fast']:.2f}x fast-accum _scaled_mm", flush=True)
        del a, b, aq, bq, deq
    # FP8 split-K settings on the inference shapes beside torch._scaled_mm (per-tensor scales)
    for N, K in SHAPES:
        w = torch.randn(N, K, device="cuda") / K ** 0.5
        wq, sw = lin.quantize_fp8(w)
        for M in FP8_MS:
            xq, sx = lin.quantize_fp8(torch.randn(M, K, device="cuda"))
            deq = (xq.float() * sx) @ (wq.float() * sw).t()
            fns = {"scaled_mm": lambda: torch._scaled_mm(xq, wq.t(), scale_a=sx, scale_b=sw, out_dtype=torch.bfloat16),
                   "scaled_mm_fast": lambda: torch._scaled_mm(xq, wq.t(), scale_a=sx, scale_b=sw,
                                                              out_dtype=torch.bfloat16, use_fast_accum=True)}
            cfgs = {}
            for cfg in fp8_candidates(M):
                fns[fp8_label(cfg)] = lambda cfg=cfg: lin.linear_splitk(xq, wq, sx, sw, **cfg)  # noqa: E731
                cfgs[fp8_label(cfg)] = cfg
            for key, fn in fns.items():
                for _ in range(2):   # twice: the split-K counters must be back at zero
                    err = measure.rel_err(fn().float(), deq)
                if not err < 1e-2:
                    sys.exit(f"{NAME}: fp8 {key} M={M} N={N} K={K}: relative error {err:.2e} vs the dequantized product")
            each = measure.bench_each_round(fns, rounds=ROUNDS, **BENCH)
            t_ref = min(min(each["scaled_mm"]), min(each["scaled_mm_fast"]))
            for key, ts in each.items():
                t = min(ts)
                wb = N * K / t / 1e9
                row = {"table": "fp8_sweep", "M": M, "N": N, "K": K, "shape": f"{N}x{K}",
                       "impl": key if key.startswith("scaled") else "triton", "config": key, "us": t * 1e3,
                       "w_tbps": wb, "frac_copy": wb / copy, "ratio_best": t_ref / t, "ratio_best_spread": measure.spread(ts)}
                row.update(cfgs.get(key, {}))
                rows.append(row)
            best = max((r for r in rows[-len(each):] if r["impl"] == "triton"), key=lambda r: r["ratio_best"])
            print(f"fp8 M={M:<4} {N}x{K}: _scaled_mm {t_ref * 1e3:6.1f} us, best {best['config']:<34} "
                  f"{best['ratio_best']:.2f}x, {best['frac_copy']:.2f} of copy", flush=True)
        del w, wq
    metrics = {
        "us": {"unit": "µs", "noise": 0.1, "fmt": ".1f"},
        "tflops": {"unit": "TFLOP/s", "noise": 0.1, "fmt": ".0f"},
        "w_tbps": {"unit": "TB/s", "noise": 0.1, "fmt": ".2f"},
        "tbps": {"unit": "TB/s", "noise": 0.05, "fmt": ".2f"},
        "frac_copy": {"unit": "×", "noise": 0.1, "fmt": ".2f"},
        "ratio_cublas": {"unit": "×", "noise": 0.1, "fmt": ".2f"},
        "ratio_cublas_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        "ratio_scaled_mm": {"unit": "×", "noise": 0.1, "fmt": ".2f"},
        "ratio_fast": {"unit": "×", "noise": 0.1, "fmt": ".2f"},
        "ratio_best": {"unit": "×", "noise": 0.1, "fmt": ".2f"},
        "ratio_best_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        "tflops_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
    }
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
