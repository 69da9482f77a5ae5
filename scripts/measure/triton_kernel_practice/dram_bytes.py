#!/usr/bin/env python3
"""Device-memory bytes of the page's kernels, read from the hardware counters by Nsight Compute.

Two questions the page's timings cannot settle:
  gemm     does grouped tile order read fewer bytes of A and B from device memory than row-major
           order? fp16, 4096^3 and 8192^3, the page's matmul_naive / matmul_grouped (128x128x64).
  softmax  does the streamed (online) kernel's second read of a row come from L2 or from device
           memory? fp32, 4096 x 65536 (1 GiB), the page's softmax_online with its defaults; the
           fused one-read kernel at 4096 x 16384 beside it as the two-pass reference.

Each case runs in its own process under
    ncu --clock-control none --cache-control all --metrics dram__bytes_read.sum,... -k regex:<kernel>
which flushes L2 before the profiled launch (as triton.testing.do_bench does before each timed
one) and leaves the clocks alone (the device notes: METHOD.md). The kernel runs twice; the second
launch is the one measured. Bytes are compared with the minimum the kernel must move: A, B and C
once for a GEMM; the matrix read once and written once for a softmax.

    python scripts/measure/triton_kernel_practice/dram_bytes.py [--out PATH] [--quick]
    python scripts/measure/triton_kernel_practice/dram_bytes.py --case gemm:grouped:4096   # one case, no ncu
"""
from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 55}

import argparse
import csv
import glob
import io
import os
import shutil
import subprocess
import sys

from measure.triton_kernel_practice._common import need_gpu, parse, snippet, write

NAME = "triton_kernel_practice/dram_bytes"
METRICS_NCU = ("dram__bytes_read.sum", "dram__bytes_write.sum", "lts__t_sector_hit_rate.pct")
KERNEL = {"naive": "matmul_naive_kernel", "grouped": "matmul_grouped_kernel",
          "online": "softmax_online_kernel", "fused": "softmax_row_kernel"}
CASES = [("gemm", "naive", 4096), ("gemm", "grouped", 4096), ("gemm", "naive", 8192), ("gemm", "grouped", 8192),
         ("softmax", "online", 65536), ("softmax", "fused", 16384)]
SOFTMAX_ROWS = 4096


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


def run_case(case: str) -> None:
    """The profiled process: build the inputs, run the kernel twice (the second launch is measured)."""
    import torch
    parts = case.split(":")
    impls = {"gemm": ("naive", "grouped"), "softmax": ("online", "fused")}
    if len(parts) != 3 or parts[1] not in impls.get(parts[0], ()) or not parts[2].isdigit() or int(parts[2]) < 1:
        sys.exit(f"{NAME}: --case {case!r}: expected KIND:IMPL:SIZE, one of gemm:<naive|grouped>:<size>, "
                 "softmax:<online|fused>:<N> (size a positive integer)")
    kind, impl, size = parts
    size = int(size)
    torch.manual_seed(0)
    if kind == "gemm":
        g = snippet("gemm")
        fn = {"naive": g.matmul_naive, "grouped": g.matmul_grouped}[impl]
        a = torch.randn(size, size, device="cuda", dtype=torch.float16)
        b = torch.randn(size, size, device="cuda", dtype=torch.float16)
        for _ in range(2):
            c = fn(a, b)
        torch.cuda.synchronize()
        err = (c.float() - a.float() @ b.float()).abs().max().item() / (a.float() @ b.float()).abs().max().item()
        if err > 1e-2:
            sys.exit(f"{NAME}: {case} result differs from the fp32 product (max rel err {err:.2e})")
    elif kind == "softmax":
        s = snippet("softmax")
        fn = {"online": s.softmax_online, "fused": s.softmax_fused}[impl]
        x = torch.randn(SOFTMAX_ROWS, size, device="cuda")
        for _ in range(2):
            y = fn(x)
        torch.cuda.synchronize()
        if not torch.allclose(y, torch.softmax(x, dim=1), atol=1e-6, rtol=1e-4):
            sys.exit(f"{NAME}: {case} result differs from torch.softmax")


def parse_ncu_csv(text: str) -> dict[str, float]:
    """The metric values of the one profiled launch from `ncu --csv --page raw` output."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if len(lines) < 3:
        raise ValueError("no kernel was profiled (ncu printed no result rows)")
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    head, units, values = rows[0], rows[1], rows[2]
    out = {}
    for m in METRICS_NCU:
        if m not in head:
            raise ValueError(f"ncu output has no column {m}")
        i = head.index(m)
        v = float(values[i].replace(",", ""))
        unit = units[i].strip()
        scale = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "KB": 1e3, "MB": 1e6, "GB": 1e9, "%": 1}.get(unit)
        if scale is None:
            raise ValueError(f"ncu reported {m} in unknown unit {unit!r}")
        out[m] = v * scale
    return out


def profile(ncu: str, case: str) -> dict[str, float]:
    impl = case.split(":")[1]
    cmd = [ncu, "--clock-control", "none", "--cache-control", "all", "--csv", "--page", "raw",
           "--print-units", "base", "--metrics", ",".join(METRICS_NCU), "-k", f"regex:{KERNEL[impl]}",
           "--launch-skip", "1", "--launch-count", "1", sys.executable, os.path.abspath(__file__), "--case", case]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0 or "==ERROR==" in p.stdout + p.stderr:
        tail = " | ".join((p.stderr.strip() or p.stdout.strip()).splitlines()[-3:])
        sys.exit(f"{NAME}: ncu failed on {case} (exit {p.returncode}): {tail}")
    try:
        return parse_ncu_csv(p.stdout)
    except ValueError as e:
        sys.exit(f"{NAME}: {case}: {e}; ncu said: {' | '.join(p.stdout.strip().splitlines()[-3:])}")


def main(argv=None) -> int:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--case")
    known, rest = pre.parse_known_args(argv)
    if known.case:
        run_case(known.case)
        return 0
    args = parse(__doc__, NAME, rest)
    need_gpu("dram_bytes")
    ncu = find_ncu()
    ver = subprocess.run([ncu, "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1:]
    print("ncu:", ncu, *ver, flush=True)
    rows = []
    for kind, impl, size in CASES[:2] + CASES[4:5] if args.quick else CASES:
        m = profile(ncu, f"{kind}:{impl}:{size}")
        read, wrote = m["dram__bytes_read.sum"], m["dram__bytes_write.sum"]
        if kind == "gemm":
            need_read, need_write = 2 * size * size * 2, size * size * 2
            row = {"case": kind, "impl": impl, "dtype": "fp16", "size": size}
        else:
            need_read = need_write = SOFTMAX_ROWS * size * 4
            row = {"case": kind, "impl": impl, "dtype": "fp32", "M": SOFTMAX_ROWS, "N": size}
        row.update({"read_bytes": read, "write_bytes": wrote, "min_read_bytes": need_read,
                    "read_ratio": read / need_read, "write_ratio": wrote / need_write,
                    "l2_hit_pct": m["lts__t_sector_hit_rate.pct"]})
        rows.append(row)
        print(f"{kind:<8} {impl:<8} {size:>6}  read {read / 1e6:9.1f} MB = {read / need_read:5.2f}x the minimum  "
              f"write {wrote / need_write:4.2f}x  L2 hit {row['l2_hit_pct']:.0f} %", flush=True)
    metrics = {
        "read_bytes": {"unit": "B", "noise": 0.05, "fmt": ",.0f"},
        "write_bytes": {"unit": "B", "noise": 0.05, "fmt": ",.0f"},
        "min_read_bytes": {"unit": "B", "noise": 0.0, "fmt": ",.0f", "check": False},
        "read_ratio": {"unit": "×", "noise": 0.05, "fmt": ".2f"},
        "write_ratio": {"unit": "×", "noise": 0.05, "fmt": ".2f"},
        "l2_hit_pct": {"unit": "%", "noise": 0.1, "fmt": ".0f"},
    }
    if args.quick:
        print("quick run: not written")
        return 0
    write(NAME, metrics, rows, args.out, argv, "scripts/measure/triton_kernel_practice/dram_bytes.py",
          ncu=" ".join([os.path.basename(ncu), *ver]), method="ncu --clock-control none --cache-control all, "
          "second launch of each kernel, one process per case")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
