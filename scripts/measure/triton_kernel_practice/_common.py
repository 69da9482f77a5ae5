"""Shared helpers of the triton_kernel_practice measurement scripts (not a script itself).

The scripts import the page's own snippet files (snippets/triton_kernel_practice/*.py), so
what is measured is exactly the code the page shows. Every figure is a median of
triton.testing.do_bench (which flushes L2 before each repetition) on random inputs, each
output checked against a reference first.
"""
from __future__ import annotations

import argparse
import sys

from sitekit import ROOT, data, measure
from sitekit.measure import bench, bench_each_round, bench_rounds, copy_tbps, need_gpu, rel_err  # noqa: F401 (re-exported)

SNIPPETS = ROOT / "snippets" / "triton_kernel_practice"


def parse(doc: str, name: str, argv=None) -> argparse.Namespace:
    return data.arg_parser(doc, name).parse_args(argv)


def snippet(name: str):
    """Import snippets/triton_kernel_practice/<name>.py (its checks sit under __main__ and do not run)."""
    return measure.snippet(f"triton_kernel_practice/{name}")


def write(name: str, metrics: dict, rows: list[dict], out, argv, script: str, **extra) -> None:
    ds = data.new(name, metrics, rows, argv=[script, *(argv if argv is not None else sys.argv[1:])], **extra)
    print("wrote", data.write(ds, out))


# The pointer-based GEMM configurations both the sm_90 resource table (compiled on a CPU) and the
# H200 tuning table (timed) go through, so the two tables describe the same configurations.
GEMM_PTR = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages
    (64, 64, 32, 4, 3), (128, 128, 32, 4, 3), (128, 128, 64, 4, 2), (128, 128, 64, 4, 3),
    (128, 128, 64, 4, 4), (128, 128, 64, 8, 3), (128, 256, 64, 8, 2), (128, 256, 64, 8, 3),
    (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (128, 256, 128, 8, 3)]
