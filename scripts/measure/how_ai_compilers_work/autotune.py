#!/usr/bin/env python3
"""Three autotuning routes on one kernel, measured side by side in one process.

The kernel: snippets/how_ai_compilers_work/gemm_tuning.py, a Triton GEMM with a fused
bias + GELU epilogue, fp16, M = N = 8192, K = 2048, over a space of 140 configs
(tile shape, K step, pipeline stages, warps).

  exhaustive   @triton.autotune over the whole space: every config compiled and timed
  model_top1   the analytical model (occupancy, waves, roofline) ranks the space through
  model_top3   the autotuner's perf_model hook; only its top 1 (or 3) are timed
  cost_model   ridge regression on config features, Ansor/MetaSchedule style: 8 random
               configs, then rounds of the 3 best-ranked plus 1 random pick, 24 timed in all

Every config is compiled once up front by a pool of processes (as Inductor's
max-autotune does), so each route's tuning time counts timing, not compiling; the
compile cost is reported on its own row. Each route's pick is then re-timed with
the same long do_bench, so "best_ms" compares configs, not tuning noise.

    python scripts/measure/how_ai_compilers_work/autotune.py [--out PATH] [--workers N]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 35}

import math
import multiprocessing as mp
import os
import sys
import time

from sitekit import data  # noqa: E402

from measure.how_ai_compilers_work import _common as common  # noqa: E402
from measure.how_ai_compilers_work._common import bench, ceilings, load_snippet, require_cuda, sync  # noqa: E402

NAME = "how_ai_compilers_work/autotune"
M, N, K = 8192, 8192, 2048


def _compile_one(i):
    """In a worker process: compile config i for the real shapes and strides, without running it."""
    import torch
    gemm = load_snippet("gemm_tuning")
    cfg = gemm.config_space()[i]
    t0 = time.perf_counter()
    try:
        gemm.matmul_bias_gelu_kernel.warmup(
            torch.float16, torch.float16, torch.float16, torch.float16, M, N, K,
            K, 1, N, 1, N, 1, grid=(1,), **cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        ok = True
    except Exception as e:          # a config the compiler rejects is timed as inf later, as autotune does
        print(f"compile failed for {gemm.describe(cfg)}: {type(e).__name__}: {e}", file=sys.stderr)
        ok = False
    return i, time.perf_counter() - t0, ok


def spearman(a, b):
    import numpy as np
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--workers", type=int, default=max(1, min(16, (os.cpu_count() or 2) - 1)),
                    help="processes that compile the space in parallel (default: CPUs - 1, at most 16)")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on a CPU through the interpreter; writes nothing")
    args = ap.parse_args(argv)
    if args.workers < 1:
        ap.error("--workers must be at least 1")
    global M, N, K
    if args.smoke:
        common.start_smoke()
        M, N, K = 128, 128, 128
    require_cuda("how_ai_compilers_work_autotune")

    gemm = load_snippet("gemm_tuning")
    space = gemm.config_space()
    if common.SMOKE:   # the interpreter runs tiles as numpy arrays: a few small configs
        space = [c for c in space if c.kwargs["BLOCK_M"] <= 64 and c.kwargs["BLOCK_N"] <= 128
                 and c.kwargs["BLOCK_K"] <= 32 and c.num_stages <= 3]

    # Compile first, in forked workers, before this process touches CUDA (a CUDA context does not survive fork).
    t0 = time.perf_counter()
    if common.SMOKE:   # nothing to compile in the interpreter
        compiled = [(i, 0.0, True) for i in range(len(space))]
    else:
        with mp.get_context("fork").Pool(args.workers) as pool:
            compiled = pool.map(_compile_one, range(len(space)), chunksize=1)
    compile_wall = time.perf_counter() - t0
    compile_cpu = sum(t for _, t, _ in compiled)
    print(f"compiled {len(space)} configs in {compile_wall:.1f} s on {args.workers} processes "
          f"({compile_cpu / len(space):.2f} s per config)", flush=True)

    import torch
    import triton

    rows: list[dict] = []
    ceil = ceilings()
    hw = gemm.Gpu(tensor_tflops=ceil["mm_tflops"], dram_tbps=ceil["copy_tbps"])
    predict = lambda **kw: gemm.model(gpu=hw, **kw)["ms"]
    print(f"ceilings: copy {ceil['copy_tbps']:.2f} TB/s, cuBLAS fp16 {ceil['mm_tflops']:.0f} TFLOP/s", flush=True)

    dev = gemm.DEVICE
    torch.manual_seed(0)
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16) / K ** 0.5
    bias = torch.randn(N, device=dev, dtype=torch.float16)
    ref = gemm.matmul_bias_gelu_eager(a.float(), b.float(), bias.float())

    def check(cfg):
        out = gemm.matmul_bias_gelu(a, b, bias, config=cfg)
        err = ((out.float() - ref).norm() / ref.norm()).item()
        if not err < 1e-2:
            sys.exit(f"config {gemm.describe(cfg)}: relative error {err:.2e}")

    check(space[0])
    key = lambda cfg: gemm.describe(cfg)
    tuning = {}

    # Route 1: exhaustive, through @triton.autotune.
    tuned = triton.autotune(configs=space, key=["M", "N", "K"], do_bench=gemm.bench)(gemm.matmul_bias_gelu_kernel)
    t0 = time.perf_counter()
    gemm.matmul_bias_gelu(a, b, bias, kernel=tuned)
    sync()
    tuning["exhaustive"] = (tuned.best_config, len(tuned.configs_timings), time.perf_counter() - t0)
    measured = {key(c): t[0] for c, t in tuned.configs_timings.items()}

    # Route 2: the analytical model's top 1 and top 3, through the autotuner's perf_model hook.
    for route, k in (("model_top1", 1), ("model_top3", 3)):
        picked = triton.autotune(configs=space, key=["M", "N", "K"], do_bench=gemm.bench,
                                 prune_configs_by={"perf_model": predict, "top_k": k})(gemm.matmul_bias_gelu_kernel)
        t0 = time.perf_counter()
        gemm.matmul_bias_gelu(a, b, bias, kernel=picked)
        sync()
        tuning[route] = (picked.best_config, len(picked.configs_timings), time.perf_counter() - t0)

    # Route 3: the learned cost model.
    measure = lambda cfg: gemm.bench(lambda: gemm.matmul_bias_gelu(a, b, bias, config=cfg))
    t0 = time.perf_counter()
    budget = 6 if common.SMOKE else 24
    best, _, n = gemm.guided_search(space, measure, M, N, K, n_init=budget // 3, per_round=4, budget=budget, seed=0)
    sync()
    tuning["cost_model"] = (best, n, time.perf_counter() - t0)

    # Re-time every pick with the same long do_bench, after checking it.
    flops = 2 * M * N * K
    final = {}
    for route, (cfg, _, _) in tuning.items():
        if key(cfg) not in final:
            check(cfg)
            final[key(cfg)] = bench(lambda: gemm.matmul_bias_gelu(a, b, bias, config=cfg))
    best_ms = final[key(tuning["exhaustive"][0])]
    for route, (cfg, count, wall) in tuning.items():
        ms = final[key(cfg)]
        kw = cfg.kwargs
        rows.append({"kind": "route", "aic_route": "aic_" + route, "aic_configs": count, "aic_tune_s": wall, "aic_best_ms": ms,
                     "tflops": flops / ms / 1e9, "aic_vs_best": ms / best_ms,
                     "BLOCK_M": kw["BLOCK_M"], "BLOCK_N": kw["BLOCK_N"], "BLOCK_K": kw["BLOCK_K"],
                     "stages": cfg.num_stages, "warps": cfg.num_warps,
                     "aic_cold_s": wall + count * compile_cpu / len(space)})
        print(f"{route:<11} {count:4d} configs  {wall:6.1f} s  {gemm.describe(cfg):<22} {ms:.4f} ms  "
              f"{flops / ms / 1e9:4.0f} TFLOP/s  {ms / best_ms:.3f}x best", flush=True)

    # References at the same shape: cuBLAS alone, and eager cuBLAS + bias add + GELU.
    af, bf, biasf = (a.float(), b.float(), bias.float()) if common.SMOKE else (a, b, bias)  # CPU fp16 GEMM is slow
    for route, fn in (("cublas_gemm_only", lambda: af @ bf),
                      ("eager_cublas_epilogue", lambda: gemm.matmul_bias_gelu_eager(af, bf, biasf))):
        ms = bench(fn)
        rows.append({"kind": "reference", "aic_route": "aic_" + route, "aic_best_ms": ms, "tflops": flops / ms / 1e9,
                     "aic_vs_best": ms / best_ms})

    # How good is the analytical model over the whole space?
    names = [key(c) for c in space]
    ok = [i for i, nm in enumerate(names) if math.isfinite(measured.get(nm, math.inf))]
    pred = [predict(M=M, N=N, K=K, **space[i].all_kwargs()) for i in ok]
    meas = [measured[names[i]] for i in ok]
    rho = spearman(pred, meas)
    order = sorted(ok, key=lambda i: measured[names[i]])
    pick_rank = order.index(names.index(key(tuning["model_top1"][0]))) + 1
    rows.append({"kind": "model_quality", "aic_spearman": rho, "aic_pick_rank": pick_rank, "aic_configs": len(ok)})
    print(f"model: Spearman {rho:.2f} between predicted and measured; its pick ranks {pick_rank} of {len(ok)}")

    rows.append({"kind": "compile", "aic_workers": args.workers, "aic_configs": len(space),
                 "aic_compile_wall_s": compile_wall, "aic_compile_s_per_config": compile_cpu / len(space),
                 "aic_failed": sum(1 for _, _, good in compiled if not good)})
    for i, c in enumerate(space):
        kw = c.kwargs
        ms = measured.get(names[i], math.inf)
        rows.append({"kind": "config", "BLOCK_M": kw["BLOCK_M"], "BLOCK_N": kw["BLOCK_N"], "BLOCK_K": kw["BLOCK_K"],
                     "aic_stages": c.num_stages, "aic_warps": c.num_warps,
                     "ms": ms if math.isfinite(ms) else None,
                     "tflops": flops / ms / 1e9 if math.isfinite(ms) else None,
                     "aic_predicted_ms": predict(M=M, N=N, K=K, **c.all_kwargs())})
    # in config rows the knobs are parameters; everywhere else they are reported values
    metrics = {
        "aic_configs": {"unit": "configs", "noise": 0.0, "fmt": "d", "check": False},
        "aic_tune_s": {"unit": "s", "noise": 0.5, "better": "lower", "fmt": ".1f", "check": False},
        "aic_cold_s": {"unit": "s", "noise": 0.5, "better": "lower", "fmt": ".0f", "check": False},
        "aic_best_ms": {"unit": "ms", "noise": 0.08, "better": "lower", "fmt": ".3f"},
        # every config is timed once: between two H200 runs single configs moved by up to ~10%
        "tflops": {"unit": "TFLOP/s", "noise": 0.12, "better": "higher", "fmt": ".0f"},
        "aic_vs_best": {"unit": "x", "noise": 0.1, "better": "lower", "fmt": ".3f", "check": False},
        "ms": {"unit": "ms", "noise": 0.15, "better": "lower", "fmt": ".3f", "check": False},
        "aic_predicted_ms": {"unit": "ms", "noise": 0.1, "better": "lower", "fmt": ".3f", "check": False},
        "aic_spearman": {"unit": "", "noise": 0.3, "better": "higher", "fmt": ".2f", "check": False},
        "aic_pick_rank": {"unit": "rank", "noise": 1.0, "fmt": "d", "check": False},
        "aic_compile_wall_s": {"unit": "s", "noise": 0.5, "fmt": ".0f", "check": False},
        "aic_compile_s_per_config": {"unit": "s", "noise": 0.5, "fmt": ".2f", "check": False},
        "aic_failed": {"unit": "configs", "noise": 0.0, "fmt": "d", "check": False},
    }
    route_knobs = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "stages", "warps")
    for r in rows:   # in route rows the picked knobs are results, so they are stored as metrics
        if r["kind"] == "route":
            for k in route_knobs:
                r[f"aic_pick_{k}"] = r.pop(k)
    for k in route_knobs:
        metrics[f"aic_pick_{k}"] = {"unit": "", "noise": 0.0, "fmt": "d", "check": False}
    return common.finish(NAME, metrics, rows, args.out, argv, __file__)


if __name__ == "__main__":
    raise SystemExit(main())
