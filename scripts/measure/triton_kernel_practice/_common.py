"""Shared helpers of the triton_kernel_practice_*.py measurement scripts (not a script itself).

The scripts import the page's own snippet files (snippets/triton_kernel_practice/*.py), so
what is measured is exactly the code the page shows. Every figure is a median of
triton.testing.do_bench (which flushes L2 before each repetition) on random inputs, each
output checked against a reference first.
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SNIPPETS = ROOT / "snippets" / "triton_kernel_practice"
sys.path.insert(0, str(ROOT / "scripts"))
from sitekit import data  # noqa: E402


def parse(doc: str, name: str, argv=None) -> argparse.Namespace:
    return data.arg_parser(doc, name).parse_args(argv)


def need_gpu(script: str):
    import torch
    if not torch.cuda.is_available():
        sys.exit(f"{script}: needs a CUDA GPU (torch.cuda.is_available() is False)")
    if torch.cuda.get_device_capability()[0] < 9:
        sys.exit(f"{script}: needs a Hopper (sm_90) or newer GPU; found {torch.cuda.get_device_name()}")


def snippet(name: str):
    """Import snippets/triton_kernel_practice/<name>.py (its checks sit under __main__ and do not run)."""
    path = SNIPPETS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"tkp_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def bench(fn, warmup: int = 25, rep: int = 100) -> float:
    """Median time in ms (do_bench's warm-up and repetition arguments are milliseconds)."""
    import torch
    from triton.testing import do_bench
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=warmup, rep=rep, return_mode="median")


def bench_each_round(fns: dict, rounds: int = 2, **kw) -> dict:
    """Time several versions in turn, `rounds` times: {name: [median of round 1, round 2, ...]}."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            times[name].append(bench(fn, **kw))
    return times


def bench_rounds(fns: dict, rounds: int = 2, **kw) -> dict:
    """Time several versions in turn, `rounds` times, and keep each one's best median: a ratio
    between two versions then does not depend on which ran first or on a passing clock dip."""
    return {name: min(ts) for name, ts in bench_each_round(fns, rounds, **kw).items()}


def rel_err(out, ref) -> float:
    import torch
    if not torch.isfinite(out).all():
        return float("inf")
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def copy_tbps(nbytes: int = 1 << 30) -> tuple[float, float]:
    """Device-to-device copy bandwidth (bytes read + bytes written), the memory ceiling."""
    import torch
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    assert torch.equal(dst, src)
    ms = min(bench(lambda: dst.copy_(src)) for _ in range(2))
    return 2 * nbytes / ms / 1e9, ms


def write(name: str, metrics: dict, rows: list[dict], out, argv, script: str, **extra) -> None:
    ds = data.new(name, metrics, rows, argv=[script, *(argv if argv is not None else sys.argv[1:])], **extra)
    print("wrote", data.write(ds, out))


# The pointer-based GEMM configurations both the sm_90 resource table (compiled on a CPU) and the
# H200 tuning table (timed) go through, so the two tables describe the same configurations.
GEMM_PTR = [  # BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages
    (64, 64, 32, 4, 3), (128, 128, 32, 4, 3), (128, 128, 64, 4, 2), (128, 128, 64, 4, 3),
    (128, 128, 64, 4, 4), (128, 128, 64, 8, 3), (128, 256, 64, 8, 2), (128, 256, 64, 8, 3),
    (128, 256, 64, 8, 4), (256, 128, 64, 8, 3), (128, 256, 128, 8, 3)]
