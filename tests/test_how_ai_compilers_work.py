"""Checks for the "How AI Compilers Work" article beyond running its code blocks.

- The byte counts on the page (traffic(), attention_traffic()) against an independent
  count: every aten op the eager version dispatches, with the bytes of its tensor
  inputs and outputs.
- Bad input gets a clear error; the analytical model and the cost-model search behave.
- Each measurement script's logic runs end to end on the CPU (--smoke) and produces a
  valid dataset; the committed datasets agree with the formulas and the registry.

Snippet code runs in subprocesses with TRITON_INTERPRET=1, so this file never changes
how Triton behaves for other tests in the same pytest process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets" / "how_ai_compilers_work"
ENV = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(SNIPPETS)}


def run_py(code: str, timeout=300) -> str:
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert p.returncode == 0, f"exit {p.returncode}\n--- stdout\n{p.stdout}\n--- stderr\n{p.stderr[-4000:]}"
    return p.stdout


def test_byte_counts_match_dispatched_ops():
    out = run_py("""
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        import fusion, attention

        VIEWS = {"view", "_unsafe_view", "t", "transpose", "expand", "alias", "detach", "permute",
                 "unsqueeze", "squeeze", "as_strided", "_reshape_alias", "slice", "select"}

        class CountBytes(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.bytes, self.ops = 0, []
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                name = func.overloadpacket.__name__
                if name not in VIEWS:
                    self.ops.append(name)
                    flat = [*args, *(kwargs or {}).values(), *(out if isinstance(out, (tuple, list)) else [out])]
                    self.bytes += sum(t.numel() * t.element_size() for t in flat if isinstance(t, torch.Tensor))
                return out

        def count(fn, *args):
            with CountBytes() as c:
                fn(*args)
            return c.bytes, c.ops

        x, g = torch.randn(1000), torch.randn(1000)
        got, ops = count(fusion.silu_mul_eager, x, g)
        assert got == fusion.traffic("pointwise", (1000,))[0], (got, ops)
        a = torch.randn(12, 700)
        got, ops = count(fusion.row_sum_max_eager, a)
        assert got == fusion.traffic("horizontal", (12, 700))[0], (got, ops)
        got, ops = count(fusion.softmax_eager, a)
        assert got == fusion.traffic("reduction", (12, 700))[0], (got, ops)
        q, k, v = (torch.randn(2, 3, 64, 16, dtype=torch.float16) for _ in range(3))
        got, ops = count(attention.attention_eager, q, k, v)
        assert got == attention.attention_traffic(2, 3, 64, 16)[0], (got, ops, attention.attention_traffic(2, 3, 64, 16))
        print("ok")
    """)
    assert out.strip() == "ok"


def test_bad_input_is_rejected_clearly():
    out = run_py("""
        import torch, pytest
        import fusion, gemm_tuning as g

        def raises(exc, fn, *args, match):
            with pytest.raises(exc, match=match):
                fn(*args)

        x = torch.randn(16)
        raises(ValueError, fusion.silu_mul, x, torch.randn(17), match="same shape")
        raises(TypeError, fusion.silu_mul, x.double(), x.double(), match="float32")
        raises(TypeError, fusion.silu_mul, x, [1.0] * 16, match="torch.Tensor")
        raises(ValueError, fusion.silu_mul, x[::2], x[::2], match="contiguous")
        raises(ValueError, fusion.row_sum_max, torch.randn(2, 3, 4), match="2-D")
        raises(ValueError, fusion.softmax, torch.randn(2, 20000), match="online-softmax")
        raises(ValueError, fusion.traffic, "convolution", (1,), match="unknown case")
        a, b, bias = (torch.randn(*s).half() for s in ((64, 32), (32, 48), (48,)))
        raises(TypeError, g.matmul_bias_gelu, a.float(), b, bias, match="float16")
        raises(ValueError, g.matmul_bias_gelu, a, b[:16], bias, match="do not chain")
        raises(ValueError, g.matmul_bias_gelu, a, b, bias[:8], match="do not chain")
        print("ok")
    """)
    assert out.strip() == "ok"


def test_model_and_search():
    out = run_py("""
        import math, numpy as np, triton
        import gemm_tuning as g

        space = g.config_space()
        assert len(space) == 140
        for c in space:   # the space's own limits: shared memory and accumulator registers
            kw = c.kwargs
            assert c.num_stages * (kw["BLOCK_M"] + kw["BLOCK_N"]) * kw["BLOCK_K"] * 2 <= 227 * 1024
        M = N = 8192; K = 2048
        too_big = triton.Config({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_M": 8}, num_warps=8, num_stages=4)
        assert g.predicted_ms(M=M, N=N, K=K, **too_big.all_kwargs()) == math.inf
        preds = [g.predicted_ms(M=M, N=N, K=K, **c.all_kwargs()) for c in space]
        floor = 2 * M * N * K / (g.Gpu().tensor_tflops * 1e12) * 1e3
        assert all(p >= floor for p in preds), "no config may beat the tensor-core roofline"
        # a partial last wave costs a whole wave: 132 tiles fill the SMs once, 144 need two rounds
        fast_l2 = g.Gpu(l2_over_dram=20.0)                   # isolate the tensor-core term
        kw = dict(N=12 * 128, K=16384, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_stages=3, num_warps=8, gpu=fast_l2)
        w, w1 = g.model(M=11 * 128, **kw), g.model(M=12 * 128, **kw)
        assert w["bound"] == w1["bound"] == "mma" and w["wave_eff"] == 1.0, (w, w1)
        assert w1["wave_eff"] < 0.6 and w1["ms"] > 1.9 * w["ms"], (w, w1)

        # ridge regression recovers a quadratic
        rng = np.random.default_rng(1)
        X = rng.normal(size=(60, 3)); y = 1.0 + X[:, 0] - 2 * X[:, 1] ** 2
        pred = g.fit_ridge(X, y, alpha=1e-6)(X)
        assert np.abs(pred - y).max() < 1e-3

        # the guided search on a synthetic cost finds the optimum while measuring a fraction of the space
        target = space[77]
        cost = lambda c: 1.0 + sum(abs(math.log2(c.all_kwargs()[k]) - math.log2(target.all_kwargs()[k]))
                                   for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_stages", "num_warps"))
        calls = []
        best, ms, n = g.guided_search(space, lambda c: calls.append(c) or cost(c), M, N, K,
                                      n_init=8, per_round=4, budget=24, seed=0)
        assert n == len(calls) == 24 and len({id(c) for c in calls}) == 24, "each config measured at most once"
        assert ms == min(cost(c) for c in calls) and ms <= 1.0 + 1.0, (g.describe(best), ms)
        print("ok")
    """)
    assert out.strip() == "ok"


@pytest.mark.parametrize("script", ["fusion", "autotune", "training"])
def test_measurement_script_logic_on_cpu(script):
    p = subprocess.run(
        [sys.executable, f"scripts/measure/how_ai_compilers_work/{script}.py", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"},
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "rows valid, nothing written" in p.stdout


def test_scripts_reject_bad_arguments():
    p = subprocess.run(
        [sys.executable, "scripts/measure/how_ai_compilers_work/autotune.py", "--workers", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode != 0 and "--workers must be at least 1" in p.stderr


def test_registry_and_committed_data():
    from sitekit import data
    from sitekit.registry import DATASETS

    mine = {d.name: d for d in DATASETS if d.name.startswith("how_ai_compilers_work/")}
    assert set(mine) == {
        "how_ai_compilers_work/fusion",
        "how_ai_compilers_work/autotune",
        "how_ai_compilers_work/training",
        "how_ai_compilers_work/search_budget",
    }
    for name, d in mine.items():
        assert (ROOT / d.script).is_file()
        ds = data.load(name)
        if name.endswith("search_budget"):  # a CPU replay of the GPU timings in autotune.json
            assert d.needs == "cpu" and ds["replayed"]["dataset"] == "how_ai_compilers_work/autotune"
            continue
        assert d.needs == "gpu" and ds["provenance"]["gpu"], f"{name} must be measured on a GPU"
    fusion = data.load("how_ai_compilers_work/fusion")
    shapes = {
        "aic_pointwise": ((1 << 27,), "pointwise"),
        "aic_horizontal": ((16384, 8192), "horizontal"),
        "aic_reduction": ((16384, 4096), "reduction"),
    }
    # traffic() is plain Python: read it without importing Triton kernels into this process
    src = (SNIPPETS / "fusion.py").read_text()
    section = src[src.index("# --8<-- [start:traffic]") : src.index("# --8<-- [end:traffic]")]
    ns: dict = {}
    exec(section, ns)
    for row in fusion["rows"]:
        if row["case"] in shapes and row["aic_impl"] in ("aic_eager", "aic_triton"):
            shape, case = shapes[row["case"]]
            unfused, fused = ns["traffic"](case, shape)
            want = unfused if row["aic_impl"] == "aic_eager" else fused
            assert abs(row["aic_gbytes"] - want / 1e9) < 1e-9, row


def test_search_budget_replay_and_claims(tmp_path):
    """search_budget.json is a pure function of autotune.json (regenerated here, ~5 s), and the
    sentences of the section 'A control: random search on the same budget' still hold for it."""
    out = tmp_path / "sb.json"
    p = subprocess.run(
        [sys.executable, "scripts/measure/how_ai_compilers_work/search_budget.py", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")},
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    fresh = json.loads(out.read_text())
    committed = json.loads((ROOT / "data/how_ai_compilers_work/search_budget.json").read_text())
    assert fresh["rows"] == committed["rows"], (
        "data/how_ai_compilers_work/search_budget.json is stale: run "
        "scripts/measure/how_ai_compilers_work/search_budget.py"
    )
    row = {(r.get("aic_search"), r.get("aic_budget")): r for r in committed["rows"] if r["kind"] == "search"}
    noise = committed["metrics"]["aic_median_ratio"]["noise"]
    rnd, lrn = row["aic_random", 24], row["aic_learned", 24]
    # "the two medians are closer to each other than the ~10 % a single config moved between runs"
    assert abs(rnd["aic_median_ratio"] - lrn["aic_median_ratio"]) < noise
    # "the learned model buys reliability (fewer bad draws)"
    assert lrn["aic_p_within5"] > rnd["aic_p_within5"] and lrn["aic_p90_ratio"] <= rnd["aic_p90_ratio"]
    # "24 random draws usually catch one of them"
    assert rnd["aic_p_within5"] > 0.5


def test_search_budget_rejects_too_few_seeds():
    p = subprocess.run(
        [
            sys.executable,
            "scripts/measure/how_ai_compilers_work/search_budget.py",
            "--seeds",
            "2",
            "--out",
            "/dev/null",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "scripts")},
    )
    assert p.returncode != 0 and "--seeds must be at least 5" in p.stderr
