"""FlashAttention on packed variable-length batches: sequences of different lengths laid end to end.

q of shape (Tq, Hq, D), k and v of shape (Tk, Hkv, D), Tq and Tk the numbers of tokens of all sequences
together; cu_seqlens (int32, B + 1 entries, cu_seqlens[0] = 0, cu_seqlens[B] = Tq) says where each
sequence's queries start: sequence b is rows cu_seqlens[b] : cu_seqlens[b + 1]. Keys and values are packed
the same way (self-attention, Tk = Tq), or by their own offsets cu_seqlens_k (cross-attention, or a chunk
of new queries against a longer history of keys). A token attends only within its own sequence (with
causal=True, to the keys up to its own position, the mask ending at the sequence's last key). No padding
is stored or computed.
The inner loops (_fwd_tiles, _dkdv_tiles, _dq_tiles) and the backward's preprocess are attention.py's;
only the outer kernels are new: each program reads its sequence's start and lengths from the offsets and
builds its TMA descriptors over those slices of rows, so rows past a sequence's end load as zeros and
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
def _sequences(CU_Q, CU_K, b, KEYS_APART: tl.constexpr):
    """Start and length of sequence b's queries, then of its keys: the same rows unless KEYS_APART, in
    which case the kernel is compiled with the general code, else with n_k - n_q folded to 0."""
    start_q, n_q = _sequence(CU_Q, b)
    if KEYS_APART:
        start_k, n_k = _sequence(CU_K, b)
    else:
        start_k, n_k = start_q, n_q
    return start_q, n_q, start_k, n_k


@triton.jit
def attn_fwd_varlen(Q, K, V, O, LSE, CU_Q, CU_K,   # q, o: (Tq, Hq, D); k, v: (Tk, Hkv, D); LSE: (Hq, Tq) fp32
                    sq_t, sq_h, sk_t, sk_h, sv_t, sv_h, so_t, so_h, HQ, GROUP, TOTAL_Q, qk_scale,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr, KEYS_APART: tl.constexpr):
    # the grid is sized for the longest sequence; in a shorter one, programs past its end leave at once
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    b = tl.program_id(1) // HQ
    h = (tl.program_id(1) % HQ).to(tl.int64)
    start_q, n_q, start_k, n_k = _sequences(CU_Q, CU_K, b, KEYS_APART)
    if pid_m * BLOCK_M >= n_q:
        return
    hk = h // GROUP
    # descriptors over this sequence's rows only: its lengths, not Tq or Tk, are the bounds TMA checks
    q_desc = tl.make_tensor_descriptor(Q + start_q * sq_t + h * sq_h, [n_q, HEAD_DIM], [sq_t, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K + start_k * sk_t + hk * sk_h, [n_k, HEAD_DIM], [sk_t, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + start_k * sv_t + hk * sv_h, [n_k, HEAD_DIM], [sv_t, 1], [BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(O + start_q * so_t + h * so_h, [n_q, HEAD_DIM], [so_t, 1], [BLOCK_M, HEAD_DIM])

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    q = q_desc.load([pid_m * BLOCK_M, 0])
    if CAUSAL:
        # the mask's diagonal ends at the last key: query i sees keys up to i + n_k - n_q (bottom right)
        shift = n_k - n_q
        diag = pid_m * BLOCK_M + shift                      # the last key the block's first query sees
        lo = (diag // BLOCK_N) * BLOCK_N                    # every key before lo is seen by every row
        hi = diag + BLOCK_M
        if KEYS_APART:
            hi = tl.minimum(hi, n_k)                        # a block of few queries needs no tile past the last key
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, 0, lo, offs_m, n_k, qk_scale, BLOCK_N, 0)
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, lo, hi, offs_m + shift, n_k,
                                   qk_scale, BLOCK_N, 1)
    else:
        n_full = (n_k // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, 0, n_full, offs_m, n_k, qk_scale, BLOCK_N, 0)
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, n_full, n_k, offs_m, n_k, qk_scale, BLOCK_N, 2)
    tl.store(LSE + h * TOTAL_Q + start_q + offs_m, m_i + tl.math.log2(l_i), mask=offs_m < n_q)
    o_desc.store([pid_m * BLOCK_M, 0], (acc / l_i[:, None]).to(O.dtype.element_ty))


@triton.jit
def attn_bwd_dkdv_varlen(Q, K, V, DO, DK, DV, LSE, DELTA, CU_Q, CU_K,   # one program per key block of a sequence
                         sq_t, sq_h, sk_t, sk_h, sv_t, sv_h, sd_t, sd_h, sdk_t, sdk_h, sdv_t, sdv_h,
                         HKV, GROUP, TOTAL_Q, sm_scale, qk_scale,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, KEYS_APART: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    b = tl.program_id(1) // HKV
    hk = (tl.program_id(1) % HKV).to(tl.int64)
    start_q, n_q, start_k, n_k = _sequences(CU_Q, CU_K, b, KEYS_APART)
    if start_n >= n_k:
        return
    k_desc = tl.make_tensor_descriptor(K + start_k * sk_t + hk * sk_h, [n_k, HEAD_DIM], [sk_t, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + start_k * sv_t + hk * sv_h, [n_k, HEAD_DIM], [sv_t, 1], [BLOCK_N, HEAD_DIM])
    k = k_desc.load([start_n, 0])
    v = v_desc.load([start_n, 0])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    if KEYS_APART:
        # query i sees key j when i >= j - (n_k - n_q): `first` is the first query that sees the block's
        # first key; from the block boundary at or after first + BLOCK_N on, queries see all of its keys
        first = start_n - (n_k - n_q)
        lo = (tl.maximum(first, 0) // BLOCK_M) * BLOCK_M
        mid = tl.cdiv(tl.maximum(first + BLOCK_N, 0), BLOCK_M) * BLOCK_M
        lo_end = tl.minimum(mid, n_q)                       # none at all when the sequence has no queries
        n_rows = tl.maximum(n_q, 1)                         # ... but its descriptors still need one row
    else:  # keys and queries share rows: the diagonal block is the only masked one, as in attention.py
        first, lo, mid, lo_end, n_rows = start_n, start_n, start_n + BLOCK_N, start_n + BLOCK_N, n_q
    offs_n = first + tl.arange(0, BLOCK_N)                  # the keys' places on the query axis
    for g in range(GROUP):
        h = hk * GROUP + g
        q_desc = tl.make_tensor_descriptor(Q + start_q * sq_t + h * sq_h, [n_rows, HEAD_DIM], [sq_t, 1],
                                           [BLOCK_M, HEAD_DIM])
        do_desc = tl.make_tensor_descriptor(DO + start_q * sd_t + h * sd_h, [n_rows, HEAD_DIM], [sd_t, 1],
                                            [BLOCK_M, HEAD_DIM])
        lse_ptr = LSE + h * TOTAL_Q + start_q
        delta_ptr = DELTA + h * TOTAL_Q + start_q
        if CAUSAL:
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, lo, lo_end,
                                 offs_n, n_q, qk_scale, BLOCK_M, True)
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, mid, n_q,
                                 offs_n, n_q, qk_scale, BLOCK_M, False)
        else:
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, 0, n_q,
                                 offs_n, n_q, qk_scale, BLOCK_M, False)
    dk_desc = tl.make_tensor_descriptor(DK + start_k * sdk_t + hk * sdk_h, [n_k, HEAD_DIM], [sdk_t, 1],
                                        [BLOCK_N, HEAD_DIM])
    dv_desc = tl.make_tensor_descriptor(DV + start_k * sdv_t + hk * sdv_h, [n_k, HEAD_DIM], [sdv_t, 1],
                                        [BLOCK_N, HEAD_DIM])
    dk_desc.store([start_n, 0], (dk * sm_scale).to(DK.dtype.element_ty))
    dv_desc.store([start_n, 0], dv.to(DV.dtype.element_ty))


@triton.jit
def attn_bwd_dq_varlen(Q, K, V, DO, DQ, LSE, DELTA, CU_Q, CU_K,   # one program per query block of a sequence
                       sq_t, sq_h, sk_t, sk_h, sv_t, sv_h, sd_t, sd_h, sdq_t, sdq_h,
                       HQ, GROUP, TOTAL_Q, sm_scale, qk_scale,
                       HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                       CAUSAL: tl.constexpr, KEYS_APART: tl.constexpr):
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    start_m = pid_m * BLOCK_M
    b = tl.program_id(1) // HQ
    h = (tl.program_id(1) % HQ).to(tl.int64)
    start_q, n_q, start_k, n_k = _sequences(CU_Q, CU_K, b, KEYS_APART)
    if start_m >= n_q:
        return
    hk = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    q_desc = tl.make_tensor_descriptor(Q + start_q * sq_t + h * sq_h, [n_q, HEAD_DIM], [sq_t, 1], [BLOCK_M, HEAD_DIM])
    do_desc = tl.make_tensor_descriptor(DO + start_q * sd_t + h * sd_h, [n_q, HEAD_DIM], [sd_t, 1],
                                        [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K + start_k * sk_t + hk * sk_h, [n_k, HEAD_DIM], [sk_t, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + start_k * sv_t + hk * sv_h, [n_k, HEAD_DIM], [sv_t, 1], [BLOCK_N, HEAD_DIM])
    q = q_desc.load([start_m, 0])
    do = do_desc.load([start_m, 0])
    lse = tl.load(LSE + h * TOTAL_Q + start_q + offs_m, mask=offs_m < n_q, other=0.0)
    delta = tl.load(DELTA + h * TOTAL_Q + start_q + offs_m, mask=offs_m < n_q, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        shift = n_k - n_q
        diag = start_m + shift                              # as in the forward
        lo = (diag // BLOCK_N) * BLOCK_N
        hi = diag + BLOCK_M
        if KEYS_APART:
            hi = tl.minimum(hi, n_k)
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, 0, lo, offs_m, qk_scale, BLOCK_N, 0)
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, lo, hi, offs_m + shift, qk_scale,
                       BLOCK_N, 1)
    else:
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, 0, n_k, offs_m, qk_scale, BLOCK_N, 2)
    dq_desc = tl.make_tensor_descriptor(DQ + start_q * sdq_t + h * sdq_h, [n_q, HEAD_DIM], [sdq_t, 1],
                                        [BLOCK_M, HEAD_DIM])
    dq_desc.store([start_m, 0], (dq * sm_scale).to(DQ.dtype.element_ty))
# --8<-- [end:kernels]


# --8<-- [start:wrapper]
def _offsets(name, cu, device):
    """Refuse a cu_seqlens that is not a 1-D int32 tensor of offsets on q's device."""
    if not isinstance(cu, torch.Tensor) or cu.dim() != 1 or cu.numel() < 2:
        raise ValueError(f"attention_varlen: {name} must be a 1-D tensor of B + 1 row offsets (B >= 1), got "
                         f"{tuple(cu.shape) if isinstance(cu, torch.Tensor) else cu!r}")
    if cu.dtype != torch.int32 or cu.device != device:
        raise ValueError(f"attention_varlen: {name} must be int32 on {device} (q's device), got "
                         f"{cu.dtype} on {cu.device}")
    if cu.stride(0) != 1:   # the kernels read offset i at cu + i
        raise ValueError(f"attention_varlen: {name} must be contiguous, got a view with stride {cu.stride(0)}; "
                         "call .contiguous()")


def _check_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal, validate):
    """Refuse what the kernels cannot take; return the longest query and key sequences' lengths."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 3:
            raise ValueError(f"attention_varlen: {name} must be a 3-D tensor (T, H, D) of packed tokens, got "
                             f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}")
    (TQ, HQ, D), TK = q.shape, k.shape[0]
    if TQ == 0 or TK == 0:
        raise ValueError(f"attention_varlen: q holds {TQ} tokens and k {TK}; pack at least one of each")
    if k.shape != v.shape or k.shape[2] != D:
        raise ValueError(f"attention_varlen: k and v must have the same shape (Tk, Hkv, D) with D = {D} as in q "
                         f"{tuple(q.shape)}, got k {tuple(k.shape)}, v {tuple(v.shape)}")
    if cu_k is None and TK != TQ:
        raise ValueError(f"attention_varlen: k has {TK} tokens and q {TQ}; with one cu_seqlens they must be "
                         "equal (pass cu_seqlens_k for keys packed apart from the queries)")
    try:  # one token of each, as (1, H, 1, D): attention.py's checks of device, dtype, head dim and GQA
        fa._check_inputs(*(t[:1].transpose(0, 1).unsqueeze(0) for t in (q, k, v)))
    except ValueError as e:
        raise ValueError(str(e).replace("attention:", "attention_varlen:", 1)) from None
    _offsets("cu_seqlens", cu_q, q.device)
    if cu_k is not None:
        _offsets("cu_seqlens_k", cu_k, q.device)
        if cu_k.numel() != cu_q.numel():
            raise ValueError(f"attention_varlen: cu_seqlens_k has {cu_k.numel()} offsets and cu_seqlens "
                             f"{cu_q.numel()}; both must list the same B + 1 sequence boundaries")
    if (cu_q.numel() - 1) * HQ > 65535:   # the grid's second dimension: one program column per (b, h)
        raise ValueError(f"attention_varlen: {cu_q.numel() - 1} sequences x {HQ} heads is more than the "
                         "65535 program columns a launch may have; split the batch")
    if not validate:
        if max_q is None or (cu_k is not None and max_k is None):
            raise ValueError("attention_varlen: validate=False needs max_seqlen (and max_seqlen_k with "
                             "cu_seqlens_k): the grid is sized from them")
        return int(max_q), int(max_q if cu_k is None else max_k)
    # one read back to the host for all the checks below
    ck = cu_q if cu_k is None else cu_k
    lq, lk = cu_q.diff(), ck.diff()
    (q0, q1, q_min, q_max, k0, k1, k_min, k_max, fewer_keys, no_keys) = torch.stack([
        cu_q[0], cu_q[-1], lq.min(), lq.max(), ck[0], ck[-1], lk.min(), lk.max(),
        (lk < lq).sum(), ((lk == 0) & (lq > 0)).sum()]).tolist()
    offsets = [("cu_seqlens", "q", q0, q1, q_min, TQ)]
    if cu_k is not None:
        offsets.append(("cu_seqlens_k", "k", k0, k1, k_min, TK))
    for name, of, first, last, smallest, total in offsets:
        if first != 0 or last != total or smallest < 0:
            raise ValueError(f"attention_varlen: {name} must rise from 0 to {total} (the tokens in {of}) and "
                             f"never fall; got first {first}, last {last}, smallest step {smallest}")
    if no_keys:
        raise ValueError(f"attention_varlen: {no_keys} sequence(s) have queries but no keys; their softmax "
                         "would be over nothing")
    if causal and fewer_keys:
        raise ValueError(f"attention_varlen: causal=True with fewer keys than queries in {fewer_keys} "
                         "sequence(s): the mask ends at the last key (query i sees keys up to "
                         "i + n_k - n_q), so the first queries would see no key")
    for name, given, longest in (("max_seqlen", max_q, q_max), ("max_seqlen_k", max_k, k_max)):
        if given is not None and given < longest:
            raise ValueError(f"attention_varlen: {name} = {given} is less than the longest sequence ({longest})")
    return (q_max if max_q is None else int(max_q)), (k_max if max_k is None or cu_k is None else int(max_k))


def _forward_varlen(q, k, v, cu_q, cu_k, max_q, causal, scale):
    TQ, HQ, D = q.shape
    cfg = dict(fa.FWD_CONFIGS[(D, causal)])
    if fa.INTERPRET:
        cfg.update(BLOCK_M=16, BLOCK_N=16)
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = torch.empty((HQ, TQ), device=q.device, dtype=torch.float32)
    grid = (triton.cdiv(max_q, cfg["BLOCK_M"]), (cu_q.numel() - 1) * HQ)
    attn_fwd_varlen[grid](q, k, v, o, lse, cu_q, cu_k, *q.stride()[:2], *k.stride()[:2], *v.stride()[:2],
                          *o.stride()[:2], HQ, HQ // k.shape[1], TQ, scale * fa.LOG2E, HEAD_DIM=D, CAUSAL=causal,
                          KEYS_APART=cu_k is not cu_q, **cfg)
    return o, lse


def _backward_varlen(q, k, v, o, lse, do, cu_q, cu_k, max_q, max_k, causal, scale):
    TQ, HQ, D = q.shape
    HKV, B = k.shape[1], cu_q.numel() - 1
    cfg = dict(fa.BWD_CONFIGS[(D, causal)])
    if fa.INTERPRET:
        cfg.update(DKDV=(16, 16, 4, 1), DQ=(16, 16, 4, 1))
    (m1, n1, w1, s1), (m2, n2, w2, s2) = cfg["DKDV"], cfg["DQ"]
    # attention.py's preprocess on the packed query rows seen as one sequence: delta is (Hq, Tq) like lse
    delta = torch.empty((HQ, TQ), device=q.device, dtype=torch.float32)
    fa.attn_bwd_preprocess[(triton.cdiv(TQ, 64), HQ)](o, do, delta, 0, o.stride(1), o.stride(0),
                                                      0, do.stride(1), do.stride(0), HQ, TQ, HEAD_DIM=D, BLOCK_M=64)
    dq, dk, dv = (torch.empty_like(t, memory_format=torch.contiguous_format) for t in (q, k, v))
    attn_bwd_dkdv_varlen[(triton.cdiv(max_k, n1), B * HKV)](
        q, k, v, do, dk, dv, lse, delta, cu_q, cu_k, *q.stride()[:2], *k.stride()[:2], *v.stride()[:2],
        *do.stride()[:2], *dk.stride()[:2], *dv.stride()[:2], HKV, HQ // HKV, TQ, scale, scale * fa.LOG2E,
        HEAD_DIM=D, BLOCK_M=m1, BLOCK_N=n1, CAUSAL=causal, KEYS_APART=cu_k is not cu_q, num_warps=w1, num_stages=s1)
    attn_bwd_dq_varlen[(triton.cdiv(max_q, m2), B * HQ)](
        q, k, v, do, dq, lse, delta, cu_q, cu_k, *q.stride()[:2], *k.stride()[:2], *v.stride()[:2],
        *do.stride()[:2], *dq.stride()[:2], HQ, HQ // HKV, TQ, scale, scale * fa.LOG2E,
        HEAD_DIM=D, BLOCK_M=m2, BLOCK_N=n2, CAUSAL=causal, KEYS_APART=cu_k is not cu_q, num_warps=w2, num_stages=s2)
    return dq, dk, dv


class VarlenFlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, cu_q, cu_k, max_q, max_k, causal, scale):
        dtype = q.dtype
        if fa.INTERPRET and dtype == torch.bfloat16:
            q, k, v = q.float(), k.float(), v.float()      # the interpreter's tl.dot mishandles bf16
        q, k, v = (fa._tma_ready(t) for t in (q, k, v))
        triton.set_allocator(fa._alloc)
        o, lse = _forward_varlen(q, k, v, cu_q, cu_k, max_q, causal, scale)
        ctx.save_for_backward(q, k, v, o, lse, cu_q, cu_k)
        ctx.max_q, ctx.max_k, ctx.causal, ctx.scale = max_q, max_k, causal, scale
        return o.to(dtype)

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse, cu_q, cu_k = ctx.saved_tensors
        dtype = do.dtype
        do = fa._tma_ready(do.to(q.dtype))
        triton.set_allocator(fa._alloc)
        dq, dk, dv = _backward_varlen(q, k, v, o, lse, do, cu_q, cu_k, ctx.max_q, ctx.max_k, ctx.causal, ctx.scale)
        return dq.to(dtype), dk.to(dtype), dv.to(dtype), None, None, None, None, None, None


def attention_varlen(q, k, v, cu_seqlens, max_seqlen=None, causal=False, scale=None, validate=True,
                     cu_seqlens_k=None, max_seqlen_k=None):
    """Attention within each packed sequence, differentiable. Keys and values are packed like the queries
    (one cu_seqlens), or apart from them with cu_seqlens_k (cross-attention, or new queries against a longer
    history of keys); with causal=True the mask then ends at the last key, query i seeing keys up to
    i + n_k - n_q. validate=True reads the offsets back once (a host sync) to refuse bad ones and a
    max_seqlen below the longest sequence; with validate=False and the max lengths given there is no sync
    and nothing checks them: offsets that do not rise from 0 to T make the kernels read and write outside
    the tensors, a max_seqlen below the longest leaves that sequence's last rows of the output and of dQ
    unwritten (a max_seqlen_k, rows of dK and dV), and with causal=True a sequence with fewer keys than
    queries gives NaN in the rows that see no key."""
    max_q, max_k = _check_varlen(q, k, v, cu_seqlens, cu_seqlens_k, max_seqlen, max_seqlen_k, causal, validate)
    cu_k = cu_seqlens if cu_seqlens_k is None else cu_seqlens_k
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return VarlenFlashAttention.apply(q, k, v, cu_seqlens, cu_k, max_q, max_k, bool(causal), scale)
# --8<-- [end:wrapper]


# --8<-- [start:check]
def reference_varlen(q, k, v, cu_seqlens, causal=False, scale=None, cu_seqlens_k=None):
    """fp32 attention one sequence at a time, the causal mask ending at each sequence's last key."""
    cu_q = cu_seqlens.tolist()
    cu_k = cu_q if cu_seqlens_k is None else cu_seqlens_k.tolist()
    group = q.shape[1] // k.shape[1]
    scale = scale or 1.0 / math.sqrt(q.shape[-1])
    outs = []
    for b in range(len(cu_q) - 1):
        qb = q[cu_q[b]:cu_q[b + 1]].float().transpose(0, 1)                       # (Hq, n_q, D)
        kb, vb = (t[cu_k[b]:cu_k[b + 1]].float().repeat_interleave(group, 1).transpose(0, 1) for t in (k, v))
        s = (qb @ kb.transpose(-1, -2)) * scale
        if causal:
            n_q, n_k = qb.shape[1], kb.shape[1]
            s = s.masked_fill(torch.ones(n_q, n_k, dtype=torch.bool, device=q.device).triu(n_k - n_q + 1),
                              float("-inf"))
        outs.append((torch.softmax(s, dim=-1) @ vb).transpose(0, 1))
    return torch.cat(outs)


def packed(lengths, HQ, HKV, D, dtype=torch.float16, seed=0, device=fa.DEVICE, lengths_k=None):
    """Random q, k, v (requires_grad) for sequences of the given lengths, and their offsets cu_q, cu_k (the
    same tensor unless lengths_k gives the keys' lengths)."""
    torch.manual_seed(seed)
    cu_q = torch.tensor([0, *lengths], device=device).cumsum(0).to(torch.int32)
    cu_k = cu_q if lengths_k is None else torch.tensor([0, *lengths_k], device=device).cumsum(0).to(torch.int32)
    q = torch.randn(int(cu_q[-1]), HQ, D, device=device, dtype=dtype, requires_grad=True)
    k, v = (torch.randn(int(cu_k[-1]), HKV, D, device=device, dtype=dtype, requires_grad=True) for _ in range(2))
    return q, k, v, cu_q, cu_k


def check_varlen(lengths, HQ, HKV, D, causal, dtype=torch.float16, seed=0, lengths_k=None):
    """Forward and all three gradients against the per-sequence fp32 reference; returns the worst error."""
    q, k, v, cu_q, cu_k = packed(lengths, HQ, HKV, D, dtype, seed, lengths_k=lengths_k)
    cu_k_arg = None if lengths_k is None else cu_k
    do = torch.randn_like(q)
    o = attention_varlen(q, k, v, cu_q, causal=causal, cu_seqlens_k=cu_k_arg)
    grads = torch.autograd.grad(o, (q, k, v), do)
    qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
    ref = reference_varlen(qr, kr, vr, cu_q, causal, cu_seqlens_k=cu_k_arg)
    refs = torch.autograd.grad(ref, (qr, kr, vr), do.float())
    errs = [fa.rel_err(o, ref)] + [fa.rel_err(g, r) for g, r in zip(grads, refs)]
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
    assert o.dtype == dtype and max(errs) < tol, (lengths, lengths_k, HQ, HKV, D, causal, dtype, errs)
    return max(errs)


if __name__ == "__main__":
    if fa.DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("attention_varlen.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    if fa.INTERPRET:     # tiny: an empty sequence, a single token, ragged tails; keys packed apart
        cases = [([37, 1, 0, 20], 2, 1, 64, True, torch.float16), ([21, 16], 2, 2, 64, False, torch.bfloat16),
                 ([5, 0, 12], 2, 1, 64, True, torch.float16, 0, [40, 3, 12])]
    else:                # lengths far apart, GQA 2:1, every head dim, both masks; bf16 on one case; keys apart
        lengths = [1000, 1, 513, 2048, 77, 0, 1537]
        cases = [(lengths, 4, 2, d, c, torch.float16) for d in fa.HEAD_DIMS for c in (False, True)]
        cases += [(lengths, 8, 8, 128, True, torch.bfloat16)]
        cases += [([300, 1, 0, 700], 4, 2, d, True, torch.float16, 0, [1000, 513, 64, 700]) for d in fa.HEAD_DIMS]
    worst = max(check_varlen(*case) for case in cases)
    print(f"packed batches: forward and dQ, dK, dV match fp32 per sequence on {len(cases)} cases "
          f"(an empty sequence, GQA, causal and full, keys packed apart): worst relative error {worst:.1e}")
# --8<-- [end:check]
