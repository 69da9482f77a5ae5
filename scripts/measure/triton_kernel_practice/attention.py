#!/usr/bin/env python3
"""FlashAttention forward of "Triton Kernel Practice" against PyTorch SDPA's backends, same run.

fp16, B = 4, H = 32, N = 4096, D in {64, 128}, causal and not. FLOPs: 4*B*H*N^2*D for
non-causal, half of that for causal (the convention FlashAttention's papers use). Every
output is compared with SDPA's math backend in fp32 first. Target (issue 3): the Triton
kernel >= 1.2x SDPA's flash backend. Before each case's rounds the GPU runs a second of dense GEMMs
(sitekit.measure.settle): no version is timed at the boost clock the power cap takes away a fraction of
a second later.

    python scripts/measure/triton_kernel_practice/attention.py [--out data/triton_kernel_practice/attention.json]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "nightly", "budget_s": 18}

import sys

from sitekit.measure import settle

from measure.triton_kernel_practice._common import bench_rounds, need_gpu, parse, rel_err, snippet, write

NAME = "triton_kernel_practice/attention"
B, H, N = 4, 32, 4096
TARGET = 1.2


def main(argv=None) -> int:
    args = parse(__doc__, NAME, argv)
    need_gpu("attention")
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    fa = snippet("flash_attention")
    torch.manual_seed(0)
    backends = [("sdpa_flash", SDPBackend.FLASH_ATTENTION), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION),
                ("sdpa_efficient", SDPBackend.EFFICIENT_ATTENTION)]
    rows = []
    for D in (64, 128):
        q, k, v = (torch.randn(B, H, N, D, device="cuda", dtype=torch.float16) for _ in range(3))
        for causal in (False, True):
            with sdpa_kernel(SDPBackend.MATH):
                ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=causal)
            flops = 4 * B * H * N * N * D // (2 if causal else 1)
            fns = {}
            for impl, backend in backends:
                with sdpa_kernel(backend):
                    try:
                        err = rel_err(F.scaled_dot_product_attention(q, k, v, is_causal=causal), ref)
                    except RuntimeError as e:        # a backend this build does not have
                        print(f"skip {impl} D={D} causal={causal}: {str(e).splitlines()[0]}", file=sys.stderr)
                        continue
                if err > 2e-3:
                    sys.exit(f"attention: {impl} D={D} causal={causal}: relative error {err:.2e}")

                def sdpa(backend=backend):
                    with sdpa_kernel(backend):
                        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                fns[impl] = sdpa
            err = rel_err(fa.attention(q, k, v, causal=causal), ref)
            if err > 2e-3:
                sys.exit(f"attention: triton D={D} causal={causal}: relative error {err:.2e}")
            fns["triton"] = lambda: fa.attention(q, k, v, causal=causal)
            settle()
            times = bench_rounds(fns)
            for impl, t in times.items():
                row = {"D": D, "mask": "causal" if causal else "none", "impl": impl, "tflops": flops / t / 1e9, "ms": t,
                       "ratio_flash": times["sdpa_flash"] / t}
                if impl == "triton":
                    row.update(target=TARGET, met=times["sdpa_flash"] / t >= TARGET)
                rows.append(row)
                print(f"D={D} causal={causal!s:<5} {impl:<15} {flops / t / 1e9:6.1f} TFLOP/s  "
                      f"{times['sdpa_flash'] / t:.2f}x flash", flush=True)
            del ref
        del q, k, v
    metrics = {
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "fmt": ".0f"},
        "ratio_flash": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "met": {"unit": "bool", "noise": 0, "of": "ratio_flash"},   # the row's `target` column is its target
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".3f", "check": False},
    }
    write(NAME, metrics, rows, args.out, argv, __file__, params={"target": {"fmt": ".1f"}})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
