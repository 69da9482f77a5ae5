#!/usr/bin/env python3
"""Launch-configuration sweep of the FlashAttention kernels of "Deep Dive into OpenAI Triton".

fp16, B = 4, H = 32, N = 4096, D in {64, 128, 256} (the Gluon kernels at 64 and 128 only), causal and full. For each configuration the output
(forward) or the gradients (backward) are checked against SDPA's flash backend before timing; a
configuration that does not fit in shared memory is recorded as such. The snippet's FWD_CONFIGS and
BWD_CONFIGS are the fastest rows of this table (tests/test_triton_deep_dive.py ties them together); the
backward rows give the dK/dV and the dQ kernel their own tiles, warps and pipeline stages.
Rows with pass "fwd_gluon" sweep the step-4 Gluon forward of attention_gluon.py (tiles, ring depth for K
and V, warps; Hopper only), whose FA3_CONFIGS are tied to them the same way. Rows with pass "fwd_pingpong"
sweep its warp-specialized ping-pong forward (key tile, ring depth, one program per row block or one per SM
walking several: "persistent"; 64 query rows per consumer warpgroup; O leaves through shared memory);
PINGPONG_CONFIGS holds a setting for the (D, mask) pairs where its best row beats the best "fwd_gluon" row.
Rows with pass "bwd_gluon" sweep the Gluon backward of attention_bwd_gluon.py, timed as a whole
(backward_gluon on the saved forward): the dK/dV kernel's query tile and ring depth, its consumers per
program (two sharing a loader, or one, two programs per SM), and the dQ kernel (its Gluon one or
attention.py's), at N = 4096 and, with the same number of tokens (B = 16), at N = 1024: SHORT_N's side of
bwd_settings(). Its DKDV_WS_CONFIGS, DQ_WS_CONFIGS and SHORT_CONFIGS are tied to these rows. "fwd_gluon"
rows record the launch's register cap (maxnreg; none: the compiler's choice).
Rows with pass "fwd_long" time the same two Gluon forwards (kernel "gluon": GLUON's settings; "pingpong":
PINGPONG's) at the targets' long shape, B = 2, H = 16, N = 16384, for the two (D, mask) pairs whose choice of
kernel is closest at N = 4096 (D = 64 causal, D = 128 full): whether the choice made there also holds at the
long sequence; the same test ties forward_gluon's choice to them.
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 250}

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
B, H, N = 4, 32, 4096
FWD = {
    64: [(128, 64, 4, 3), (128, 64, 4, 4), (128, 128, 8, 3), (64, 64, 4, 3), (128, 32, 4, 3)],
    128: [(128, 64, 8, 3), (128, 64, 4, 3), (128, 128, 8, 2), (64, 64, 4, 3), (128, 64, 8, 2)],
    256: [(128, 64, 8, 2), (64, 64, 4, 3), (64, 64, 4, 2), (128, 32, 8, 2), (128, 64, 8, 1)],
}
# backward: ((dK/dV BLOCK_M, BLOCK_N, num_warps, num_stages), (dQ BLOCK_M, BLOCK_N, num_warps, num_stages));
# the first rows share one warps/stages setting between the two kernels, as the first version did
BWD = {
    64: [
        ((32, 64, 4, 3), (64, 32, 4, 3)),
        ((32, 128, 8, 3), (128, 32, 8, 3)),
        ((64, 128, 8, 2), (128, 64, 8, 2)),
        ((32, 64, 4, 3), (128, 64, 8, 3)),
        ((64, 64, 4, 3), (128, 64, 8, 3)),
        ((64, 64, 4, 3), (64, 64, 4, 3)),
        ((32, 64, 4, 4), (128, 64, 8, 4)),
    ],
    128: [
        ((64, 128, 8, 2), (128, 64, 8, 2)),
        ((32, 128, 8, 2), (128, 32, 8, 2)),
        ((32, 64, 4, 3), (64, 32, 4, 3)),
        ((64, 64, 4, 2), (128, 64, 8, 3)),
        ((64, 64, 4, 2), (128, 64, 8, 4)),
        ((32, 64, 4, 4), (64, 64, 4, 2)),
        ((64, 128, 8, 4), (128, 64, 8, 3)),
    ],
    # D = 256: 64 x 256 fp32 accumulators for both dK and dV need 8 warps; smaller key tiles trade that
    # for more programs
    256: [
        ((64, 64, 8, 2), (64, 64, 8, 2)),
        ((64, 64, 8, 2), (64, 64, 4, 2)),
        ((64, 64, 8, 2), (64, 32, 4, 2)),
        ((32, 32, 4, 2), (64, 64, 8, 2)),
        ((32, 64, 8, 2), (64, 64, 4, 2)),
    ],
}
GLUON = {  # BLOCK_M, BLOCK_N, stages, warps, register cap (None: the compiler's choice)
    64: [(64, 128, 2, 4, None), (64, 64, 3, 4, None), (128, 128, 2, 8, None), (64, 64, 2, 4, 128)],
    128: [(128, 128, 2, 8, None), (64, 64, 3, 4, None), (64, 128, 2, 4, None), (128, 64, 3, 8, None)],
}
# BLOCK_N, STAGES, PERSISTENT; at D = 128 a third 128-key stage does not fit beside the O buffers (a no_fit row)
PINGPONG = {
    64: [(128, 2, False), (128, 4, False), (64, 4, False), (128, 2, True), (128, 4, True)],
    128: [(128, 2, False), (128, 2, True), (128, 3, True), (64, 3, False), (64, 4, True)],
}
# "fwd_long": (B, H, N) and the (D, causal) pairs timed there
LONG_SHAPE, LONG_PAIRS = (2, 16, 16384), ((64, True), (128, False))
# Gluon backward: dK/dV BLOCK_M (query tile), STAGES (Q/dO ring depth), CONSUMERS, and the dQ kernel;
# 128-row query tiles spill at both head dims. At N = 1024 only the consumers and the dQ kernel vary.
BWD_GLUON = {
    4096: [
        (64, 2, 2, "triton"),
        (64, 3, 2, "triton"),
        (32, 2, 2, "triton"),
        (32, 3, 2, "triton"),
        (64, 2, 2, "gluon"),
        (64, 2, 1, "triton"),
        (64, 2, 1, "gluon"),
    ],
    1024: [(64, 2, 2, "triton"), (64, 2, 2, "gluon"), (64, 2, 1, "triton"), (64, 2, 1, "gluon")],
}


class WrongLaunch(Exception):
    """The kernel timed is not the setting the row names: a bug in the sweep, never a row of data."""


def check_fa3_launch(ag, cfg: dict) -> None:
    """Raise unless the one step-4 launch attention_gluon has planned is `cfg`. forward_fa3 plans a launch
    once per input layout and keeps it in _LAUNCHES, reading FA3_CONFIGS only then: a sweep that changes the
    table must drop the kept plans before each setting, or every row times the first one (the rows of the
    2026-12-03 to 2026-12-06 runs did)."""
    kws = [launch.kw for key, launch in ag._LAUNCHES.items() if key[0] == "fa3"]
    if (
        len(kws) != 1
        or any(kws[0].get(name) != value for name, value in cfg.items())
        or ("maxnreg" not in cfg and kws[0].get("maxnreg") is not None)
    ):
        raise WrongLaunch(f"{NAME}: the step-4 launch timed is not the row's setting {cfg}: planned {kws}")


def check_bwd_launch(ag, bg, row: dict) -> None:
    """Raise unless the one backward_gluon plan in attention_gluon._LAUNCHES runs the row's dK/dV setting
    (query tile, key tile, ring depth, consumers) and its dQ kernel (Gluon or attention.py's)."""
    plans = [launches for key, launches in ag._LAUNCHES.items() if key[0] == "bwd"]
    if len(plans) != 1:
        raise WrongLaunch(f"{NAME}: {len(plans)} backward plans kept, expected the row's one: {row}")
    _, dq, dkdv = plans[0]
    ran = {name: dkdv.kw.get(name) for name in ("BLOCK_M", "BLOCK_N", "STAGES", "CONSUMERS")}
    ran["dq"] = "gluon" if dq.kernel is bg.attn_bwd_dq_ws else "triton"
    if any(row[name] != value for name, value in ran.items()):
        raise WrongLaunch(f"{NAME}: the backward timed is not the row's setting {row}: planned {ran}")


def time_forward(label: str, row: dict, fn, ref, flops: float, check=None) -> dict:
    """`row` with its output checked against `ref` and its throughput: fn() returns (o, lse); check, if given,
    runs after the timing (a launch check: WrongLaunch stops the sweep). A setting that does not compile or
    launch (out of shared memory or registers) becomes a "no_fit" row, not an error."""
    import torch

    try:
        with torch.no_grad():
            err = measure.rel_err(fn()[0], ref)
            t = measure.bench(fn)
        if check is not None:
            check()
    except WrongLaunch:
        raise
    except Exception as e:
        print(f"{label} {row}: {type(e).__name__}: {str(e).splitlines()[0][:120]}", file=sys.stderr)
        return {**row, "output": "no_fit", "tflops": None}
    out = {**row, "output": "ok" if err < 3e-3 else "wrong", "tflops": flops / t / 1e9}
    print(out, flush=True)
    return out


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    measure.need_gpu(NAME)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fa = measure.snippet("triton_deep_dive/attention")
    sys.modules["attention"] = fa  # attention_gluon.py and attention_bwd_gluon.py import these by name
    ag = measure.snippet("triton_deep_dive/attention_gluon")
    sys.modules["attention_gluon"] = ag
    bg = measure.snippet("triton_deep_dive/attention_bwd_gluon")
    if torch.cuda.get_device_capability()[0] != 9:
        sys.exit(f"{NAME}: the 'fwd_gluon' rows need a Hopper GPU (sm_90), got {torch.cuda.get_device_name()}")
    n = 1024 if args.quick else N
    torch.manual_seed(0)
    rows = []
    saved_f, saved_b, saved_g = dict(fa.FWD_CONFIGS), dict(fa.BWD_CONFIGS), dict(ag.FA3_CONFIGS)

    def bwd_gluon_rows(q, k, v, do, causal, ref_g, flops, settings):
        """The "bwd_gluon" rows of `settings` at q's sequence length: each setting's gradients checked, then the backward
        timed on one saved forward (settings passed to backward_gluon, whatever its tables say)."""
        D = q.shape[-1]
        qt, kt, vt = (t.detach() for t in (q, k, v))
        o, lse = ag.forward_gluon(qt, kt, vt, causal, D**-0.5)
        out = []
        for bm, st, consumers, dq in settings[: 2 if args.quick else None]:
            kw = dict(BLOCK_M=bm, STAGES=st, CONSUMERS=consumers, DQ=dict(GLUON=dq == "gluon"))
            row = {
                "pass": "bwd_gluon",
                "D": D,
                "mask": "causal" if causal else "none",
                "N": q.shape[2],
                "BLOCK_M": bm,
                "BLOCK_N": 64,  # every DKDV_WS_CONFIGS key tile; check_bwd_launch compares it with the launch
                "STAGES": st,
                "CONSUMERS": consumers,
                "dq": dq,
            }
            for key in [key for key in ag._LAUNCHES if key[0] == "bwd"]:
                del ag._LAUNCHES[key]  # one backward plan at a time: the one check_bwd_launch reads
            try:
                g = bg.backward_gluon(qt, kt, vt, o, lse, do, causal, D**-0.5, **kw)
                err = max(measure.rel_err(a, b) for a, b in zip(g, ref_g))
                t = measure.bench(lambda: bg.backward_gluon(qt, kt, vt, o, lse, do, causal, D**-0.5, **kw))
                check_bwd_launch(ag, bg, row)
            except WrongLaunch:
                raise
            except Exception as e:
                print(f"bwd_gluon {row}: {type(e).__name__}: {str(e).splitlines()[0][:120]}", file=sys.stderr)
                out.append({**row, "output": "no_fit", "tflops": None})
                continue
            out.append({**row, "output": "ok" if err < 5e-3 else "wrong", "tflops": 2.5 * flops / t / 1e9})
            print(out[-1], flush=True)
        return out

    for D in fa.HEAD_DIMS:
        q, k, v = (torch.randn(B, H, n, D, device="cuda", dtype=torch.float16, requires_grad=True) for _ in range(3))
        do = torch.randn_like(q)
        for causal in (False, True):
            flops = 4 * B * H * n * n * D / (2 if causal else 1)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            ref_g = torch.autograd.grad(ref, (q, k, v), do)
            for bm, bn, w, st in FWD[D][: 2 if args.quick else None]:
                fa.FWD_CONFIGS[(D, causal)] = dict(BLOCK_M=bm, BLOCK_N=bn, num_warps=w, num_stages=st)
                row = {
                    "pass": "fwd",
                    "D": D,
                    "mask": "causal" if causal else "none",
                    "BLOCK_M": bm,
                    "BLOCK_N": bn,
                    "num_warps": w,
                    "num_stages": st,
                }
                try:
                    with torch.no_grad():
                        err = measure.rel_err(fa.attention(q, k, v, causal=causal), ref)
                        t = measure.bench(lambda: fa.attention(q, k, v, causal=causal))
                except Exception as e:  # out of shared memory / resources: recorded, not fatal
                    print(f"fwd {row}: {type(e).__name__}: {str(e).splitlines()[0][:120]}", file=sys.stderr)
                    rows.append({**row, "output": "no_fit", "tflops": None})
                    continue
                rows.append({**row, "output": "ok" if err < 3e-3 else "wrong", "tflops": flops / t / 1e9})
                print(rows[-1], flush=True)
            fa.FWD_CONFIGS.update(saved_f)
            for (m1, n1, w1, s1), (m2, n2, w2, s2) in BWD[D][: 2 if args.quick else None]:
                fa.BWD_CONFIGS[(D, causal)] = dict(DKDV=(m1, n1, w1, s1), DQ=(m2, n2, w2, s2))
                row = {
                    "pass": "bwd",
                    "D": D,
                    "mask": "causal" if causal else "none",
                    "BLOCK_M1": m1,
                    "BLOCK_N1": n1,
                    "num_warps1": w1,
                    "num_stages1": s1,
                    "BLOCK_M2": m2,
                    "BLOCK_N2": n2,
                    "num_warps2": w2,
                    "num_stages2": s2,
                }
                try:
                    o = fa.attention(q, k, v, causal=causal)
                    g = torch.autograd.grad(o, (q, k, v), do, retain_graph=True)
                    err = max(measure.rel_err(a, b) for a, b in zip(g, ref_g))
                    t = measure.bench(lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True))
                except Exception as e:
                    print(f"bwd {row}: {type(e).__name__}: {str(e).splitlines()[0][:120]}", file=sys.stderr)
                    rows.append({**row, "output": "no_fit", "tflops": None})
                    continue
                rows.append({**row, "output": "ok" if err < 5e-3 else "wrong", "tflops": 2.5 * flops / t / 1e9})
                print(rows[-1], flush=True)
                del o, g
            fa.BWD_CONFIGS.update(saved_b)
            for bm, bn, st, w, mr in GLUON.get(D, [])[: 2 if args.quick else None]:
                cfg = dict(BLOCK_M=bm, BLOCK_N=bn, K_STAGES=st, V_STAGES=st, num_warps=w)
                if mr:
                    cfg["maxnreg"] = mr
                # the table entry itself, not overrides: a cap in FA3_CONFIGS must not carry into other rows
                ag.FA3_CONFIGS[(D, causal)] = cfg
                ag._LAUNCHES.clear()  # forward_fa3 reads the table when it plans a launch, once per layout
                row = {
                    "pass": "fwd_gluon",
                    "D": D,
                    "mask": "causal" if causal else "none",
                    "BLOCK_M": bm,
                    "BLOCK_N": bn,
                    "K_STAGES": st,
                    "num_warps": w,
                    "maxnreg": mr,
                }
                rows.append(
                    time_forward(
                        "fwd_gluon",
                        row,
                        lambda: ag.forward_fa3(q, k, v, causal),
                        ref,
                        flops,
                        check=lambda: check_fa3_launch(ag, cfg),
                    )
                )
            ag.FA3_CONFIGS.update(saved_g)
            ag._LAUNCHES.clear()
            for bn, st, persistent in PINGPONG.get(D, [])[: 2 if args.quick else None]:
                cfg = dict(BLOCK_M=64, BLOCK_N=bn, STAGES=st, PERSISTENT=persistent)
                row = {
                    "pass": "fwd_pingpong",
                    "D": D,
                    "mask": "causal" if causal else "none",
                    "BLOCK_M": 64,
                    "BLOCK_N": bn,
                    "STAGES": st,
                    "persistent": "yes" if persistent else "no",
                }
                rows.append(
                    time_forward("fwd_pingpong", row, lambda: ag.forward_pingpong(q, k, v, causal, **cfg), ref, flops)
                )
            if D in GLUON:
                rows += bwd_gluon_rows(q, k, v, do, causal, ref_g, flops, BWD_GLUON[N])
        del q, k, v, do
    # the backward's short-sequence settings: N = 1024 with the same number of tokens
    n_short, b_short = (256, B) if args.quick else (1024, B * N // 1024)
    for D in (64, 128):
        q, k, v = (
            torch.randn(b_short, H, n_short, D, device="cuda", dtype=torch.float16, requires_grad=True)
            for _ in range(3)
        )
        do = torch.randn_like(q)
        for causal in (False, True):
            flops = 4 * b_short * H * n_short * n_short * D / (2 if causal else 1)
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            ref_g = torch.autograd.grad(ref, (q, k, v), do)
            rows += bwd_gluon_rows(q, k, v, do, causal, ref_g, flops, BWD_GLUON[1024])
        del q, k, v, do
    # both Gluon forwards at the long shape (N = 2048 with --quick), each setting checked against SDPA's flash
    lb, lh, ln = (1, 4, 2048) if args.quick else LONG_SHAPE
    for D, causal in LONG_PAIRS:
        q, k, v = (torch.randn(lb, lh, ln, D, device="cuda", dtype=torch.float16) for _ in range(3))
        flops = 4 * lb * lh * ln * ln * D / (2 if causal else 1)
        with torch.no_grad(), sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        settings = [("gluon", s) for s in GLUON[D]] + [("pingpong", s) for s in PINGPONG[D]]
        if args.quick:  # the first setting of each kernel (both fit at both head dims)
            settings = [("gluon", GLUON[D][0]), ("pingpong", PINGPONG[D][0])]
        for kernel, s in settings:
            row = {"pass": "fwd_long", "kernel": kernel, "D": D, "mask": "causal" if causal else "none", "N": ln}
            if kernel == "gluon":
                bm, bn, st, w, mr = s
                row.update(BLOCK_M=bm, BLOCK_N=bn, K_STAGES=st, num_warps=w, maxnreg=mr)
                cfg = dict(BLOCK_M=bm, BLOCK_N=bn, K_STAGES=st, V_STAGES=st, num_warps=w)
                if mr:
                    cfg["maxnreg"] = mr
                ag.FA3_CONFIGS[(D, causal)] = cfg
                ag._LAUNCHES.clear()
                fn = lambda: ag.forward_fa3(q, k, v, causal)  # noqa: E731
            else:
                bn, st, persistent = s
                row.update(BLOCK_M=64, BLOCK_N=bn, STAGES=st, persistent="yes" if persistent else "no")
                cfg = dict(BLOCK_M=64, BLOCK_N=bn, STAGES=st, PERSISTENT=persistent)
                fn = lambda cfg=cfg: ag.forward_pingpong(q, k, v, causal, **cfg)  # noqa: E731
            check = (lambda cfg=cfg: check_fa3_launch(ag, cfg)) if kernel == "gluon" else None
            try:
                rows.append(time_forward("fwd_long", row, fn, ref, flops, check=check))
            finally:
                ag.FA3_CONFIGS.update(saved_g)
                ag._LAUNCHES.clear()
        del q, k, v
    metrics = {"tflops": {"unit": "TFLOP/s", "noise": 0.1, "fmt": ".0f"}}
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
