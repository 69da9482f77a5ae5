#!/usr/bin/env python3
"""Resources of the "Deep Dive into OpenAI Triton" kernels at the launch settings the snippets use,
compiled for an H200 (sm_90) on any machine, no GPU needed.

Each FlashAttention kernel (forward, dK/dV, dQ; fp16; per head dim and mask, with FWD_CONFIGS and
BWD_CONFIGS) and its packed variable-length version (attention_varlen.py, same settings; compiled for keys
packed with the queries, column keys "shared", and for keys with their own offsets, "apart"), the dK/dV
kernel at D = 256 at every setting of attention_tuning's backward sweep (column "swept"), the forward of each step of the page's step-by-step table (pointer loads, TMA without and
with pipelining, the Gluon FA3 loop order, its warp-specialized ping-pong version; full attention), the
step-4 Gluon forward at every FA3_CONFIGS setting (with its register cap), the Gluon backward of step 6
(the dK/dV kernel at every setting bwd_settings() launches, one or two consumers, and the dQ kernel at
GLUON_DQ) and the lattice Boltzmann kernels (D2Q9 and D3Q19, walls on every axis) is compiled with the
installed Triton for sm_90 and its cubin read with the cuobjdump Triton ships: registers per thread, spilled bytes (stack frame), shared memory per program, and
whether the SASS uses the Hopper tensor-core instruction (HGMMA), the bulk tensor copy (TMA, UTMALDG) and
the asynchronous global-to-shared copy of cp.async (LDGSTS); for the lattice Boltzmann kernels also how many
global loads (LDG) the SASS holds that move one element of the lattice's storage or less ("ldg_scalar") and
how many move more ("ldg_vector"), counted in the code, not as executed.

Every kernel is compiled as the launcher specializes it for the measured shapes (attention: B=4, H=32,
N=4096, contiguous; LBM: 4096^2 and 256^3 cells): pointers 16-byte aligned, sizes and strides that are
multiples of 16 marked so, and an argument equal to 1 (GROUP without grouped heads, NZ in 2-D) folded
into the code (sitekit.measure.launch_signature).
"""

from __future__ import annotations

META = {"needs": "cpu", "tier": "weekly", "budget_s": 90}

import os
import re
import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
# bytes a global load (LDG) of the SASS moves per thread, by the width among its suffixes; none: 32 bits
LDG_BYTES = {"U8": 1, "S8": 1, "U16": 2, "S16": 2, "64": 8, "128": 16}


def ldg_bytes(suffixes: str) -> int:
    """".E.64" -> 8, ".E.U16" -> 2, ".E" or ".E.CONSTANT" -> 4 (a cache hint such as LTC128B is no width)."""
    return next((LDG_BYTES[t] for t in suffixes.split(".") if t in LDG_BYTES), 4)


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    os.environ["TRITON_INTERPRET"] = "0"  # compile, do not interpret
    import triton

    fa = measure.snippet("triton_deep_dive/attention")
    sys.modules["attention"] = fa  # attention_steps.py and attention_gluon.py import it by this name
    steps = measure.snippet("triton_deep_dive/attention_steps")
    gluon = measure.snippet("triton_deep_dive/attention_gluon")
    sys.modules["attention_gluon"] = gluon  # attention_bwd_gluon.py imports it by this name
    bwd_gluon = measure.snippet("triton_deep_dive/attention_bwd_gluon")
    lbm = measure.snippet("triton_deep_dive/lbm")
    rows = []

    def build(row, kernel, args, const, num_warps, num_stages, gluon=False, maxnreg=None, elem_bytes=None):
        sig, consts, attrs = measure.launch_signature(kernel, args, const)
        u = measure.sm90_compile(kernel, sig, consts, attrs, num_warps, num_stages, gluon=gluon, maxnreg=maxnreg)
        sass = u["sass"]
        if elem_bytes:  # global loads in the SASS by width: one element of the lattice's storage, or more
            widths = [ldg_bytes(m) for m in re.findall(r"\bLDG((?:\.[A-Z0-9_]+)+)", sass)]
            row.update(
                ldg_scalar=sum(w <= elem_bytes for w in widths),
                ldg_vector=sum(w > elem_bytes for w in widths),
            )
        row.update(
            num_warps=u["num_warps"],
            num_stages=num_stages,
            regs=u["regs"],
            spill_bytes=u["spill_bytes"],
            smem_kb=u["smem_bytes"] / 1024,
            hgmma="yes" if "HGMMA" in sass else "no",
            tma="yes" if "UTMALDG" in sass else "no",
            cp_async="yes" if "LDGSTS" in sass else "no",
        )
        rows.append(row)
        print(row, flush=True)

    B, H, N = 4, 32, 4096  # the measured attention shape (only the ping-pong kernel's n_tiles depends on B)

    def attention_args(D: int, *names: str) -> dict:
        """Argument values of an attention launch on contiguous (B, H, N, D) fp16 tensors, no grouped heads."""
        a = dict(HQ=H, HKV=H, H=H, GROUP=1, N_CTX=N, qk_scale=0.125, sm_scale=0.125, LSE="*fp32", DELTA="*fp32")
        for t in names:  # a tensor's pointer and its three outer strides
            a[t] = "*fp16"
        for prefix in ("sq", "sk", "sv", "so", "sd", "sdk", "sdv", "sdq"):
            a.update({f"{prefix}_b": H * N * D, f"{prefix}_h": N * D, f"{prefix}_n": D})
        return a

    # the packed variable-length kernels of attention_varlen.py at the same settings: (T, H, D) tensors of
    # T = B * N tokens, strides H * D and D; CU_Q and CU_K int32 pointers
    sys.modules["attention_varlen"] = varlen = measure.snippet("triton_deep_dive/attention_varlen")

    def varlen_args(D: int, *names: str) -> dict:
        a = dict(HQ=H, HKV=H, GROUP=1, TOTAL_Q=B * N, qk_scale=0.125, sm_scale=0.125, LSE="*fp32", DELTA="*fp32")
        a["CU_Q"] = a["CU_K"] = "*i32"
        for t in names:
            a[t] = "*fp16"
        for prefix in ("sq", "sk", "sv", "so", "sd", "sdk", "sdv", "sdq"):
            a.update({f"{prefix}_t": H * D, f"{prefix}_h": D})
        return a

    cases = [(64, False)] if args.quick else sorted(fa.FWD_CONFIGS)
    # the batched kernels of attention.py, then their packed versions: forward, dK/dV, dQ per (D, mask)
    # (the packed ones twice: keys packed with the queries, and apart from them with their own offsets)
    variants = [("", fa, attention_args, {}, {})]
    variants += [
        ("_varlen", varlen, varlen_args, {"keys": keys}, {"KEYS_APART": keys == "apart"}) for keys in ("shared", "apart")
    ]
    for suffix, mod, make_args, label, flags in variants:
        for D, causal in cases:
            mask = "causal" if causal else "none"
            c = dict(fa.FWD_CONFIGS[(D, causal)])
            w, st = c.pop("num_warps"), c.pop("num_stages")
            kernel = f"attn_fwd{suffix}"
            build(
                {"kernel": kernel, **label, "D": D, "mask": mask, "BLOCK_M": c["BLOCK_M"], "BLOCK_N": c["BLOCK_N"]},
                getattr(mod, kernel),
                make_args(D, "Q", "K", "V", "O"),
                dict(HEAD_DIM=D, CAUSAL=causal, **c, **flags),
                w,
                st,
            )
            c = dict(fa.BWD_CONFIGS[(D, causal)])
            for kernel, (m, n, w, st), grads in (
                (f"attn_bwd_dkdv{suffix}", c["DKDV"], ("DK", "DV")),
                (f"attn_bwd_dq{suffix}", c["DQ"], ("DQ",)),
            ):
                build(
                    {"kernel": kernel, **label, "D": D, "mask": mask, "BLOCK_M": m, "BLOCK_N": n},
                    getattr(mod, kernel),
                    make_args(D, "Q", "K", "V", "DO", *grads),
                    dict(HEAD_DIM=D, CAUSAL=causal, BLOCK_M=m, BLOCK_N=n, **flags),
                    w,
                    st,
                )

    # the dK/dV kernel at D = 256 at every setting the backward sweep timed (attention_tuning.BWD), keyed
    # "swept" so that the rows of the launched settings above stay the only "kernel" rows: the page sets each
    # setting's registers and spills beside the time the sweep measured with it
    if not args.quick:
        from measure.triton_deep_dive import attention_tuning

        for causal in (False, True):
            for m, n, w, st in sorted({dkdv for dkdv, _ in attention_tuning.BWD[256]}):
                build(
                    {"swept": "attn_bwd_dkdv", "D": 256, "mask": "causal" if causal else "none", "BLOCK_M": m, "BLOCK_N": n},
                    fa.attn_bwd_dkdv,
                    attention_args(256, "Q", "K", "V", "DO", "DK", "DV"),
                    dict(HEAD_DIM=256, CAUSAL=causal, BLOCK_M=m, BLOCK_N=n),
                    w,
                    st,
                )

    # the forward of each step of the step-by-step table, full attention, at FWD_CONFIGS (as forward_step runs it)
    from triton.experimental.gluon import language as gl

    for D in (64,) if args.quick else (64, 128):
        c = dict(fa.FWD_CONFIGS[(D, False)])
        w, st = c.pop("num_warps"), c.pop("num_stages")
        a = attention_args(D, "Q", "K", "V", "O")
        build({"step": "pointers", "D": D}, steps.attn_fwd_pointers, a, dict(HEAD_DIM=D, **c), w, st)
        build({"step": "tma_serial", "D": D}, fa.attn_fwd, a, dict(HEAD_DIM=D, CAUSAL=False, **c), w, 1)
        build({"step": "tma", "D": D}, fa.attn_fwd, a, dict(HEAD_DIM=D, CAUSAL=False, **c), w, st)
        g = dict(gluon.FA3_CONFIGS[(D, False)])

        def desc(rows: int, D=D) -> str:
            # the 2-D row descriptors that forward_fa3 uses for contiguous inputs, as the step table times it
            return f"tensordesc<fp16[{rows}, {D}],{gl.NVMMASharedLayout.get_default_for([rows, D], gl.float16)!r}>"

        def o_desc(rows: int, D=D) -> str:
            box = [1, 1, rows, D]  # O leaves through a 4-D descriptor, whatever q, k and v use
            return f"tensordesc<fp16{box},{gl.NVMMASharedLayout.get_default_for(box, gl.float16)!r}>"

        ga = dict(a, q_desc=desc(g["BLOCK_M"]), k_desc=desc(g["BLOCK_N"]), v_desc=desc(g["BLOCK_N"]))
        ga.update(o_desc=o_desc(g["BLOCK_M"]))
        build(
            {"step": "gluon_fa3", "D": D},
            gluon.attn_fwd_fa3,
            ga,
            dict(HEAD_DIM=D, CAUSAL=False, HEADS=False, **g),
            g["num_warps"],
            1,
            gluon=True,
        )
        # step 5 as the step table launches it; "regs" is the launch's per-thread allocation (maxnreg), which
        # the partitions then trade with setmaxnreg: consumer_regs / loader_regs
        p = dict(gluon.PINGPONG_CONFIGS.get((D, False), gluon.PINGPONG_DEFAULT))
        p.pop("PERSISTENT")  # a launch setting (the grid), not a kernel constant
        n_tiles = B * H * triton.cdiv(N, 2 * p["BLOCK_M"])
        pa = dict(a, q_desc=desc(p["BLOCK_M"]), k_desc=desc(p["BLOCK_N"]), v_desc=desc(p["BLOCK_N"]))
        pa.update(o_desc=o_desc(p["BLOCK_M"]), n_tiles=n_tiles)
        build(
            {"step": "gluon_pingpong", "D": D, "consumer_regs": gluon.CONSUMER_REGS, "loader_regs": gluon.LOADER_REGS},
            gluon.attn_fwd_pingpong,
            pa,
            dict(
                HEAD_DIM=D,
                CAUSAL=False,
                HEADS=False,
                **p,
                CONSUMER_REGS=gluon.CONSUMER_REGS,
                LOADER_REGS=gluon.LOADER_REGS,
            ),
            4,
            1,
            gluon=True,
            maxnreg=gluon.MAXNREG,
        )

    # the Gluon backward (step 6) as backward_gluon launches it: 4-D descriptors, GROUP = 1 folded in; the
    # dK/dV kernel at each setting bwd_settings() picks (long and short sequences), the Gluon dQ kernel at
    # GLUON_DQ; "regs" is the launch's cap, which setmaxnreg then splits (consumer_regs / loader_regs)
    def desc4(rows: int, D: int) -> str:
        box = [1, 1, rows, D]
        return f"tensordesc<fp16{box},{gl.NVMMASharedLayout.get_default_for(box, gl.float16)!r}>"

    keys = [(64, False)] if args.quick else sorted(bwd_gluon.DKDV_WS_CONFIGS)
    dkdv = {}
    for D, causal in keys:
        for n in (N, bwd_gluon.SHORT_N):
            c = {k: v for k, v in bwd_gluon.bwd_settings(D, causal, n).items() if k != "DQ"}
            dkdv[(D, causal, c["CONSUMERS"])] = c
    for (D, causal, consumers), c in sorted(dkdv.items()):
        a = attention_args(D)
        a.update(
            q_desc=desc4(c["BLOCK_M"], D),
            do_desc=desc4(c["BLOCK_M"], D),
            **{n: desc4(c["BLOCK_N"], D) for n in ("k_desc", "v_desc", "dk_desc", "dv_desc")},
        )
        build(
            {
                "kernel": "attn_bwd_dkdv_ws",
                "D": D,
                "mask": "causal" if causal else "none",
                "BLOCK_M": c["BLOCK_M"],
                "BLOCK_N": c["BLOCK_N"],
                "CONSUMERS": consumers,
                "consumer_regs": gluon.CONSUMER_REGS if consumers == 2 else bwd_gluon.ONE_CONSUMER_REGS,
                "loader_regs": gluon.LOADER_REGS,
            },
            bwd_gluon.attn_bwd_dkdv_ws,
            a,
            dict(HEAD_DIM=D, CAUSAL=causal, **c, CONSUMER_REGS=gluon.CONSUMER_REGS, LOADER_REGS=gluon.LOADER_REGS),
            4,
            1,
            gluon=True,
            maxnreg=bwd_gluon.MAXNREG[consumers],
        )
    # the step-4 forward at each FA3_CONFIGS setting (4-D descriptors, as for strided views): its register
    # cap decides how many programs share an SM
    for D, causal in keys:
        c = dict(gluon.FA3_CONFIGS[(D, causal)])
        maxnreg = c.pop("maxnreg", None)
        a = attention_args(D)
        a.update(q_desc=desc4(c["BLOCK_M"], D), o_desc=desc4(c["BLOCK_M"], D))
        a.update(k_desc=desc4(c["BLOCK_N"], D), v_desc=desc4(c["BLOCK_N"], D))
        build(
            {
                "kernel": "attn_fwd_fa3",
                "D": D,
                "mask": "causal" if causal else "none",
                "BLOCK_M": c["BLOCK_M"],
                "BLOCK_N": c["BLOCK_N"],
                "maxnreg": maxnreg,
            },
            gluon.attn_fwd_fa3,
            a,
            dict(HEAD_DIM=D, CAUSAL=causal, HEADS=True, **c),
            c["num_warps"],
            1,
            gluon=True,
            maxnreg=maxnreg,
        )
    for D, causal in keys:
        c = {k: v for k, v in bwd_gluon.GLUON_DQ.items() if k != "GLUON"}
        a = attention_args(D)
        a.update(
            q_desc=desc4(c["BLOCK_M"], D),
            do_desc=desc4(c["BLOCK_M"], D),
            dq_desc=desc4(c["BLOCK_M"], D),
            **{n: desc4(c["BLOCK_N"], D) for n in ("k_desc", "v_desc")},
        )
        build(
            {
                "kernel": "attn_bwd_dq_ws",
                "D": D,
                "mask": "causal" if causal else "none",
                "BLOCK_M": c["BLOCK_M"],
                "BLOCK_N": c["BLOCK_N"],
                "CONSUMERS": 1,
                "consumer_regs": bwd_gluon.ONE_CONSUMER_REGS,
                "loader_regs": gluon.LOADER_REGS,
            },
            bwd_gluon.attn_bwd_dq_ws,
            a,
            dict(HEAD_DIM=D, CAUSAL=causal, **c, LOADER_REGS=gluon.LOADER_REGS),
            4,
            1,
            gluon=True,
            maxnreg=bwd_gluon.MAXNREG[1],
        )

    for lat, shape in ((lbm.D2Q9, (4096, 4096, 1)), (lbm.D3Q19, (256, 256, 256))):
        nx, ny, nz = shape  # the lbm_speed sizes; NZ = 1 in 2-D is folded in at launch
        cell = dict(F_IN="*fp32", F_OUT="*fp32", NX=nx, NY=ny, NZ=nz, omega=1.0, u_lid=0.1)
        walls = dict(PX=False, PY=False, PZ=False)
        build(
            {"kernel": "lbm_step", "lattice": lat.name, "storage": "fp32", "BLOCK": lbm.CELL_BLOCK},
            lbm.lbm_step_kernel,
            cell,
            dict(**lat.consts, BLOCK=lbm.CELL_BLOCK, **walls, F16=False),
            lbm.CELL_WARPS,
            3,
            elem_bytes=4,
        )
        half = dict(cell, F_IN="*fp16", F_OUT="*fp16")
        build(
            {"kernel": "lbm_step", "lattice": lat.name, "storage": "fp16", "BLOCK": lbm.CELL_BLOCK},
            lbm.lbm_step_kernel,
            half,
            dict(**lat.consts, BLOCK=lbm.CELL_BLOCK, **walls, F16=True),
            lbm.CELL_WARPS,
            3,
            elem_bytes=2,
        )
        tile = dict(cell, CX="*i32", CY="*i32", CZ="*i32", W="*fp32", OPP="*i32")
        qp = triton.next_power_of_2(lat.Q)
        build(
            {"kernel": "lbm_tile", "lattice": lat.name, "storage": "fp32", "BLOCK": 512},
            lbm.lbm_tile_kernel,
            tile,
            dict(Q=lat.Q, QP=qp, BLOCK=512, **walls),
            4,
            3,
            elem_bytes=4,
        )
    metrics = {
        "regs": {"unit": "registers/thread", "noise": 0, "fmt": "d"},
        "spill_bytes": {"unit": "B", "noise": 0, "fmt": "d"},
        "smem_kb": {"unit": "KiB", "noise": 0, "fmt": ".0f"},
        "ldg_scalar": {"unit": "loads", "noise": 0, "fmt": "d"},
        "ldg_vector": {"unit": "loads", "noise": 0, "fmt": "d"},
    }
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
