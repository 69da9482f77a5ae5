#!/usr/bin/env python3
"""Training versus inference compilation, measured on one GPU in one process.

  activation_memory  a SwiGLU feed-forward block (8192 tokens, d = 4096, hidden = 11008, bf16),
                     forward + backward: eager autograd against torch.compile (AOTAutograd's
                     min-cut partitioner + Inductor). Memory the forward keeps for the backward,
                     peak memory above the inputs, time per step, and the first call's compile time.
  cuda_graph         a 4-layer MLP at batch 8 (fp16, inference): eager launches against one
                     CUDA-graph replay, host wall time per call.
  weight_cast        a decode-sized linear layer (16 tokens, 8192 x 8192): casting the fp32 master
                     weight to bf16 on every call against casting it once ahead of time (what
                     constant folding / weight pre-packing does in an inference compiler).

    python scripts/measure/how_ai_compilers_work/training.py [--out data/how_ai_compilers_work/training.json]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "nightly", "budget_s": 28}

import sys
import time

from sitekit import data  # noqa: E402

from measure.how_ai_compilers_work import _common as common  # noqa: E402
from measure.how_ai_compilers_work._common import bench, ceilings, load_snippet, require_cuda, sync  # noqa: E402

NAME = "how_ai_compilers_work/training"


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--smoke", action="store_true",
                    help="tiny sizes on a CPU (torch.compile with the aot_eager backend); writes nothing")
    args = ap.parse_args(argv)
    if args.smoke:
        common.start_smoke()
    require_cuda("how_ai_compilers_work_training")
    small = common.SMOKE
    dev = "cpu" if small else "cuda"

    import torch
    ti = load_snippet("train_infer")
    rows: list[dict] = []
    ceil = ceilings()
    MiB = 2 ** 20

    def rel(a, b):
        return ((a.float() - b.float()).norm() / b.float().norm()).item()

    # -- activation memory: eager autograd vs AOTAutograd + Inductor -------------------------
    T, d, h = (64, 128, 256) if small else (8192, 4096, 11008)
    torch.manual_seed(0)
    bf = dict(device=dev, dtype=torch.float32 if small else torch.bfloat16)
    x = torch.randn(T, d, **bf).requires_grad_()
    w1, w3 = ((torch.randn(d, h, **bf) / d ** 0.5).requires_grad_() for _ in range(2))
    w2 = (torch.randn(h, d, **bf) / h ** 0.5).requires_grad_()
    grad = torch.randn(T, d, **bf)
    params = [x, w1, w3, w2]

    def step(fn):
        for p in params:
            p.grad = None
        out = fn(x, w1, w3, w2)
        out.backward(grad)
        return out

    compiled = torch.compile(ti.swiglu_mlp, backend="aot_eager" if small else "inductor")
    sync()
    t0 = time.perf_counter()
    step(compiled)
    sync()
    compile_s = time.perf_counter() - t0

    ref_out = step(ti.swiglu_mlp).detach()
    ref_grads = [p.grad.clone() for p in params]
    out = step(compiled).detach()
    errs = [rel(out, ref_out)] + [rel(p.grad, g) for p, g in zip(params, ref_grads)]
    if not max(errs) < 2e-2:
        sys.exit(f"compiled block differs from eager: relative errors {errs}")
    del ref_out, ref_grads, out

    for impl, fn in (("eager", ti.swiglu_mlp), ("compiled", compiled)):
        for p in params:
            p.grad = None
        if small:   # no allocator statistics on a CPU
            saved = peak = 0
        else:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            out = fn(x, w1, w3, w2)
            torch.cuda.synchronize()
            saved = torch.cuda.memory_allocated() - base - out.untyped_storage().nbytes()
            out.backward(grad)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated() - base
            del out
        ms = bench(lambda: step(fn), rep=200)
        row = {"case": "aic_activation_memory", "aic_impl": "aic_" + impl, "aic_saved_mib": saved / MiB, "aic_peak_mib": peak / MiB,
               "ms": ms, "tflops": 3 * 3 * 2 * T * d * h / ms / 1e9}
        if impl == "compiled":
            row["aic_compile_s"] = compile_s
        rows.append(row)
        print(f"swiglu fw+bw {impl:<9} saved {saved / MiB:7.0f} MiB  peak {peak / MiB:7.0f} MiB  {ms:6.2f} ms",
              flush=True)
    del x, w1, w3, w2, grad, params, compiled
    if not small:
        torch.cuda.empty_cache()

    # -- CUDA graphs: launch overhead at inference batch sizes --------------------------------
    mlp = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(1024, 1024), torch.nn.GELU())])
    mlp = mlp.to(dev).half().eval()
    xs = torch.randn(8, 1024, device=dev, dtype=torch.float16)
    if small:   # CUDA graphs need a GPU: placeholder rows keep the dataset's shape checkable
        rows += [{"case": "aic_cuda_graph", "aic_impl": "aic_" + impl, "aic_us": 1.0} for impl in ("eager", "graph_replay")]
    else:
        with torch.inference_mode():
            replay = ti.graphed(mlp, xs.clone())
            torch.testing.assert_close(replay(xs), mlp(xs))
            for impl, fn in (("eager", mlp), ("graph_replay", replay)):
                us = min(ti.us_per_call(fn, xs) for _ in range(3))
                rows.append({"case": "aic_cuda_graph", "aic_impl": "aic_" + impl, "aic_us": us})
                print(f"4-layer MLP batch 8 {impl:<13} {us:6.1f} us per call", flush=True)
    del mlp

    # -- casting the weight once instead of on every call -------------------------------------
    tokens, n = (16, 256) if small else (16, 8192)
    w = torch.randn(n, n, device=dev) / n ** 0.5                      # fp32 master weight, [out, in]
    xt = torch.randn(tokens, n, device=dev, dtype=torch.bfloat16)
    w_folded = w.to(torch.bfloat16)                                   # done once, ahead of time
    per_call = lambda: torch.nn.functional.linear(xt, w.to(torch.bfloat16))
    folded = lambda: torch.nn.functional.linear(xt, w_folded)
    torch.testing.assert_close(per_call(), folded())
    for impl, fn, nbytes in (("cast_every_call", per_call, n * n * (4 + 2 + 2)), ("cast_once", folded, n * n * 2)):
        ms = bench(fn)
        rows.append({"case": "aic_weight_cast", "aic_impl": "aic_" + impl, "aic_us": ms * 1e3, "aic_gbytes": nbytes / 1e9,
                     "tbps": nbytes / ms / 1e9, "aic_roofline": nbytes / (ceil["copy_tbps"] * 1e12) * 1e3 / ms})
        print(f"linear 16x8192x8192 {impl:<16} {ms * 1e3:7.1f} us  {nbytes / 1e9:.2f} GB", flush=True)

    metrics = {
        "aic_saved_mib": {"unit": "MiB", "noise": 0.02, "better": "lower", "fmt": ".0f"},
        "aic_peak_mib": {"unit": "MiB", "noise": 0.05, "better": "lower", "fmt": ".0f"},
        "ms": {"unit": "ms", "noise": 0.10, "better": "lower", "fmt": ".2f"},
        "tflops": {"unit": "TFLOP/s", "noise": 0.10, "better": "higher", "fmt": ".0f"},
        "aic_compile_s": {"unit": "s", "noise": 0.5, "better": "lower", "fmt": ".1f", "check": False},
        "aic_us": {"unit": "µs", "noise": 0.25, "better": "lower", "fmt": ".1f"},
        "aic_gbytes": {"unit": "GB", "noise": 0.0, "better": "lower", "fmt": ".2f"},
        "tbps": {"unit": "TB/s", "noise": 0.10, "better": "higher", "fmt": ".2f"},
        "aic_roofline": {"unit": "fraction", "noise": 0.10, "better": "higher", "fmt": ".0%"},
    }
    return common.finish(NAME, metrics, rows, args.out, argv, __file__)


if __name__ == "__main__":
    raise SystemExit(main())
