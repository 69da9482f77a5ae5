#!/usr/bin/env python3
"""Fusion gains on one GPU: bytes moved, time, and fraction of the roofline, eager against fused.

Five cases, each timed side by side in this one process with the ceilings it is
compared against (device-to-device copy bandwidth, cuBLAS fp16 rate):

  pointwise   silu(x) * g                 eager: 3 kernels   fused: Triton (snippets/.../fusion.py)
  horizontal  x.sum(1) and x.amax(1)       eager: 2 kernels   fused: Triton, one pass over x
  reduction   softmax written out          eager: 5 kernels   fused: Triton, one row per program
  epilogue    gelu(a @ b + bias)           eager: cuBLAS + 2  fused: Triton GEMM with the epilogue inside;
              beside them the library's epilogues: gelu(F.linear(a, w, bias)) (bias in the cuBLASLt GEMM,
              GELU a second kernel) and torch._addmm_activation(bias, a, b, use_gelu=True) (bias and
              tanh-GELU both in the cuBLASLt epilogue)
  attention   softmax(q k^T / sqrt(d)) v   eager: 4 kernels   fused: FlashAttention-2 via SDPA

Bytes are counted with the formulas in the snippets (every tensor once per kernel that
touches it). roofline = max(bytes / copy bandwidth, flops / cuBLAS rate) / time.

    python scripts/measure/how_ai_compilers_work/fusion.py [--out data/how_ai_compilers_work/fusion.json]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "nightly", "budget_s": 15}

import sys

from sitekit import data  # noqa: E402

from measure.how_ai_compilers_work import _common as common  # noqa: E402
from measure.how_ai_compilers_work._common import bench, ceilings, load_snippet, require_cuda  # noqa: E402

NAME = "how_ai_compilers_work/fusion"


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes on a CPU through the interpreter; writes nothing")
    args = ap.parse_args(argv)
    if args.smoke:
        common.start_smoke()
    require_cuda("how_ai_compilers_work_fusion")

    import torch
    import triton
    fusion = load_snippet("fusion")
    gemm = load_snippet("gemm_tuning")
    attn = load_snippet("attention")

    dev = fusion.DEVICE
    small = common.SMOKE                     # smoke: same code paths, sizes the interpreter can run
    torch.manual_seed(0)
    rows: list[dict] = []
    ceil = ceilings(rows)
    bw, peak = ceil["copy_tbps"] * 1e12, ceil["mm_tflops"] * 1e12

    def add(case, impl, shape, nbytes, ms, flops=0.0, eager_ms=None, extra_mib=None):
        floor_s = max(nbytes / bw, flops / peak)
        row = {"case": "aic_" + case, "aic_impl": "aic_" + impl, "shape": shape, "aic_gbytes": nbytes / 1e9, "ms": ms,
               "tbps": nbytes / ms / 1e9, "aic_roofline": floor_s * 1e3 / ms}
        if flops:
            row["tflops"] = flops / ms / 1e9
        if eager_ms is not None:
            row["aic_speedup"] = eager_ms / ms
        if extra_mib is not None:
            row["aic_extra_mib"] = extra_mib
        rows.append(row)
        print(f"{case:<10} {impl:<12} {ms:8.3f} ms  {nbytes / 1e9:7.2f} GB  {row['tbps']:5.2f} TB/s  "
              f"roofline {row['aic_roofline']:.0%}" + (f"  speedup {row['aic_speedup']:.2f}x" if "aic_speedup" in row else ""),
              flush=True)

    def close(out, ref, tol):
        err = ((out.float() - ref.float()).norm() / ref.float().norm()).item()
        if not err < tol:
            sys.exit(f"fused result differs from eager: relative error {err:.2e} > {tol}")

    # -- pointwise (vertical) ---------------------------------------------------------------
    n = 1 << (12 if small else 27)
    x, g = torch.randn(n, device=dev), torch.randn(n, device=dev)
    close(fusion.silu_mul(x, g), fusion.silu_mul_eager(x.double(), g.double()), 1e-6)
    unfused, fused = fusion.traffic("pointwise", (n,))
    t_e = bench(lambda: fusion.silu_mul_eager(x, g))
    t_f = bench(lambda: fusion.silu_mul(x, g))
    add("pointwise", "eager", f"2^{n.bit_length() - 1}", unfused, t_e)
    add("pointwise", "triton", f"2^{n.bit_length() - 1}", fused, t_f, eager_ms=t_e)
    del x, g

    # -- horizontal (siblings sharing an input) ---------------------------------------------
    r, c = (16, 3000) if small else (16384, 8192)
    a = torch.randn(r, c, device=dev)
    s, m = fusion.row_sum_max(a)
    s_ref, m_ref = fusion.row_sum_max_eager(a.double())
    close(s, s_ref, 1e-5)
    close(m, m_ref, 1e-7)
    unfused, fused = fusion.traffic("horizontal", (r, c))
    t_e = bench(lambda: fusion.row_sum_max_eager(a))
    t_f = bench(lambda: fusion.row_sum_max(a))
    add("horizontal", "eager", f"{r}x{c}", unfused, t_e)
    add("horizontal", "triton", f"{r}x{c}", fused, t_f, eager_ms=t_e)
    del a

    # -- reduction (softmax) ----------------------------------------------------------------
    r, c = (16, 1000) if small else (16384, 4096)
    a = torch.randn(r, c, device=dev)
    ref = torch.softmax(a.double(), dim=1)
    close(fusion.softmax(a), ref, 1e-5)
    close(fusion.softmax_eager(a), ref, 1e-5)
    unfused, fused = fusion.traffic("reduction", (r, c))
    t_e = bench(lambda: fusion.softmax_eager(a))
    t_f = bench(lambda: fusion.softmax(a))
    t_t = bench(lambda: torch.softmax(a, dim=1))
    add("reduction", "eager", f"{r}x{c}", unfused, t_e)
    add("reduction", "triton", f"{r}x{c}", fused, t_f, eager_ms=t_e)
    add("reduction", "torch_softmax", f"{r}x{c}", fused, t_t, eager_ms=t_e)
    del a, ref

    # -- epilogue fusion into a GEMM --------------------------------------------------------
    M, N, K = (256, 256, 128) if small else (8192, 8192, 2048)
    e = 2
    a = torch.randn(M, K, device=dev, dtype=torch.float16)
    b = torch.randn(K, N, device=dev, dtype=torch.float16) / K ** 0.5
    bias = torch.randn(N, device=dev, dtype=torch.float16)
    # One config from the Triton matmul tutorial's Hopper list; the tuning section searches for better.
    cfg = triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8}, num_warps=8, num_stages=3)
    ref = gemm.matmul_bias_gelu_eager(a.float(), b.float(), bias.float())
    close(gemm.matmul_bias_gelu(a, b, bias, config=cfg), ref, 1e-2)
    close(gemm.matmul_bias_gelu_eager(a, b, bias), ref, 1e-2)
    del ref
    flops = 2 * M * N * K
    gemm_bytes = (M * K + K * N + M * N) * e
    unfused = gemm_bytes + (2 * M * N + N) * e + 2 * M * N * e      # + bias add (r/w) + GELU (r/w)
    fused = gemm_bytes + N * e
    t_e = bench(lambda: gemm.matmul_bias_gelu_eager(a.float() if small else a, b.float() if small else b,
                                                    bias.float() if small else bias))
    t_c = bench(lambda: a.float() @ b.float() if small else a @ b)
    t_f = bench(lambda: gemm.matmul_bias_gelu(a, b, bias, config=cfg))
    shape = f"{M}x{N}x{K}"
    add("epilogue", "eager", shape, unfused, t_e, flops=flops)
    add("epilogue", "cublas_only", shape, gemm_bytes, t_c, flops=flops)
    add("epilogue", "triton", shape, fused, t_f, flops=flops, eager_ms=t_e)
    if not small:   # the library's own epilogues (cuBLASLt), as idiomatic eager code reaches them
        w = b.t()   # nn.Linear layout (N, K); F.linear multiplies by its transpose, which is b
        ref = torch.nn.functional.gelu(a.float() @ b.float() + bias.float(), approximate="tanh")
        close(torch.nn.functional.gelu(torch.nn.functional.linear(a, w, bias)), ref, 1e-2)
        close(torch._addmm_activation(bias, a, b, use_gelu=True), ref, 1e-2)
        del ref
        t_l = bench(lambda: torch.nn.functional.gelu(torch.nn.functional.linear(a, w, bias)))
        t_a = bench(lambda: torch._addmm_activation(bias, a, b, use_gelu=True))
        add("epilogue", "linear_gelu", shape, gemm_bytes + N * e + 2 * M * N * e, t_l, flops=flops, eager_ms=t_e)
        add("epilogue", "addmm_gelu", shape, fused, t_a, flops=flops, eager_ms=t_e)
    del a, b, bias

    # -- attention --------------------------------------------------------------------------
    B, H, L, D = (1, 2, 256, 64) if small else (4, 16, 4096, 128)
    dt = torch.float32 if small else torch.float16   # CPU matmul in fp16 is slow; the GPU runs fp16
    q, k, v = (torch.randn(B, H, L, D, device=dev, dtype=dt) for _ in range(3))
    ref = attn.attention_eager(q[:1].float(), k[:1].float(), v[:1].float())
    fused_fn = attn.attention_fused
    if small:   # no FlashAttention kernel on a CPU: SDPA's default choice stands in for the code path
        fused_fn = lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v)
    close(fused_fn(q[:1], k[:1], v[:1]), ref, 1e-2)
    close(attn.attention_eager(q[:1], k[:1], v[:1]), ref, 1e-2)
    del ref
    unfused, fused = attn.attention_traffic(B, H, L, D)
    flops = attn.attention_flops(B, H, L, D)
    extra = {}
    for impl, fn in (("eager", attn.attention_eager), ("flash", fused_fn)):
        if small:
            extra[impl] = 0.0
            continue
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        fn(q, k, v)
        torch.cuda.synchronize()
        extra[impl] = (torch.cuda.max_memory_allocated() - base) / 2**20
    t_e = bench(lambda: attn.attention_eager(q, k, v), rep=100)
    t_f = bench(lambda: fused_fn(q, k, v), rep=100)
    shape = f"B{B} H{H} N{L} D{D}"
    add("attention", "eager", shape, unfused, t_e, flops=flops, extra_mib=extra["eager"])
    add("attention", "sdpa_flash", shape, fused, t_f, flops=flops, eager_ms=t_e, extra_mib=extra["flash"])

    metrics = {
        "aic_gbytes": {"unit": "GB", "noise": 0.0, "better": "lower", "fmt": ".2f"},
        "ms": {"unit": "ms", "noise": 0.10, "better": "lower", "fmt": ".3f"},
        "tbps": {"unit": "TB/s", "noise": 0.10, "better": "higher", "fmt": ".2f"},
        "tflops": {"unit": "TFLOP/s", "noise": 0.10, "better": "higher", "fmt": ".0f"},
        "aic_roofline": {"unit": "fraction", "noise": 0.10, "better": "higher", "fmt": ".0%"},
        "aic_speedup": {"unit": "x", "noise": 0.10, "better": "higher", "fmt": ".2f"},
        "aic_extra_mib": {"unit": "MiB", "noise": 0.05, "better": "lower", "fmt": ".0f"},
    }
    return common.finish(NAME, metrics, rows, args.out, argv, __file__)


if __name__ == "__main__":
    raise SystemExit(main())
