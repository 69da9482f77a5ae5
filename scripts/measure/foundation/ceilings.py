#!/usr/bin/env python3
"""Measure the H200's ceilings that every article compares against.

The device: its L2 size and SM count, as torch reports them.
Memory: a device-to-device copy (bytes read + bytes written), torch.add and
torch.softmax in fp32. Arithmetic: cuBLAS through torch.matmul in fp16/bf16
and fp8 through torch._scaled_mm. Attention: PyTorch SDPA's backends.
Every figure is a median over do_bench repetitions on random inputs, each
output checked against a reference before it is timed.

    python scripts/measure/foundation/ceilings.py [--out data/foundation/ceilings.json] [--quick]
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "nightly", "budget_s": 18}

import sys

from sitekit import data, measure  # noqa: E402

NAME = "foundation/ceilings"


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)

    import torch
    import torch.nn.functional as F
    from triton.testing import do_bench

    if not torch.cuda.is_available():
        sys.exit("ceilings: needs a CUDA GPU (torch.cuda.is_available() is False)")
    dev = "cuda"
    torch.manual_seed(0)
    rows = []

    spreads = []

    def bench(fn):
        """Best median of three rounds (ms); the round-to-round spread is kept as the figure's noise."""
        fn()
        torch.cuda.synchronize()
        ts = [do_bench(fn, warmup=50, rep=200, return_mode="median") for _ in range(3)]
        spreads.append(measure.spread(ts))
        return min(ts)

    # -- the device, as torch reports it (the pages quote these instead of typing them) ---------------
    props = torch.cuda.get_device_properties(0)
    rows.append({"kind": "device", "case": "l2_cache", "shape": "", "bytes": props.L2_cache_size, "mib": props.L2_cache_size / 2**20})
    rows.append({"kind": "device", "case": "sms", "shape": "", "count": props.multi_processor_count})
    # -- memory -------------------------------------------------------------------------
    nbytes = (1 << 28) if args.quick else (4 << 30)
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    dst.copy_(src)
    assert torch.equal(dst, src)
    ms = bench(lambda: dst.copy_(src))
    rows.append({"kind": "memory", "case": "copy", "shape": f"{nbytes >> 20} MiB", "tbps": 2 * nbytes / ms / 1e9, "ms": ms, "tbps_spread": spreads[-1]})
    del src, dst

    n = (1 << 24) if args.quick else (1 << 28)
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    out = torch.empty_like(x)
    torch.add(x, y, out=out)
    assert torch.allclose(out, x.double().add(y.double()).float())
    ms = bench(lambda: torch.add(x, y, out=out))
    rows.append({"kind": "memory", "case": "torch_add_fp32", "shape": f"2^{n.bit_length() - 1}", "tbps": 3 * 4 * n / ms / 1e9, "ms": ms, "tbps_spread": spreads[-1]})
    del x, y, out

    M, N = (1024, 32768) if args.quick else (4096, 32768)
    a = torch.randn(M, N, device=dev)
    ref = torch.softmax(a.double(), dim=-1)
    assert torch.allclose(torch.softmax(a, dim=-1).double(), ref, atol=1e-6)
    ms = bench(lambda: torch.softmax(a, dim=-1))
    rows.append({"kind": "memory", "case": "torch_softmax_fp32", "shape": f"{M}x{N}", "tbps": 2 * 4 * M * N / ms / 1e9, "ms": ms, "tbps_spread": spreads[-1]})
    del a, ref

    # -- matrix products ----------------------------------------------------------------
    sizes = [2048] if args.quick else [4096, 8192]
    for dtype, tag in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
        for s in sizes:
            A = torch.randn(s, s, device=dev, dtype=dtype)
            B = torch.randn(s, s, device=dev, dtype=dtype)
            C = A @ B
            err = (C.float() - A.float() @ B.float()).norm() / (A.float() @ B.float()).norm()
            assert err < 1e-2, err
            ms = bench(lambda: torch.matmul(A, B))
            rows.append({"kind": "matmul", "case": f"cublas_{tag}", "shape": f"{s}^3", "tflops": 2 * s ** 3 / ms / 1e9, "ms": ms, "tflops_spread": spreads[-1]})
    s = sizes[-1]
    A = torch.randn(s, s, device=dev).to(torch.float8_e4m3fn)
    B = torch.randn(s, s, device=dev).to(torch.float8_e4m3fn).t()   # _scaled_mm wants B column-major
    one = torch.ones((), device=dev)
    C = torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    refc = A.float() @ B.float()
    assert (C.float() - refc).norm() / refc.norm() < 1e-2
    ms = bench(lambda: torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    rows.append({"kind": "matmul", "case": "cublas_fp8", "shape": f"{s}^3", "tflops": 2 * s ** 3 / ms / 1e9, "ms": ms, "tflops_spread": spreads[-1]})
    del A, B, C, refc

    # -- attention ----------------------------------------------------------------------
    from torch.nn.attention import SDPBackend, sdpa_kernel
    Bn, H, L = (1, 8, 1024) if args.quick else (4, 32, 4096)
    for D in (64, 128):
        q, k, v = (torch.randn(Bn, H, L, D, device=dev, dtype=torch.float16) for _ in range(3))
        ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float())
        flops = 4 * Bn * H * L * L * D
        for backend, tag in ((SDPBackend.FLASH_ATTENTION, "sdpa_flash"), (SDPBackend.CUDNN_ATTENTION, "sdpa_cudnn"),
                             (SDPBackend.EFFICIENT_ATTENTION, "sdpa_efficient")):
            with sdpa_kernel(backend):
                try:
                    o = F.scaled_dot_product_attention(q, k, v)
                except RuntimeError as e:
                    print(f"skip {tag} D={D}: {e}", file=sys.stderr)
                    continue
                assert (o.float() - ref).norm() / ref.norm() < 1e-2
                ms = bench(lambda: F.scaled_dot_product_attention(q, k, v))
            rows.append({"kind": "attention", "case": tag, "shape": f"B{Bn} H{H} N{L} D{D}", "tflops": flops / ms / 1e9, "ms": ms, "tflops_spread": spreads[-1]})

    metrics = {
        "tbps": {"unit": "TB/s", "noise": 0.05, "better": "higher", "fmt": ".2f"},
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "better": "higher", "fmt": ".0f"},
        "ms": {"unit": "ms", "noise": 0.10, "better": "lower", "fmt": ".3f", "check": False},
        "bytes": {"unit": "B", "noise": 0, "fmt": ",d"},   # device properties: a change is a different card
        "mib": {"unit": "MiB", "noise": 0, "fmt": ".0f"},
        "count": {"unit": "", "noise": 0, "fmt": "d"},
    }
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])])
    data.save(ds, args.out, quick=args.quick)
    for r in rows:
        fig = next(f"{r[k]:{f}}{u}" for k, f, u in (("tbps", ".2f", " TB/s"), ("tflops", ".0f", " TFLOP/s"), ("bytes", ",d", " B"), ("count", "d", "")) if k in r)
        print(f"{r['case']:<22} {r['shape']:<22} {fig}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
