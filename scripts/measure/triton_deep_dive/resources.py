#!/usr/bin/env python3
"""Resources of the "Deep Dive into OpenAI Triton" kernels at the launch settings the snippets use,
compiled for an H200 (sm_90) on any machine, no GPU needed.

Each FlashAttention kernel (forward, dK/dV, dQ; fp16; per head dim and mask, with FWD_CONFIGS and
BWD_CONFIGS) and the lattice Boltzmann step (D2Q9 and D3Q19, walls on every axis, 512 cells x 4 warps)
is compiled with the installed Triton for sm_90 and its cubin read with the cuobjdump Triton ships:
registers per thread, spilled bytes (stack frame), shared memory per program, and whether the SASS uses
the Hopper tensor-core instruction (HGMMA) and the bulk tensor copy (TMA, UTMALDG).
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "weekly", "budget_s": 90}

import os

from sitekit import data, measure

NAME = data.name_of(__file__)


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    os.environ["TRITON_INTERPRET"] = "0"          # compile, do not interpret
    import triton

    fa = measure.snippet("triton_deep_dive/attention")
    lbm = measure.snippet("triton_deep_dive/lbm")
    rows = []

    def build(row, kernel, types, const, num_warps, num_stages):
        names = kernel.arg_names
        sig = {n: "constexpr" if n in const else types.get(n, "i32") for n in names}
        # strides and sizes are multiples of 16 elements in every measured case (the launcher specializes the same)
        attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in names
                 if sig[n] == "i32" and n not in ("HQ", "HKV", "GROUP", "NX", "NY", "NZ")}
        u = measure.sm90_compile(kernel, sig, const, attrs, num_warps, num_stages)
        sass = u["sass"]
        row.update(num_warps=num_warps, num_stages=num_stages, regs=u["regs"], spill_bytes=u["spill_bytes"],
                   smem_kb=u["smem_bytes"] / 1024,
                   hgmma="yes" if "HGMMA" in sass else "no", tma="yes" if "UTMALDG" in sass else "no")
        rows.append(row)
        print(row, flush=True)

    ptr = dict(Q="*fp16", K="*fp16", V="*fp16", O="*fp16", DO="*fp16", DK="*fp16", DV="*fp16", DQ="*fp16",
               LSE="*fp32", DELTA="*fp32", qk_scale="fp32", sm_scale="fp32")
    cases = [(64, False)] if args.quick else sorted(fa.FWD_CONFIGS)
    for D, causal in cases:
        mask = "causal" if causal else "none"
        c = dict(fa.FWD_CONFIGS[(D, causal)])
        w, st = c.pop("num_warps"), c.pop("num_stages")
        build({"kernel": "attn_fwd", "D": D, "mask": mask, "BLOCK_M": c["BLOCK_M"], "BLOCK_N": c["BLOCK_N"]},
              fa.attn_fwd, ptr, dict(HEAD_DIM=D, CAUSAL=causal, **c), w, st)
        c = dict(fa.BWD_CONFIGS[(D, causal)])
        (m1, n1, w1, st1), (m2, n2, w2, st2) = c["DKDV"], c["DQ"]
        build({"kernel": "attn_bwd_dkdv", "D": D, "mask": mask, "BLOCK_M": m1, "BLOCK_N": n1},
              fa.attn_bwd_dkdv, ptr, dict(HEAD_DIM=D, CAUSAL=causal, BLOCK_M=m1, BLOCK_N=n1), w1, st1)
        build({"kernel": "attn_bwd_dq", "D": D, "mask": mask, "BLOCK_M": m2, "BLOCK_N": n2},
              fa.attn_bwd_dq, ptr, dict(HEAD_DIM=D, CAUSAL=causal, BLOCK_M=m2, BLOCK_N=n2), w2, st2)
    for lat in (lbm.D2Q9, lbm.D3Q19):
        cell = dict(F_IN="*fp32", F_OUT="*fp32", omega="fp32", u_lid="fp32")
        build({"kernel": "lbm_step", "lattice": lat.name, "storage": "fp32", "BLOCK": lbm.CELL_BLOCK}, lbm.lbm_step_kernel,
              cell, dict(**lat.consts, BLOCK=lbm.CELL_BLOCK, PX=False, PY=False, PZ=False, F16=False), lbm.CELL_WARPS, 3)
        half = dict(cell, F_IN="*fp16", F_OUT="*fp16")
        build({"kernel": "lbm_step", "lattice": lat.name, "storage": "fp16", "BLOCK": lbm.CELL_BLOCK}, lbm.lbm_step_kernel,
              half, dict(**lat.consts, BLOCK=lbm.CELL_BLOCK, PX=False, PY=False, PZ=False, F16=True), lbm.CELL_WARPS, 3)
        tile = dict(F_IN="*fp32", F_OUT="*fp32", CX="*i32", CY="*i32", CZ="*i32", W="*fp32", OPP="*i32",
                    omega="fp32", u_lid="fp32")
        qp = triton.next_power_of_2(lat.Q)
        build({"kernel": "lbm_tile", "lattice": lat.name, "storage": "fp32", "BLOCK": 512}, lbm.lbm_tile_kernel, tile,
              dict(Q=lat.Q, QP=qp, BLOCK=512, PX=False, PY=False, PZ=False), 4, 3)
    metrics = {"regs": {"unit": "registers/thread", "noise": 0, "fmt": "d"},
               "spill_bytes": {"unit": "B", "noise": 0, "fmt": "d"},
               "smem_kb": {"unit": "KiB", "noise": 0, "fmt": ".0f"}}
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
