"""Kernels of "Triton Kernel Practice": correctness on awkward inputs, clear errors on bad ones,
and the Hopper code paths compiled for sm_90 without a GPU.

The snippet modules are imported with TRITON_INTERPRET=1, so every kernel runs on the CPU
through Triton's interpreter at small sizes (ragged dims, strided views, fp16 and bf16,
against float64 references). They are imported once more without the interpreter to check
that CPU tensors are refused before Triton sees them. The TMA GEMM and the FlashAttention
kernel are compiled for an H200 (sm_90) with the installed Triton: the SASS must use the
Hopper tensor-core instruction (HGMMA) and the bulk tensor copy (TMA), without spills.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets" / "triton_kernel_practice"


def _load(name: str, interpret: bool):
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    try:
        spec = importlib.util.spec_from_file_location(f"tkp_test_{name}_{int(interpret)}", SNIPPETS / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if old is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = old
    return mod


g, sm, fa, va = (_load(n, True) for n in ("gemm", "softmax", "flash_attention", "vector_add"))
HAS_GPU = torch.cuda.is_available()


@pytest.fixture(autouse=True)
def _interpreter_on(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")   # read again while an interpreted kernel runs


# -- GEMM ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("step", ["matmul_naive", "matmul_grouped", "matmul_autotuned"])
def test_gemm_ragged_and_strided(step, dtype):
    fn = getattr(g, step)
    for M, N, K, tb in ((1, 1, 1, False), (33, 70, 65, False), (70, 33, 40, True)):
        g.check(fn, dtype, M, N, K, tb)


def test_gemm_non_contiguous_a():
    a = torch.randn(40, 64, dtype=torch.float16)[:, ::2]           # column stride 2
    b = torch.randn(32, 24, dtype=torch.float16)
    c = g.matmul_grouped(a, b)
    ref = a.double() @ b.double()
    assert ((c.double() - ref).norm() / ref.norm()).item() < 2e-3


@pytest.mark.parametrize("args, message", [
    ((torch.randn(4, 5, dtype=torch.float16), torch.randn(6, 3, dtype=torch.float16)), "need A \\(M, K\\) and B \\(K, N\\)"),
    ((torch.randn(4, 5, dtype=torch.float16), torch.randn(5, 3, dtype=torch.bfloat16)), "float16 or both bfloat16"),
    ((torch.randn(4, 5), torch.randn(5, 3)), "float16 or both bfloat16"),
    ((torch.randn(2, 4, 5, dtype=torch.float16), torch.randn(5, 3, dtype=torch.float16)), "need A \\(M, K\\)"),
])
def test_gemm_rejects_bad_input(args, message):
    for fn in (g.matmul_naive, g.matmul_grouped, g.matmul_autotuned):
        with pytest.raises(ValueError, match=message):
            fn(*args)


@pytest.mark.skipif(HAS_GPU, reason="checks the message a CPU-only machine gives")
def test_gpu_kernels_refuse_cpu_tensors():
    gj, smj, faj, vaj = (_load(n, False) for n in ("gemm", "softmax", "flash_attention", "vector_add"))
    h = torch.randn(8, 8, dtype=torch.float16)
    for call in (lambda: gj.matmul_naive(h, h), lambda: gj.matmul_autotuned(h, h),
                 lambda: smj.softmax_fused(h.float()), lambda: smj.softmax_online(h.float()),
                 lambda: faj.attention(*(torch.randn(1, 1, 8, 16, dtype=torch.float16),) * 3),
                 lambda: vaj.add(h, h)):
        with pytest.raises(ValueError, match="must be on a CUDA GPU"):
            call()
    with pytest.raises(RuntimeError, match="needs a Hopper"):
        gj.matmul_tma(h, h)


# -- softmax ------------------------------------------------------------------------------

@pytest.mark.parametrize("fn", ["softmax_fused", "softmax_online", "softmax"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
def test_softmax_ragged(fn, dtype):
    for M, N in ((1, 1), (3, 5), (9, 130), (4, 1025)):
        sm.check(getattr(sm, fn), M, N, dtype)


def test_softmax_strided_and_3d():
    for fn in (sm.softmax_fused, sm.softmax_online):
        sm.check(fn, 11, 97, transpose=True)
        x = torch.randn(2, 3, 50)
        torch.testing.assert_close(fn(x), torch.softmax(x, -1), rtol=1e-5, atol=1e-6)
        x = torch.randn(20, 64)[::3]                                  # row stride 192
        torch.testing.assert_close(fn(x), torch.softmax(x, -1), rtol=1e-5, atol=1e-6)


def test_softmax_extreme_values():
    x = torch.tensor([[1e4, -1e4, 0.0, 1e4], [-3e38, -3e38, -3e38, -3e38]])
    for fn in (sm.softmax_fused, sm.softmax_online):
        torch.testing.assert_close(fn(x), torch.softmax(x.double(), -1).float())


def test_softmax_naive_counts_as_torch():
    x = torch.randn(7, 33)
    torch.testing.assert_close(sm.softmax_naive(x), torch.softmax(x, -1))


@pytest.mark.parametrize("x, message", [
    (torch.randn(3, 4).to(torch.int32), "dtype must be float32"),
    (torch.randn(0, 4), "non-empty"),
])
def test_softmax_rejects_bad_input(x, message):
    for fn in (sm.softmax_fused, sm.softmax_online):
        with pytest.raises(ValueError, match=message):
            fn(x)


# -- FlashAttention -----------------------------------------------------------------------

@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("D", [16, 32, 64])
def test_attention_ragged(D, causal):
    for B, H, N in ((1, 1, 1), (2, 1, 37), (1, 2, 50)):
        fa.check(B, H, N, D, causal)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_attention_bf16_and_strided(causal):
    fa.check(1, 2, 45, 32, causal, dtype=torch.bfloat16)
    fa.check(2, 3, 33, 16, causal, layout="bnhd")


def test_attention_matches_sdpa_and_scale():
    q, k, v = (torch.randn(1, 2, 40, 32, dtype=torch.float16) for _ in range(3))
    o = fa.attention(q, k, v, causal=True, sm_scale=0.3)
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(), is_causal=True, scale=0.3)
    assert ((o.float() - ref).norm() / ref.norm()).item() < 2e-3


@pytest.mark.parametrize("shapes, dtypes, message", [
    (((1, 2, 8, 16), (1, 2, 9, 16), (1, 2, 8, 16)), (torch.float16,) * 3, "share one \\(B, H, N, D\\) shape"),
    (((2, 8, 16),) * 3, (torch.float16,) * 3, "share one \\(B, H, N, D\\) shape"),
    (((1, 1, 8, 16),) * 3, (torch.float16, torch.bfloat16, torch.float16), "float16 or all bfloat16"),
    (((1, 1, 8, 16),) * 3, (torch.float32,) * 3, "float16 or all bfloat16"),
    (((1, 1, 8, 256),) * 3, (torch.float16,) * 3, "head dim 256 not supported"),
    (((1, 1, 8, 48),) * 3, (torch.float16,) * 3, "head dim 48 not supported"),
    (((1, 1, 0, 16),) * 3, (torch.float16,) * 3, "at least 1"),
])
def test_attention_rejects_bad_input(shapes, dtypes, message):
    q, k, v = (torch.randn(s).to(d) for s, d in zip(shapes, dtypes))
    with pytest.raises(ValueError, match=message):
        fa.attention(q, k, v)


# -- vector add ---------------------------------------------------------------------------

def test_vector_add_ragged_and_errors():
    for n in (1, 4095, 4097, 10_001):
        x, y = torch.randn(n), torch.randn(n)
        assert torch.equal(va.add(x, y), x + y)
    with pytest.raises(ValueError, match="must match"):
        va.add(torch.randn(3), torch.randn(4))


# -- Hopper code paths, compiled for sm_90 on any machine ---------------------------------
# Compiled in a fresh process: the interpreter used above patches triton.language in this one.

COMPILE = r"""
import importlib.util, json, os, re, subprocess, sys, tempfile
from pathlib import Path
import torch, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

def load(name):
    spec = importlib.util.spec_from_file_location(name, Path(sys.argv[1]) / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

def report(kernel, sig, const, divisible, num_warps, num_stages):
    attrs = {(kernel.arg_names.index(a),): [["tt.divisibility", 16]] for a in divisible}
    k = triton.compile(ASTSource(kernel, sig, const, attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": num_warps, "num_stages": num_stages})
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(k.asm["cubin"])
    sass = subprocess.run([str(tool), "-sass", f.name], capture_output=True, text=True, check=True).stdout
    usage = subprocess.run([str(tool), "--dump-resource-usage", f.name], capture_output=True, text=True, check=True).stdout
    os.unlink(f.name)
    return {"hgmma": "HGMMA" in sass, "tma_load": "UTMALDG" in sass, "tma_store": "UTMASTG" in sass,
            "stack": int(re.search(r"STACK:(\d+)", usage).group(1)), "shared": k.metadata.shared,
            "warps": k.metadata.num_warps}

out = {}
g = load("gemm")
for dtype, dt in ((torch.float16, "fp16"), (torch.bfloat16, "bf16")):
    c = dict(g.TMA_CONFIGS[dtype])
    BM, BN, BK, split = c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["EPI_SPLIT"]
    sig = {"a_desc": f"tensordesc<{dt}[{BM}, {BK}]>", "b_desc": f"tensordesc<{dt}[{BK}, {BN}]>",
           "c_desc": f"tensordesc<{dt}[{BM}, {BN // 2 if split else BN}]>", "M": "i32", "N": "i32", "K": "i32"}
    const = {"BLOCK_M": BM, "BLOCK_N": BN, "BLOCK_K": BK, "GROUP_M": c["GROUP_M"], "NUM_SMS": 132,
             "B_KMAJOR": False, "EPI_SPLIT": split}
    sig.update({k: "constexpr" for k in const})
    out[f"gemm_{dt}"] = report(g.matmul_tma_kernel, sig, const, ["M", "N", "K"], c["num_warps"], c["num_stages"])
fa = load("flash_attention")
names = fa.attn_fwd_kernel.arg_names
for (D, causal), c in fa.ATTN_CONFIGS.items():
    c = dict(c)
    W, S = c.pop("num_warps"), c.pop("num_stages")
    const = dict(HEAD_DIM=D, CAUSAL=causal, EVEN_N=True, **c)
    sig = {n: "i32" for n in names}
    sig.update(Q="*fp16", K="*fp16", V="*fp16", O="*fp16", sm_scale="fp32")
    sig.update({k: "constexpr" for k in const})
    divisible = [n for n in names if n not in const and n not in ("B", "H", "sm_scale")]
    out[f"attention_D{D}_{'causal' if causal else 'full'}"] = report(fa.attn_fwd_kernel, sig, const, divisible, W, S)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def hopper_builds():
    env = {**os.environ, "TRITON_INTERPRET": "0"}
    p = subprocess.run([sys.executable, "-c", COMPILE, str(SNIPPETS)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-4000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_hopper_kernels_use_hgmma_and_tma_without_spills(hopper_builds):
    assert set(hopper_builds) == {"gemm_fp16", "gemm_bf16", "attention_D64_full", "attention_D64_causal",
                                  "attention_D128_full", "attention_D128_causal"}
    for name, r in hopper_builds.items():
        assert r["hgmma"], f"{name}: no HGMMA in the SASS: the tensor cores run on a slower path"
        assert r["tma_load"], f"{name}: no TMA load (UTMALDG) in the SASS"
        assert r["stack"] == 0, f"{name}: {r['stack']} bytes of stack frame (register spilling)"
        assert r["shared"] <= 227 * 1024, f"{name}: {r['shared']} bytes of shared memory do not fit an H200 block"
    assert hopper_builds["gemm_fp16"]["tma_store"] and hopper_builds["gemm_bf16"]["tma_store"]
