#!/usr/bin/env python3
"""The fusion page's byte formulas against the H200's DRAM counters, read by Nsight Compute.

The fusion page counts the bytes every version must move with a formula (every tensor once per kernel
that reads or writes it, nothing surviving in cache between kernels). This script measures the same
versions at the same sizes with the hardware counters and records, per version, the formula bytes,
dram__bytes_read.sum + dram__bytes_write.sum summed over every kernel the version launches, and their
ratio.

The cases, their sizes and their formula bytes are the rows of the committed
data/how_ai_compilers_work/fusion.json (the bytes the page states, produced by fusion.py); for the
cases whose formula lives in the page's snippets (traffic(), attention_traffic()) the formula is
evaluated again here and must give the same bytes. The Triton GEMM runs with the configuration
fusion.py passes it, read from fusion.py's source.

Each version runs in its own process under
    ncu --clock-control none --cache-control all --profile-from-start off --metrics dram__bytes_read.sum,...
The process calls the version twice (compiling Triton kernels, choosing cuBLAS algorithms), then a
third time between cudaProfilerStart and cudaProfilerStop: every kernel of that call is profiled, each
with L2 flushed before it (the formula's assumption), the clocks left alone. A kernel's last writes can
still sit in L2 when it ends; they reach DRAM after the profiled range and are counted by no kernel.

    python scripts/measure/how_ai_compilers_work/dram_check.py [--out PATH] [--quick]   # --quick: the pointwise pair only
    python scripts/measure/how_ai_compilers_work/dram_check.py --case pointwise:eager:134217728   # one version, no ncu
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 150}

import argparse
import ast
import csv
import glob
import importlib
import io
import os
import re
import shutil
import subprocess
import sys

from sitekit import ROOT, data

NAME = "how_ai_compilers_work/dram_check"
FUSION = "how_ai_compilers_work/fusion"
FUSION_SCRIPT = ROOT / "scripts" / "measure" / "how_ai_compilers_work" / "fusion.py"
METRICS_NCU = ("dram__bytes_read.sum", "dram__bytes_write.sum")
UNIT_SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9}
# The versions this script can run: fusion.json's (case, impl) pairs, without their "aic_" prefix.
VERSIONS = {
    "pointwise": ("eager", "triton"),
    "horizontal": ("eager", "triton"),
    "reduction": ("eager", "triton", "torch_softmax"),
    "epilogue": ("eager", "cublas_only", "triton", "linear_gelu", "addmm_gelu"),
    "attention": ("eager", "sdpa_flash"),
}
QUICK = {("pointwise", "eager"), ("pointwise", "triton")}  # --quick: one unfused chain and its fused kernel
TOL = {"pointwise": 1e-6, "horizontal": 1e-5, "reduction": 1e-5, "epilogue": 1e-2, "attention": 1e-2}


# ----------------------------------------------------------------------------- pure parts (tested on a CPU)


def parse_shape(shape: str) -> tuple[int, ...]:
    """fusion.json's shape strings as dimensions: "2^27", "16384x8192", "8192x8192x2048", "B4 H16 N4096 D128"."""
    s = shape.strip()
    if m := re.fullmatch(r"2\^(\d+)", s):
        return (1 << int(m.group(1)),)
    if m := re.fullmatch(r"B(\d+) H(\d+) N(\d+) D(\d+)", s):
        return tuple(int(g) for g in m.groups())
    if re.fullmatch(r"\d+(x\d+)*", s):
        return tuple(int(d) for d in s.split("x"))
    raise ValueError(f"unknown shape {shape!r} (expected 2^k, AxB[xC] or 'B.. H.. N.. D..')")


def spec_of(case: str, impl: str, dims: tuple[int, ...]) -> str:
    """The --case argument of one version: "pointwise:eager:134217728", "epilogue:triton:8192x8192x2048"."""
    return f"{case}:{impl}:{'x'.join(str(d) for d in dims)}"


def split_spec(spec: str) -> tuple[str, str, tuple[int, ...]]:
    try:
        case, impl, dims = spec.split(":")
        dims_t = tuple(int(d) for d in dims.split("x"))
    except ValueError:
        raise ValueError(f"--case {spec!r}: expected CASE:IMPL:DIMS, e.g. pointwise:eager:134217728") from None
    if impl not in VERSIONS.get(case, ()):
        known = ", ".join(f"{c}:{i}" for c, impls in VERSIONS.items() for i in impls)
        raise ValueError(f"--case {spec!r}: unknown version {case}:{impl}; known: {known}")
    return case, impl, dims_t


def cases_from_fusion(fusion_ds: dict, quick: bool = False) -> list[dict]:
    """The versions of fusion.json that state formula bytes: case, impl, shape, dims, formula_bytes."""
    out = []
    for r in fusion_ds["rows"]:
        if r.get("aic_gbytes") is None:
            continue  # the ceilings (copy, cuBLAS) state no formula bytes
        case, impl = r["case"].removeprefix("aic_"), r["aic_impl"].removeprefix("aic_")
        if impl not in VERSIONS.get(case, ()):
            raise ValueError(
                f"data/{FUSION}.json has the version {r['case']} / {r['aic_impl']}, which dram_check.py cannot "
                "run: add it to VERSIONS and build()"
            )
        if quick and (case, impl) not in QUICK:
            continue
        out.append(
            {
                "case": r["case"],
                "aic_impl": r["aic_impl"],
                "shape": r["shape"],
                "dims": parse_shape(r["shape"]),
                "formula_bytes": round(r["aic_gbytes"] * 1e9),
            }
        )
    if not out:
        raise ValueError(f"data/{FUSION}.json has no rows with formula bytes (aic_gbytes)")
    return out


def check_formulas(cases: list[dict], traffic, attention_traffic) -> int:
    """Evaluate the snippets' formulas (fusion.traffic, attention.attention_traffic) at each case's size:
    they must give fusion.json's bytes. Returns how many versions were checked; ValueError on a mismatch."""
    checked = 0
    for c in cases:
        case, impl = c["case"].removeprefix("aic_"), c["aic_impl"].removeprefix("aic_")
        if case in ("pointwise", "horizontal", "reduction"):
            unfused, fused = traffic(case, c["dims"])
        elif case == "attention":
            unfused, fused = attention_traffic(*c["dims"])
        else:
            continue  # the epilogue's formula is written in fusion.py itself; its bytes are fusion.json's
        want = unfused if impl == "eager" else fused
        if want != c["formula_bytes"]:
            raise ValueError(
                f"{c['case']} {c['aic_impl']} {c['shape']}: the snippet's formula gives {want:,} bytes, "
                f"data/{FUSION}.json states {c['formula_bytes']:,}: re-measure fusion.py first"
            )
        checked += 1
    return checked


def fusion_gemm_config(src: str) -> dict:
    """The one triton.Config(...) literal in fusion.py's source: {"kwargs": {...}, "num_warps", "num_stages"}."""
    calls = [
        n
        for n in ast.walk(ast.parse(src))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "Config"
    ]
    if len(calls) != 1:
        raise ValueError(f"fusion.py: expected one triton.Config(...) for the epilogue GEMM, found {len(calls)}")
    call = calls[0]
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    if len(call.args) != 1 or set(kw) != {"num_warps", "num_stages"}:
        raise ValueError("fusion.py: the GEMM's triton.Config must be Config({...}, num_warps=.., num_stages=..)")
    return {"kwargs": ast.literal_eval(call.args[0]), **kw}


def parse_ncu_csv(text: str) -> list[dict]:
    """One dict per profiled kernel, {"kernel": name, <metric>: bytes}, from `ncu --csv --page raw` output."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if len(lines) < 3:
        raise ValueError("no kernel was profiled (ncu printed no result rows)")
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    head, units = rows[0], rows[1]
    cols = {}
    for m in METRICS_NCU:
        if m not in head:
            raise ValueError(f"ncu output has no column {m}")
        i = head.index(m)
        scale = UNIT_SCALE.get(units[i].strip())
        if scale is None:
            raise ValueError(f"ncu reported {m} in unknown unit {units[i].strip()!r}")
        cols[m] = (i, scale)
    name_col = head.index("Kernel Name") if "Kernel Name" in head else None
    kernels = []
    for values in rows[2:]:
        if len(values) != len(head):
            raise ValueError(f"ncu result row has {len(values)} fields, the header {len(head)}")
        k = {"kernel": values[name_col] if name_col is not None else "?"}
        for m, (i, scale) in cols.items():
            try:
                k[m] = float(values[i].replace(",", "")) * scale
            except ValueError:
                raise ValueError(f"ncu reported {m} = {values[i]!r} for {k['kernel']}") from None
        kernels.append(k)
    return kernels


def make_row(case: dict, kernels: list[dict]) -> dict:
    """The dataset row of one version: formula bytes, DRAM bytes summed over its kernels, their ratio."""
    if not kernels:
        raise ValueError(f"{case['case']} {case['aic_impl']}: no kernels")
    read = sum(k["dram__bytes_read.sum"] for k in kernels)
    wrote = sum(k["dram__bytes_write.sum"] for k in kernels)
    formula = case["formula_bytes"]
    return {
        "case": case["case"],
        "aic_impl": case["aic_impl"],
        "shape": case["shape"],
        "aic_kernels": len(kernels),
        "aic_formula_gb": formula / 1e9,
        "aic_dram_read_gb": read / 1e9,
        "aic_dram_write_gb": wrote / 1e9,
        "aic_dram_gb": (read + wrote) / 1e9,
        "aic_dram_ratio": (read + wrote) / formula,
    }


METRICS = {
    "aic_kernels": {"unit": "kernels", "noise": 0.0, "fmt": "d"},
    "aic_formula_gb": {"unit": "GB", "noise": 0.0, "fmt": ".3f"},
    "aic_dram_read_gb": {"unit": "GB", "noise": 0.05, "better": "lower", "fmt": ".3f"},
    "aic_dram_write_gb": {"unit": "GB", "noise": 0.05, "better": "lower", "fmt": ".3f"},
    "aic_dram_gb": {"unit": "GB", "noise": 0.05, "better": "lower", "fmt": ".3f"},
    "aic_dram_ratio": {"unit": "×", "noise": 0.05, "fmt": ".2f"},
}


# ----------------------------------------------------------------------------- the profiled process


def build(case: str, impl: str, dims: tuple[int, ...]):
    """(the version as a no-argument call, a reference for its result, tolerance): fusion.py's inputs and calls."""
    import torch
    import triton

    from measure.how_ai_compilers_work._common import load_snippet

    torch.manual_seed(0)
    F = torch.nn.functional
    if case in ("pointwise", "horizontal", "reduction"):
        fusion = load_snippet("fusion")
        if case == "pointwise":
            (n,) = dims
            x, g = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
            fn = {"eager": lambda: fusion.silu_mul_eager(x, g), "triton": lambda: fusion.silu_mul(x, g)}[impl]
            return fn, lambda: fusion.silu_mul_eager(x.double(), g.double())
        a = torch.randn(*dims, device="cuda")
        if case == "horizontal":
            fn = {"eager": lambda: fusion.row_sum_max_eager(a), "triton": lambda: fusion.row_sum_max(a)}[impl]
            return fn, lambda: fusion.row_sum_max_eager(a.double())
        fn = {
            "eager": lambda: fusion.softmax_eager(a),
            "triton": lambda: fusion.softmax(a),
            "torch_softmax": lambda: torch.softmax(a, dim=1),
        }[impl]
        return fn, lambda: torch.softmax(a.double(), dim=1)
    if case == "epilogue":
        gemm = load_snippet("gemm_tuning")
        M, N, K = dims
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16) / K**0.5
        bias = torch.randn(N, device="cuda", dtype=torch.float16)
        c = fusion_gemm_config(FUSION_SCRIPT.read_text(encoding="utf-8"))
        cfg = triton.Config(c["kwargs"], num_warps=c["num_warps"], num_stages=c["num_stages"])
        w = b.t()  # nn.Linear layout (N, K), as fusion.py passes it
        fn = {
            "eager": lambda: gemm.matmul_bias_gelu_eager(a, b, bias),
            "cublas_only": lambda: a @ b,
            "triton": lambda: gemm.matmul_bias_gelu(a, b, bias, config=cfg),
            "linear_gelu": lambda: F.gelu(F.linear(a, w, bias)),
            "addmm_gelu": lambda: torch._addmm_activation(bias, a, b, use_gelu=True),
        }[impl]
        if impl == "cublas_only":
            return fn, lambda: a.float() @ b.float()
        return fn, lambda: F.gelu(a.float() @ b.float() + bias.float())
    attn = load_snippet("attention")
    q, k, v = (torch.randn(*dims, device="cuda", dtype=torch.float16) for _ in range(3))
    fn = {"eager": lambda: attn.attention_eager(q, k, v), "sdpa_flash": lambda: attn.attention_fused(q, k, v)}[impl]
    return fn, lambda: attn.attention_eager(q[:1].float(), k[:1].float(), v[:1].float())


def rel_err(out, ref) -> float:
    outs, refs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
    err = 0.0
    for o, r in zip(outs, refs):
        o = o[: r.shape[0]]  # attention: the reference covers the first batch entry
        err = max(err, ((o.double() - r.double()).norm() / r.double().norm()).item())
    return err


def run_case(spec: str) -> None:
    """The process ncu profiles: two calls to warm up, a third between cudaProfilerStart and Stop, then a check."""
    try:
        case, impl, dims = split_spec(spec)
    except ValueError as e:
        sys.exit(f"{NAME}: {e}")
    from sitekit.measure import need_gpu

    need_gpu(NAME)
    import torch

    fn, ref_fn = build(case, impl, dims)
    for _ in range(2):
        fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    out = fn()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    err = rel_err(out, ref_fn())
    if not err < TOL[case]:
        sys.exit(f"{NAME}: {spec}: result differs from the reference (relative error {err:.2e} > {TOL[case]})")


# ----------------------------------------------------------------------------- the driver


def find_ncu() -> str:
    """ncu on PATH, else in the CUDA toolkit or Nsight Compute's own folder; a clear exit if none."""
    found = shutil.which("ncu")
    if found:
        return found
    for pat in ("/usr/local/cuda*/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/nsight-compute*/ncu"):
        hits = sorted(glob.glob(pat))
        if hits:
            return hits[-1]
    sys.exit(f"{NAME}: needs Nsight Compute (ncu), found neither on PATH nor under /usr/local/cuda*/ or /opt/nvidia/")


def profile(ncu: str, spec: str) -> list[dict]:
    cmd = [
        ncu,
        "--clock-control",
        "none",
        "--cache-control",
        "all",
        "--profile-from-start",
        "off",
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        "--metrics",
        ",".join(METRICS_NCU),
        sys.executable,
        os.path.abspath(__file__),
        "--case",
        spec,
    ]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        sys.exit(f"{NAME}: ncu ran over 600 s on {spec}")
    if p.returncode != 0 or "==ERROR==" in p.stdout + p.stderr:
        tail = " | ".join((p.stderr.strip() or p.stdout.strip()).splitlines()[-3:])
        sys.exit(f"{NAME}: ncu failed on {spec} (exit {p.returncode}): {tail}")
    try:
        return parse_ncu_csv(p.stdout)
    except ValueError as e:
        sys.exit(f"{NAME}: {spec}: {e}; ncu said: {' | '.join(p.stdout.strip().splitlines()[-3:])}")


def main(argv=None) -> int:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--case")
    known, rest = pre.parse_known_args(argv)
    if known.case:
        run_case(known.case)
        return 0
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument(
        "--case",
        metavar="CASE:IMPL:DIMS",
        help="the process ncu profiles: one version, called three times, the third between "
        "cudaProfilerStart and cudaProfilerStop; runs without ncu too",
    )
    args = ap.parse_args(rest)
    from sitekit.measure import need_gpu

    need_gpu(NAME)
    ncu = find_ncu()
    ver = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    print("ncu:", ncu, *ver, flush=True)

    fusion_ds = data.load(FUSION)
    try:
        cases = cases_from_fusion(fusion_ds, quick=args.quick)
        # the snippets' formulas, imported as fusion.py imports them (their hashes join this dataset's sources)
        from measure.how_ai_compilers_work._common import load_snippet

        checked = check_formulas(cases, load_snippet("fusion").traffic, load_snippet("attention").attention_traffic)
        load_snippet("gemm_tuning")  # the epilogue's Triton GEMM: not called here, hashed as a source
        fusion_gemm_config(FUSION_SCRIPT.read_text(encoding="utf-8"))
    except ValueError as e:
        sys.exit(f"{NAME}: {e}")
    importlib.import_module("measure.how_ai_compilers_work.fusion")  # the epilogue formula's code: hashed as a source
    print(
        f"{len(cases)} versions from data/{FUSION}.json; {checked} formulas re-evaluated from the snippets", flush=True
    )

    rows, kernels = [], {}
    for c in cases:
        spec = spec_of(c["case"].removeprefix("aic_"), c["aic_impl"].removeprefix("aic_"), c["dims"])
        ks = profile(ncu, spec)
        row = make_row(c, ks)
        rows.append(row)
        kernels[f"{c['case']}/{c['aic_impl']}"] = [k["kernel"] for k in ks]
        print(
            f"{c['case']:<15} {c['aic_impl']:<17} {row['aic_kernels']:2d} kernels  formula {row['aic_formula_gb']:7.3f} GB"
            f"  DRAM {row['aic_dram_gb']:7.3f} GB (read {row['aic_dram_read_gb']:.3f}, written "
            f"{row['aic_dram_write_gb']:.3f})  = {row['aic_dram_ratio']:.2f}x the formula",
            flush=True,
        )

    p = fusion_ds["provenance"]
    ds = data.new(
        NAME,
        METRICS,
        rows,
        argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
        ncu=" ".join([os.path.basename(ncu), *ver]),
        method="ncu --clock-control none --cache-control all --profile-from-start off; third call of "
        "each version profiled (every kernel, L2 flushed before each), one process per version",
        formula_from={"dataset": f"data/{FUSION}.json", "commit": p.get("commit"), "date": p.get("date")},
        kernels=kernels,
    )
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
