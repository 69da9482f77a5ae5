"""Kernels of "Deep Dive into OpenAI Triton": FlashAttention forward and backward, and the
lattice Boltzmann solver, checked on a CPU.

Attention: the snippet is imported with TRITON_INTERPRET=1 and its forward and gradients are
compared with an fp32 reference on ragged shapes (GQA, causal and full, fp16 and bf16, D 64
and 128) at tiny sizes; bad inputs must be refused with a message that says what is expected.

LBM: the physics is validated with the PyTorch implementation of the same step (Taylor-Green
decay against the analytic solution, its order of convergence, a short lid-driven cavity),
and the Triton kernel is checked against that step on tiny grids through the interpreter.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import snippet_loader
import torch

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets" / "triton_deep_dive"


def _load(name: str, interpret: bool):
    return snippet_loader.load(SNIPPETS / f"{name}.py", f"tdd_test_{name}_{int(interpret)}", interpret)


def _interpreted(code: str):
    """Run code in a fresh Python with TRITON_INTERPRET=1 and the snippets importable by name (the GPU-only
    modules import their Gluon kernels there without compiling them); fail with its stderr if it fails."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(SNIPPETS)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out


attn = _load("attention", True)


@pytest.fixture(autouse=True)
def _interpreter_on(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read again while an interpreted kernel runs


# ---------------------------------------------------------------- attention


@pytest.mark.parametrize(
    "B, HQ, HKV, N, D, causal, dtype",
    [
        (1, 2, 1, 37, 64, True, torch.float16),  # GQA 2:1, ragged, causal
        (1, 2, 2, 21, 64, False, torch.bfloat16),  # bf16 (upcast in the interpreter), N < two blocks
        (1, 4, 2, 1, 64, True, torch.float16),  # a single token
        (2, 2, 1, 50, 128, False, torch.float16),  # D = 128, batch 2
        (1, 1, 1, 33, 128, True, torch.bfloat16),
        (1, 2, 1, 29, 256, True, torch.float16),  # D = 256, GQA, ragged
        (1, 1, 1, 18, 256, False, torch.bfloat16),
    ],
)
def test_attention_matches_fp32_forward_and_gradients(B, HQ, HKV, N, D, causal, dtype):
    assert attn.check(B, HQ, HKV, N, D, causal, dtype) < (2e-2 if dtype == torch.bfloat16 else 5e-3)


def _low_scores(shape_q, shape_k, generator):
    """q near +4 and k near -4 in every dimension: each score is about -16 D / sqrt(D), below -128 in the
    kernels' log2 domain for D = 64, so exp2(0 - lse) overflows fp32 for a key that is not there."""
    q = (torch.randn(*shape_q, generator=generator) + 4).half()
    k = (torch.randn(*shape_k, generator=generator) - 4).half()
    v = torch.randn(*shape_k, generator=generator).half()
    return q, k, v


@pytest.mark.parametrize("causal", [False, True])
def test_gradients_stay_finite_when_every_score_of_a_row_is_very_negative(causal):
    """The dQ kernel's ragged last key tile reads keys past N as zeros, so their score is 0, not -inf: before
    the tail was masked, P = exp2(0 - lse) there was inf and dQ = dS K came out NaN (N = 50, full attention)."""
    g = torch.Generator().manual_seed(3)
    q, k, v = (t.requires_grad_() for t in _low_scores((1, 2, 50, 64), (1, 1, 50, 64), g))
    do = torch.randn(1, 2, 50, 64, generator=g).half()
    o = attn.attention(q, k, v, causal=causal)
    grads = torch.autograd.grad(o, (q, k, v), do)
    qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
    ref = attn.reference(qr, kr, vr, causal)
    refs = torch.autograd.grad(ref, (qr, kr, vr), do.float())
    assert all(torch.isfinite(t).all() for t in (o, *grads)), "NaN or inf in the output or a gradient"
    errs = [attn.rel_err(o, ref)] + [attn.rel_err(a, b) for a, b in zip(grads, refs)]
    assert max(errs) < 1e-2, errs


def test_varlen_gradients_stay_finite_when_every_score_of_a_row_is_very_negative(varlen):
    """The same tail in the packed kernel: each sequence's last key tile runs past its own keys."""
    g = torch.Generator().manual_seed(4)
    q, k, v = (t.requires_grad_() for t in _low_scores((45, 2, 64), (45, 1, 64), g))
    cu = torch.tensor([0, 21, 45], dtype=torch.int32)
    do = torch.randn(45, 2, 64, generator=g).half()
    o = varlen.attention_varlen(q, k, v, cu)
    grads = torch.autograd.grad(o, (q, k, v), do)
    qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
    refs = torch.autograd.grad(varlen.reference_varlen(qr, kr, vr, cu), (qr, kr, vr), do.float())
    assert all(torch.isfinite(t).all() for t in (o, *grads)), "NaN or inf in the output or a gradient"
    assert max(attn.rel_err(a, b) for a, b in zip(grads, refs)) < 1e-2


def test_attention_custom_scale_and_strided_layout():
    torch.manual_seed(1)
    # (B, N, H, D) memory seen as (B, H, N, D), as a fused QKV projection produces
    q, k, v = (torch.randn(1, 19, 2, 64, dtype=torch.float16).transpose(1, 2).requires_grad_() for _ in range(3))
    o = attn.attention(q, k, v, causal=True, scale=0.05)
    ref = attn.reference(q, k, v, causal=True, scale=0.05)
    assert attn.rel_err(o, ref) < 5e-3
    o.sum().backward()
    assert all(t.grad is not None and t.grad.shape == t.shape for t in (q, k, v))


def test_outputs_keep_the_inputs_token_major_layout():
    """Head views of one packed (B, N, 3, H, D) projection: O, dQ, dK and dV come back token-major, so the
    layer's o.transpose(1, 2).reshape(B, N, H * D) is a view of O's memory (what the page says); contiguous
    inputs give contiguous outputs."""
    torch.manual_seed(2)
    B, N, H, D = 2, 21, 3, 64
    qkv = torch.randn(B, N, 3, H, D, dtype=torch.float16, requires_grad=True)
    q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
    o = attn.attention(q, k, v, causal=True)
    assert o.stride() == (N * H * D, D, H * D, 1)
    y = o.transpose(1, 2).reshape(B, N, H * D)
    assert y.data_ptr() == o.data_ptr() and y._base is not None
    dq, dk, dv = attn._backward(
        *(t.detach() for t in (q, k, v)),
        *attn._forward(q.detach(), k.detach(), v.detach(), True, D**-0.5),
        torch.randn_like(o),
        True,
        D**-0.5,
    )
    assert all(g.stride() == (N * H * D, D, H * D, 1) for g in (dq, dk, dv))
    c = torch.randn(B, H, N, D, dtype=torch.float16)
    assert attn.attention(c, c, c).is_contiguous()


@pytest.mark.parametrize(
    "shapes, dtype, message",
    [
        (((1, 2, 16, 80),) * 3, torch.float16, "head dim 80 is not supported"),
        (((1, 2, 16, 512),) * 3, torch.float16, "head dim 512 is not supported; use one of \\(64, 128, 256\\)"),
        (((1, 3, 16, 64), (1, 2, 16, 64), (1, 2, 16, 64)), torch.float16, "multiple of key/value heads"),
        (((1, 2, 16, 64), (1, 2, 17, 64), (1, 2, 17, 64)), torch.float16, "must have shape"),
        (((2, 16, 64),) * 3, torch.float16, "4-D tensor"),
        (((1, 2, 16, 64),) * 3, torch.float32, "float16 or all bfloat16"),
        (((1, 2, 0, 64),) * 3, torch.float16, "at least 1"),
    ],
)
def test_attention_refuses_bad_inputs(shapes, dtype, message):
    q, k, v = (torch.randn(s, dtype=dtype) for s in shapes)
    with pytest.raises(ValueError, match=message):
        attn.attention(q, k, v)


def test_attention_refuses_cpu_tensors_on_the_gpu_path():
    gpu_path = _load("attention", False)
    q = torch.randn(1, 2, 16, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="must be CUDA tensors"):
        gpu_path.attention(q, q, q)


def test_block_sizes_fit_the_loops():
    """Causal loops step BLOCK_N inside a BLOCK_M diagonal (forward, dQ) and BLOCK_M inside a
    BLOCK_N diagonal (dK/dV): the configurations must keep those divisibilities."""
    assert set(attn.FWD_CONFIGS) == set(attn.BWD_CONFIGS) == {(d, c) for d in attn.HEAD_DIMS for c in (False, True)}
    for d, cfg in attn.FWD_CONFIGS.items():
        assert cfg["BLOCK_M"] % cfg["BLOCK_N"] == 0, d
    for d, cfg in attn.BWD_CONFIGS.items():
        m1, n1 = cfg["DKDV"][:2]
        m2, n2 = cfg["DQ"][:2]
        assert n1 % m1 == 0 and m2 % n2 == 0, d


@pytest.fixture
def steps(monkeypatch):
    """attention_steps.py imports the page's attention.py by module name, as it does beside it on disk."""
    import sys

    monkeypatch.setitem(sys.modules, "attention", attn)
    return _load("attention_steps", True)


def _beside_attention(monkeypatch, name: str):
    """A snippet that imports attention.py by module name, loaded for the interpreter beside it."""
    import sys

    monkeypatch.setitem(sys.modules, "attention", attn)
    return _load(name, True)


@pytest.fixture
def varlen(monkeypatch):
    """attention_varlen.py imports attention.py by module name and reuses its inner loops."""
    return _beside_attention(monkeypatch, "attention_varlen")


@pytest.mark.parametrize(
    "lengths, HQ, HKV, D, causal, dtype",
    [
        ([37, 1, 0, 20], 2, 1, 64, True, torch.float16),  # an empty sequence, a single token, GQA 2:1
        ([21, 16], 2, 2, 64, False, torch.bfloat16),  # bf16 (upcast in the interpreter)
        ([5, 40, 33], 4, 2, 128, False, torch.float16),  # D = 128, tails in every sequence
        ([48, 17], 1, 1, 128, True, torch.float16),
        ([0, 0, 9], 2, 1, 64, False, torch.float16),  # empty sequences first
    ],
)
def test_varlen_matches_each_sequence_alone(varlen, lengths, HQ, HKV, D, causal, dtype):
    assert varlen.check_varlen(lengths, HQ, HKV, D, causal, dtype) < (2e-2 if dtype == torch.bfloat16 else 5e-3)


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_is_the_batched_kernel_bit_for_bit_on_equal_lengths(varlen, causal):
    """Sequences of one length: the packed kernels run the same tiles as attention.py's batched ones, so
    output and gradients must be identical, not merely close (the page says so)."""
    q, k, v, cu, _ = varlen.packed([19, 19, 19], 4, 2, 64)
    o = varlen.attention_varlen(q, k, v, cu, causal=causal)
    do = torch.randn_like(o)
    grads = torch.autograd.grad(o, (q, k, v), do)
    heads = [t.detach().view(3, 19, t.shape[1], 64).transpose(1, 2).requires_grad_() for t in (q, k, v)]
    ob = attn.attention(*heads, causal=causal)
    gb = torch.autograd.grad(ob, heads, do.view(3, 19, 4, 64).transpose(1, 2))
    assert torch.equal(o, ob.transpose(1, 2).reshape(o.shape))
    for g, b in zip(grads, gb):
        assert torch.equal(g, b.transpose(1, 2).reshape(g.shape))


def test_varlen_keeps_sequences_apart(varlen):
    """The same tokens taken as one sequence give a different answer: the check can fail."""
    q, k, v, cu, _ = varlen.packed([10, 12], 2, 1, 64)
    o = varlen.attention_varlen(q, k, v, cu)
    whole = varlen.reference_varlen(*(t.detach().float() for t in (q, k, v)), torch.tensor([0, 22], dtype=torch.int32))
    assert attn.rel_err(o, whole) > 0.1


@pytest.mark.parametrize(
    "lengths, lengths_k, HQ, HKV, D, causal",
    [
        ([5, 0, 12], [40, 3, 12], 2, 1, 64, True),  # keys but no queries: zero dK, dV for those keys
        ([9, 30], [44, 30], 2, 2, 64, True),  # the diagonal 35 keys to the right: off the 16-key tiles
        ([1, 17], [64, 20], 4, 2, 128, True),  # one query against 64 keys (a decode step), D = 128
        ([33, 8], [7, 50], 2, 1, 64, False),  # cross-attention: fewer keys than queries is fine unmasked
        ([20], [20], 2, 1, 64, True),  # cu_seqlens_k equal to cu_seqlens: self-attention again
    ],
)
def test_varlen_keys_packed_apart_match_each_sequence_alone(varlen, lengths, lengths_k, HQ, HKV, D, causal):
    assert varlen.check_varlen(lengths, HQ, HKV, D, causal, lengths_k=lengths_k) < 5e-3


def test_varlen_causal_mask_ends_at_the_last_key(varlen):
    """With more keys than queries the causal mask is aligned to the bottom right (query i sees keys up to
    i + n_k - n_q, as FlashAttention-2 and torch's varlen_attn do); the top-left alignment that SDPA's
    is_causal=True uses for rectangular inputs gives a different answer, so the convention is tested."""
    q, k, v, cu_q, cu_k = varlen.packed([6], 2, 2, 64, lengths_k=[20])
    o = varlen.attention_varlen(q, k, v, cu_q, causal=True, cu_seqlens_k=cu_k)
    qf, kf, vf = (t.detach().float().transpose(0, 1) for t in (q, k, v))
    s = (qf @ kf.transpose(-1, -2)) / 8.0
    top_left = torch.softmax(s.masked_fill(torch.ones(6, 20, dtype=torch.bool).triu(1), float("-inf")), -1) @ vf
    bottom_right = torch.softmax(s.masked_fill(torch.ones(6, 20, dtype=torch.bool).triu(15), float("-inf")), -1) @ vf
    assert attn.rel_err(o, bottom_right.transpose(0, 1)) < 5e-3
    assert attn.rel_err(o, top_left.transpose(0, 1)) > 0.1


@pytest.mark.parametrize(
    "lengths, lengths_k, kw, message",
    [
        ([10, 12], [10, 8], dict(causal=True), "causal=True with fewer keys than queries in 1 sequence"),
        ([10, 12], [0, 30], dict(), "1 sequence\\(s\\) have queries but no keys"),
        ([10, 12], [4, 4, 22], dict(), "cu_seqlens_k has 4 offsets and cu_seqlens 3"),
        ([10, 12], [10, 20], dict(max_seqlen_k=15), "max_seqlen_k = 15 is less than the longest sequence \\(20\\)"),
        ([10, 12], [10, 20], dict(validate=False, max_seqlen=12), "needs max_seqlen \\(and max_seqlen_k"),
    ],
)
def test_varlen_refuses_bad_key_offsets(varlen, lengths, lengths_k, kw, message):
    q, k, v, cu_q, _ = varlen.packed(lengths, 2, 1, 64)
    cu_k = torch.tensor([0, *lengths_k], dtype=torch.int32).cumsum(0).to(torch.int32)
    k, v = (torch.randn(int(cu_k[-1]), 1, 64, dtype=torch.float16) for _ in range(2))
    with pytest.raises(ValueError, match=message):
        varlen.attention_varlen(q, k, v, cu_q, cu_seqlens_k=cu_k, **kw)


def test_varlen_needs_key_offsets_when_keys_are_packed_apart(varlen):
    q, _, _, cu_q, _ = varlen.packed([10, 12], 2, 1, 64)
    k = torch.randn(30, 1, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="k has 30 tokens and q 22; with one cu_seqlens they must be equal"):
        varlen.attention_varlen(q, k, k, cu_q)


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(cu=[0, 5, 3, 22]), "never fall; got first 0, last 22, smallest step -2"),
        (dict(cu=[1, 22]), "cu_seqlens must rise from 0 to 22 \\(the tokens in q\\)"),
        (dict(cu=[0, 20]), "cu_seqlens must rise from 0 to 22 \\(the tokens in q\\)"),
        (dict(cu_dtype=torch.int64), "cu_seqlens must be int32"),
        (dict(cu=[22]), "1-D tensor of B \\+ 1 row offsets"),
        (dict(max_seqlen=5), "max_seqlen = 5 is less than the longest sequence \\(12\\)"),
        (dict(validate=False), "validate=False needs max_seqlen"),
        (dict(k_dim=32), "k and v must have the same shape \\(Tk, Hkv, D\\) with D = 64 as in q"),
        (dict(q_4d=True), "q must be a 3-D tensor \\(T, H, D\\)"),
        (dict(dtype=torch.float32), "float16 or all bfloat16"),
        (dict(heads=3), "multiple of key/value heads"),
        # a strided view of offsets passed the checks and gave NaN (bad-input audit)
        (dict(cu=[0, 99, 10, 99, 22], cu_step=2), "cu_seqlens must be contiguous, got a view with stride 2"),
    ],
)
def test_varlen_refuses_bad_inputs(varlen, change, message):
    q = torch.randn(22, change.get("heads", 2), 64, dtype=change.get("dtype", torch.float16))
    k = v = torch.randn(22, 2, 64, dtype=q.dtype)
    if "k_dim" in change:
        k = k[..., : change["k_dim"]]
    if change.get("q_4d"):
        q = q[None]
    cu = torch.tensor(change.get("cu", [0, 10, 22]), dtype=change.get("cu_dtype", torch.int32))[
        :: change.get("cu_step", 1)
    ]
    kw = {key: change[key] for key in ("max_seqlen", "validate") if key in change}
    with pytest.raises(ValueError, match=message):
        varlen.attention_varlen(q, k, v, cu, **kw)


def test_varlen_refuses_empty_and_oversized_batches_in_its_own_words(varlen):
    empty = torch.randn(0, 2, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="^attention_varlen: q holds 0 tokens and k 0; pack at least one"):
        varlen.attention_varlen(empty, empty, empty, torch.tensor([0, 0], dtype=torch.int32))
    q = torch.randn(40000, 2, 64, dtype=torch.float16)  # 40000 one-token sequences x 2 heads: past the grid's 65535
    with pytest.raises(ValueError, match="40000 sequences x 2 heads is more than the 65535"):
        varlen.attention_varlen(q, q, q, torch.arange(40001, dtype=torch.int32))
    odd = torch.randn(8, 2, 80, dtype=torch.float16)
    with pytest.raises(ValueError, match="^attention_varlen: head dim 80 is not supported"):
        varlen.attention_varlen(odd, odd, odd, torch.tensor([0, 8], dtype=torch.int32))


def test_varlen_refuses_cpu_tensors_on_the_gpu_path(monkeypatch):
    import sys

    gpu_path = _load("attention", False)
    monkeypatch.setitem(sys.modules, "attention", gpu_path)
    gpu_varlen = _load("attention_varlen", False)
    q = torch.randn(16, 2, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="must be CUDA tensors"):
        gpu_varlen.attention_varlen(q, q, q, torch.tensor([0, 16], dtype=torch.int32))


_VARLEN_DRY_RUN = """
import importlib.util, sys, time
sys.path.insert(0, {scripts!r})
from sitekit import measure
measure.need_gpu = lambda name, min_cc=9: None


def wall_ms(fn, **kw):
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


measure.bench = wall_ms
spec = importlib.util.spec_from_file_location("producer", {producer!r})
prod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prod)
prod.DEVICE, prod.QUICK_LENGTHS, prod.H, prod.CHUNK = "cpu", [40, 17, 5], 2, 16
sys.exit(prod.main(["--quick", "--out", {out!r}]))
"""


def _dry_run(template: str, producer: str, tmp_path) -> dict:
    """Run a GPU producer of this article through the interpreter at tiny sizes (template: the script that
    patches it, see _VARLEN_DRY_RUN) and return the dataset it writes."""
    import json
    import os
    import subprocess
    import sys

    out = tmp_path / f"{producer}.json"
    code = template.format(
        scripts=str(ROOT / "scripts"),
        producer=str(ROOT / "scripts" / "measure" / "triton_deep_dive" / f"{producer}.py"),
        out=str(out),
    )
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(out.read_text())


def test_varlen_producer_runs_end_to_end_on_the_cpu(tmp_path):
    """The GPU producer of attention_varlen, run through the interpreter at tiny sizes with a wall-clock
    timer in place of do_bench: its checks pass and it writes the cases of the committed H200 data (the
    backend SDPA's jagged path picks on a CPU is another one, so that column is left out, and torch's
    varlen_attn has no CPU kernel, so its rows are too)."""
    import json

    quick = _dry_run(_VARLEN_DRY_RUN, "attention_varlen", tmp_path)

    def cases(rows):
        return sorted(
            json.dumps(
                {k: v for k, v in r.items() if k in ("table", "D", "mask", "dtype", "heads", "keys", "pass", "impl")}
            )
            for r in rows
            if r["table"] != "setup" and r.get("impl") != "torch_varlen"
        )

    committed = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_varlen.json").read_text())
    assert cases(quick["rows"]) == cases(committed["rows"])
    assert all(r["same"] for r in quick["rows"] if r["table"] == "bitwise")


@pytest.mark.parametrize("N, D", [(37, 64), (70, 128)])
def test_attention_steps_match_the_reference(steps, N, D):
    """The three forward steps (pointer loads, TMA without and with pipelining): one result."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, N, D, dtype=torch.float16) for _ in range(3))
    ref = attn.reference(q, k, v)
    for step in steps.STEPS:
        assert attn.rel_err(steps.forward_step(q, k, v, step), ref) < 5e-3, step


def test_attention_steps_take_strided_views_and_bf16(steps):
    """A view with stride 2 along D gave a wrong result with no error, and bf16 under the interpreter gave
    garbage (bad-input audit): both now take attention()'s path (a copy; fp32 in the interpreter)."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 20, 128, dtype=torch.float16)[..., ::2] for _ in range(3))
    ref = attn.reference(q, k, v)
    b16 = [t.contiguous().bfloat16() for t in (q, k, v)]
    for step in steps.STEPS:
        assert attn.rel_err(steps.forward_step(q, k, v, step), ref) < 5e-3, step
        out = steps.forward_step(*b16, step)
        assert out.dtype == torch.bfloat16 and attn.rel_err(out, attn.reference(*b16)) < 2e-2, step


_PTX_CHECK = """
import sys
sys.path.insert(0, {scripts!r})
from sitekit import measure
import attention, attention_steps
k = attention_steps.attn_fwd_pointers
H, N = 32, 4096
for D in (64, 128):
    cfg = dict(attention.FWD_CONFIGS[(D, False)])
    warps, stages = cfg.pop("num_warps"), cfg.pop("num_stages")
    args = dict(Q="*fp16", K="*fp16", V="*fp16", O="*fp16", H=H, N_CTX=N, qk_scale=0.125)
    for t in "qkvo":
        args.update({{f"s{{t}}_b": H * N * D, f"s{{t}}_h": N * D, f"s{{t}}_n": D}})
    sig, const, attrs = measure.launch_signature(k, args, dict(HEAD_DIM=D, **cfg))
    unaligned = {{i: a for i, a in attrs.items() if not sig[k.arg_names[i[0]]].startswith("*")}}
    for name, at in (("launch", attrs), ("unaligned", unaligned)):
        u = measure.sm90_compile(k, sig, const, at, warps, stages)
        print(D, name, u["ptx"].count("cp.async.cg.shared.global"), int("LDGSTS" in u["sass"]))
"""


def test_pointer_step_is_pipelined_only_with_the_launchers_alignment():
    """The page says the pointer kernel, compiled as the launcher specializes it (16-byte-aligned pointers,
    strides marked as multiples of 16), gets cp.async copies (LDGSTS), and that compiled without the
    pointers' alignment it gets none: compile it both ways for sm_90 and look (in a fresh process: the
    compiler must not see this module's interpreted Triton). The resources dataset, which the page's step
    table reads, must say the same for the launched kernel."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "0"}
    code = _PTX_CHECK.format(scripts=str(ROOT / "scripts"))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=SNIPPETS, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    seen = {}
    for line in out.stdout.split("\n"):
        if line.strip():
            D, name, copies, ldgsts = line.split()
            seen[(int(D), name)] = (int(copies), int(ldgsts))
    assert set(seen) == {(D, n) for D in (64, 128) for n in ("launch", "unaligned")}, out.stdout
    for D in (64, 128):
        assert seen[(D, "launch")][0] > 0 and seen[(D, "launch")][1] == 1, (D, seen)
        assert seen[(D, "unaligned")] == (0, 0), (D, seen)
    rows = json.loads((ROOT / "data" / "triton_deep_dive" / "resources.json").read_text())["rows"]
    ptr = {r["D"]: r["cp_async"] for r in rows if r.get("step") == "pointers"}
    assert ptr == {64: "yes", 128: "yes"}, ptr


def test_d256_swept_rows_say_what_the_page_says_of_them():
    """The head-dim-256 paragraph: the dK/dV rows of every setting attention_tuning's backward sweep timed are
    in the resources dataset, the 32 x 32 tile on 4 warps has no HGMMA with either mask, and the 32 x 64 tile
    on 8 warps and the launched 64 x 64 one do use it (the spills and times are check()s on the page)."""
    import json

    from measure.triton_deep_dive import attention_tuning

    rows = json.loads((ROOT / "data" / "triton_deep_dive" / "resources.json").read_text())["rows"]
    swept = {
        (r["mask"], r["BLOCK_M"], r["BLOCK_N"], r["num_warps"], r["num_stages"]): r for r in rows if r.get("swept")
    }
    want = {(mask, *s) for mask in ("none", "causal") for s, _ in attention_tuning.BWD[256]}
    assert set(swept) == want, sorted(set(swept) ^ want)
    for mask in ("none", "causal"):
        assert swept[(mask, 32, 32, 4, 2)]["hgmma"] == "no"
        assert swept[(mask, 32, 64, 8, 2)]["hgmma"] == "yes" and swept[(mask, 64, 64, 8, 2)]["hgmma"] == "yes"


def test_launch_signature_specializes_like_the_launcher():
    """sitekit.measure.launch_signature, which the resources datasets compile with: a multiple of 16 is
    marked divisible, 1 becomes a constant, other ints stay plain, pointers are taken as aligned, the
    kernel's do_not_specialize / do_not_specialize_on_alignment lists drop those hints as the launcher
    does, a constexpr left out takes its default, and a missing or unsupported argument is refused by name."""
    import triton
    import triton.language as tl
    from sitekit import measure

    @triton.jit(do_not_specialize=["n_dns", "one_dns"], do_not_specialize_on_alignment=["n_dnsa"])
    def probe(X, n16, one, seven, s, n_dns, one_dns, n_dnsa, BLOCK: tl.constexpr, FLAG: tl.constexpr = False):
        pass

    args = dict(X="*fp16", n16=4096, one=1, seven=7, s=0.5, n_dns=4096, one_dns=1, n_dnsa=4096)
    sig, const, attrs = measure.launch_signature(probe, args, {"BLOCK": 64})
    assert sig == {
        "X": "*fp16",
        "n16": "i32",
        "one": "constexpr",
        "seven": "i32",
        "s": "fp32",
        "n_dns": "i32",
        "one_dns": "i32",
        "n_dnsa": "i32",
        "BLOCK": "constexpr",
        "FLAG": "constexpr",
    }
    assert const == {"BLOCK": 64, "one": 1, "FLAG": False}  # a constexpr not given keeps its default
    assert attrs == {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]]}
    with pytest.raises(KeyError, match="seven"):
        measure.launch_signature(probe, {k: v for k, v in args.items() if k != "seven"}, {"BLOCK": 64})
    with pytest.raises(TypeError, match="n16"):
        measure.launch_signature(probe, {**args, "n16": [16]}, {"BLOCK": 64})


_GLUON_CHECK = """
import itertools, re, subprocess, sys
sys.path.insert(0, {scripts!r})
import triton
from triton.backends.nvidia.compiler import get_ptxas
from triton.experimental.gluon import language as gl
from sitekit import measure
import attention, attention_gluon as ag
for ((D, causal), cfg), heads in itertools.product(ag.FA3_CONFIGS.items(), (False, True)):
    def desc(rows):
        box = [1, 1, rows, D] if heads else [rows, D]
        return f"tensordesc<fp16{{box}},{{gl.NVMMASharedLayout.get_default_for(box, gl.float16)!r}}>"
    cfg = dict(cfg)
    maxnreg = cfg.pop("maxnreg", None)   # a launch option, not a kernel constant
    const = dict(HEAD_DIM=D, CAUSAL=causal, HEADS=heads, **cfg)
    box = [1, 1, cfg["BLOCK_M"], D]   # O: always a 4-D descriptor
    o_desc = f"tensordesc<fp16{{box}},{{gl.NVMMASharedLayout.get_default_for(box, gl.float16)!r}}>"
    sig = {{"q_desc": desc(cfg["BLOCK_M"]), "k_desc": desc(cfg["BLOCK_N"]), "v_desc": desc(cfg["BLOCK_N"]), "o_desc": o_desc,
           "LSE": "*fp32", "HQ": "i32", "GROUP": "i32", "N_CTX": "i32", "qk_scale": "fp32"}}
    sig.update({{n: "constexpr" for n in const}})
    u = measure.sm90_compile(ag.attn_fwd_fa3, sig, const, {{}}, cfg["num_warps"], 1, gluon=True, maxnreg=maxnreg)
    with open("fa3.ptx", "w") as f:
        f.write(u["ptx"])
    warn = subprocess.run([get_ptxas(90).path, "-v", "-arch=sm_90a", "fa3.ptx", "-o", "fa3.cubin"],
                          capture_output=True, text=True).stderr
    counts = [len(re.findall(op, u["sass"])) for op in ("HGMMA", "UTMALDG", "SYNCS", "BAR.SYNC")]
    print("fa3", D, int(causal), int(heads), u["spill_bytes"], u["ptx"].count("wgmma.wait_group.sync.aligned 1;"),
          int("C7514" in warn), u["smem_bytes"], *counts, u["regs"])
# the table's settings, and PINGPONG_DEFAULT (what forward_pingpong takes where the table has none)
settings = list(ag.PINGPONG_CONFIGS.items()) + [((64, c), ag.PINGPONG_DEFAULT) for c in (False, True)]
for ((D, causal), cfg), heads in itertools.product(settings, (False, True)):
    def desc(rows):
        box = [1, 1, rows, D] if heads else [rows, D]
        return f"tensordesc<fp16{{box}},{{gl.NVMMASharedLayout.get_default_for(box, gl.float16)!r}}>"
    cfg = {{k: v for k, v in cfg.items() if k != "PERSISTENT"}}   # the grid's size, not a kernel constant
    const = dict(HEAD_DIM=D, CAUSAL=causal, HEADS=heads, CONSUMER_REGS=ag.CONSUMER_REGS, LOADER_REGS=ag.LOADER_REGS, **cfg)
    box = [1, 1, cfg["BLOCK_M"], D]   # O: always a 4-D descriptor
    o_desc = f"tensordesc<fp16{{box}},{{gl.NVMMASharedLayout.get_default_for(box, gl.float16)!r}}>"
    sig = {{"q_desc": desc(cfg["BLOCK_M"]), "k_desc": desc(cfg["BLOCK_N"]), "v_desc": desc(cfg["BLOCK_N"]), "o_desc": o_desc,
           "LSE": "*fp32", "HQ": "i32", "GROUP": "i32", "N_CTX": "i32", "qk_scale": "fp32", "n_tiles": "i32"}}
    sig.update({{n: "constexpr" for n in const}})
    u = measure.sm90_compile(ag.attn_fwd_pingpong, sig, const, {{}}, 4, 1, gluon=True, maxnreg=ag.MAXNREG)
    with open("pp.ptx", "w") as f:
        f.write(u["ptx"])
    warn = subprocess.run([get_ptxas(90).path, "-v", "-arch=sm_90a", "pp.ptx", "-o", "pp.cubin"],
                          capture_output=True, text=True).stderr
    regs = sorted(set(int(n) for n in re.findall(r"setmaxnreg\\.(?:inc|dec)\\.sync\\.aligned\\.u32\\s+(\\d+);", u["ptx"])))
    print("pingpong", D, int(causal), int(heads), u["spill_bytes"], u["ptx"].count("wgmma.wait_group.sync.aligned 1;"),
          int("C7514" in warn), u["num_warps"], u["regs"], int(ag.CONSUMER_REGS in regs), int(ag.LOADER_REGS in regs))
"""


def test_gluon_fa3_compiles_with_its_wgmma_overlap_intact(tmp_path):
    """The page's claims about the Gluon kernel, for every configuration it launches and both kinds of
    descriptors, compiled for sm_90 (no GPU needed): no spills; S_(j+1) and P_j V_j are in flight together
    (a wgmma wait that leaves one group outstanding); ptxas does not serialize the wgmmas (its warning
    C7514, which the page's first loop order triggered by rescaling O while a wgmma was in flight); and the
    2-D and 4-D variants use the same shared memory and issue the same wgmma (HGMMA), TMA load (UTMALDG)
    and barrier (SYNCS, BAR.SYNC) instructions, with registers that differ by a few (at most 8)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(SNIPPETS)}
    code = _GLUON_CHECK.format(scripts=str(ROOT / "scripts"))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line.split() for line in out.stdout.split("\n") if line.strip()]
    fa3 = [[int(x) for x in line[1:]] for line in lines if line[0] == "fa3"]
    pingpong = [[int(x) for x in line[1:]] for line in lines if line[0] == "pingpong"]
    assert len(fa3) == 8 and len(pingpong) == 2 * (len(_gluon_table("PINGPONG_CONFIGS")) + 2) > 4, out.stdout
    same = {}
    for D, causal, heads, spill, overlap_waits, serialized, *resources in fa3:
        assert spill == 0 and overlap_waits >= 1 and serialized == 0, (D, causal, heads, spill, overlap_waits)
        same.setdefault((D, causal), []).append(resources)
    for key, (rows, heads) in same.items():
        assert rows[:-1] == heads[:-1] and rows[1] > 0, (key, rows, heads)
        assert abs(rows[-1] - heads[-1]) <= 8, (key, "registers", rows[-1], heads[-1])
    # the ping-pong kernel: 4 + 4 + 1 warps (12 allocated), launched at MAXNREG registers per thread, and the
    # PTX moves registers from the loader to the consumers (setmaxnreg to LOADER_REGS and CONSUMER_REGS)
    # (its tile loop keeps a few scalars on the stack: at most 16 bytes, which the page states)
    for D, causal, heads, spill, overlap_waits, serialized, warps, regs, consumer, loader in pingpong:
        assert spill <= 16 and overlap_waits >= 1 and serialized == 0, (D, causal, heads, spill, overlap_waits)
        assert (warps, regs, consumer, loader) == (12, 168, 1, 1), (D, causal, heads, warps, regs, consumer, loader)


def test_gluon_fa3_refuses_the_interpreter_and_bad_inputs():
    """forward_fa3 and forward_pingpong say they need a Hopper GPU (Gluon has no interpreter), after the
    usual input checks;
    the trainable attention() of attention_gluon.py refuses the same bad inputs and, off Hopper (here: the
    interpreter), is attention.py's attention(): same output, and gradients through the same backward."""

    code = (
        "import torch, attention, attention_gluon as ag\n"
        "q = torch.randn(1, 2, 16, 64, dtype=torch.float16)\n"
        "for f in (ag.forward_fa3, ag.forward_pingpong, ag.attention):\n"
        "    for args in ((q, q, q), (q, q, q[..., :32])):\n"
        "        try:\n"
        "            f(*args)\n"
        "        except (RuntimeError, ValueError) as e:\n"
        "            print(type(e).__name__, e)\n"
        "torch.manual_seed(0)\n"
        "q, k, v = (torch.randn(1, 4 // (i + 1), 19, 64, dtype=torch.float16, requires_grad=True) for i in (0, 1, 1))\n"
        "a = ag.attention(q, k, v, causal=True)\n"
        "b = attention.attention(q, k, v, causal=True)\n"
        "ga, gb = (torch.autograd.grad(o, (q, k, v), torch.ones_like(o)) for o in (a, b))\n"
        "print('same', torch.equal(a, b) and all(torch.equal(x, y) for x, y in zip(ga, gb)))\n"
    )
    out = _interpreted(code)
    lines = out.stdout.strip().split("\n")
    assert len(lines) == 6, out.stdout
    *refusals, same = lines
    for name, hopper, shape in (("forward_fa3", *refusals[0:2]), ("forward_pingpong", *refusals[2:4])):
        assert hopper.startswith("RuntimeError") and f"{name}: the Gluon kernel needs a Hopper GPU (sm_90)" in hopper
        assert shape.startswith("ValueError") and "k and v must have shape" in shape, shape
    assert refusals[4].startswith("ValueError") and "k and v must have shape" in refusals[4], refusals[4]
    assert same == "same True", same


def test_gluon_wrappers_refuse_head_dims_they_have_no_setting_for_and_the_interpreter():
    """From a bad-input audit: D = 256 reached FA3_CONFIGS / DKDV_WS_CONFIGS as a KeyError, and backward_gluon
    in the interpreter failed on an attribute of the interpreted kernel."""
    code = (
        "import torch, attention_gluon as ag, attention_bwd_gluon as bg\n"
        "q = torch.randn(1, 2, 16, 256, dtype=torch.float16)\n"
        "for f in (ag.forward_fa3, ag.forward_pingpong):\n"
        "    try:\n        f(q, q, q)\n    except ValueError as e:\n        print(e)\n"
        "try:\n    bg.bwd_settings(256, False, 4096)\nexcept ValueError as e:\n    print(e)\n"
        "x = torch.randn(1, 2, 16, 64, dtype=torch.float16)\n"
        "try:\n    bg.backward_gluon(x, x, x, x, torch.zeros(1, 2, 16), x, False, 0.125)\n"
        "except RuntimeError as e:\n    print(e)\n"
    )
    lines = _interpreted(code).stdout.strip().split("\n")
    assert lines[0].startswith("forward_fa3: head dim 256: the Gluon forwards are built for [64, 128]"), lines
    assert lines[1].startswith("forward_pingpong: head dim 256: the Gluon forwards are built for [64, 128]"), lines
    assert lines[2].startswith("backward_gluon: head dim 256: the Gluon backward is built for [64, 128]"), lines
    assert lines[3] == "backward_gluon: the Gluon kernels need a Hopper GPU (sm_90); Gluon has no interpreter mode"


def test_attention_refuses_tensors_on_two_devices():
    fa = _load("attention", True)
    q = torch.randn(1, 2, 16, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="q, k, v must be on one device, got cpu, meta, cpu"):
        fa.attention(q, q.to("meta"), q)


@pytest.mark.parametrize(
    "script, need",
    [
        ("attention", "a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU"),
        ("attention_decode", "a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU"),
        ("attention_steps", "a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU"),
        ("attention_varlen", "a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU"),
        ("attention_gluon", "a Hopper GPU (sm_90); Gluon kernels have no CPU interpreter"),
        ("attention_bwd_gluon", "a Hopper GPU (sm_90); Gluon kernels have no CPU interpreter"),
    ],
)
def test_scripts_say_what_they_need(script, need):
    """Run as the page shows them on a machine without a GPU (no TRITON_INTERPRET=1): one line, no traceback."""
    import os
    import subprocess
    import sys

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the scripts would run")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run(
        [sys.executable, str(SNIPPETS / f"{script}.py")], env=env, capture_output=True, text=True, timeout=120
    )
    assert p.returncode == 1 and p.stderr.strip() == f"{script}.py: needs {need}", p.stderr[-800:]


def test_attention_steps_refuse_what_they_do_not_take(steps):
    q = torch.randn(1, 4, 16, 64, dtype=torch.float16)
    kv = torch.randn(1, 2, 16, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="step must be one of"):
        steps.forward_step(q, q, q, "gluon")
    with pytest.raises(ValueError, match="Hq = Hkv"):
        steps.forward_step(q, kv, kv, "pointers")
    with pytest.raises(ValueError, match="head dim 80 is not supported"):
        x = torch.randn(1, 2, 16, 80, dtype=torch.float16)
        steps.forward_step(x, x, x, "tma")


# ---------------------------------------------------------------- lattice Boltzmann

lbm = _load("lbm", True)


@pytest.fixture
def one_thread():
    """Grids of a few thousand cells: torch's CPU threads cost more than they save (and CI has 2 cores)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.mark.parametrize(
    "lattice, shape, periodic, u_lid",
    [
        ("D2Q9", (12, 10), (False, False, True), 0.1),  # cavity: walls, lid
        ("D2Q9", (9, 8), (True, True, True), 0.0),  # fully periodic
        ("D3Q19", (6, 5, 4), (False, False, False), 0.1),  # 3-D cavity
        ("D3Q19", (5, 4, 6), (True, False, True), 0.05),  # channel: periodic x and z, walls in y
        # periodic y, walls in x, a lid speed given: no top wall, so no lid term (the tile kernel added it
        # at the x walls of the top row)
        ("D2Q9", (7, 6), (False, True, True), 0.1),
        ("D3Q19", (5, 4, 3), (False, True, False), 0.1),
    ],
)
@pytest.mark.parametrize("variant", ["cell", "tile", "fp16"])
def test_triton_step_matches_torch_step(lattice, shape, periodic, u_lid, variant):
    """The page's cell kernel, its first (tile) version and fp16 storage of f_i - w_i: the same step."""
    kw = {"cell": {}, "tile": {"kernel": "tile"}, "fp16": {"storage": torch.float16}}[variant]
    err = lbm.check_kernel_against_torch(getattr(lbm, lattice), shape, periodic, u_lid, **kw)
    assert err < (1e-4 if variant == "fp16" else 1e-6)


def test_fp16_storage_holds_the_shifted_populations():
    """fp16 buffers hold f_i - w_i: a fluid at rest is stored as zeros, and populations() gives w_i back."""
    sim = lbm.LBM(lbm.D2Q9, (8, 6), 0.8, storage=torch.float16).init()
    assert sim.f.dtype == torch.float16 and sim.f.abs().max().item() < 1e-6
    assert torch.allclose(sim.populations()[:, 0, 0, 0], lbm.D2Q9.w.float())
    sim.step(2)
    rho, u = sim.moments()
    assert torch.allclose(rho, torch.ones_like(rho), atol=1e-3) and u.abs().max().item() < 1e-3


def test_cell_kernel_gets_the_lattice_as_constants():
    """The unrolled kernel's tuples are the lattice's velocities, weights and opposites, in order."""
    for lat in (lbm.D2Q9, lbm.D3Q19):
        k = lat.consts
        assert len(k["W"]) == lat.Q and [list(v) for v in zip(k["CX"], k["CY"], k["CZ"])] == lat.c.tolist()
        assert all(k["OPP"][k["OPP"][i]] == i for i in range(lat.Q))
        assert all(isinstance(v, int) for v in k["CX"] + k["CY"] + k["CZ"] + k["OPP"])


def test_taylor_green_error_and_second_order_convergence(one_thread):
    errs = {n: lbm.taylor_green(n, backend="torch", device="cpu") for n in (16, 32, 64)}
    assert errs[64] < 0.01, errs
    for a, b in ((16, 32), (32, 64)):
        order = math.log2(errs[a] / errs[b])
        assert 1.8 < order < 2.2, (a, b, order, errs)


def test_taylor_green_d3q19_agrees_with_d2q9(one_thread):
    e2 = lbm.taylor_green(16, backend="torch", device="cpu")
    e3 = lbm.taylor_green(16, lattice=lbm.D3Q19, backend="torch", device="cpu", nz=2)
    assert abs(e3 - e2) < 0.05 * e2, (e2, e3)


def test_cavity_re100_against_ghia(one_thread):
    r = lbm.cavity(100, 32, 0.1, tol=1e-5, check_every=250, backend="torch", device="cpu")
    assert r["ghia_dev_u"] < 0.02 and r["ghia_dev_v"] < 0.02, (r["ghia_dev_u"], r["ghia_dev_v"], r["steps"])


def test_ghia_tables_are_the_published_re100_columns():
    """17 points each, walls at both ends, and the extrema of Table I/II at Re = 100."""
    for table, top in ((lbm.GHIA_RE100_U, 1.0), (lbm.GHIA_RE100_V, 0.0)):
        assert len(table) == 17 and table[0] == (1.0, top) and table[-1] == (0.0, 0.0)
    assert min(v for _, v in lbm.GHIA_RE100_U) == -0.21090
    assert min(v for _, v in lbm.GHIA_RE100_V) == -0.24533 and max(v for _, v in lbm.GHIA_RE100_V) == 0.17527


@pytest.mark.parametrize(
    "args, message",
    [
        (["--re", "1000", "--n", "32"], "too close to 0.5"),
        (["--u-lid", "0.3"], "Mach"),
        (["--n", "4"], "n >= 8"),
        (["--steps", "0"], "at least 1"),
        # found by a bad-input audit: these ran without end (tol <= 0), divided by zero, overflowed, or
        # left a traceback; each is now refused before the run, with exit status 2
        (["--tol", "0"], "--tol must be a finite number above 0"),
        (["--tol", "nan"], "--tol must be a finite number above 0"),
        (["--u-lid", "0"], "--u-lid must be a finite number above 0"),
        (["--u-lid", "-0.1"], "--u-lid must be a finite number above 0"),
        (["--re", "inf"], "--re must be a finite number above 0"),
        (["--lattice", "D3Q19"], "two-dimensional"),
        (["--out", "/nonexistent-folder/r.json"], "does not exist"),
        (["--n", "20000", "--steps", "1"], "int32"),
        (["--case", "taylor-green", "--n", "4"], "use n >= 10"),
        (["--case", "taylor-green", "--n", "9"], "n=9 starts the vortex above Mach 0.3; use n >= 10"),
        (["--case", "taylor-green", "--n", "0"], "--n is the number of cells per side, at least 10; got 0"),
        (["--case", "taylor-green", "--n", "-4"], "--n is the number of cells per side, at least 10; got -4"),
        (["--case", "taylor-green", "--steps", "3"], "--steps: for the cavity only"),
        (["--case", "taylor-green", "--re", "50", "--tol", "1e-3"], "--re, --tol: for the cavity only"),
    ],
)
def test_cli_refuses_unstable_or_bad_parameters(args, message, capsys):
    import sys

    sys.path.insert(0, str(SNIPPETS))
    solve = _load("solve", True)
    case = [] if "--case" in args else ["--case", "cavity"]
    assert solve.main([*case, *args, "--backend", "torch"]) == 2
    assert message in capsys.readouterr().err


def test_cli_refuses_the_triton_backend_without_a_gpu(capsys, monkeypatch):
    import sys

    sys.path.insert(0, str(SNIPPETS))
    solve = _load("solve", True)
    monkeypatch.setattr(solve.torch.cuda, "is_available", lambda: False)
    assert solve.main(["--backend", "triton"]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err


def test_cli_taylor_green_smallest_stable_grid_runs(capsys):
    """n = 10 is the smallest grid whose starting vortex is below the Mach limit (0.05 * 32 / n * sqrt 3)."""
    import sys

    sys.path.insert(0, str(SNIPPETS))
    solve = _load("solve", True)
    assert solve.main(["--case", "taylor-green", "--n", "10", "--backend", "torch"]) == 0
    err = float(capsys.readouterr().out.split("error")[-1])
    assert 0 < err < 0.2


def test_lbm_cell_kernel_handles_two_cells_per_thread():
    """The LBM paragraphs read the load counts of the resources table as two cells per thread: a vector load
    holds two elements in either storage (LDG.E.64 in fp32, a 32-bit LDG in fp16)."""
    assert lbm.CELL_BLOCK == 2 * 32 * lbm.CELL_WARPS


def test_lbm_refuses_bad_setups():
    with pytest.raises(ValueError, match="tau must exceed 0.5"):
        lbm.LBM(lbm.D2Q9, (8, 8), 0.5)
    with pytest.raises(
        ValueError, match=r"needs a shape \(NX, NY\) or \(NX, NY, NZ\) of positive integers, got \(8, 0\)"
    ):
        lbm.LBM(lbm.D2Q9, (8, 0), 0.8)
    with pytest.raises(ValueError, match="backend must be"):
        lbm.LBM(lbm.D2Q9, (8, 8), 0.8, backend="numpy")
    with pytest.raises(ValueError, match="kernel must be"):
        lbm.LBM(lbm.D2Q9, (8, 8), 0.8, kernel="warp")
    with pytest.raises(ValueError, match="storage must be"):
        lbm.LBM(lbm.D2Q9, (8, 8), 0.8, storage=torch.bfloat16)
    with pytest.raises(ValueError, match="fp16 storage is implemented by the Triton 'cell' kernel only"):
        lbm.LBM(lbm.D2Q9, (8, 8), 0.8, backend="torch", device="cpu", storage=torch.float16)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: lbm.LBM("D2Q9", (8, 8), 0.8), "lattice must be D2Q9 or D3Q19"),
        (lambda: lbm.LBM(lbm.D3Q19, (8, 8), 0.8), r"D3Q19 needs a shape \(NX, NY, NZ\)"),
        (lambda: lbm.LBM(lbm.D2Q9, (8, 8.5), 0.8), "of positive integers"),
        (lambda: lbm.LBM(lbm.D2Q9, (8, 8), 0.8, periodic=(True,)), "periodic needs one flag per axis"),
        (
            lambda: lbm.LBM(lbm.D2Q9, (8, 8), 0.8, backend="torch", device="cpu").init(rho=torch.ones(4, 4)),
            r"rho must have shape \(1, 8, 8\)",
        ),
        (
            lambda: lbm.LBM(lbm.D2Q9, (8, 8), 0.8, backend="torch", device="cpu").init(u=torch.zeros(2, 1, 8, 8)),
            r"u must have shape \(3, 1, 8, 8\)",
        ),
        (
            lambda: lbm.LBM(lbm.D2Q9, (8, 8), 0.8, backend="torch", device="cpu").set_populations(torch.ones(9, 8, 8)),
            r"populations must have shape \(Q, NZ, NY, NX\) = \(9, 1, 8, 8\)",
        ),
        (lambda: lbm.LBM(lbm.D2Q9, (8, 8), 0.8, backend="torch", device="cpu").init().step(-3), "integer >= 0"),
        (lambda: lbm.taylor_green(0, backend="torch", device="cpu"), "at least 2 cells"),
        (lambda: lbm.taylor_green(4, backend="torch", device="cpu"), r"Mach 0\.69 > 0\.3 .*needs n >= 10"),
        (lambda: lbm.cavity(n=16, re=10, steps=0, backend="torch", device="cpu"), "steps must be an integer >= 1"),
        (lambda: lbm.cavity(n=16, re=10, steps=-5, backend="torch", device="cpu"), "steps must be an integer >= 1"),
        (lambda: lbm.cavity(n=16, re=10, check_every=0, backend="torch", device="cpu"), "check_every must be"),
        (lambda: lbm.cavity(n=16, re=10, tol=0, backend="torch", device="cpu"), "tol must be > 0"),
    ],
)
def test_lbm_refuses_bad_calls_in_its_own_words(call, message):
    """Each refusal names the argument and what would work, before anything runs (no IndexError from deep
    inside, no silent no-op for a negative step count, no two-million-step run for steps=0)."""
    with pytest.raises(ValueError, match=message):
        call()


def _assert_chosen_is_fastest(pass_, configs, columns, key_of, dims=None):
    """Each (head dim, causal) setting in `configs` is a row of the sweep (data/triton_deep_dive/
    attention_tuning.json, rows of this `pass`) and within the dataset's declared noise of the fastest
    correct row for its head dim and mask (a closer call is not a measured win)."""
    import json

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_tuning.json").read_text())
    noise = ds["metrics"]["tflops"]["noise"]
    assert set(configs) == {(d, c) for d in (dims or attn.HEAD_DIMS) for c in (False, True)}
    for (d, causal), cfg in configs.items():
        mask = "causal" if causal else "none"
        sel = [r for r in ds["rows"] if (r["pass"], r["D"], r["mask"], r["output"]) == (pass_, d, mask, "ok")]
        mine = [r for r in sel if tuple(r.get(c) for c in columns) == key_of(cfg)]
        assert mine and mine[0]["tflops"] >= (1 - noise) * max(r["tflops"] for r in sel), (pass_, d, causal)


def test_chosen_attention_configs_are_the_fastest_of_the_sweep():
    """FWD_CONFIGS / BWD_CONFIGS were the fastest correct rows of the sweep they were chosen from, and stay
    within its noise of the fastest row in every later run of it."""
    _assert_chosen_is_fastest(
        "fwd",
        attn.FWD_CONFIGS,
        ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages"),
        lambda c: (c["BLOCK_M"], c["BLOCK_N"], c["num_warps"], c["num_stages"]),
    )
    _assert_chosen_is_fastest(
        "bwd",
        attn.BWD_CONFIGS,
        ("BLOCK_M1", "BLOCK_N1", "num_warps1", "num_stages1", "BLOCK_M2", "BLOCK_N2", "num_warps2", "num_stages2"),
        lambda c: (*c["DKDV"], *c["DQ"]),
    )


def test_chosen_gluon_configs_are_the_fastest_of_the_sweep():
    """FA3_CONFIGS of attention_gluon.py against the "fwd_gluon" rows of the same sweep."""
    import ast

    # read FA3_CONFIGS from the source: importing the module needs Gluon's Hopper bindings
    tree = ast.parse((SNIPPETS / "attention_gluon.py").read_text())
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "FA3_CONFIGS")
    configs = {
        ast.literal_eval(k): {kw.arg: ast.literal_eval(kw.value) for kw in v.keywords}
        for k, v in zip(node.keys, node.values)
    }
    for cfg in configs.values():
        assert cfg["K_STAGES"] == cfg["V_STAGES"], cfg  # the sweep varies one ring depth for both
    _assert_chosen_is_fastest(
        "fwd_gluon",
        configs,
        ("BLOCK_M", "BLOCK_N", "K_STAGES", "num_warps", "maxnreg"),
        lambda c: (c["BLOCK_M"], c["BLOCK_N"], c["K_STAGES"], c["num_warps"], c.get("maxnreg")),
        dims=(64, 128),  # the Gluon kernels have no head dim 256 (attention.py's kernels run there)
    )


def _gluon_table(name: str, file: str = "attention_gluon.py") -> dict:
    """A {(D, causal): dict(...)} table of a Gluon snippet, read from its source (importing the module
    needs Gluon's Hopper bindings)."""
    import ast

    tree = ast.parse((SNIPPETS / file).read_text())
    node = next(n.value for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == name)
    return {
        ast.literal_eval(k): {kw.arg: ast.literal_eval(kw.value) for kw in v.keywords}
        for k, v in zip(node.keys, node.values)
    }


def _pingpong_choice_errors(rows: list, table: dict, noise: float) -> list:
    """Where forward_gluon's choice (the ping-pong kernel for the (D, causal) pairs of `table`, PINGPONG_CONFIGS,
    at every length) disagrees with the sweep's rows: at N = 4096 the best correct "fwd_pingpong" row against the
    best "fwd_gluon" row, at the long shape the "fwd_long" rows of the two kernels. A kernel ahead by more than
    the noise must be the one chosen; between the two, either choice stands (a closer call is not a measured
    win). A chosen setting must be within the noise of the ping-pong kernel's best at N = 4096."""
    groups = {}  # (D, mask, N) -> {"pingpong": [...], "gluon": [...]}
    for r in rows:
        if r["output"] != "ok" or r["pass"] not in ("fwd_pingpong", "fwd_gluon", "fwd_long"):
            continue
        kernel = r["kernel"] if r["pass"] == "fwd_long" else r["pass"].removeprefix("fwd_")
        groups.setdefault((r["D"], r["mask"], r.get("N", 4096)), {}).setdefault(kernel, []).append(r)
    errors = []
    # a long pair the sweep timed (any output) must have a correct row of both kernels
    for r in rows:
        if r["pass"] == "fwd_long":
            groups.setdefault((r["D"], r["mask"], r["N"]), {})
    for d in (64, 128):  # the Gluon forwards have no head dim 256
        for causal in (False, True):
            mask = "causal" if causal else "none"
            if not {"pingpong", "gluon"} <= set(groups.get((d, mask, 4096), {})):
                errors.append(f"D={d} {mask}: the sweep has no correct row of both kernels at N = 4096")
        for (d, mask, n), by in sorted(groups.items()):
            causal = mask == "causal"
            if set(by) != {"pingpong", "gluon"}:
                errors.append(f"D={d} {mask} N={n}: correct rows of one kernel only, or none ({sorted(by)})")
                continue
            best_pp = max(r["tflops"] for r in by["pingpong"])
            best_fa3 = max(r["tflops"] for r in by["gluon"])
            chosen = (d, causal) in table
            if best_pp > (1 + noise) * best_fa3 and not chosen:
                errors.append(
                    f"D={d} {mask} N={n}: ping-pong {best_pp:.0f} ahead of step 4's {best_fa3:.0f}, not chosen"
                )
            if best_fa3 > (1 + noise) * best_pp and chosen:
                errors.append(
                    f"D={d} {mask} N={n}: step 4 {best_fa3:.0f} ahead of ping-pong's {best_pp:.0f}, not chosen"
                )
            if chosen and n == 4096:
                cfg = table[(d, causal)]
                key = (cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["STAGES"], "yes" if cfg["PERSISTENT"] else "no")
                mine = [r for r in by["pingpong"] if (r["BLOCK_M"], r["BLOCK_N"], r["STAGES"], r["persistent"]) == key]
                if not (mine and mine[0]["tflops"] >= (1 - noise) * best_pp):
                    errors.append(f"D={d} {mask}: the chosen setting {cfg} is not within the noise of the best")
    return errors


def test_forward_gluon_takes_the_pingpong_kernel_where_the_sweep_says_it_is_faster():
    """forward_gluon() runs the ping-pong kernel exactly for the (D, causal) pairs in PINGPONG_CONFIGS; the
    choice holds against the sweep at N = 4096 and, where the sweep has them, at the long shape's rows
    (_pingpong_choice_errors says how)."""
    import json

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_tuning.json").read_text())
    table = _gluon_table("PINGPONG_CONFIGS")
    assert set(table) <= {(d, c) for d in (64, 128) for c in (False, True)}
    assert _pingpong_choice_errors(ds["rows"], table, ds["metrics"]["tflops"]["noise"]) == []


def test_pingpong_choice_check_reads_the_long_rows():
    """The check above fails where the long shape's rows disagree with a choice the N = 4096 rows allow, in
    both directions, and where a group has rows of one kernel only."""

    def row(pass_, tflops, n=None, kernel=None, **kw):
        r = {"pass": pass_, "D": 64, "mask": "causal", "output": "ok", "tflops": tflops, **kw}
        return {**r, "N": n, "kernel": kernel} if n else r

    pp = dict(BLOCK_M=64, BLOCK_N=128, STAGES=2, persistent="yes")
    cfg = {(64, True): dict(BLOCK_M=64, BLOCK_N=128, STAGES=2, PERSISTENT=True)}
    base = [row("fwd_pingpong", 100, **pp), row("fwd_gluon", 100)]
    others = [
        row(p, 100, D=d, mask=m)
        for d in (64, 128)
        for m in ("none", "causal")
        for p in ("fwd_pingpong", "fwd_gluon")
        if (d, m) != (64, "causal")
    ]
    for r in others:
        r.update(pp if r["pass"] == "fwd_pingpong" else {})
    assert _pingpong_choice_errors(base + others, {}, 0.1) == []  # level at 4096: either choice stands
    assert _pingpong_choice_errors(base + others, cfg, 0.1) == []
    ahead = [row("fwd_long", 130, 16384, "pingpong", **pp), row("fwd_long", 100, 16384, "gluon")]
    assert "not chosen" in " ".join(_pingpong_choice_errors(base + others + ahead, {}, 0.1))
    assert _pingpong_choice_errors(base + others + ahead, cfg, 0.1) == []
    behind = [row("fwd_long", 80, 16384, "pingpong", **pp), row("fwd_long", 100, 16384, "gluon")]
    assert "not chosen" in " ".join(_pingpong_choice_errors(base + others + behind, cfg, 0.1))
    assert "one kernel only" in " ".join(_pingpong_choice_errors(base + others + behind[:1], cfg, 0.1))
    failed = [{**r, "output": "no_fit", "tflops": None} for r in behind]
    assert "one kernel only" in " ".join(_pingpong_choice_errors(base + others + failed, cfg, 0.1))
    assert "no correct row" in " ".join(_pingpong_choice_errors(others, cfg, 0.1))


def test_tuning_sweep_checks_the_step4_launch_it_timed(monkeypatch):
    """The sweep times forward_fa3 after changing FA3_CONFIGS; forward_fa3 keeps the launch it planned for an
    input layout, so a kept plan would time the first setting in every row (as the 2026-12-03 to 12-06 runs
    did). check_fa3_launch refuses a planned launch that is not the row's setting."""
    import importlib.util
    from types import SimpleNamespace

    spec = importlib.util.spec_from_file_location(
        "tdd_tuning_producer", ROOT / "scripts" / "measure" / "triton_deep_dive" / "attention_tuning.py"
    )
    tuning = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tuning)

    def ag(*kws):
        return SimpleNamespace(_LAUNCHES={("fa3", i): SimpleNamespace(kw=kw) for i, kw in enumerate(kws)})

    cfg = dict(BLOCK_M=64, BLOCK_N=64, K_STAGES=2, V_STAGES=2, num_warps=4)
    tuning.check_fa3_launch(ag({**cfg, "HEAD_DIM": 64}), cfg)
    for bad in (ag(), ag(cfg, cfg), ag({**cfg, "BLOCK_N": 128}), ag({**cfg, "maxnreg": 128})):
        with pytest.raises(tuning.WrongLaunch, match="not the row's setting"):
            tuning.check_fa3_launch(bad, cfg)
    tuning.check_fa3_launch(ag({**cfg, "maxnreg": 128}), {**cfg, "maxnreg": 128})

    # time_forward: the row as checked and timed, "no_fit" for a setting that fails, WrongLaunch passed on
    ref = torch.ones(2, 3)
    monkeypatch.setattr(tuning.measure, "bench", lambda fn: (fn(), 2.0)[1])  # 2 ms
    row = {"pass": "fwd_long", "D": 64}
    assert tuning.time_forward("t", row, lambda: (ref.clone(),), ref, 4e9) == {**row, "output": "ok", "tflops": 2.0}
    assert tuning.time_forward("t", row, lambda: (2 * ref,), ref, 4e9)["output"] == "wrong"

    def no_room():
        raise RuntimeError("out of resource: shared memory")

    assert tuning.time_forward("t", row, no_room, ref, 4e9) == {**row, "output": "no_fit", "tflops": None}

    def wrong_launch():
        raise tuning.WrongLaunch("not the row's setting")

    with pytest.raises(tuning.WrongLaunch):
        tuning.time_forward("t", row, lambda: (ref,), ref, 4e9, check=wrong_launch)

    # the backward: one plan (preprocess, dQ, dK/dV launches) whose dK/dV setting and dQ kernel are the row's
    bg = SimpleNamespace(attn_bwd_dq_ws=object())
    dkdv = dict(BLOCK_M=64, BLOCK_N=64, STAGES=2, CONSUMERS=2)
    row = {"pass": "bwd_gluon", "D": 64, **dkdv, "dq": "gluon"}

    def plans(*specs):
        return SimpleNamespace(
            _LAUNCHES={
                ("bwd", i): (None, SimpleNamespace(kernel=dq), SimpleNamespace(kw={**kw, "HEAD_DIM": 64}))
                for i, (dq, kw) in enumerate(specs)
            }
        )

    tuning.check_bwd_launch(plans((bg.attn_bwd_dq_ws, dkdv)), bg, row)
    tuning.check_bwd_launch(plans((object(), dkdv)), bg, {**row, "dq": "triton"})
    for bad in (
        plans(),
        plans((bg.attn_bwd_dq_ws, dkdv), (bg.attn_bwd_dq_ws, dkdv)),
        plans((object(), dkdv)),
        plans((bg.attn_bwd_dq_ws, {**dkdv, "CONSUMERS": 1})),
    ):
        with pytest.raises(tuning.WrongLaunch):
            tuning.check_bwd_launch(bad, bg, row)


def _bwd_gluon_settings() -> dict:
    """{(D, causal, N): bwd_settings(D, causal, N)} of attention_bwd_gluon.py at N = 4096 and N = SHORT_N,
    with SHORT_N, read in a subprocess (the module imports Gluon's Hopper bindings and attention.py, which
    reads TRITON_INTERPRET when imported)."""
    import json
    import os
    import subprocess
    import sys

    code = (
        "import json, attention, attention_bwd_gluon as bg\n"
        "out = {'SHORT_N': bg.SHORT_N, 'settings': [[D, c, n, bg.bwd_settings(D, c, n)]\n"
        "       for (D, c) in sorted(bg.DKDV_WS_CONFIGS) for n in (4096, bg.SHORT_N)]}\n"
        "print(json.dumps(out))\n"
    )
    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(SNIPPETS)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout)


def test_chosen_gluon_backward_settings_are_the_fastest_of_the_sweep():
    """What backward_gluon runs (bwd_settings: the dK/dV kernel's tile, ring, consumers per program, and which
    dQ kernel) against the "bwd_gluon" rows of the sweep: at N = 4096 for long sequences and at N = SHORT_N for
    short ones, for every head dim and mask, within the sweep's noise of the fastest correct row at that N."""
    import json

    got = _bwd_gluon_settings()
    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_tuning.json").read_text())
    noise = ds["metrics"]["tflops"]["noise"]
    rows = [r for r in ds["rows"] if r["pass"] == "bwd_gluon" and r["output"] == "ok"]
    assert {r["N"] for r in rows} == {4096, got["SHORT_N"]}, "the sweep's two lengths are 4096 and SHORT_N"
    seen = set()
    for D, causal, n, cfg in got["settings"]:
        assert cfg["BLOCK_N"] == 64, cfg  # one warpgroup's wgmma M: each consumer owns 64 keys
        sel = [r for r in rows if (r["D"], r["mask"], r["N"]) == (D, "causal" if causal else "none", n)]
        key = (cfg["BLOCK_M"], cfg["STAGES"], cfg["CONSUMERS"], "gluon" if cfg["DQ"]["GLUON"] else "triton")
        mine = [r for r in sel if (r["BLOCK_M"], r["STAGES"], r["CONSUMERS"], r["dq"]) == key]
        assert mine and mine[0]["tflops"] >= (1 - noise) * max(r["tflops"] for r in sel), (D, causal, n, key)
        seen.add((D, causal, n))
    assert len(seen) == 8, seen


_GLUON_DKDV_CHECK = """
import re, subprocess, sys
sys.path.insert(0, {scripts!r})
from triton.backends.nvidia.compiler import get_ptxas
from triton.experimental.gluon import language as gl
from sitekit import measure
import attention, attention_gluon as ag, attention_bwd_gluon as bg
def desc(rows, D):
    box = [1, 1, rows, D]
    return f"tensordesc<fp16{{box}},{{gl.NVMMASharedLayout.get_default_for(box, gl.float16)!r}}>"
common = {{"LSE": "*fp32", "DELTA": "*fp32", "HQ": "i32", "GROUP": "i32", "N_CTX": "i32", "sm_scale": "fp32",
          "qk_scale": "fp32"}}
cases = {{}}
for (D, causal) in bg.DKDV_WS_CONFIGS:
    for n in (4096, bg.SHORT_N):   # every dK/dV setting bwd_settings() launches, long and short sequences
        cfg = {{k: v for k, v in bg.bwd_settings(D, causal, n).items() if k != "DQ"}}
        cases[("dkdv", D, causal, cfg["CONSUMERS"])] = cfg
    cases[("dq", D, causal, 1)] = {{k: v for k, v in bg.GLUON_DQ.items() if k != "GLUON"}}
for (kind, D, causal, consumers), cfg in sorted(cases.items()):
    if kind == "dkdv":
        kernel = bg.attn_bwd_dkdv_ws
        const = dict(HEAD_DIM=D, CAUSAL=causal, CONSUMER_REGS=ag.CONSUMER_REGS, LOADER_REGS=ag.LOADER_REGS, **cfg)
        sig = {{"q_desc": desc(cfg["BLOCK_M"], D), "do_desc": desc(cfg["BLOCK_M"], D), "k_desc": desc(cfg["BLOCK_N"], D),
               "v_desc": desc(cfg["BLOCK_N"], D), "dk_desc": desc(cfg["BLOCK_N"], D), "dv_desc": desc(cfg["BLOCK_N"], D),
               "HKV": "i32", **common}}
    else:
        kernel = bg.attn_bwd_dq_ws
        const = dict(HEAD_DIM=D, CAUSAL=causal, LOADER_REGS=ag.LOADER_REGS, **cfg)
        sig = {{"q_desc": desc(cfg["BLOCK_M"], D), "do_desc": desc(cfg["BLOCK_M"], D), "k_desc": desc(cfg["BLOCK_N"], D),
               "v_desc": desc(cfg["BLOCK_N"], D), "dq_desc": desc(cfg["BLOCK_M"], D), **common}}
    sig.update({{n: "constexpr" for n in const}})
    u = measure.sm90_compile(kernel, sig, const, {{}}, 4, 1, gluon=True, maxnreg=bg.MAXNREG[consumers])
    with open("k.ptx", "w") as f:
        f.write(u["ptx"])
    warn = subprocess.run([get_ptxas(90).path, "-v", "-arch=sm_90a", "k.ptx", "-o", "k.cubin"],
                          capture_output=True, text=True).stderr
    regs = sorted(set(int(n) for n in re.findall(r"setmaxnreg\\.(?:inc|dec)\\.sync\\.aligned\\.u32\\s+(\\d+);", u["ptx"])))
    consumer_regs = ag.CONSUMER_REGS if consumers == 2 else bg.ONE_CONSUMER_REGS
    print(kind, D, int(causal), consumers, u["spill_bytes"], u["ptx"].count("wgmma.wait_group.sync.aligned 1;"),
          int("C7514" in warn), u["num_warps"], u["regs"], int(consumer_regs in regs), int(ag.LOADER_REGS in regs),
          len(re.findall("HGMMA", u["sass"])), len(re.findall("UTMALDG", u["sass"])), len(re.findall("UTMASTG", u["sass"])))
"""


def test_gluon_backward_kernels_compile_with_their_overlap_intact(tmp_path):
    """The Gluon dK/dV kernel at every setting backward_gluon launches (two consumers, and one for short
    sequences) and the Gluon dQ kernel, compiled for sm_90 (no GPU needed): two consumers are 4 + 4 + 1 warps
    at MAXNREG[2] = 168 registers, one is 4 + 1 warps (two warpgroups allocated) at 128, so two programs fit
    on an SM, and setmaxnreg then trades registers (240 or 232 for a consumer, 24 for the loader); a wgmma
    wait that leaves one group in flight (dP^T or dP still computing while P is formed), twice per tile in
    the dK/dV kernel and once in the dQ kernel; ptxas does not serialize the wgmmas; TMA loads and stores;
    at most 160 bytes per thread on the stack (what the loop keeps there was not analysed; the page says so)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "TRITON_INTERPRET": "0", "PYTHONPATH": str(SNIPPETS)}
    code = _GLUON_DKDV_CHECK.format(scripts=str(ROOT / "scripts"))
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
    )
    assert out.returncode == 0, out.stderr[-3000:]
    rows = [line.split() for line in out.stdout.split("\n") if line.startswith(("dkdv", "dq"))]
    kinds = {(r[0], int(r[3])) for r in rows}
    assert {("dkdv", 2), ("dq", 1)} <= kinds and len(rows) >= 8, out.stdout
    for kind, *nums in rows:
        D, causal, consumers, spill, waits, serialized, warps, regs, consumer, loader, hgmma, tma_ld, tma_st = map(
            int, nums
        )
        # a bounded spill (compiled here for any group size: GROUP is not folded to 1)
        assert spill <= 160 and serialized == 0, (kind, D, causal, consumers, spill, serialized)
        assert waits >= (2 if kind == "dkdv" else 1), (kind, D, causal, consumers, waits)
        expect = (12, 168) if consumers == 2 else (8, 128)
        assert (warps, regs, consumer, loader) == (*expect, 1, 1), (kind, D, causal, consumers, warps, regs)
        assert hgmma > 0 and tma_ld > 0 and tma_st > 0, (kind, D, causal, hgmma, tma_ld, tma_st)


def test_gluon_backward_refuses_the_interpreter_path_and_bad_inputs():
    """attention_bwd_gluon.attention refuses bad inputs like attention.attention and, off Hopper (here: the
    interpreter), is attention.attention: the same output and gradients."""

    code = (
        "import torch, attention, attention_bwd_gluon as bg\n"
        "q = torch.randn(1, 2, 16, 64, dtype=torch.float16)\n"
        "try:\n"
        "    bg.attention(q, q, q[..., :32])\n"
        "except ValueError as e:\n"
        "    print('ValueError', e)\n"
        "torch.manual_seed(0)\n"
        "q, k, v = (torch.randn(1, 4 // (i + 1), 19, 64, dtype=torch.float16, requires_grad=True) for i in (0, 1, 1))\n"
        "a = bg.attention(q, k, v, causal=True)\n"
        "b = attention.attention(q, k, v, causal=True)\n"
        "ga, gb = (torch.autograd.grad(o, (q, k, v), torch.ones_like(o)) for o in (a, b))\n"
        "print('same', torch.equal(a, b) and all(torch.equal(x, y) for x, y in zip(ga, gb)))\n"
    )
    out = _interpreted(code)
    refusal, same = out.stdout.strip().split("\n")
    assert refusal.startswith("ValueError") and "k and v must have shape" in refusal, refusal
    assert same == "same True", same


def test_gluon_backward_grads_are_laid_out_like_their_inputs():
    """backward_gluon allocates dQ, dK, dV with _empty_grads, several from one buffer: each must have the
    shape and strides fa._empty_like_layout gives (what the kernels and their descriptors were written
    for), a 16-byte aligned start (TMA), and no byte shared with another."""

    code = (
        "import torch, attention as fa, attention_bwd_gluon as bg\n"
        "packed = torch.randn(2, 40, 3, 4, 64, dtype=torch.float16).unbind(2)\n"
        "cases = [\n"
        "    [torch.randn(2, 4, 40, 64, dtype=torch.float16) for _ in range(3)],         # contiguous\n"
        "    [t.transpose(1, 2) for t in packed],                                        # views of one QKV\n"
        "    [torch.randn(2, h, 40, 128, dtype=torch.bfloat16) for h in (8, 2, 2)],      # GQA\n"
        "    [torch.randn(2, 4, 40, 64, dtype=torch.float16), *(t.transpose(1, 2) for t in packed[1:])],  # mixed\n"
        "    [torch.randn(1, 1, 9, 64, dtype=torch.float16) for _ in range(3)],          # one head\n"
        "]\n"
        "for q, k, v in cases:\n"
        "    grads = bg._empty_grads(q, k, v)\n"
        "    spans = []\n"
        "    for g, t in zip(grads, (q, k, v)):\n"
        "        ref = fa._empty_like_layout(t)\n"
        "        assert (g.shape, g.stride(), g.dtype) == (ref.shape, ref.stride(), ref.dtype), (g.stride(), ref.stride())\n"
        "        assert g.data_ptr() % 16 == 0\n"
        "        spans.append((g.data_ptr(), g.data_ptr() + g.numel() * g.element_size()))\n"
        "    spans.sort()\n"
        "    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans\n"
        "print('ok', len(cases))\n"
    )
    out = _interpreted(code)
    assert out.stdout.strip() == "ok 5", out.stdout


def test_packed_attention_refuses_bad_inputs_and_is_attention_off_hopper():
    """attention_qkvpacked takes (B, N, 3, H, D) and says so; off Hopper (here: the interpreter) it is
    attention() on the three head views: the same output, and the same gradient of the packed tensor."""

    code = (
        "import torch, attention, attention_bwd_gluon as bg\n"
        "for bad in (torch.randn(1, 16, 3, 64), torch.randn(1, 16, 2, 2, 64), 'qkv'):\n"
        "    try:\n"
        "        bg.attention_qkvpacked(bad)\n"
        "    except ValueError as e:\n"
        "        print('ValueError', e)\n"
        "torch.manual_seed(0)\n"
        "qkv = torch.randn(2, 19, 3, 2, 64, dtype=torch.float16, requires_grad=True)\n"
        "a = bg.attention_qkvpacked(qkv, causal=True)\n"
        "(ga,) = torch.autograd.grad(a, qkv, torch.ones_like(a))\n"
        "b = attention.attention(*(t.transpose(1, 2) for t in qkv.unbind(2)), causal=True)\n"
        "(gb,) = torch.autograd.grad(b, qkv, torch.ones_like(b))\n"
        "print('same', torch.equal(a, b) and torch.equal(ga, gb))\n"
    )
    out = _interpreted(code)
    *refusals, same = out.stdout.strip().split("\n")
    assert len(refusals) == 3 and all("must be a 5-D tensor (B, N, 3, H, D)" in r for r in refusals), refusals
    assert "(1, 16, 3, 64)" in refusals[0] and "(1, 16, 2, 2, 64)" in refusals[1] and "str" in refusals[2], refusals
    assert same == "same True", same


def test_packed_backward_writes_the_projection_gradient_in_place():
    """GluonPackedAttention's plumbing, with the two Gluon calls replaced by attention.py's interpreted
    forward and backward: backward_gluon gets dQ, dK, dV as the three head views of one (B, N, 3, H, D)
    tensor, laid out like q, k, v (the plan's strides), and that very tensor comes back as qkv's gradient,
    equal to the gradient through unbind; a misaligned qkv is copied once, aligned, before the kernels."""

    code = (
        "import torch, attention as fa, attention_gluon as fg, attention_bwd_gluon as bg\n"
        "seen = {}\n"
        "def fwd(q, k, v, causal, scale):\n"
        "    return fa._forward(q, k, v, causal, scale)\n"
        "def bwd(q, k, v, o, lse, do, causal, scale, grads=None):\n"
        "    dq, dk, dv = grads\n"
        "    base = dq._base\n"
        "    assert base is not None and dk._base is base and dv._base is base and base.dim() == 5\n"
        "    assert all(g.shape == t.shape and g.stride() == t.stride() for g, t in zip(grads, (q, k, v)))\n"
        "    seen['dqkv'] = base\n"
        "    seen['aligned'] = all(t.data_ptr() % 16 == 0 for t in (q, k, v))\n"
        "    for g, r in zip(grads, fa._backward(q, k, v, o, lse, do, causal, scale)):\n"
        "        g.copy_(r)\n"
        "    return grads\n"
        "fg.uses_gluon = lambda q, k, v: True\n"
        "fg.forward_gluon = fwd\n"
        "bg.backward_gluon = bwd\n"
        "torch.manual_seed(0)\n"
        "qkv = torch.randn(2, 21, 3, 2, 64, dtype=torch.float16, requires_grad=True)\n"
        "do = torch.randn(2, 2, 21, 64, dtype=torch.float16)\n"
        "a = bg.attention_qkvpacked(qkv, causal=True)\n"
        "(ga,) = torch.autograd.grad(a, qkv, do)\n"
        "b = fa.attention(*(t.transpose(1, 2) for t in qkv.unbind(2)), causal=True)\n"
        "(gb,) = torch.autograd.grad(b, qkv, do)\n"
        "print('in place', ga is seen['dqkv'] or ga.data_ptr() == seen['dqkv'].data_ptr())\n"
        "print('same', torch.equal(a, b) and torch.equal(ga, gb))\n"
        "big = torch.randn(2 * 21 * 3 * 2 * 64 + 1, dtype=torch.float16)\n"
        "odd = big[1:].view(2, 21, 3, 2, 64).requires_grad_()          # 2 bytes past an aligned start\n"
        "o = bg.attention_qkvpacked(odd, causal=False)\n"
        "(g,) = torch.autograd.grad(o, odd, do)\n"
        "print('misaligned', seen['aligned'], g.shape == odd.shape)\n"
    )
    out = _interpreted(code)
    assert out.stdout.strip().split("\n") == ["in place True", "same True", "misaligned True True"], out.stdout


def test_packed_readiness_check_agrees_with_tma_ready_and_copies_nothing():
    """GluonPackedAttention asks _tma_ok whether TMA can read a view as it is; it must give the answer that
    attention.py's _tma_ready acts on (no copy exactly when ready) without copying anything itself."""

    code = (
        "import torch, attention as fa, attention_bwd_gluon as bg\n"
        "big = torch.randn(2 * 21 * 3 * 2 * 64 + 8, dtype=torch.float16)\n"
        "cases = [big[:2 * 21 * 3 * 2 * 64].view(2, 21, 3, 2, 64), big[1:1 + 2 * 21 * 3 * 2 * 64].view(2, 21, 3, 2, 64),\n"
        "         big[8:].view(2, 21, 3, 2, 64), torch.randn(2, 21, 3, 2, 72, dtype=torch.float16)[..., :64],\n"
        "         torch.randn(2, 21, 3, 2, 64, dtype=torch.float16).transpose(-1, -2)]\n"
        "answers = []\n"
        "for qkv in cases:\n"
        "    for t in bg._heads(qkv):\n"
        "        answers.append((bg._tma_ok(t), fa._tma_ready(t) is t))\n"
        "copies = []\n"
        "real = torch.Tensor.contiguous\n"
        "torch.Tensor.contiguous = lambda self, *a, **k: copies.append(1) or real(self, *a, **k)\n"
        "for qkv in cases:\n"
        "    for t in bg._heads(qkv):\n"
        "        bg._tma_ok(t)\n"
        "print(all(a == b for a, b in answers), sorted(set(a for a, _ in answers)), len(copies))\n"
    )
    out = _interpreted(code)
    assert out.stdout.strip() == "True [False, True] 0", out.stdout


def test_gluon_backward_passes_eleven_descriptor_arguments():
    """The page says backward_gluon builds 7 descriptors "instead of 11" at the GPT-2 shape: its two Gluon
    launches take 5 (dQ) and 6 (dK/dV) descriptor arguments, each through desc(), which shares one object
    per tensor and box."""
    import ast
    import re

    tree = ast.parse((SNIPPETS / "attention_bwd_gluon.py").read_text())
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "backward_gluon")
    calls = {}
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("dq_launch", "dkdv"):
            n = sum(isinstance(a, ast.Call) and getattr(a.func, "id", "") == "desc" for a in node.args)
            calls[node.func.id] = max(calls.get(node.func.id, 0), n)
    assert calls == {"dq_launch": 5, "dkdv": 6}, calls
    page = (ROOT / "docs" / "en" / "triton-deep-dive.md").read_text()
    assert re.search(r"built instead of 11\)", page)


def test_gpt2_backward_host_time_is_at_most_the_handoff_plus_backward_gluon():
    """The page says the autograd hand-off (a no-work Python Function on the same views) and backward_gluon's
    own host time add up to no more than the backward row, up to timing noise: 1.1 (one run measured the sum
    at 1.003 of the row, and a later one at 0.52, which is why the page gives no share)."""
    import json

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "gpt2_layer.json").read_text())
    part = {r["piece"]: r["host_us"] for r in ds["rows"] if r.get("table") == "host_split" and r["impl"] == "triton"}
    total = part["handoff"] + part["backward_gluon"]
    assert total / part["backward"] <= 1.1, part
    for lang, words in (("en", "a test checks the sum against 1.1 times the row"), ("zh", "不超过这一行的 1.1 倍")):
        page = (ROOT / "docs" / lang / "triton-deep-dive.md").read_text()
        assert words in page and "three fifths" not in page and "五分之三" not in page, lang


def test_gpt2_packed_layer_saves_the_stack_and_nothing_else():
    """What the page says of the packed layer, on the data: its "other" kernels take less than the unpacked
    layer's by about the stack of three gradients timed alone (within 30 %: two sums over thousands of
    kernels, each about 1 % noisy), its attention kernels take what the unpacked layer's take (within 5 %),
    and on the host its forward costs more than the call on the views (it builds the head views inside the
    call), while its backward is within 5 % of the views' (no unbind node, no stack, but a small saving
    that changed sign between runs)."""
    import json

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "gpt2_layer.json").read_text())
    rows = ds["rows"]
    stack = {r["impl"]: r["us_step"] for r in rows if r["table"] == "stack"}
    prof = {(r["impl"], r["part"]): r["us_step"] for r in rows if r["table"] == "profile"}
    split = {(r["impl"], r["piece"]): r["host_us"] for r in rows if r["table"] == "host_split"}
    saved = prof[("triton", "other")] - prof[("triton_packed", "other")]
    assert abs(saved - stack["triton_packed"]) < 1e-6 * stack["triton"]  # the row is that difference
    assert 0.7 <= saved / stack["triton"] <= 1.3, (saved, stack)
    for part in ("attention forward", "attention backward"):
        assert abs(prof[("triton_packed", part)] / prof[("triton", part)] - 1) <= 0.05, part
    assert split[("triton_packed", "forward")] > split[("triton", "forward")], split
    # the backward: no unbind node, no stack, but the host saving is small (it changed sign between runs)
    assert abs(split[("triton_packed", "backward")] / split[("triton", "backward")] - 1) < 0.05, split
    page = (ROOT / "docs" / "en" / "triton-deep-dive.md").read_text()
    assert (
        "within 30 % of the stack's time" in page and "a test checks the forward's direction and that closeness" in page
    )


def test_gpt2_packed_layer_was_ahead_in_every_kept_run():
    """The page: the packed layer was ahead of SDPA's, and of the layer on the views, in every timing (eager,
    back to back, CUDA graph) of every run the dataset keeps (the current one and its history); "What is not
    done yet" says the layer on the views was behind the packed one in each of those runs. (The layer on the
    views is not said to trail SDPA's: in the runs kept when this was written, two at 3223341 and one at
    5d96d91, it was above 1.0x in every timing, 1.001-1.015x, within the noise of parity.)"""
    import json

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "gpt2_layer.json").read_text())
    runs = [ds["rows"]] + [h["rows"] for h in ds["history"]]
    assert len(runs) == 3, len(runs)
    cols = ("ratio_sdpa", "ratio_sdpa_loop", "ratio_sdpa_graph")
    step = [{r["impl"]: r for r in rows if r.get("table") == "step"} for rows in runs]
    assert all(run["triton_packed"][c] > 1.0 for run in step for c in cols), step
    assert all(run["triton_packed"][c] > run["triton"][c] for run in step for c in cols), step
    for lang, words in (
        ("en", "ahead of SDPA's, and of the layer on the views, in every timing of every run this dataset keeps"),
        ("en", "behind the packed layer in each of those runs"),
        ("zh", "打包的层在每一种计时下都既快于 SDPA 的层，也快于在视图上调用的层"),
        ("zh", "而且在这几次运行中都比打包的层慢"),
    ):
        page = " ".join((ROOT / "docs" / lang / "triton-deep-dive.md").read_text().split())
        assert words in page, (lang, words)


def test_cavity_tolerance_on_the_page_is_the_producers():
    """The page says where the H200 cavity run stopped (the producer's TOL, tighter than solve.py's default)
    and which command repeats it; both must follow the producer, and the data once it records the tolerance."""
    import json
    import re

    src = (ROOT / "scripts" / "measure" / "triton_deep_dive" / "cavity.py").read_text()
    n, tol = re.search(r"^N, RE, U_LID, TOL = (\d+), [\d.]+, [\d.]+, ([\de.-]+)$", src, re.M).groups()
    exp = int(f"{float(tol):e}".split("e")[1])
    for lang in ("en", "zh"):
        page = (ROOT / "docs" / lang / "triton-deep-dive.md").read_text()
        assert f"solve.py --n {n} --tol {tol}" in page and f"$10^{{{exp}}}$" in page, lang
    summary = [
        r
        for r in json.loads((ROOT / "data" / "triton_deep_dive" / "cavity.json").read_text())["rows"]
        if r.get("table") == "summary"
    ][0]
    assert summary["n"] == int(n) and summary.get("tol", float(tol)) == float(tol)


def test_cavity_picture_is_rendered_from_its_data():
    """data/triton_deep_dive/ir/cavity_field.svg is render_svg() of the committed dataset, byte for byte."""
    import json

    from measure.triton_deep_dive import cavity_field

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "cavity_field.json").read_text())
    assert cavity_field.render_svg(ds) == cavity_field.SVG.read_text(encoding="utf-8")


def test_fp32_weights_summing_to_one_move_each_class_by_at_most_one_ulp():
    """lbm_3d.fp32_weights_summing_to_one, as the page describes it: rounded to fp32, D2Q9's weights sum to
    1 + 2^-27 and D3Q19's to 1 + 2^-26; the moved ones sum to exactly 1, each class moved alike by at most one
    ulp (D2Q9: the diagonal weight down; D3Q19: rest up, axis and diagonal down), and the lattice's isotropy
    check (in Lattice) still passes."""
    code = (
        "import torch, lbm, lbm_3d\n"
        "from fractions import Fraction as F\n"
        "for lat in (lbm.D2Q9, lbm.D3Q19):\n"
        "    r, m = lat.w.float(), lbm_3d.fp32_weights_summing_to_one(lat).w.float()\n"
        "    ulp = lambda a: F(torch.nextafter(a, torch.tensor(2.0)).item()) - F(a.item())\n"
        "    moves = {round(float(F(r[i].item()))* 36): int((F(m[i].item()) - F(r[i].item())) / ulp(r[i])) for i in range(lat.Q)}\n"
        "    print(lat.name, sum(F(x) for x in r.tolist()) - 1, sum(F(x) for x in m.tolist()) - 1, sorted(moves.items()))\n"
    )
    lines = _interpreted(code).stdout.strip().split("\n")
    # classes keyed by 36 w: D2Q9 rest 16, axis 4, diagonal 1; D3Q19 rest 12, axis 2, diagonal 1
    assert lines == [
        "D2Q9 1/134217728 0 [(1, -1), (4, 0), (16, 0)]",
        "D3Q19 1/67108864 0 [(1, -1), (2, -1), (12, 1)]",
    ], lines


def test_3d_validation_regenerates_within_its_noise(tmp_path):
    """scripts/measure/triton_deep_dive/lbm_3d.py (the PyTorch step on the CPU: about 96,000 steps, 61 s alone on
    the 2-core CI machine, 79 s beside the other worker) reproduces the committed
    data/triton_deep_dive/lbm_3d.json: the same cases, every figure within its declared noise, no target
    flipped; and the figures hold what the page's Validation 3 says of them."""
    import json
    import subprocess
    import sys

    from sitekit import data

    out = tmp_path / "lbm_3d.json"
    p = subprocess.run(
        [sys.executable, "scripts/measure/triton_deep_dive/lbm_3d.py", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    committed = json.loads((ROOT / "data" / "triton_deep_dive" / "lbm_3d.json").read_text())
    fresh = json.loads(out.read_text())
    assert not data.compare(committed, fresh), data.compare(committed, fresh)
    rows = fresh["rows"]
    for r in rows:  # not the rows that show rounding (and not n = 128 in fp32, where it takes over)
        if r["case"] in ("shear_wave", "taylor_green", "shear_wave_fp64") and r["n"] <= 64:
            assert r.get("error", 0) < 0.01 and (r.get("order") is None or 1.8 < r["order"] < 2.2), r
    tg = {(r["plane"], r["n"]): r["error"] for r in rows if r["case"] == "taylor_green"}
    for (plane, n), err in tg.items():  # D3Q19 is symmetric under a swap of axes: the planes agree
        assert abs(err - tg[("xy", n)]) < 1e-3 * tg[("xy", n)], (plane, n, err)
    shear = [r for r in rows if r["case"] == "shear_wave"]
    rates = [r["mass_drift"] / r["steps"] for r in shear]  # the page: the mass grows in proportion to the steps
    assert all(d > 0 for d in rates) and max(rates) < 1.5 * min(rates), rates
    # the page: the fp64 run with fp32-rounded weights gains omega * (sum of the weights - 1) per step, about what the
    # fp32 run gains; with exact weights it keeps its mass to fp64 round-off
    excess = next(r["weights_sum_excess"] for r in rows if r["case"] == "d3q19_weights_fp32")
    w32 = next(r for r in rows if r["case"] == "shear_wave_fp64_rounded_w" and r["n"] == 32)
    exact = next(r for r in rows if r["case"] == "shear_wave_fp64" and r["n"] == 32)
    fp32 = next(r for r in shear if r["n"] == 32)
    assert abs(w32["mass_drift_fp64"] / (excess / 0.8 * w32["steps"]) - 1) < 0.05, (w32, excess)
    assert abs(w32["mass_drift_fp64"] / fp32["mass_drift"] - 1) < 0.2 and abs(exact["mass_drift_fp64"]) < 1e-10
    couette = next(r for r in rows if r["case"] == "couette")
    # the profile falls behind by about the mass the fp32 rounding has added (the lid term assumes density 1)
    assert couette["deviation"] < 1e-3 and 0.5 < couette["deviation"] / couette["mass_drift"] < 2, couette
    # the first remedy, tested: fp32 weights moved by an ulp so that they sum to exactly one. The page: they do;
    # the drift shrinks by more than 5x at every n, and in the Couette flow; the scheme itself (fp64, exact
    # weights) is second order up to n = 64, while the drift alone (fp64, rounded weights) and fp32 arithmetic
    # alone (fp32, moved weights) each lower the order there, and together (fp32, rounded) they partly cancel
    assert next(r["weights_sum_excess"] for r in rows if r["case"] == "d3q19_weights_sum1") == 0
    moved = {r["n"]: r for r in rows if r["case"] == "shear_wave_sum1_w"}
    assert set(moved) == {16, 32, 64} and {r["n"] for r in shear} == {16, 32, 64, 128}
    for r in shear:
        if r["n"] in moved:
            assert abs(moved[r["n"]]["mass_drift"]) < r["mass_drift"] / 5, (r, moved[r["n"]])
    couette_moved = next(r for r in rows if r["case"] == "couette_sum1_w")
    assert abs(couette_moved["mass_drift"]) < couette["mass_drift"] / 5 and couette_moved["deviation"] < 1e-3
    fp64 = {r["n"]: r for r in rows if r["case"] == "shear_wave_fp64"}
    assert set(fp64) == {16, 32, 64, 128} and all(1.95 < fp64[n]["order"] < 2.05 for n in (32, 64, 128)), fp64
    drift_only = {r["n"]: r for r in rows if r["case"] == "shear_wave_fp64_rounded_w"}
    fp32_64 = next(r for r in shear if r["n"] == 64)
    assert max(r["order"] for r in (moved[64], fp32_64, drift_only[64])) < fp64[64]["order"] - 0.025
    assert fp32_64["error"] < min(moved[64]["error"], drift_only[64]["error"])
    # the second remedy, tested: computing with departures from rest (lbm_3d.ShiftedLBM). The page: the shear wave's
    # drift falls to round-off (below 1e-7 against the rounded weights' 1e-6 and more); the error follows the scheme (fp64) to
    # 2 % up to n = 32 and stays within a quarter of it at 64; at 128 the rounded-weights run's error grows (order
    # below 0) and is over 5x the scheme's, while the shifted run's is within 3x of the scheme's and below a third of
    # the rounded run's, yet its order there is far from 2; in the Couette flow the deviation falls by more than the
    # moved weights' and below a third of the rounded weights'
    shifted = {r["n"]: r for r in rows if r["case"] == "shear_wave_shifted"}
    assert set(shifted) == {16, 32, 64, 128}
    assert (
        all(abs(r["mass_drift_roundoff"]) < 1e-7 for r in shifted.values())
        and min(r["mass_drift"] for r in shear) > 1e-6
    )
    assert all(abs(shifted[n]["error"] / fp64[n]["error"] - 1) < 0.02 for n in (16, 32)), (shifted, fp64)
    assert abs(shifted[64]["error"] / fp64[64]["error"] - 1) < 0.25
    fp32_128 = next(r for r in shear if r["n"] == 128)
    assert fp32_128["order"] < 0 and fp32_128["error"] > 5 * fp64[128]["error"], fp32_128
    assert shifted[128]["error"] < min(3 * fp64[128]["error"], fp32_128["error"] / 3) and shifted[128]["order"] < 1.5
    # "takes most of fp32's error away": more than half of the rounded-weights run's excess over the scheme
    assert shifted[128]["error"] - fp64[128]["error"] < (fp32_128["error"] - fp64[128]["error"]) / 2
    # the Taylor-Green vortex of Validation 1 (GPU, fp32, D2Q9) at n = 256: its error is within 15 % of the shear
    # wave's at n = 128 in fp64
    tgv = json.loads((ROOT / "data" / "triton_deep_dive" / "taylor_green.json").read_text())["rows"]
    tg256 = next(r["error"] for r in tgv if r.get("lattice") == "D2Q9" and r["n"] == 256)
    assert abs(tg256 / fp64[128]["error"] - 1) < 0.15, (tg256, fp64[128])
    for n, r in shifted.items():  # the fraction by which one step shrinks the wave: nu (pi / n)^2
        assert abs(r["decay_per_step"] / ((0.8 - 0.5) / 3 * (math.pi / n) ** 2) - 1) < 1e-12, r
    couette_shifted = next(r for r in rows if r["case"] == "couette_shifted")
    assert couette_shifted["deviation"] < min(couette_moved["deviation"], couette["deviation"] / 3), couette_shifted
    assert abs(couette_shifted["mass_drift_roundoff"]) < 1e-6
    # the page: from the moved weights to the shifted run the deviation falls by more than the moved weights' drift,
    # which at the rounded weights' one-to-one rate would account for at most that much
    assert couette_moved["deviation"] - couette_shifted["deviation"] > abs(couette_moved["mass_drift"])


# --- decoding from a paged KV cache (attention_decode.py) ---


@pytest.fixture
def decode(monkeypatch):
    """attention_decode.py imports attention.py by module name (dtypes, head dims, LOG2E)."""
    return _beside_attention(monkeypatch, "attention_decode")


@pytest.mark.parametrize(
    "lengths, HQ, HKV, D, page, dtype, splits",
    [
        ([1, 37, 300], 4, 1, 64, 16, torch.float16, None),  # one token, a page's tail, several splits
        ([70, 5], 2, 2, 64, 32, torch.bfloat16, 2),  # no GQA, bf16, a split past the short one's end
        ([129, 64, 1], 8, 2, 128, 16, torch.float16, 3),  # head dim 128, GQA 4:1, lengths on page edges
        ([300], 16, 1, 64, 256, torch.float16, 1),  # a group of 16 heads, one page larger than the sequence
        ([513, 2], 24, 8, 64, 64, torch.float16, 4),  # a group of 3, padded to 16 rows
    ],
)
def test_decode_matches_the_reference(decode, lengths, HQ, HKV, D, page, dtype, splits):
    assert decode.check_decode(lengths, HQ, HKV, D, page, dtype, splits) < (2e-2 if dtype == torch.bfloat16 else 5e-3)


def test_decode_splits_give_one_answer(decode):
    """Cutting the keys into more splits changes only how the softmax is summed: outputs agree to rounding."""
    k, v, table, lens = decode.paged_cache([700, 3, 260], 2, 64, 16)
    q = torch.randn(3, 4, 64, dtype=torch.float16)
    outs = [decode.decode_attention(q, k, v, table, lens, splits=s).float() for s in (1, 2, 5, 11)]
    assert all(torch.allclose(o, outs[0], atol=2e-3, rtol=0) for o in outs[1:])


def test_decode_reads_only_the_pages_in_the_block_table(decode):
    """NaN written into every page no sequence uses must not reach the output."""
    k, v, table, lens = decode.paged_cache([40, 17], 1, 64, 16, spare=4)
    used = set(table[0, :3].tolist()) | set(table[1, :2].tolist())
    for p in set(range(k.shape[0])) - used:
        k[p] = float("nan")
        v[p] = float("nan")
    q = torch.randn(2, 2, 64, dtype=torch.float16)
    assert torch.isfinite(decode.decode_attention(q, k, v, table, lens, splits=2)).all()


@pytest.mark.parametrize(
    "change, message",
    [
        ("q4", "q must be a 3-D tensor"),
        ("dtype", "must all be float16 or all bfloat16"),
        ("head_dim", "k_cache and v_cache must have one shape"),
        ("heads", r"query heads \(3\) must be a multiple of KV heads \(2\)"),
        ("d80", "head dim 80 is not supported"),
        ("table_dtype", "block_table must be int32"),
        ("lens_shape", r"seq_lens must be int32 of shape \(2,\)"),
        ("zero_len", "at least one cached token"),
        ("too_long", "needs more than the block table's"),
        ("bad_page", "point outside the pool"),
        ("splits", "splits must be between 1 and 64"),
        ("stride", r"unit stride along D, got strides 2, 2, 2"),
        ("table_view", r"block_table and seq_lens need unit stride along their last dim"),
        ("lens_view", r"block_table and seq_lens need unit stride along their last dim"),
        ("device", "must be on one device"),
        ("max_seqlen", r"need max_seqlen >= 1 .* got 0 and None"),
        ("total_big", r"1 <= total_tokens <= B \* max_seqlen .* got 20 and 41"),
        ("total_zero", r"1 <= total_tokens <= B \* max_seqlen .* got 20 and 0"),
        ("page0", "at least one page of at least one token, got 6 pages of 0"),  # crashed the interpreter
        ("config_keys", "config needs exactly the keys"),  # a KeyError deep in the plan
        ("config_block", "power-of-two BLOCK_N"),  # tl.arange failed inside the interpreter
    ],
)
def test_decode_refuses_bad_inputs(decode, change, message):
    k, v, table, lens = decode.paged_cache([20, 9], 2, 64, 16)
    q = torch.randn(2, 4, 64, dtype=torch.float16)
    kw = {}
    if change == "q4":
        q = q[:, :, None]
    elif change == "dtype":
        q = q.float()
    elif change == "head_dim":
        v = torch.randn(*v.shape[:3], 32, dtype=v.dtype)
    elif change == "heads":
        q = torch.randn(2, 3, 64, dtype=torch.float16)
    elif change == "d80":
        q, k, v = q[..., :16].repeat(1, 1, 5), *(c[..., :16].repeat(1, 1, 1, 5) for c in (k, v))
    elif change == "table_dtype":
        table = table.long()
    elif change == "lens_shape":
        lens = lens[:1]
    elif change == "zero_len":
        lens = torch.tensor([20, 0], dtype=torch.int32)
    elif change == "too_long":
        lens = torch.tensor([20, 40], dtype=torch.int32)
    elif change == "bad_page":
        table = table.clone()
        table[1, 0] = k.shape[0]
    elif change == "splits":
        kw["splits"] = 65
    elif change == "stride":
        k = torch.randn(*k.shape[:3], 128, dtype=k.dtype)[..., ::2]
        v = k
        q = torch.randn(2, 4, 128, dtype=torch.float16)[..., ::2]
    elif change == "table_view":
        table = torch.cat([table, table], 1)[:, ::2]
    elif change == "lens_view":
        lens = torch.stack([lens, lens], 1)[:, 0]
    elif change == "device":
        lens = lens.to("meta")
    elif change == "max_seqlen":
        kw["max_seqlen"] = 0
    elif change in ("total_big", "total_zero"):
        kw.update(max_seqlen=20, total_tokens=41 if change == "total_big" else 0)
    elif change == "page0":
        k, v = k[:, :0], v[:, :0]
        kw["max_seqlen"] = 37
    elif change == "config_keys":
        kw["config"] = dict(BLOCK_N=64, num_stages=3)
    elif change == "config_block":
        kw["config"] = dict(BLOCK_N=48, num_stages=3, PROGRAMS_PER_SM=4)
    with pytest.raises(ValueError, match=f"^decode_attention: .*{message}"):
        decode.decode_attention(q, k, v, table, lens, **kw)


def test_decode_refuses_cpu_tensors_on_the_gpu_path(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "attention", _load("attention", False))
    gpu_decode = _load("attention_decode", False)
    k, v, table, lens = gpu_decode.paged_cache([20], 2, 64, 16, device="cpu")
    with pytest.raises(ValueError, match="must be CUDA tensors"):
        gpu_decode.decode_attention(torch.randn(1, 4, 64, dtype=torch.float16), k, v, table, lens)


def test_decode_split_counts_in_the_data_are_what_split_plan_picks(monkeypatch):
    """The "splits" column of the H200 data is what split_plan launches on the H200's SM count, for every row
    timed with the default setting (the tuning rows carry their own)."""
    import json
    import sys

    monkeypatch.setitem(sys.modules, "attention", _load("attention", False))
    gpu_decode = _load("attention_decode", False)
    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_decode.json").read_text())
    assert ds["provenance"]["gpu"] == "NVIDIA H200"
    setup = next(r for r in ds["rows"] if r["table"] == "setup")
    ragged_total = sum(int(n) for n in setup["ragged"].split(", "))
    timed = [r for r in ds["rows"] if r["table"] in ("speed", "pages", "ragged") and r["impl"].startswith("triton")]
    assert timed
    for r in timed:
        total = ragged_total if r["table"] == "ragged" else r["B"] * r["n"]
        asked = 1 if r["impl"] == "triton_nosplit" else None
        got = gpu_decode.split_plan(setup["hkv"], r["B"], r["n"], total, setup["sms"], asked)[0]
        assert got == r["splits"], r
    for r in (r for r in ds["rows"] if r["table"] == "tuning"):
        config = {"BLOCK_N": r["block_n"], "num_stages": r["num_stages"], "PROGRAMS_PER_SM": r["programs_per_sm"]}
        total = ragged_total if r["case"] == "ragged" else r["B"] * r["n"]
        got = gpu_decode.split_plan(setup["hkv"], r["B"], r["n"], total, setup["sms"], None, config)[0]
        assert got == r["splits"], r
    for r in (r for r in ds["rows"] if r["table"] == "split_sweep" and r["picked"]):
        total = ragged_total if r["case"] == "ragged" else r["B"] * r["n"]
        assert gpu_decode.split_plan(setup["hkv"], r["B"], r["n"], total, setup["sms"])[0] == r["split_count"], r


def test_decode_config_is_within_noise_of_the_sweeps_best(decode):
    """CONFIG, the setting decode_attention uses, is the sweep's fastest on the geometric mean over its cases
    (CUDA-graph times, so the host is out of it), or within 3 % of it: a choice that a re-run, whose order
    among near-equal settings may change, does not overturn."""
    import json
    import math

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_decode.json").read_text())
    rows = [r for r in ds["rows"] if r["table"] == "tuning"]
    cases = {r["case"] for r in rows}
    times = {}
    for r in rows:
        times.setdefault((r["block_n"], r["num_stages"], r["programs_per_sm"]), {})[r["case"]] = r["us"]
    full = {s: math.exp(sum(math.log(t) for t in ts.values()) / len(ts)) for s, ts in times.items() if set(ts) == cases}
    assert len(full) >= 4 and len(cases) >= 3, (len(full), cases)
    ours = full[(decode.CONFIG["BLOCK_N"], decode.CONFIG["num_stages"], decode.CONFIG["PROGRAMS_PER_SM"])]
    assert ours <= 1.03 * min(full.values()), (ours, min(full.values()))


def test_decode_split_plan_fills_one_wave(decode):
    """Equal lengths: the most splits whose programs fit in one wave of PROGRAMS_PER_SM per SM; ragged lengths:
    the long sequence is cut finer than if all were as long; even splits of whole BLOCK_N steps, at least
    MIN_SPLIT keys; a count asked for is kept (rounded to whole steps), capped at MAX_SPLITS."""
    cfg = dict(decode.CONFIG, BLOCK_N=64, PROGRAMS_PER_SM=4)
    slots = 4 * 132
    assert decode.split_plan(8, 1, 32768, 32768, 132, None, cfg) == (64, 512)  # 512 programs of 528 slots
    assert decode.split_plan(8, 16, 8192, 16 * 8192, 132, None, cfg) == (4, 2048)  # 5 would make 640
    assert decode.split_plan(8, 64, 2048, 64 * 2048, 132, None, cfg) == (1, 2048)  # 512 programs already
    assert decode.split_plan(8, 128, 1024, 128 * 1024, 132, None, cfg) == (1, 1024)  # past one wave: one split
    assert decode.split_plan(8, 1, 4096, 4096, 132, None, cfg) == (32, 128)  # held at MIN_SPLIT keys
    lengths = [31, 17000, 2048, 513, 9000, 64, 4100, 12000, 1, 777, 6000, 300, 15000, 2500, 8191, 100]
    n, per = decode.split_plan(8, 16, 17000, sum(lengths), 132, None, cfg)
    assert 8 * sum(-(-x // per) for x in lengths) <= slots  # the estimate never overfills the wave
    assert n > decode.split_plan(8, 16, 17000, 16 * 17000, 132, None, cfg)[0]
    for HKV, B, longest, total in ((8, 16, 17000, 30000), (2, 3, 1000, 1500), (1, 1, 70, 70), (8, 1, 9000, 9000)):
        n, per = decode.split_plan(HKV, B, longest, total, 132, None, cfg)
        assert per % 64 == 0 and (n - 1) * per < longest <= n * per and (n == 1 or per >= decode.MIN_SPLIT)
    assert decode.split_plan(8, 1, 1280, 1280, 132, 5, cfg) == (5, 256)
    assert decode.split_plan(8, 1, 10**6, 10**6, 132, 64, cfg)[0] <= decode.MAX_SPLITS


def test_decode_programs_per_sm_is_the_measured_occupancy(decode):
    """PROGRAMS_PER_SM is how many split programs an H200 SM holds, from the compiled kernel's registers and
    shared memory recorded with the data (65,536 registers allocated 8 per thread at a time, 228 KiB of shared
    memory with 1 KiB reserved per block, 32 blocks and 64 warps at most)."""
    import json

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_decode.json").read_text())
    setup = next(r for r in ds["rows"] if r["table"] == "setup")
    regs = -(-max(setup["regs_one"], setup["regs_split"]) // 8) * 8
    warps = setup["warps"]
    held = min(65536 // (regs * 32 * warps), 228 * 1024 // (setup["smem"] + 1024), 32, 64 // warps)
    assert held == decode.CONFIG["PROGRAMS_PER_SM"], (setup, held)


def test_decode_split_plan_is_within_noise_of_the_split_sweeps_best():
    """On every swept case, split_plan's pick runs within 5 % of the fastest forced split count."""
    import json

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_decode.json").read_text())
    rows = [r for r in ds["rows"] if r["table"] == "split_sweep"]
    cases = {r["case"] for r in rows}
    assert len(cases) >= 5
    for case in cases:
        mine = [r for r in rows if r["case"] == case]
        picked = [r["us"] for r in mine if r["picked"]]
        assert len(picked) == 1 and picked[0] <= 1.05 * min(r["us"] for r in mine), case


def test_decode_reuses_one_plan_as_the_sequences_grow(decode):
    """A decode loop: the longest length changes every step, the shapes do not. One plan serves every step,
    and each step matches the reference (one split, several, and back)."""
    decode._PLANS.clear()
    k, v, table, lens = decode.paged_cache([300, 40], 2, 64, 16)
    q = torch.randn(2, 4, 64, dtype=torch.float16)
    for n0, n1, splits in ((1, 1, None), (40, 300, None), (200, 3, 4), (300, 40, 1)):
        lens = torch.tensor([n0, n1], dtype=torch.int32)
        o = decode.decode_attention(q, k, v, table, lens, max_seqlen=max(n0, n1), splits=splits)
        assert attn.rel_err(o, decode.reference_decode(q, k, v, table, lens)) < 5e-3
    assert len(decode._PLANS) == 1


_DECODE_DRY_RUN = _VARLEN_DRY_RUN.replace(
    'prod.DEVICE, prod.QUICK_LENGTHS, prod.H, prod.CHUNK = "cpu", [40, 17, 5], 2, 16', 'prod.DEVICE = "cpu"'
)


def test_decode_producer_runs_end_to_end_on_the_cpu(tmp_path):
    """The GPU producer of attention_decode, run through the interpreter at tiny sizes with a wall-clock timer
    in place of do_bench: its checks pass and it writes the tables and implementations of the committed H200
    data (its quick run checks one head dim, and the split counts follow the machine's SM count)."""
    import json

    assert _DECODE_DRY_RUN != _VARLEN_DRY_RUN
    quick = _dry_run(_DECODE_DRY_RUN, "attention_decode", tmp_path)

    def cases(rows):
        keys = ("table", "impl", "page", "dtype", "heads", "splitting")
        return sorted({json.dumps({k: v for k, v in r.items() if k in keys}) for r in rows})

    committed = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_decode.json").read_text())
    # FlexAttention compiles through Inductor for the GPU: its rows exist on the GPU only
    assert cases(quick["rows"]) == cases(r for r in committed["rows"] if r["table"] != "flex")


def test_flex_decode_facts_the_page_states_hold_in_the_installed_torch():
    """#fa-decode explains FlexAttention's slow default with facts about PyTorch (checked on the GPU's torch
    2.11 by the review); this ties them to the torch the tests run with, so an upgrade that changes them
    fails here. With one query row, create_block_mask's mask has no full block but a (zero) full-block list;
    from_kv_blocks without one has none; the decode lowering keys HAS_FULL_BLOCKS on the list being there;
    the template sizes splits from KV_LEN in that branch; SPLIT_KV defaults to max(1, 2 * (SMs // (B * Hkv)));
    the default mask block is 128."""
    import inspect
    from pathlib import Path

    import torch
    from torch._inductor.kernel.flex import flex_decoding
    from torch.nn.attention import flex_attention as fx

    lens = torch.tensor([300, 17, 513, 128])
    mask = fx.create_block_mask(lambda b, h, q, kv: kv < lens[b], 4, None, 1, 640, device="cpu")
    assert mask.full_kv_num_blocks is not None and int(mask.full_kv_num_blocks.sum()) == 0
    assert mask.kv_num_blocks.flatten().tolist() == [3, 1, 5, 1]
    partial = fx.BlockMask.from_kv_blocks(mask.kv_num_blocks, mask.kv_indices, BLOCK_SIZE=(128, 128))
    assert partial.full_kv_num_blocks is None
    assert fx._DEFAULT_SPARSE_BLOCK_SIZE == 128
    lowering = inspect.getsource(flex_decoding)
    assert "has_full_blocks = full_kv_num_blocks is not None" in lowering
    assert "split_k = num_SM // bh * 2" in lowering and "split_k = max(split_k, 1)" in lowering
    template = (Path(flex_decoding.__file__).parent / "templates" / "flex_decode.py.jinja").read_text()
    branch = template[template.index("if HAS_FULL_BLOCKS:") :]
    assert branch.index("TILE_KV_OG = tl.cdiv(KV_LEN, SPLIT_KV)") < branch.index(
        "TILE_KV_OG = tl.cdiv(kv_num_blocks * SPARSE_KV_BLOCK_SIZE, SPLIT_KV)"
    )


def test_flex_split_pieces_the_page_describes():
    """The page's arithmetic for FlexAttention's decoding template without a full-block list: each sequence's
    blocks are cut into SPLIT_KV pieces of roundup(cdiv(blocks * 128, SPLIT_KV), 64) keys. With the ragged
    batch's split count from the data, the 17,000-token sequence gets pieces of about 1,600 keys and a
    one-block sequence keeps 2 of its programs busy."""
    import json
    import math

    from measure.triton_deep_dive import attention_decode as producer

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_decode.json").read_text())
    (row,) = [
        r for r in ds["rows"] if r.get("table") == "flex" and r["case"] == "ragged" and r["impl"] == "flex_split_graph"
    ]
    split_kv, page, block_n = row["splits"], producer.FLEX_PAGE, 64

    def piece(n):
        return math.ceil(math.ceil(math.ceil(n / page) * page / split_kv) / block_n) * block_n

    assert max(producer.RAGGED) == 17000 and piece(17000) == 1600, piece(17000)
    assert min(producer.RAGGED) <= page and math.ceil(page / piece(1)) == 2 and split_kv == 11
    for lang in ("en", "zh"):
        text = (ROOT / "docs" / lang / "triton-deep-dive.md").read_text()
        assert "1,600" in text and "11" in text


def test_decode_reads_no_row_past_a_sequence_in_its_last_page(decode):
    """NaN in the rows of a sequence's last page that lie past its length must not reach the output."""
    k, v, table, lens = decode.paged_cache([21, 7], 1, 64, 16)
    for b, n in enumerate(lens.tolist()):
        last = int(table[b, (n - 1) // 16])
        k[last, n % 16 or 16 :] = float("nan")
        v[last, n % 16 or 16 :] = float("nan")
    q = torch.randn(2, 2, 64, dtype=torch.float16)
    assert torch.isfinite(decode.decode_attention(q, k, v, table, lens, splits=2)).all()


def test_decode_gives_zeros_for_an_empty_slot_when_not_validating(decode):
    """With max_seqlen given nothing is read back; a slot of length 0 (a padding slot of a fixed-size batch)
    then comes out as zeros, not NaN, and the other sequences are unaffected."""
    k, v, table, lens = decode.paged_cache([40, 1], 1, 64, 16)
    q = torch.randn(2, 2, 64, dtype=torch.float16)
    ref = decode.reference_decode(q, k, v, table, lens)
    lens0 = torch.tensor([40, 0], dtype=torch.int32)
    o = decode.decode_attention(q, k, v, table, lens0, max_seqlen=40, splits=3)
    assert torch.equal(o[1], torch.zeros_like(o[1]))
    assert attn.rel_err(o[0], ref[0]) < 5e-3


def test_tuning_page_warns_while_the_fwd_gluon_rows_are_the_cached_kernel():
    """Runs of the sweep before check_fa3_launch (no "fwd_long" rows, which came with it) timed one step-4 kernel
    per head dim and mask in every "fwd_gluon" row. While the committed run is one of those, both pages carry
    the warning under its table; once a run with the check is committed, the warning must go."""
    import json

    ds = json.loads((ROOT / "data" / "triton_deep_dive" / "attention_tuning.json").read_text())
    cached = not any(r["pass"] == "fwd_long" for r in ds["rows"])
    # the sentences that describe the cached run, beside the warning: each goes when the warning goes
    about_the_cached_run = {
        "en": [
            "cannot be read that way (the warning below the table says why)",
            "no run of this sweep has",
            "so a setting this run did time",
            "the one step-4 setting this run timed there",
            "which at $D = 64$ with the causal mask is not the chosen one",
            "The step-4 rows of that sweep's committed run are not",
        ],
        "zh": [
            "这里展示的这次运行不能这样解读",
            "这个扫描至今还没有哪一次运行真正计时过这个设置",
            "所以这次运行确实计时了这个设置",
            "唯一真正计时过的第 4 步设置",
            "而 $D = 64$ 因果掩码时选定的并不是它",
            "该扫描已提交的那次运行中，第 4 步的各行无效",
        ],
    }
    for lang, title in (("en", "These rows do not compare settings"), ("zh", "这些行并没有在比较不同的设置")):
        page = (ROOT / "docs" / lang / "triton-deep-dive.md").read_text(encoding="utf-8")
        assert (f'!!! warning "{title}' in page) == cached, (lang, cached)
        for phrase in about_the_cached_run[lang]:
            assert (phrase in page) == cached, (lang, phrase, cached)
