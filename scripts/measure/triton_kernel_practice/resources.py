#!/usr/bin/env python3
"""Resources of the "Triton Kernel Practice" kernels per configuration, compiled for an H200
(sm_90) on any machine, no GPU needed.

For each block size / num_warps / num_stages / warp-specialization choice the tuning section
discusses, the page's own kernels are compiled with the installed Triton (and the ptxas it
ships) for sm_90, and the cubin is read with its cuobjdump: registers per thread, stack frame
(bytes of register spilling), shared memory per program, warps launched (warp specialization
adds its own), and whether the SASS uses the Hopper tensor-core instructions (HGMMA for 16-bit,
QGMMA for 8-bit operands), only the older warp-level one (HMMA), and the bulk tensor copy (TMA,
UTMALDG). Table "linear": the inference-GEMM kernel of linear.py, plain and swapped, fp16 and FP8,
and the FP8 TMA kernel. Table "softmax_ragged": the fused softmax at widths that are multiples of 4
but not of 16, without and with its VEC divisibility hint: the widest global load and store in the
PTX (bytes per thread) and how many of each a thread issues. Table "k_mask": the grouped GEMM with and
without its K mask at K = 4096, 4112 and 4100: 16-byte cp.async copies and plain global loads in the SASS.
A program
fits an H200 multiprocessor when its shared memory is at most 227 KiB.

    python scripts/measure/triton_kernel_practice/resources.py [--out data/triton_kernel_practice/resources.json]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 60}

import inspect
import os
import re

from sitekit import measure

from measure.triton_kernel_practice._common import GEMM_PTR, parse, snippet, write

NAME = "triton_kernel_practice/resources"
SMEM_LIMIT = 227 * 1024      # bytes of shared memory one program may use on sm_90

GEMM_TMA = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, EPI_SPLIT
    (128, 128, 64, 4, 4, False), (128, 256, 64, 8, 3, False), (128, 256, 64, 8, 3, True),
    (128, 256, 64, 8, 4, False), (128, 256, 64, 8, 4, True)]
SOFTMAX_FUSED = [  # BLOCK, ROWS, num_warps
    (1024, 1, 2), (1024, 2, 2), (8192, 1, 1), (8192, 1, 2), (8192, 1, 4), (8192, 1, 16),
    (16384, 1, 16), (16384, 1, 32), (65536, 1, 32)]
SOFTMAX_ONLINE = [  # BLOCK, num_warps, STAGES, UNROLL
    (4096, 8, 1, 1), (4096, 8, 2, 1), (4096, 8, 3, 1), (4096, 8, 3, 2), (16384, 16, 2, 1)]
LINEAR = [  # dtype, BLOCK_M, BLOCK_N, BLOCK_K, SWAP_AB, SPLIT, num_warps, num_stages
    ("fp16", 16, 64, 128, False, False, 4, 4), ("fp16", 16, 64, 128, True, False, 4, 4),
    ("fp16", 16, 64, 128, True, True, 4, 4), ("fp16", 128, 64, 64, True, True, 4, 4),
    ("fp16", 128, 128, 64, True, True, 8, 4), ("fp16", 8, 64, 128, True, False, 4, 4), ("fp8", 16, 64, 128, True, True, 4, 4),
    ("fp8", 128, 128, 128, True, True, 8, 4)]
ATTN = [  # HEAD_DIM, BLOCK_M, BLOCK_N, num_warps, num_stages, WARP_SPEC
    (64, 128, 64, 4, 3, False), (64, 128, 128, 8, 3, False), (64, 128, 128, 4, 2, True),
    (128, 64, 64, 4, 3, False), (128, 128, 64, 4, 3, False), (128, 128, 128, 4, 3, False),
    (128, 128, 128, 8, 3, False), (128, 128, 128, 4, 2, True)]


def main(argv=None) -> int:
    args = parse(__doc__, NAME, argv)
    os.environ["TRITON_INTERPRET"] = "0"          # compile, do not interpret
    g, sm, fa, lin = snippet("gemm"), snippet("softmax"), snippet("flash_attention"), snippet("linear")
    rows = []

    def build(row, kernel, args, const, num_warps, num_stages):
        # specialized as the launcher specializes a launch with these argument values (sizes and
        # strides of the shapes the page times; pointers aligned as PyTorch allocates them)
        sig, const, attrs = measure.launch_signature(kernel, args, const)
        u = measure.sm90_compile(kernel, sig, const, attrs, num_warps, num_stages)
        sass = u["sass"]
        row.update(regs=u["regs"], spill_bytes=u["spill_bytes"],
                   smem_kb=u["smem_bytes"] / 1024, warps=u["num_warps"],
                   fits="yes" if u["smem_bytes"] <= SMEM_LIMIT else "no",
                   hgmma="yes" if "HGMMA" in sass else "no", qgmma="yes" if "QGMMA" in sass else "no",
                   hmma="yes" if re.search(r"\bHMMA", sass) else "no", tma="yes" if "UTMALDG" in sass else "no")
        rows.append(row)
        print(row, flush=True)
        return sass

    n = 4096   # the GEMM section's square size: A (n, n) row-major, B (n, n) with unit stride along N
    ptr = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": n, "N": n, "K": n,
           "stride_am": n, "stride_ak": 1, "stride_bk": n, "stride_bn": 1, "stride_cm": n, "stride_cn": 1}
    for bm, bn, bk, w, st in GEMM_PTR:
        const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "EVEN_K": True}
        build({"table": "gemm", "kernel": "grouped", "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w,
               "num_stages": st, "epi_split": "off"}, g.matmul_grouped_kernel, ptr, const, w, st)
    # the K loop's mask (EVEN_K false): matmul_grouped's default configuration compiled at a K that is a multiple of
    # BLOCK_K (no mask), at one that is a multiple of 16 but not of BLOCK_K (masked), and at one that is not a
    # multiple of 16, masked and, for comparison only, unmasked (that kernel would read past K): how many of
    # the tile loads stay 16-byte cp.async copies (LDGSTS ... .128 in the SASS), how many become plain LDGs
    d = {k: v.default for k, v in inspect.signature(g.matmul_grouped).parameters.items()}
    bm, bn, bk, w, st = d["BLOCK_M"], d["BLOCK_N"], d["BLOCK_K"], d["num_warps"], d["num_stages"]
    for k, even in ((n, True), (n + 16, False), (n + 4, False), (n + 4, True)):
        sig, const, attrs = measure.launch_signature(
            g.matmul_grouped_kernel, dict(ptr, K=k, stride_am=k),
            {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "EVEN_K": even})
        sass = measure.sm90_compile(g.matmul_grouped_kernel, sig, const, attrs, w, st)["sass"]
        row = {"table": "k_mask", "K": k, "EVEN_K": "yes" if even else "no", "BLOCK_M": bm, "BLOCK_N": bn,
               "BLOCK_K": bk, "ldgsts_16B": len(re.findall(r"\bLDGSTS(?:\.[A-Z0-9_]+)*\.128\b", sass)),
               "ldg": len(re.findall(r"\bLDG\.", sass))}
        rows.append(row)
        print(row, flush=True)
    for bm, bn, bk, w, st, split in GEMM_TMA:
        sig = {"a_desc": f"tensordesc<fp16[{bm}, {bk}]>", "b_desc": f"tensordesc<fp16[{bk}, {bn}]>",
               "c_desc": f"tensordesc<fp16[{bm}, {bn // 2 if split else bn}]>", "M": n, "N": n, "K": n}
        const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8, "NUM_SMS": 132, "B_KMAJOR": False,
                 "EPI_SPLIT": split}
        build({"table": "gemm", "kernel": "tma_persistent", "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
               "num_warps": w, "num_stages": st, "epi_split": "on" if split else "off"},
              g.matmul_tma_kernel, sig, const, w, st)

    def sm_args(n_cols):   # 4,096 contiguous fp32 rows of n_cols, as the softmax section times them
        return {"out_ptr": "*fp32", "in_ptr": "*fp32", "in_row_stride": n_cols, "in_col_stride": 1,
                "out_row_stride": n_cols, "n_rows": 4096, "n_cols": n_cols}

    for blk, rows_per, w in SOFTMAX_FUSED:
        build({"table": "softmax_fused", "BLOCK": blk, "ROWS": rows_per, "num_warps": w},
              sm.softmax_row_kernel, sm_args(blk), {"BLOCK": blk, "ROWS": rows_per, "VEC": 1}, w, 3)
    for blk, w, st, un in SOFTMAX_ONLINE:
        build({"table": "softmax_online", "BLOCK": blk, "num_warps": w, "num_stages": st, "unroll": un},
              sm.softmax_online_kernel, sm_args(8 * blk), {"BLOCK": blk, "STAGES": st, "UNROLL": un}, w, 3)

    # Ragged widths: 4,096 contiguous fp32 rows of N columns, N a multiple of 4 but not of 16, compiled
    # without the divisibility hint (VEC = 1) and with the one softmax_fused passes (vec_width): the
    # widest global load and store in the PTX, in bytes per thread, and how many each thread issues.
    import torch
    for n_cols in (1000, 3000, 5000):
        blk = 1 << (n_cols - 1).bit_length()
        rows_per, w = sm.fused_launch(blk, 4096)
        for vec in sorted({1, sm.vec_width(torch.empty(0, n_cols))}):
            sig, const, attrs = measure.launch_signature(sm.softmax_row_kernel, sm_args(n_cols),
                                                         {"BLOCK": blk, "ROWS": rows_per, "VEC": vec})
            u = measure.sm90_compile(sm.softmax_row_kernel, sig, const, attrs, w, 3)
            width = {"v4": 16, "v2": 8}
            lds = re.findall(r"ld\.global(?:\.[a-z0-9]+)*?\.(v[24])?\.?b32", u["ptx"])
            sts = re.findall(r"st\.global(?:\.[a-z0-9]+)*?\.(v[24])?\.?b32", u["ptx"])
            row = {"table": "softmax_ragged", "N": n_cols, "BLOCK": blk, "ROWS": rows_per, "num_warps": w, "VEC": vec,
                   "regs": u["regs"], "spill_bytes": u["spill_bytes"], "warps": u["num_warps"],
                   "ld_bytes": max(width.get(v, 4) for v in lds), "loads": len(lds),
                   "st_bytes": max(width.get(v, 4) for v in sts), "stores": len(sts)}
            rows.append(row)
            print(row, flush=True)

    B, H, N = 4, 32, 4096   # the attention section's shape: contiguous (B, H, N, D) tensors
    for D, bm, bn, w, st, ws in ATTN:
        const = {"HEAD_DIM": D, "BLOCK_M": bm, "BLOCK_N": bn, "CAUSAL": False, "WARP_SPEC": ws, "EVEN_N": True}
        values = dict(Q="*fp16", K="*fp16", V="*fp16", O="*fp16", B=B, H=H, N_CTX=N, sm_scale=D ** -0.5)
        for t in "qkvo":
            values.update({f"s{t}_b": H * N * D, f"s{t}_h": N * D, f"s{t}_n": D})
        build({"table": "attention", "D": D, "BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": st,
               "warp_spec": "on" if ws else "off"}, fa.attn_fwd_kernel, values, const, w, st)

    for dt, bm, bn, bk, swap, split, w, st in LINEAR:
        el = "fp8e4nv" if dt == "fp8" else "fp16"
        # x (M, 4096) and W (4096, 4096) in nn.Linear layout; M and split_tiles are do_not_specialize
        sig = {"x_ptr": f"*{el}", "w_ptr": f"*{el}", "y_ptr": "*bf16" if dt == "fp8" else "*fp16", "ws_ptr": "*fp32",
               "cnt_ptr": "*i32", "sx_ptr": "*fp32", "sw_ptr": "*fp32", "M": bm, "N": 4096, "K": 4096,
               "split_tiles": 8, "stride_xm": 4096, "stride_wn": 4096, "stride_ym": 4096}
        const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SWAP_AB": swap, "SPLIT": split,
                 "SCALE": 1 if dt == "fp8" else 0, "EVEN_K": True, "M_FIRST": False}
        build({"table": "linear", "kernel": "linear", "dtype": dt, "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
               "swap_ab": "on" if swap else "off", "split": "on" if split else "off", "num_warps": w, "num_stages": st},
              lin.linear_kernel, sig, const, w, st)
    # the TMA and stream-K kernels at the tiles linear() uses for M <= 16 on 11008 x 4096 (swapped, 16 x 64 x 128,
    # 4 warps, 4 stages): the shared memory that decides how many of them fit on one multiprocessor
    bm, bn, bk, w, st = 16, 64, 128, 4, 4
    descs = {"x_desc": f"tensordesc<fp16[{bm}, {bk}]>", "w_desc": f"tensordesc<fp16[{bn}, {bk}]>"}
    sig = {**descs, "y_ptr": "*fp16", "ws_ptr": "*fp32", "cnt_ptr": "*i32", "sx_ptr": "*fp32", "sw_ptr": "*fp32",
           "M": bm, "N": 11008, "K": 4096, "split_tiles": 32, "stride_ym": 11008}
    const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SWAP_AB": True, "SPLIT": False, "SCALE": 0, "M_FIRST": False}
    build({"table": "linear", "kernel": "linear_tma", "dtype": "fp16", "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
           "swap_ab": "on", "split": "off", "num_warps": w, "num_stages": st}, lin.linear_tma_kernel, sig, const, w, st)
    sig = {**descs, "y_ptr": "*fp16", "ws_ptr": "*fp32", "cnt_ptr": "*i32", "M": bm, "N": 11008, "K": 4096,
           "per_prog": 45, "stride_ym": 11008}
    const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "SWAP_AB": True, "MAX_SEG": 3}
    build({"table": "linear", "kernel": "linear_streamk", "dtype": "fp16", "BLOCK_M": bm, "BLOCK_N": bn,
           "BLOCK_K": bk, "swap_ab": "on", "split": "off", "num_warps": w, "num_stages": st},
          lin.linear_streamk_kernel, sig, const, w, st)
    c = lin.FP8_TMA_CONFIG
    bm, bn, bk = c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"]
    sig = {"a_desc": f"tensordesc<fp8e4nv[{bm}, {bk}]>", "b_desc": f"tensordesc<fp8e4nv[{bn}, {bk}]>",
           "c_desc": f"tensordesc<bf16[{bm}, {bn // 2 if c['EPI_SPLIT'] else bn}]>", "sa_ptr": "*fp32", "sb_ptr": "*fp32",
           "M": 4096, "N": 4096, "K": 4096}
    const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": c["GROUP_M"], "NUM_SMS": 132, "PER_ROW": False,
             "EPI_SPLIT": c["EPI_SPLIT"]}
    build({"table": "linear", "kernel": "fp8_tma", "dtype": "fp8", "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk,
           "swap_ab": "off", "split": "off", "num_warps": c["num_warps"], "num_stages": c["num_stages"]},
          lin.fp8_tma_kernel, sig, const, c["num_warps"], c["num_stages"])

    # gemm_epilogue.py's kernel at the configuration its wrapper uses, with and without the fused bias
    # and GELU: what the epilogue costs in registers (nn.Linear layout: W (N, K) K-major)
    ep = snippet("gemm_epilogue")
    c = ep.CONFIG
    bm, bn, bk = c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"]
    for fused in (False, True):
        sig = {"x_desc": f"tensordesc<fp16[{bm}, {bk}]>", "w_desc": f"tensordesc<fp16[{bn}, {bk}]>",
               "y_desc": f"tensordesc<fp16[{bm}, {bn // 2 if c['EPI_SPLIT'] else bn}]>", "bias_ptr": "*fp16",
               "M": 4096, "N": 11008, "K": 4096}
        const = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "NUM_SMS": 132, "BIAS": fused, "GELU": fused,
                 "FAST_TANH": True, "EPI_SPLIT": c["EPI_SPLIT"]}
        sass = build({"table": "epilogue", "kernel": "linear_gelu" if fused else "linear_gelu_plain", "dtype": "fp16",
                      "BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": c["num_warps"],
                      "num_stages": c["num_stages"], "epi_split": "on" if c["EPI_SPLIT"] else "off"},
                     ep.linear_gelu_kernel, sig, const, c["num_warps"], c["num_stages"])
        rows[-1]["mufu_tanh"] = "yes" if "MUFU.TANH" in sass else "no"   # tanh.approx.f32 in the machine code

    metrics = {
        "regs": {"unit": "registers/thread", "noise": 0, "fmt": "d"},
        "spill_bytes": {"unit": "bytes", "noise": 0, "fmt": "d"},
        "smem_kb": {"unit": "KiB", "noise": 0, "fmt": ".0f"},
        "warps": {"unit": "warps", "noise": 0, "fmt": "d"},
        "ld_bytes": {"unit": "bytes", "noise": 0, "fmt": "d"},
        "loads": {"unit": "instructions", "noise": 0, "fmt": "d"},
        "st_bytes": {"unit": "bytes", "noise": 0, "fmt": "d"},
        "stores": {"unit": "instructions", "noise": 0, "fmt": "d"},
        "ldgsts_16B": {"unit": "instructions", "noise": 0, "fmt": "d"},
        "ldg": {"unit": "instructions", "noise": 0, "fmt": "d"},
    }
    write(NAME, metrics, rows, args.out, argv, __file__)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
