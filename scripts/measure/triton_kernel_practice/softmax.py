#!/usr/bin/env python3
"""Softmax of "Triton Kernel Practice" against torch.softmax and the copy bandwidth: the targets.

Table "width": fp32, 4,096 rows, N = 256 ... 65536 (powers of two and ragged widths), every step
(the five-kernel composition up to N = 16384, the fused and the online kernel, and softmax(), the
dispatcher the page recommends) beside torch.softmax and a copy of the same bytes. Table "rows":
softmax() at 1,024 ... 65,536 rows. Table "dtype": fp16 and bf16 inputs. Bandwidth counts the fewest
bytes any softmax moves: one read and one write of the matrix. Each version is checked against
float64 first, then timed in ROUNDS rounds in turn, keeping its best median and the spread.
Table "wide": transposed fp16 views of more than 2^31 elements through each kernel, checked (not timed).
Targets (issue 12): softmax() >= 1.0x torch.softmax everywhere; >= 0.85x the copy bandwidth of this
run for 2048 <= N <= 32768 at 4,096 rows; >= 0.64x copy at N = 65536.

    python scripts/measure/triton_kernel_practice/softmax.py [--out data/triton_kernel_practice/softmax.json]
"""
META = {"needs": "gpu", "tier": "nightly", "budget_s": 28}   # 26 s on the H200, 2026-12-01, process start included

import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
M = 4096
WIDTHS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 1000, 3000, 5000, 12288, 20000, 50000)
ROWS = ((1024, 256), (16384, 256), (65536, 256), (1024, 1024), (16384, 1024), (65536, 1024),
        (1024, 4096), (16384, 4096), (65536, 4096), (32768, 512), (16384, 16384))
DTYPE_N = (256, 1024, 4096, 32768)
# Table "wide": transposed fp16 views of more than 2^31 elements, one through each kernel (the padded row,
# the split row, the streamed row), checked against torch before anything is timed: the 64-bit column
# offsets that wide_offsets() turns on. Not timed.
WIDE = (("fused", 70000, 31000), ("tail", 110000, 20000), ("online", 33000, 66000))
ROUNDS = 3
TARGET_TORCH, TARGET_COPY, TARGET_COPY_65536 = 1.0, 0.85, 0.64


def copy_target(N: int, rows: int) -> float | None:
    if rows != M:
        return None
    if 2048 <= N <= 32768:
        return TARGET_COPY
    return TARGET_COPY_65536 if N == 65536 else None


def main(argv=None) -> int:
    args = data.arg_parser(__doc__, NAME).parse_args(argv)
    measure.need_gpu(NAME)
    import torch
    sm = measure.snippet("triton_kernel_practice/softmax")
    torch.manual_seed(0)
    copy, t_copy = measure.copy_tbps()
    rows = [{"table": "copy", "impl": "copy", "bytes": 1 << 30, "tbps": copy, "us": t_copy * 1e3, "frac_copy": 1.0}]

    def cell(table, m, n, dtype, impls):
        x = 4 * torch.randn(m, n, device="cuda", dtype=dtype)
        ref = torch.softmax(x.double(), dim=-1)
        tol = 1e-5 if dtype == torch.float32 else 1e-2
        fns = {}
        top = ref.max().item()
        for impl, fn in impls.items():
            err = (fn(x).double() - ref).abs().max().item()
            if not (err < tol and err <= 0.01 * top):   # absolute, and 1 % of the largest output
                sys.exit(f"{NAME}: {impl} M={m} N={n} {dtype}: max abs error {err:.2e} (largest output {top:.2e})")
            fns[impl] = lambda fn=fn: fn(x)
        y = torch.empty_like(x)
        each = measure.bench_each_round({"copy_same": lambda: y.copy_(x), **fns}, rounds=ROUNDS, warmup=5, rep=25)
        t_torch = min(each["torch"])
        nbytes = 2 * x.element_size() * m * n
        tag = {torch.float32: "fp32", torch.float16: "fp16", torch.bfloat16: "bf16"}[dtype]
        for impl, ts in each.items():
            t = min(ts)
            bw = nbytes / t / 1e9
            r = {"table": table, "dtype": tag, "M": m, "N": n, "impl": impl, "us": t * 1e3, "tbps": bw,
                 "frac_copy": bw / copy, "ratio_torch": t_torch / t, "ratio_torch_spread": measure.spread(ts)}
            if impl == "softmax":
                r["met_torch"] = t_torch / t >= TARGET_TORCH
                target = copy_target(n, m) if table == "width" else None
                if target is not None:
                    r["copy_target"] = target
                    r["met_copy"] = bw / copy >= target
            rows.append(r)
        s = rows[-1]
        print(f"{table:<5} {tag} M={m:<6} N={n:<6} softmax {s['tbps']:5.2f} TB/s  {s['ratio_torch']:.2f}x torch  "
              f"{s['frac_copy']:.2f} of copy", flush=True)
        del x, y, ref

    torch_sm = lambda x: torch.softmax(x, dim=-1)  # noqa: E731
    for impl, m, n in WIDE:
        # a transposed fp16 view of more than 2^31 elements: column j of a row lies j * m elements from column 0
        x = torch.randn(n, m, device="cuda", dtype=torch.float16).t()
        if not sm.wide_offsets(x):
            sys.exit(f"{NAME}: the {m} x {n} transposed view should need 64-bit column offsets")
        fn = sm.softmax_online if impl == "online" else sm.softmax_fused
        got = fn(x)
        ref = torch.softmax(x.float(), dim=-1)
        err, top = (got.float() - ref).abs().max().item(), ref.max().item()
        del got, ref
        if not err <= 0.01 * top:   # a kernel that read wrong columns is off by about the outputs' size
            sys.exit(f"{NAME}: {impl} on the {m} x {n} transposed fp16 view: max abs error {err:.2e} "
                     f"(largest output {top:.2e})")
        rows.append({"table": "wide", "impl": impl, "M": m, "N": n, "dtype": "fp16", "elements": m * n,
                     "kernel": {"fused": "softmax_row_kernel", "tail": "softmax_tail_kernel"}.get(impl, "softmax_online_kernel"),
                     "max_err": err})
        print(f"wide  fp16 {m} x {n} transposed ({m * n / 1e9:.2f}e9 elements): {impl} max abs error {err:.1e}", flush=True)
        del x
        torch.cuda.empty_cache()
    for n in WIDTHS:
        impls = {"torch": torch_sm}
        if n <= 16384:
            impls["naive"] = sm.softmax_naive
        impls.update(fused=sm.softmax_fused, online=sm.softmax_online, softmax=sm.softmax)
        cell("width", M, n, torch.float32, impls)
    for m, n in ROWS:
        cell("rows", m, n, torch.float32, {"torch": torch_sm, "softmax": sm.softmax})
    for dtype in (torch.float16, torch.bfloat16):
        for n in DTYPE_N:
            cell("dtype", M, n, dtype, {"torch": torch_sm, "softmax": sm.softmax})
    metrics = {
        "tbps": {"unit": "TB/s", "noise": 0.08, "fmt": ".2f"},
        "frac_copy": {"unit": "×", "noise": 0.08, "fmt": ".3f"},
        "ratio_torch": {"unit": "×", "noise": 0.08, "fmt": ".2f"},
        "ratio_torch_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        "met_torch": {"unit": "bool", "noise": 0, "of": "ratio_torch", "target": TARGET_TORCH},
        "met_copy": {"unit": "bool", "noise": 0, "of": "frac_copy", "target": TARGET_COPY},
        "us": {"unit": "µs", "noise": 0.1, "fmt": ".1f", "check": False},
        "max_err": {"unit": "abs", "noise": 1.0, "fmt": ".1e", "check": False},
        "elements": {"unit": "elements", "noise": 0, "fmt": ",d", "check": False},
    }
    ds = data.new(NAME, metrics, rows, params={"copy_target": {"fmt": ".2f"}})
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
