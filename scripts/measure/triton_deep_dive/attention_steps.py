#!/usr/bin/env python3
"""The attention forward of "Deep Dive into OpenAI Triton", step by step, beside SDPA (same run).

Steps (snippets/triton_deep_dive/attention_steps.py): "pointers" (tl.load from blocks of pointers),
"tma_serial" (the page's TMA kernel with num_stages=1), "tma" (the page's kernel as shipped), all with
the same tiles and warps; then "gluon_fa3" (snippets/triton_deep_dive/attention_gluon.py: the FA3
loop order written in Gluon, explicit TMA rings and asynchronous wgmma, with its own tuned tiles; on these
contiguous inputs it reads (B*H*N, D) rows through 2-D descriptors) and "gluon_fa3_heads" (the same kernel
on the same inputs through the 4-D (B, H, N, D) descriptors that strided views take); last,
"gluon_pingpong" (step 5, the warp-specialized ping-pong kernel of the same file, with its
PINGPONG_CONFIGS setting for full attention at each head dim; forward_pingpong's default where the table
has none).
Full attention, fp16, B=4 H=32 N=4096, D in {64, 128}. Each output is checked against SDPA's cuDNN
backend, then all versions are timed in ROUNDS rounds in turn (best median kept, spread recorded).
What the compiler made of each step (registers, spills, how tiles reach shared memory) is in the CPU
dataset triton_deep_dive/resources, compiled as the launcher specializes these launches.
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 60}

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
B, H, N = 4, 32, 4096
QUICK = (1, 4, 1024)
ROUNDS = 3


def main(argv=None) -> int:
    args = data.arg_parser(__doc__, NAME).parse_args(argv)
    measure.need_gpu(NAME)
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    fa = measure.snippet("triton_deep_dive/attention")
    sys.modules["attention"] = fa  # attention_steps.py imports it by this name
    steps = measure.snippet("triton_deep_dive/attention_steps")
    gluon = measure.snippet("triton_deep_dive/attention_gluon")
    backends = {"sdpa_cudnn": SDPBackend.CUDNN_ATTENTION, "sdpa_flash": SDPBackend.FLASH_ATTENTION}
    torch.manual_seed(0)
    b, h, n = QUICK if args.quick else (B, H, N)
    rows = []
    for D in (64, 128):
        q, k, v = (torch.randn(b, h, n, D, device="cuda", dtype=torch.float16) for _ in range(3))

        def sdpa(impl):
            with sdpa_kernel(backends[impl]):
                return F.scaled_dot_product_attention(q, k, v)

        fns = {s: (lambda s=s: steps.forward_step(q, k, v, s)) for s in steps.STEPS}
        fns["gluon_fa3"] = lambda: gluon.forward_fa3(q, k, v, heads=False)[0]
        fns["gluon_fa3_heads"] = lambda: gluon.forward_fa3(q, k, v, heads=True)[0]
        fns["gluon_pingpong"] = lambda: gluon.forward_pingpong(q, k, v, heads=False)[0]
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
            row = {
                "D": D,
                "step": name,
                "ms": best[name],
                "tflops": flops / best[name] / 1e9,
                "tflops_spread": measure.spread(ts),
                "ratio_cudnn": best["sdpa_cudnn"] / best[name],
                "ratio_flash": best["sdpa_flash"] / best[name],
            }
            rows.append(row)
            print(row, flush=True)
        del q, k, v, ref
    metrics = {
        "ms": {"unit": "ms", "noise": 0.07, "fmt": ".3f"},
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "fmt": ".0f"},
        "tflops_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        "ratio_cudnn": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "ratio_flash": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
    }
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
