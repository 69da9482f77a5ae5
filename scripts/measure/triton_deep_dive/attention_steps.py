#!/usr/bin/env python3
"""The attention forward of "Deep Dive into OpenAI Triton", step by step, beside SDPA (same run).

Steps (snippets/triton_deep_dive/attention_steps.py): "pointers" (tl.load from blocks of pointers),
"tma_serial" (the page's TMA kernel with num_stages=1), "tma" (the page's kernel as shipped), all with
the same tiles and warps; then "gluon_fa3" (snippets/triton_deep_dive/attention_gluon.py: the FA3
loop order written in Gluon, explicit TMA rings and asynchronous wgmma, with its own tuned tiles).
Full attention, fp16, B=4 H=32 N=4096, D in {64, 128}. Each output is checked against SDPA's cuDNN
backend, then all versions are timed in ROUNDS rounds in turn (best median kept, spread recorded).
Registers and spills per step come from compiling the same kernels for sm_90.
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 60}

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
B, H, N = 4, 32, 4096
QUICK = (1, 4, 1024)
ROUNDS = 3


def resources(fa, steps, gluon, D: int) -> dict:
    """{step: (regs, spill bytes)} of the kernel each step launches, compiled for sm_90."""
    out = {}
    cfg = dict(fa.FWD_CONFIGS[(D, False)])
    warps = cfg.pop("num_warps")
    stages = cfg.pop("num_stages")
    for step, kernel, const, st in (
        ("pointers", steps.attn_fwd_pointers, dict(HEAD_DIM=D, **cfg), stages),
        ("tma_serial", fa.attn_fwd, dict(HEAD_DIM=D, CAUSAL=False, **cfg), 1),
        ("tma", fa.attn_fwd, dict(HEAD_DIM=D, CAUSAL=False, **cfg), stages),
    ):
        names = kernel.arg_names
        sig = {n: "constexpr" if n in const else "*fp16" if n in "QKVO" else "*fp32" if n == "LSE"
               else "fp32" if n == "qk_scale" else "i32" for n in names}
        attrs = {(names.index(n),): [["tt.divisibility", 16]] for n in names
                 if sig[n] == "i32" and n not in ("H", "HQ", "GROUP", "N_CTX")}
        u = measure.sm90_compile(kernel, sig, const, attrs, warps, st)
        out[step] = (u["regs"], u["spill_bytes"])
    sig, const = gluon_signature(gluon, D)
    u = measure.sm90_compile(gluon.attn_fwd_fa3, sig, const, {}, const["num_warps"], 1, gluon=True)
    out["gluon_fa3"] = (u["regs"], u["spill_bytes"])
    return out


def gluon_signature(gluon, D: int) -> tuple[dict, dict]:
    """(signature, constants) of attn_fwd_fa3 at its full-attention configuration for head dim D."""
    from triton.experimental.gluon import language as gl

    cfg = gluon.FA3_CONFIGS[(D, False)]

    def desc(rows: int) -> str:
        return f"tensordesc<fp16[{rows}, {D}],{gl.NVMMASharedLayout.get_default_for([rows, D], gl.float16)!r}>"

    const = dict(HEAD_DIM=D, CAUSAL=False, **cfg)
    sig = {"q_desc": desc(cfg["BLOCK_M"]), "k_desc": desc(cfg["BLOCK_N"]), "v_desc": desc(cfg["BLOCK_N"]),
           "O": "*fp16", "LSE": "*fp32", "HQ": "i32", "GROUP": "i32", "N_CTX": "i32", "qk_scale": "fp32"}
    sig.update({n: "constexpr" for n in const})
    return sig, const


def main(argv=None) -> int:
    args = data.arg_parser(__doc__, NAME).parse_args(argv)
    measure.need_gpu(NAME)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fa = measure.snippet("triton_deep_dive/attention")
    sys.modules["attention"] = fa            # attention_steps.py imports it by this name
    steps = measure.snippet("triton_deep_dive/attention_steps")
    gluon = measure.snippet("triton_deep_dive/attention_gluon")
    backends = {"sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_flash": SDPBackend.FLASH_ATTENTION}
    torch.manual_seed(0)
    b, h, n = QUICK if args.quick else (B, H, N)
    rows = []
    for D in (64, 128):
        regs = resources(fa, steps, gluon, D)
        q, k, v = (torch.randn(b, h, n, D, device="cuda", dtype=torch.float16) for _ in range(3))

        def sdpa(impl):
            with sdpa_kernel(backends[impl]):
                return F.scaled_dot_product_attention(q, k, v)

        fns = {s: (lambda s=s: steps.forward_step(q, k, v, s)) for s in steps.STEPS}
        fns["gluon_fa3"] = lambda: gluon.forward_fa3(q, k, v)[0]
        fns.update({impl: (lambda impl=impl: sdpa(impl)) for impl in backends})
        ref = sdpa("sdpa_cudnn")
        for name, fn in fns.items():
            err = measure.rel_err(fn(), ref)
            if not err < 5e-3:
                sys.exit(f"{NAME}: {name} D={D}: relative error {err:.2e} against SDPA cuDNN")
        each = measure.bench_each_round(fns, rounds=1 if args.quick else ROUNDS)
        flops = 4 * b * h * n * n * D
        best = {name: min(ts) for name, ts in each.items()}
        for name, ts in each.items():
            row = {"D": D, "step": name, "ms": best[name], "tflops": flops / best[name] / 1e9,
                   "tflops_spread": measure.spread(ts), "ratio_cudnn": best["sdpa_cudnn"] / best[name],
                   "ratio_flash": best["sdpa_flash"] / best[name]}
            if name in regs:
                row["regs"], row["spill_bytes"] = regs[name]
            rows.append(row)
            print(row, flush=True)
        del q, k, v, ref
    metrics = {
        "ms": {"unit": "ms", "noise": 0.07, "fmt": ".3f"},
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "fmt": ".0f"},
        "tflops_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        "ratio_cudnn": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "ratio_flash": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "regs": {"unit": "registers/thread", "noise": 0, "fmt": "d"},
        "spill_bytes": {"unit": "B", "noise": 0, "fmt": "d"},
    }
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
