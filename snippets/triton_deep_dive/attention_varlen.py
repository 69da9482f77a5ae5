"""FlashAttention on packed variable-length batches: sequences of different lengths laid end to end.

q of shape (T, Hq, D), k and v of shape (T, Hkv, D), T the number of tokens of all sequences together;
cu_seqlens (int32, B + 1 entries, cu_seqlens[0] = 0, cu_seqlens[B] = T) says where each sequence starts:
sequence b is rows cu_seqlens[b] : cu_seqlens[b + 1]. A token attends only within its own sequence
(with causal=True, to itself and the tokens before it there). No padding is stored or computed.
The inner loops (_fwd_tiles, _dkdv_tiles, _dq_tiles) and the backward's preprocess are attention.py's;
only the outer kernels are new: each program reads its sequence's start and length from cu_seqlens and
builds its TMA descriptors over that slice of rows, so rows past the sequence's end load as zeros and
stores past it are dropped, as at the ragged tail in attention.py.
Run it: `python snippets/triton_deep_dive/attention_varlen.py` on a Hopper GPU, or with TRITON_INTERPRET=1
on a CPU (small sizes). It imports attention.py from its own directory.
"""
# --8<-- [start:kernels]
import math

import torch
import triton
import triton.language as tl

import attention as fa      # attention.py, in the same directory: inner loops, preprocess, checks, reference
from attention import _dkdv_tiles, _dq_tiles, _fwd_tiles


@triton.jit
def _sequence(CU_SEQLENS, b):
    """Row where sequence b starts in the packed tensors (int64) and its length."""
    start = tl.load(CU_SEQLENS + b)
    return start.to(tl.int64), tl.load(CU_SEQLENS + b + 1) - start


@triton.jit
def attn_fwd_varlen(Q, K, V, O, LSE, CU_SEQLENS,   # q, o: (T, Hq, D); k, v: (T, Hkv, D); LSE: (Hq, T) fp32
                    sq_t, sq_h, sk_t, sk_h, sv_t, sv_h, so_t, so_h, HQ, GROUP, TOTAL, qk_scale,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr):
    # the grid is sized for the longest sequence; in a shorter one, programs past its end leave at once
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    b = tl.program_id(1) // HQ
    h = (tl.program_id(1) % HQ).to(tl.int64)
    start, n = _sequence(CU_SEQLENS, b)
    if pid_m * BLOCK_M >= n:
        return
    hk = h // GROUP
    # descriptors over this sequence's rows only: n, not T, is the bound TMA checks
    q_desc = tl.make_tensor_descriptor(Q + start * sq_t + h * sq_h, [n, HEAD_DIM], [sq_t, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K + start * sk_t + hk * sk_h, [n, HEAD_DIM], [sk_t, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + start * sv_t + hk * sv_h, [n, HEAD_DIM], [sv_t, 1], [BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(O + start * so_t + h * so_h, [n, HEAD_DIM], [so_t, 1], [BLOCK_M, HEAD_DIM])

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    q = q_desc.load([pid_m * BLOCK_M, 0])
    if CAUSAL:
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, 0, pid_m * BLOCK_M, offs_m, n,
                                   qk_scale, BLOCK_N, 0)
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, pid_m * BLOCK_M, (pid_m + 1) * BLOCK_M,
                                   offs_m, n, qk_scale, BLOCK_N, 1)
    else:
        n_full = (n // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, 0, n_full, offs_m, n, qk_scale, BLOCK_N, 0)
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, n_full, n, offs_m, n, qk_scale, BLOCK_N, 2)
    tl.store(LSE + h * TOTAL + start + offs_m, m_i + tl.math.log2(l_i), mask=offs_m < n)
    o_desc.store([pid_m * BLOCK_M, 0], (acc / l_i[:, None]).to(O.dtype.element_ty))


@triton.jit
def attn_bwd_dkdv_varlen(Q, K, V, DO, DK, DV, LSE, DELTA, CU_SEQLENS,   # one program per key block of a sequence
                         sq_t, sq_h, sk_t, sk_h, sv_t, sv_h, sd_t, sd_h, sdk_t, sdk_h, sdv_t, sdv_h,
                         HKV, GROUP, TOTAL, sm_scale, qk_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    b = tl.program_id(1) // HKV
    hk = (tl.program_id(1) % HKV).to(tl.int64)
    start, n = _sequence(CU_SEQLENS, b)
    if start_n >= n:
        return
    offs_n = start_n + tl.arange(0, BLOCK_N)
    k_desc = tl.make_tensor_descriptor(K + start * sk_t + hk * sk_h, [n, HEAD_DIM], [sk_t, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + start * sv_t + hk * sv_h, [n, HEAD_DIM], [sv_t, 1], [BLOCK_N, HEAD_DIM])
    k = k_desc.load([start_n, 0])
    v = v_desc.load([start_n, 0])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    for g in range(GROUP):
        h = hk * GROUP + g
        q_desc = tl.make_tensor_descriptor(Q + start * sq_t + h * sq_h, [n, HEAD_DIM], [sq_t, 1], [BLOCK_M, HEAD_DIM])
        do_desc = tl.make_tensor_descriptor(DO + start * sd_t + h * sd_h, [n, HEAD_DIM], [sd_t, 1],
                                            [BLOCK_M, HEAD_DIM])
        lse_ptr = LSE + h * TOTAL + start
        delta_ptr = DELTA + h * TOTAL + start
        if CAUSAL:
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, start_n, start_n + BLOCK_N,
                                 offs_n, n, qk_scale, BLOCK_M, True)
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, start_n + BLOCK_N, n,
                                 offs_n, n, qk_scale, BLOCK_M, False)
        else:
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, 0, n,
                                 offs_n, n, qk_scale, BLOCK_M, False)
    dk_desc = tl.make_tensor_descriptor(DK + start * sdk_t + hk * sdk_h, [n, HEAD_DIM], [sdk_t, 1],
                                        [BLOCK_N, HEAD_DIM])
    dv_desc = tl.make_tensor_descriptor(DV + start * sdv_t + hk * sdv_h, [n, HEAD_DIM], [sdv_t, 1],
                                        [BLOCK_N, HEAD_DIM])
    dk_desc.store([start_n, 0], (dk * sm_scale).to(DK.dtype.element_ty))
    dv_desc.store([start_n, 0], dv.to(DV.dtype.element_ty))


@triton.jit
def attn_bwd_dq_varlen(Q, K, V, DO, DQ, LSE, DELTA, CU_SEQLENS,   # one program per query block of a sequence
                       sq_t, sq_h, sk_t, sk_h, sv_t, sv_h, sd_t, sd_h, sdq_t, sdq_h,
                       HQ, GROUP, TOTAL, sm_scale, qk_scale,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       CAUSAL: tl.constexpr):
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    start_m = pid_m * BLOCK_M
    b = tl.program_id(1) // HQ
    h = (tl.program_id(1) % HQ).to(tl.int64)
    start, n = _sequence(CU_SEQLENS, b)
    if start_m >= n:
        return
    hk = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    q_desc = tl.make_tensor_descriptor(Q + start * sq_t + h * sq_h, [n, HEAD_DIM], [sq_t, 1], [BLOCK_M, HEAD_DIM])
    do_desc = tl.make_tensor_descriptor(DO + start * sd_t + h * sd_h, [n, HEAD_DIM], [sd_t, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K + start * sk_t + hk * sk_h, [n, HEAD_DIM], [sk_t, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + start * sv_t + hk * sv_h, [n, HEAD_DIM], [sv_t, 1], [BLOCK_N, HEAD_DIM])
    q = q_desc.load([start_m, 0])
    do = do_desc.load([start_m, 0])
    lse = tl.load(LSE + h * TOTAL + start + offs_m, mask=offs_m < n, other=0.0)
    delta = tl.load(DELTA + h * TOTAL + start + offs_m, mask=offs_m < n, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, 0, start_m, offs_m, qk_scale, BLOCK_N, False)
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, start_m, start_m + BLOCK_M, offs_m, qk_scale,
                       BLOCK_N, True)
    else:
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, 0, n, offs_m, qk_scale, BLOCK_N, False)
    dq_desc = tl.make_tensor_descriptor(DQ + start * sdq_t + h * sdq_h, [n, HEAD_DIM], [sdq_t, 1],
                                        [BLOCK_M, HEAD_DIM])
    dq_desc.store([start_m, 0], (dq * sm_scale).to(DQ.dtype.element_ty))
# --8<-- [end:kernels]


# --8<-- [start:wrapper]
def _check_varlen(q, k, v, cu_seqlens, max_seqlen, validate):
    """Refuse what the kernels cannot take; return the longest sequence's length."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            raise ValueError(f"attention_varlen: {name} must be a 3-D tensor (T, H, D) of packed tokens, got "
                             f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}")
    T, HQ, D = q.shape
    if T == 0:
        raise ValueError("attention_varlen: q holds no tokens (T = 0); pack at least one")
    if k.shape != v.shape or k.shape[0] != T or k.shape[2] != D:
        raise ValueError(f"attention_varlen: k and v must have shape (T, Hkv, D) = ({T}, Hkv, {D}) to match q "
                         f"{tuple(q.shape)}, got k {tuple(k.shape)}, v {tuple(v.shape)}")
    try:  # the 4-D views (1, H, T, D) pass attention.py's checks of device, dtype, head dim and GQA
        fa._check_inputs(*(t.transpose(0, 1).unsqueeze(0) for t in (q, k, v)))
    except ValueError as e:
        raise ValueError(str(e).replace("attention:", "attention_varlen:", 1)) from None
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 2:
        raise ValueError("attention_varlen: cu_seqlens must be a 1-D tensor of B + 1 row offsets (B >= 1), got "
                         f"{tuple(cu_seqlens.shape) if isinstance(cu_seqlens, torch.Tensor) else cu_seqlens!r}")
    if cu_seqlens.dtype != torch.int32 or cu_seqlens.device != q.device:
        raise ValueError(f"attention_varlen: cu_seqlens must be int32 on {q.device} (q's device), got "
                         f"{cu_seqlens.dtype} on {cu_seqlens.device}")
    if (cu_seqlens.numel() - 1) * HQ > 65535:   # the grid's second dimension: one program column per (b, h)
        raise ValueError(f"attention_varlen: {cu_seqlens.numel() - 1} sequences x {HQ} heads is more than the "
                         "65535 program columns a launch may have; split the batch")
    if not validate:
        if max_seqlen is None:
            raise ValueError("attention_varlen: validate=False needs max_seqlen (the grid is sized from it)")
        return int(max_seqlen)
    # one read back to the host: first and last offset, shortest and longest sequence
    lens = cu_seqlens.diff()
    first, last, shortest, longest = torch.stack([cu_seqlens[0], cu_seqlens[-1], lens.min(), lens.max()]).tolist()
    if first != 0 or last != T or shortest < 0:
        raise ValueError(f"attention_varlen: cu_seqlens must rise from 0 to T = {T} (the tokens in q) and "
                         f"never fall; got first {first}, last {last}, smallest step {shortest}")
    if max_seqlen is not None and max_seqlen < longest:
        raise ValueError(f"attention_varlen: max_seqlen = {max_seqlen} is less than the longest sequence ({longest})")
    return longest if max_seqlen is None else int(max_seqlen)


def _forward_varlen(q, k, v, cu, max_seqlen, causal, scale):
    T, HQ, D = q.shape
    cfg = dict(fa.FWD_CONFIGS[(D, causal)])
    if fa.INTERPRET:
        cfg.update(BLOCK_M=16, BLOCK_N=16)
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = torch.empty((HQ, T), device=q.device, dtype=torch.float32)
    grid = (triton.cdiv(max_seqlen, cfg["BLOCK_M"]), (cu.numel() - 1) * HQ)
    attn_fwd_varlen[grid](q, k, v, o, lse, cu, *q.stride()[:2], *k.stride()[:2], *v.stride()[:2], *o.stride()[:2],
                          HQ, HQ // k.shape[1], T, scale * fa.LOG2E, HEAD_DIM=D, CAUSAL=causal, **cfg)
    return o, lse


def _backward_varlen(q, k, v, o, lse, do, cu, max_seqlen, causal, scale):
    T, HQ, D = q.shape
    HKV, B = k.shape[1], cu.numel() - 1
    cfg = dict(fa.BWD_CONFIGS[(D, causal)])
    if fa.INTERPRET:
        cfg.update(DKDV=(16, 16, 4, 1), DQ=(16, 16, 4, 1))
    (m1, n1, w1, s1), (m2, n2, w2, s2) = cfg["DKDV"], cfg["DQ"]
    # attention.py's preprocess on the packed rows seen as one sequence of T tokens: delta is (Hq, T) like lse
    delta = torch.empty((HQ, T), device=q.device, dtype=torch.float32)
    fa.attn_bwd_preprocess[(triton.cdiv(T, 64), HQ)](o, do, delta, 0, o.stride(1), o.stride(0),
                                                     0, do.stride(1), do.stride(0), HQ, T, HEAD_DIM=D, BLOCK_M=64)
    dq, dk, dv = (torch.empty_like(t, memory_format=torch.contiguous_format) for t in (q, k, v))
    attn_bwd_dkdv_varlen[(triton.cdiv(max_seqlen, n1), B * HKV)](
        q, k, v, do, dk, dv, lse, delta, cu, *q.stride()[:2], *k.stride()[:2], *v.stride()[:2], *do.stride()[:2],
        *dk.stride()[:2], *dv.stride()[:2], HKV, HQ // HKV, T, scale, scale * fa.LOG2E,
        HEAD_DIM=D, BLOCK_M=m1, BLOCK_N=n1, CAUSAL=causal, num_warps=w1, num_stages=s1)
    attn_bwd_dq_varlen[(triton.cdiv(max_seqlen, m2), B * HQ)](
        q, k, v, do, dq, lse, delta, cu, *q.stride()[:2], *k.stride()[:2], *v.stride()[:2], *do.stride()[:2],
        *dq.stride()[:2], HQ, HQ // HKV, T, scale, scale * fa.LOG2E,
        HEAD_DIM=D, BLOCK_M=m2, BLOCK_N=n2, CAUSAL=causal, num_warps=w2, num_stages=s2)
    return dq, dk, dv


class VarlenFlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, cu_seqlens, max_seqlen, causal, scale):
        dtype = q.dtype
        if fa.INTERPRET and dtype == torch.bfloat16:
            q, k, v = q.float(), k.float(), v.float()      # the interpreter's tl.dot mishandles bf16
        q, k, v = (fa._tma_ready(t) for t in (q, k, v))
        triton.set_allocator(fa._alloc)
        o, lse = _forward_varlen(q, k, v, cu_seqlens, max_seqlen, causal, scale)
        ctx.save_for_backward(q, k, v, o, lse, cu_seqlens)
        ctx.max_seqlen, ctx.causal, ctx.scale = max_seqlen, causal, scale
        return o.to(dtype)

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse, cu = ctx.saved_tensors
        dtype = do.dtype
        do = fa._tma_ready(do.to(q.dtype))
        triton.set_allocator(fa._alloc)
        dq, dk, dv = _backward_varlen(q, k, v, o, lse, do, cu, ctx.max_seqlen, ctx.causal, ctx.scale)
        return dq.to(dtype), dk.to(dtype), dv.to(dtype), None, None, None, None


def attention_varlen(q, k, v, cu_seqlens, max_seqlen=None, causal=False, scale=None, validate=True):
    """Attention within each packed sequence, differentiable. validate=True reads cu_seqlens back once (a
    host sync) to refuse bad offsets and a max_seqlen below the longest sequence; with validate=False and
    max_seqlen given there is no sync and nothing checks them: offsets that do not rise from 0 to T make the
    kernels read and write outside the tensors, and a max_seqlen below the longest length leaves that
    sequence's last rows of the output (and of the gradients) unwritten."""
    max_seqlen = _check_varlen(q, k, v, cu_seqlens, max_seqlen, validate)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return VarlenFlashAttention.apply(q, k, v, cu_seqlens, max_seqlen, bool(causal), scale)
# --8<-- [end:wrapper]


# --8<-- [start:check]
def reference_varlen(q, k, v, cu_seqlens, causal=False, scale=None):
    """attention.py's fp32 reference, one sequence at a time."""
    cu = cu_seqlens.tolist()
    outs = [fa.reference(*(t[s:e].transpose(0, 1).unsqueeze(0) for t in (q, k, v)), causal, scale)[0].transpose(0, 1)
            for s, e in zip(cu[:-1], cu[1:]) if e > s]
    return torch.cat(outs)


def packed(lengths, HQ, HKV, D, dtype=torch.float16, seed=0, device=fa.DEVICE):
    """Random q, k, v (requires_grad) for sequences of the given lengths, and their cu_seqlens."""
    torch.manual_seed(seed)
    cu = torch.tensor([0, *lengths], device=device).cumsum(0).to(torch.int32)
    T = int(cu[-1])
    q = torch.randn(T, HQ, D, device=device, dtype=dtype, requires_grad=True)
    k, v = (torch.randn(T, HKV, D, device=device, dtype=dtype, requires_grad=True) for _ in range(2))
    return q, k, v, cu


def check_varlen(lengths, HQ, HKV, D, causal, dtype=torch.float16, seed=0):
    """Forward and all three gradients against the per-sequence fp32 reference; returns the worst error."""
    q, k, v, cu = packed(lengths, HQ, HKV, D, dtype, seed)
    do = torch.randn_like(q)
    o = attention_varlen(q, k, v, cu, causal=causal)
    grads = torch.autograd.grad(o, (q, k, v), do)
    qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
    ref = reference_varlen(qr, kr, vr, cu, causal)
    refs = torch.autograd.grad(ref, (qr, kr, vr), do.float())
    errs = [fa.rel_err(o, ref)] + [fa.rel_err(g, r) for g, r in zip(grads, refs)]
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
    assert o.dtype == dtype and max(errs) < tol, (lengths, HQ, HKV, D, causal, dtype, errs)
    return max(errs)


if __name__ == "__main__":
    if fa.INTERPRET:     # tiny: an empty sequence, a single token, ragged tails
        cases = [([37, 1, 0, 20], 2, 1, 64, True, torch.float16), ([21, 16], 2, 2, 64, False, torch.bfloat16)]
    else:                # lengths far apart, GQA 2:1, both head dims and masks; bf16 on one case
        lengths = [1000, 1, 513, 2048, 77, 0, 1537]
        cases = [(lengths, 4, 2, d, c, torch.float16) for d in fa.HEAD_DIMS for c in (False, True)]
        cases += [(lengths, 8, 8, 128, True, torch.bfloat16)]
    worst = max(check_varlen(*case) for case in cases)
    print(f"packed batches: forward and dQ, dK, dV match fp32 per sequence on {len(cases)} cases "
          f"(an empty sequence, GQA, causal and full): worst relative error {worst:.1e}")
# --8<-- [end:check]
