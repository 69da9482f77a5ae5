#!/usr/bin/env python3
"""FlashAttention forward and backward of "Deep Dive into OpenAI Triton" against PyTorch SDPA's cuDNN
and flash backends, timed in the same run, three rounds in turn (best median kept, spread recorded).

Two implementations: "triton" (attention.py, plain Triton, forward and backward) and "gluon"
(attention_bwd_gluon.attention). The gluon forward is attention_gluon.forward_gluon: the warp-specialized
ping-pong kernel where PINGPONG_CONFIGS has a setting for (D, causal), the step-4 FA3-schedule kernel
elsewhere (the row's "kernel" says which). The gluon backward is attention_bwd_gluon.backward_gluon:
attention.py's preprocess, then the dQ kernel and the warp-specialized Gluon dK/dV kernel that
bwd_settings() picks for (D, causal, N); the row's "kernel" names the pair ("dkdv_ws" with one or two
consumers, "dq_ws" for the Gluon dQ kernel, "dq" for attention.py's).

fp16, (B, H, N) in {(4, 32, 4096), (2, 16, 16384)}, D in {64, 128, 256}, causal and full. At D = 256 the
Gluon kernels have no settings and attention_bwd_gluon.attention runs attention.py's, so there are no
"gluon" rows, and the issue sets no target there: its rows carry the ratios without a "met" verdict. Forward FLOPs
4*B*H*N^2*D (halved for causal); backward FLOPs 2.5x the forward's, as the FlashAttention papers count.
The backward is timed as torch.autograd.grad of a saved forward (preprocess + dK/dV + dQ for both).
Before each direction's rounds the GPU runs a second of dense GEMMs (sitekit.measure.settle), so no version
is timed at the boost clock the power cap takes away a fraction of a second later, and nvidia-smi is sampled
throughout (sitekit.measure.ClockLog): each row records the median SM clock and power while it was timed.
Every output and gradient is checked first (fp32 reference, or SDPA where that is too large); on a
GPU other than Hopper the "gluon" rows would time attention.py's forward again, so the script refuses.
Targets (issue 14): forward >= 1.0x cuDNN at D=128 full, >= 0.9x cuDNN elsewhere, >= 1.3x SDPA flash
everywhere; backward >= 0.8x cuDNN and >= 1.3x SDPA flash everywhere.
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 120}

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
SHAPES = [(4, 32, 4096), (2, 16, 16384)]
QUICK_SHAPES = [(1, 8, 1024)]
FLASH_TARGET = 1.3


def cudnn_target(direction: str, D: int, causal: bool) -> float:
    if direction == "bwd":
        return 0.8
    return 1.0 if (D == 128 and not causal) else 0.9


def main(argv=None, *, name=NAME, doc=__doc__, shapes=SHAPES, directions=("fwd", "bwd"), head_dims=None,
         card=None, targets=True) -> int:
    """Time the cells below and write dataset `name`. attention_h100.py measures the forward on an H100 with
    it: shapes, directions and head dims to time, card (a word the GPU's name must contain), and targets
    (False: no target or verdict columns, the issue's targets being the H200's)."""
    ap = data.arg_parser(doc, name)
    args = ap.parse_args(argv)
    measure.need_gpu(name)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fa = measure.snippet("triton_deep_dive/attention")
    sys.modules["attention"] = fa  # attention_gluon.py and attention_bwd_gluon.py import these by name
    ag = measure.snippet("triton_deep_dive/attention_gluon")
    sys.modules["attention_gluon"] = ag
    bg = measure.snippet("triton_deep_dive/attention_bwd_gluon")
    if torch.cuda.get_device_capability()[0] != 9:
        sys.exit(f"{name}: the 'gluon' rows need a Hopper GPU (sm_90), got {torch.cuda.get_device_name()}")
    if card and card not in torch.cuda.get_device_name():
        sys.exit(f"{name}: measured on an {card} only (beside the H200's rows); this GPU is {torch.cuda.get_device_name()}")
    backends = {"sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_flash": SDPBackend.FLASH_ATTENTION}
    torch.manual_seed(0)
    rows, spans = [], {}
    with measure.ClockLog() as clocks:  # nvidia-smi in the background, for each row's clock
        for B, H, N in QUICK_SHAPES if args.quick else shapes:
            for D in head_dims or fa.HEAD_DIMS:
                q, k, v = (
                    torch.randn(B, H, N, D, device="cuda", dtype=torch.float16, requires_grad=True) for _ in range(3)
                )
                do = torch.randn_like(q)
                ours = ("triton", "gluon") if D in (64, 128) else ("triton",)
                if ("gluon" in ours) != ag.uses_gluon(q, k, v):
                    sys.exit(f"{name}: attention_gluon.uses_gluon disagrees with this script's plan at D={D}")
                for causal in (False, True):

                    def run(impl):
                        if impl == "triton":
                            return fa.attention(q, k, v, causal=causal)
                        if impl == "gluon":
                            return bg.attention(q, k, v, causal=causal)
                        with sdpa_kernel(backends[impl]):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                    # correctness first: forward against fp32 (or cuDNN when N x N in fp32 is too large),
                    # gradients of Triton against SDPA flash's
                    outs = {impl: run(impl) for impl in (*ours, *backends)}
                    grads = (
                        {impl: torch.autograd.grad(o, (q, k, v), do) for impl, o in outs.items()}
                        if "bwd" in directions
                        else {}
                    )
                    if N <= 4096:
                        ref = fa.reference(q.detach(), k.detach(), v.detach(), causal)
                    else:
                        ref = outs["sdpa_cudnn"].detach()
                    for impl, o in outs.items():
                        err = measure.rel_err(o.detach(), ref)
                        if err > 3e-3:
                            sys.exit(f"{name}: {impl} forward N={N} D={D} causal={causal}: relative error {err:.2e}")
                    for impl in ours if grads else ():
                        for t, g, r in zip("qkv", grads[impl], grads["sdpa_flash"]):
                            err = measure.rel_err(g, r)
                            if err > 5e-3:
                                sys.exit(
                                    f"{name}: {impl} d{t} N={N} D={D} causal={causal}: {err:.2e} from SDPA flash"
                                )
                    del outs, grads, ref

                    flops = 4 * B * H * N * N * D / (2 if causal else 1)
                    for direction in directions:
                        fns = {}
                        for impl in (*ours, *backends):
                            if direction == "fwd":

                                def fn(impl=impl):
                                    with torch.no_grad():
                                        return run(impl)
                            else:
                                o = run(impl)

                                def fn(o=o):
                                    return torch.autograd.grad(o, (q, k, v), do, retain_graph=True)

                            fns[impl] = fn
                        measure.settle()
                        case_spans = spans[(B, H, N, D, causal, direction)] = {}
                        each = measure.bench_each_round(fns, rounds=1 if args.quick else 3, spans=case_spans)
                        best = {impl: min(ts) for impl, ts in each.items()}
                        work = flops * (2.5 if direction == "bwd" else 1.0)
                        for impl, t in best.items():
                            row = {
                                "B": B,
                                "H": H,
                                "N": N,
                                "D": D,
                                "mask": "causal" if causal else "none",
                                "pass": direction,
                                "impl": impl,
                                "tflops": work / t / 1e9,
                                "tflops_spread": measure.spread(each[impl]),
                                "ms": t,
                                "_span": (B, H, N, D, causal, direction),
                            }
                            if impl == "gluon" and direction == "fwd":
                                row["kernel"] = "pingpong" if (D, causal) in ag.PINGPONG_CONFIGS else "fa3"
                            if impl == "gluon" and direction == "bwd":
                                st = bg.bwd_settings(D, causal, N)
                                dq = "dq_ws" if st["DQ"]["GLUON"] else "dq"
                                row["kernel"] = f"dkdv_ws ×{st['CONSUMERS']} + {dq}"
                            if impl in ours:
                                r_c, r_f = best["sdpa_cudnn"] / t, best["sdpa_flash"] / t
                                row.update(ratio_cudnn=r_c, ratio_flash=r_f)
                                if D in (64, 128) and targets:
                                    tc = cudnn_target(direction, D, causal)
                                    row.update(target_cudnn=tc, met_cudnn=r_c >= tc, met_flash=r_f >= FLASH_TARGET)
                            rows.append(row)
                            print(
                                f"N={N} D={D} causal={causal!s:<5} {direction} {impl:<11} {work / t / 1e9:6.1f} TFLOP/s",
                                flush=True,
                            )
                        del fns
                del q, k, v, do
                torch.cuda.empty_cache()
    for r in rows:  # the clock while this version was timed (samples land in a reader thread: read them now)
        c = clocks.windows(spans[r.pop("_span")][r["impl"]])
        if c is None:
            sys.exit(
                f"{name}: no busy nvidia-smi sample while {r['impl']} N={r['N']} D={r['D']} {r['pass']} was "
                f"timed ({clocks.error or 'nvidia-smi gave no sample'})"
            )
        r.update(sm_mhz=c["sm_mhz"][1], power_w=c["power_w"][0])
    metrics = {
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "fmt": ".0f"},
        "sm_mhz": {"unit": "MHz", "noise": 0.15, "fmt": ",.0f"},
        "power_w": {"unit": "W", "noise": 0.3, "fmt": ".0f"},
        "tflops_spread": {"unit": "", "noise": 1.0, "fmt": ".1%", "check": False},
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".2f", "check": False},
        "ratio_cudnn": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "ratio_flash": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "met_cudnn": {"unit": "bool", "noise": 0, "of": "ratio_cudnn"},
        "met_flash": {"unit": "bool", "noise": 0, "of": "ratio_flash", "target": FLASH_TARGET},
    }
    if not targets:
        del metrics["met_cudnn"], metrics["met_flash"]
    ds = data.new(name, metrics, rows, params={"N": {"fmt": "pow2"}, "target_cudnn": {"fmt": ".1f"}})
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
