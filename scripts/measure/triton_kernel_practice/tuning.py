#!/usr/bin/env python3
"""Tuning tables of "Triton Kernel Practice": what block sizes, num_warps, num_stages,
unrolling and warp specialization did to each kernel, measured in one run.

  gemm            M=N=K=4096: grouped pointer kernel configs (fp16), TMA persistent kernel configs
                  (fp16 and bf16); each set timed in three interleaved rounds (the TMA ones beside
                  cuBLAS), best median kept
  softmax_fused   fp32 M=4096, N in {1024, 8192, 12288}: rows per program and num_warps of the fused kernel
  softmax_online  fp32 M=4096, N=65536: chunk size, num_warps, pipeline stages, unrolling
  attention       fp16 B=4 H=32 N=4096: BLOCK_M/BLOCK_N, num_warps, num_stages, warp specialization

Registers and spills come from the compiled kernel (n_regs, and n_spills: the thread's local memory in
4-byte values, not bytes); a configuration whose
shared memory does not fit is recorded with the requirement and no time. Every output is checked
first; only warp-specialized attention may fail the check, and is then recorded as wrong, untimed.

    python scripts/measure/triton_kernel_practice/tuning.py [--out data/triton_kernel_practice/tuning.json]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 52}

import sys

from measure.triton_kernel_practice._common import GEMM_PTR, bench, need_gpu, parse, rel_err, snippet, write

NAME = "triton_kernel_practice/tuning"

GEMM_TMA = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, EPI_SPLIT, GROUP_M
    (128, 128, 64, 4, 4, False, 8), (128, 256, 64, 8, 3, False, 8), (128, 256, 64, 8, 3, True, 8),
    (128, 256, 64, 8, 3, True, 16), (128, 256, 64, 8, 4, True, 8), (128, 256, 64, 8, 4, True, 16),
    (256, 128, 64, 8, 3, True, 8)]
TMA_ROUNDS = 3
SOFTMAX_FUSED = [  # N, ROWS, num_warps
    (1024, 1, 2), (1024, 1, 4), (1024, 1, 8), (1024, 2, 2), (1024, 2, 4), (1024, 4, 4),
    (8192, 1, 1), (8192, 1, 2), (8192, 1, 4), (8192, 1, 8), (8192, 1, 16), (8192, 1, 32),
    (12288, 1, 8), (12288, 1, 16), (12288, 1, 32)]
SOFTMAX_ONLINE = [  # BLOCK, num_warps, STAGES, UNROLL
    (1024, 4, 1, 1), (4096, 8, 1, 1), (4096, 8, 2, 1), (4096, 8, 3, 1), (4096, 8, 3, 2),
    (8192, 16, 3, 1), (16384, 16, 2, 1)]
ATTN = [  # BLOCK_M, BLOCK_N, num_warps, num_stages, WARP_SPEC (warp specialization: unmasked loop only)
    (64, 64, 4, 3, False), (128, 64, 4, 3, False), (128, 32, 4, 3, False), (128, 128, 8, 3, False),
    (128, 128, 4, 2, True), (128, 64, 4, 3, True)]


def main(argv=None) -> int:
    args = parse(__doc__, NAME, argv)
    need_gpu("tuning")
    import torch
    import triton
    from triton.runtime.errors import OutOfResources
    g, sm, fa = snippet("gemm"), snippet("softmax"), snippet("flash_attention")
    torch.manual_seed(0)
    rows = []

    def run(row, launch, check, work, may_fail=False):
        """launch() returns the compiled kernel (or None); check() returns the error of its output."""
        tol = row.pop("tol")
        try:
            kern = launch()
        except OutOfResources as e:          # the configuration asks for more shared memory than exists
            row.update(smem_kb=e.required / 1024)
            rows.append(row)
            print(row, flush=True)
            return
        err = check()
        if not err < tol:                    # NaN compares false too
            if not may_fail:
                sys.exit(f"tuning: {row}: error {err:.2e}")
            row.update(output="wrong", **{"tflops" if row["table"] in ("gemm", "attention") else "tbps": None})
        else:
            t = bench(launch)
            key = "tflops" if row["table"] in ("gemm", "attention") else "tbps"
            row.update(output="ok", ms=t, **{key: work / t / 1e9})
        if kern is not None:
            row.update(regs=kern.n_regs, spills=kern.n_spills, smem_kb=kern.metadata.shared / 1024)
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)

    # -- GEMM ---------------------------------------------------------------------------
    s = 4096
    a = torch.randn(s, s, device="cuda", dtype=torch.float16)
    b = torch.randn(s, s, device="cuda", dtype=torch.float16)
    c = torch.empty(s, s, device="cuda", dtype=torch.float16)
    ref = a.float() @ b.float()
    # The pointer kernel's configurations differ by about as much as one timing varies from run to run,
    # so, like the TMA ones below, they are timed in interleaved rounds and each keeps its best median.
    ptr = {}
    for bm, bn, bk, w, st in GEMM_PTR:
        grid = (triton.cdiv(s, bm) * triton.cdiv(s, bn),)
        launch = lambda grid=grid, bm=bm, bn=bn, bk=bk, w=w, st=st: g.matmul_grouped_kernel[grid](
            a, b, c, s, s, s, *a.stride(), *b.stride(), *c.stride(), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
            EVEN_K=True, num_warps=w, num_stages=st)
        row = {"table": "gemm", "kernel": "grouped", "dtype": "fp16", "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
               "num_warps": w, "num_stages": st, "epi_split": "off"}
        try:
            kern = launch()
        except OutOfResources as e:      # the configuration asks for more shared memory than exists
            row.update(smem_kb=e.required / 1024)
        else:
            err = rel_err(c, ref)
            if not err < 2e-3:
                sys.exit(f"tuning: grouped {row}: error {err:.2e}")
            row.update(output="ok", regs=kern.n_regs, spills=kern.n_spills, smem_kb=kern.metadata.shared / 1024)
            ptr[len(rows)] = launch
        rows.append(row)
    best = {}
    for _ in range(TMA_ROUNDS):
        for i, launch in ptr.items():
            t = bench(launch)
            best[i] = min(t, best.get(i, t))
    for i, t in best.items():
        rows[i].update(ms=t, tflops=2 * s ** 3 / t / 1e9)
    for row in rows:
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    del a, b, c, ref
    # TMA + persistent, both dtypes. Differences between these configurations are a few percent,
    # the size of the GEMM's own call-to-call spread, so each is timed in rounds beside cuBLAS.
    for dtype, tag in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        a = torch.randn(s, s, device="cuda", dtype=dtype)
        b = torch.randn(s, s, device="cuda", dtype=dtype)
        ref = a.float() @ b.float()
        fns = {"cublas": lambda: torch.matmul(a, b)}
        for bm, bn, bk, w, st, split, gm in GEMM_TMA:
            cfg = dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, num_warps=w, num_stages=st, EPI_SPLIT=split, GROUP_M=gm)
            err = rel_err(g.matmul_tma(a, b, **cfg), ref)
            if not err < (1e-2 if tag == "bf16" else 2e-3):
                sys.exit(f"tuning: TMA {tag} {cfg}: relative error {err:.2e}")
            fns[(bm, bn, bk, w, st, split, gm)] = lambda cfg=cfg: g.matmul_tma(a, b, **cfg)
        best = {}
        for _ in range(TMA_ROUNDS):
            for key, fn in fns.items():
                t = bench(fn)
                best[key] = min(t, best.get(key, t))
        for key, t in best.items():
            row = {"table": "gemm", "kernel": "cublas", "dtype": tag} if key == "cublas" else {
                "table": "gemm", "kernel": "tma_persistent", "dtype": tag, "BLOCK_M": key[0], "BLOCK_N": key[1],
                "BLOCK_K": key[2], "num_warps": key[3], "num_stages": key[4], "epi_split": "on" if key[5] else "off",
                "GROUP_M": key[6], "output": "ok"}
            row.update(ms=t, tflops=2 * s ** 3 / t / 1e9, ratio_cublas=best["cublas"] / t)
            rows.append(row)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
        del a, b, ref

    # -- softmax --------------------------------------------------------------------------
    M = 4096
    for N in (1024, 8192, 12288):
        x = 4 * torch.randn(M, N, device="cuda")
        y = torch.empty_like(x)
        ref = torch.softmax(x.double(), dim=-1)
        BLOCK = triton.next_power_of_2(N)
        for n, rows_per, w in SOFTMAX_FUSED:
            if n != N:
                continue
            grid = (triton.cdiv(M, rows_per),)
            launch = lambda: sm.softmax_row_kernel[grid](y, x, x.stride(0), x.stride(1), y.stride(0), M, N,
                                                         BLOCK=BLOCK, ROWS=rows_per, num_warps=w)
            run({"table": "softmax_fused", "N": N, "ROWS": rows_per, "num_warps": w, "tol": 1e-5}, launch,
                lambda: (y.double() - ref).abs().max().item(), 2 * 4 * M * N)
        del x, y, ref
    N = 65536
    x = 4 * torch.randn(M, N, device="cuda")
    y = torch.empty_like(x)
    ref = torch.softmax(x.double(), dim=-1)
    progs = 4 * torch.cuda.get_device_properties(0).multi_processor_count
    for blk, w, st, un in SOFTMAX_ONLINE:
        launch = lambda: sm.softmax_online_kernel[(progs,)](y, x, x.stride(0), x.stride(1), y.stride(0), M, N,
                                                            BLOCK=blk, STAGES=st, UNROLL=un, num_warps=w)
        run({"table": "softmax_online", "kernel": "online", "N": N, "BLOCK": blk, "num_warps": w, "num_stages": st, "unroll": un,
             "tol": 1e-5}, launch, lambda: (y.double() - ref).abs().max().item(), 2 * 4 * M * N)
    BLOCK = triton.next_power_of_2(N)   # the fused kernel at this width: the whole row in registers
    launch = lambda: sm.softmax_row_kernel[(M,)](y, x, x.stride(0), x.stride(1), y.stride(0), M, N,
                                                 BLOCK=BLOCK, ROWS=1, num_warps=32)
    run({"table": "softmax_online", "N": N, "BLOCK": BLOCK, "num_warps": 32, "num_stages": 0, "unroll": 0,
         "kernel": "fused", "tol": 1e-5}, launch, lambda: (y.double() - ref).abs().max().item(), 2 * 4 * M * N)
    del x, y, ref

    # -- attention ----------------------------------------------------------------------
    import torch.nn.functional as F
    Bn, H, L = 4, 32, 4096
    for D in (64, 128):
        q, k, v = (torch.randn(Bn, H, L, D, device="cuda", dtype=torch.float16) for _ in range(3))
        for causal in (False, True):
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
            flops = 4 * Bn * H * L * L * D // (2 if causal else 1)
            for bm, bn, w, st, ws in ATTN:
                if ws and causal:
                    continue
                cfg = dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=st, WARP_SPEC=ws)
                out = {}
                launch = lambda: out.__setitem__("o", fa.attention(q, k, v, causal=causal, **cfg))
                run({"table": "attention", "D": D, "mask": "causal" if causal else "none", "BLOCK_M": bm,
                     "BLOCK_N": bn, "num_warps": w, "num_stages": st, "warp_spec": "on" if ws else "off",
                     "tol": 2e-3}, launch, lambda: rel_err(out["o"], ref), flops, may_fail=ws)
            del ref
        del q, k, v

    metrics = {
        "tflops": {"unit": "TFLOP/s", "noise": 0.08, "fmt": ".0f"},
        "ratio_cublas": {"unit": "×", "noise": 0.08, "fmt": ".3f"},
        "tbps": {"unit": "TB/s", "noise": 0.08, "fmt": ".2f"},
        "regs": {"unit": "registers/thread", "noise": 0, "fmt": "d"},
        # n_spills is CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES / 4 (Triton 3.6, backends/nvidia/driver.c): 4-byte values
        "spills": {"unit": "values/thread", "noise": 0, "fmt": "d", "check": False},
        "smem_kb": {"unit": "KiB", "noise": 0, "fmt": ".0f"},
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".3f", "check": False},
    }
    write(NAME, metrics, rows, args.out, argv, __file__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
