"""FlashAttention forward and backward in Triton: a trainable attention(q, k, v, causal=..., scale=...).

q of shape (B, Hq, N, D), k and v of shape (B, Hkv, N, D) with Hq a multiple of Hkv (grouped-query
attention), D in {64, 128, 256}, fp16 or bf16, any N (ragged tails are masked), causal or full.
Run it: `python snippets/triton_deep_dive/attention.py` on a Hopper GPU, or with TRITON_INTERPRET=1
on a CPU (small sizes).
"""
# --8<-- [start:forward]
import math
import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"
LOG2E = 1.4426950408889634          # exp(x) = exp2(x * log2 e): exp2 is the native instruction


@triton.jit
def _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, lo, hi, offs_m, N_CTX, qk_scale,
               BLOCK_N: tl.constexpr,
               MASK: tl.constexpr):         # 0: none, 1: causal (key <= query), 2: keys past N_CTX
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = k_desc.load([start_n, 0])
        s = tl.dot(q, k.T) * qk_scale                        # scores in the log2 domain, fp32
        if MASK == 1:
            s = tl.where(offs_m[:, None] >= (start_n + offs_n)[None, :], s, -float("inf"))
        if MASK == 2:
            s = tl.where((start_n + offs_n)[None, :] < N_CTX, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))                # finite: every row's first tile holds key 0
        p = tl.math.exp2(s - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)                    # rescales everything summed so far
        l_i = l_i * alpha + tl.sum(p, 1)
        v = v_desc.load([start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd(Q, K, V, O, LSE,               # q, k, v, o: (B, H, N, D) with unit stride along D; LSE: (B, Hq, N) fp32
             sq_b, sq_h, sq_n, sk_b, sk_h, sk_n, sv_b, sv_h, sv_n, so_b, so_h, so_n,
             HQ, GROUP, N_CTX, qk_scale,    # GROUP = Hq // Hkv query heads share one key/value head
             HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             CAUSAL: tl.constexpr):
    # causal: the last query blocks see the most keys, so they start first (shorter tail)
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    b = (tl.program_id(1) // HQ).to(tl.int64)
    h = (tl.program_id(1) % HQ).to(tl.int64)
    hk = h // GROUP
    # 2-D TMA descriptors for this (batch, head): rows past N_CTX load as zeros, stores past it vanish
    q_desc = tl.make_tensor_descriptor(Q + b * sq_b + h * sq_h, [N_CTX, HEAD_DIM], [sq_n, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K + b * sk_b + hk * sk_h, [N_CTX, HEAD_DIM], [sk_n, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + b * sv_b + hk * sv_h, [N_CTX, HEAD_DIM], [sv_n, 1], [BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(O + b * so_b + h * so_h, [N_CTX, HEAD_DIM], [so_n, 1], [BLOCK_M, HEAD_DIM])

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)     # running row max (log2 domain)
    l_i = tl.zeros([BLOCK_M], tl.float32)                   # running row sum of exp2
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)         # running, unnormalized output
    q = q_desc.load([pid_m * BLOCK_M, 0])                  # stays on chip for the whole loop
    if CAUSAL:
        # key tiles left of the diagonal need no mask; tiles right of it are skipped entirely
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, 0, pid_m * BLOCK_M, offs_m, N_CTX,
                                   qk_scale, BLOCK_N, 0)
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, pid_m * BLOCK_M, (pid_m + 1) * BLOCK_M,
                                   offs_m, N_CTX, qk_scale, BLOCK_N, 1)
    else:
        n_full = (N_CTX // BLOCK_N) * BLOCK_N                # whole tiles first, then the ragged tail
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, 0, n_full, offs_m, N_CTX,
                                   qk_scale, BLOCK_N, 0)
        acc, l_i, m_i = _fwd_tiles(acc, l_i, m_i, q, k_desc, v_desc, n_full, N_CTX, offs_m, N_CTX,
                                   qk_scale, BLOCK_N, 2)
    # the backward recomputes P from this one number per row: log2 of the softmax denominator
    tl.store(LSE + tl.program_id(1).to(tl.int64) * N_CTX + offs_m, m_i + tl.math.log2(l_i), mask=offs_m < N_CTX)
    o_desc.store([pid_m * BLOCK_M, 0], (acc / l_i[:, None]).to(O.dtype.element_ty))
# --8<-- [end:forward]


# --8<-- [start:backward]
@triton.jit
def attn_bwd_preprocess(O, DO, DELTA,        # DELTA[b, h, i] = sum_d dO[i, d] * O[i, d], fp32
                        so_b, so_h, so_n, sd_b, sd_h, sd_n, HQ, N_CTX,
                        HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    b = (tl.program_id(1) // HQ).to(tl.int64)
    h = (tl.program_id(1) % HQ).to(tl.int64)
    rows = offs_m[:, None] < N_CTX
    o = tl.load(O + b * so_b + h * so_h + offs_m[:, None] * so_n + offs_d[None, :], mask=rows, other=0.0)
    do = tl.load(DO + b * sd_b + h * sd_h + offs_m[:, None] * sd_n + offs_d[None, :], mask=rows, other=0.0)
    delta = tl.sum(o.to(tl.float32) * do.to(tl.float32), axis=1)
    tl.store(DELTA + tl.program_id(1).to(tl.int64) * N_CTX + offs_m, delta, mask=offs_m < N_CTX)


@triton.jit
def _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, lo, hi, offs_n, N_CTX, qk_scale,
                BLOCK_M: tl.constexpr, CAUSAL_MASK: tl.constexpr):
    offs_m0 = tl.arange(0, BLOCK_M)
    for start_m in tl.range(lo, hi, BLOCK_M):
        start_m = tl.multiple_of(start_m, BLOCK_M)
        offs_m = start_m + offs_m0
        q = q_desc.load([start_m, 0])
        do = do_desc.load([start_m, 0])
        # rows past N_CTX: q and dO load as zeros, so they add nothing to dK or dV whatever P is; keys past
        # N_CTX (this block's rows) may come out inf or NaN, and the descriptor's store drops those rows
        lse = tl.load(lse_ptr + offs_m, mask=offs_m < N_CTX, other=0.0)
        delta = tl.load(delta_ptr + offs_m, mask=offs_m < N_CTX, other=0.0)
        # work with transposed tiles (keys along rows): P^T = exp2(K Q^T * scale - lse)
        p_t = tl.math.exp2(tl.dot(k, q.T) * qk_scale - lse[None, :])
        if CAUSAL_MASK:
            p_t = tl.where(offs_m[None, :] >= offs_n[:, None], p_t, 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv)                # dV += P^T dO
        dp_t = tl.dot(v, do.T)                               # (dO V^T)^T
        ds_t = p_t * (dp_t - delta[None, :])                 # dS = P * (dP - rowsum(dO * O))
        dk = tl.dot(ds_t.to(q.dtype), q, dk)                 # dK += dS^T Q   (scale applied at the end)
    return dk, dv


@triton.jit
def attn_bwd_dkdv(Q, K, V, DO, DK, DV, LSE, DELTA,   # DK, DV: (B, Hkv, N, D), one program per key block
                  sq_b, sq_h, sq_n, sk_b, sk_h, sk_n, sv_b, sv_h, sv_n, sd_b, sd_h, sd_n,
                  sdk_b, sdk_h, sdk_n, sdv_b, sdv_h, sdv_n,
                  HQ, HKV, GROUP, N_CTX, sm_scale, qk_scale,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  CAUSAL: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK_N
    b = (tl.program_id(1) // HKV).to(tl.int64)
    hk = (tl.program_id(1) % HKV).to(tl.int64)
    offs_n = start_n + tl.arange(0, BLOCK_N)
    k_desc = tl.make_tensor_descriptor(K + b * sk_b + hk * sk_h, [N_CTX, HEAD_DIM], [sk_n, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + b * sv_b + hk * sv_h, [N_CTX, HEAD_DIM], [sv_n, 1], [BLOCK_N, HEAD_DIM])
    k = k_desc.load([start_n, 0])
    v = v_desc.load([start_n, 0])
    dk = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    dv = tl.zeros([BLOCK_N, HEAD_DIM], tl.float32)
    # every query head of the group reads this key/value head: sum their contributions on chip, no atomics
    for g in range(GROUP):
        h = hk * GROUP + g
        q_desc = tl.make_tensor_descriptor(Q + b * sq_b + h * sq_h, [N_CTX, HEAD_DIM], [sq_n, 1], [BLOCK_M, HEAD_DIM])
        do_desc = tl.make_tensor_descriptor(DO + b * sd_b + h * sd_h, [N_CTX, HEAD_DIM], [sd_n, 1], [BLOCK_M, HEAD_DIM])
        lse_ptr = LSE + (b * HQ + h) * N_CTX
        delta_ptr = DELTA + (b * HQ + h) * N_CTX
        if CAUSAL:
            # queries above the diagonal never see this key block: start at the diagonal, mask only there
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, start_n, start_n + BLOCK_N,
                                 offs_n, N_CTX, qk_scale, BLOCK_M, True)
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, start_n + BLOCK_N, N_CTX,
                                 offs_n, N_CTX, qk_scale, BLOCK_M, False)
        else:
            dk, dv = _dkdv_tiles(dk, dv, k, v, q_desc, do_desc, lse_ptr, delta_ptr, 0, N_CTX,
                                 offs_n, N_CTX, qk_scale, BLOCK_M, False)
    dk_desc = tl.make_tensor_descriptor(DK + b * sdk_b + hk * sdk_h, [N_CTX, HEAD_DIM], [sdk_n, 1], [BLOCK_N, HEAD_DIM])
    dv_desc = tl.make_tensor_descriptor(DV + b * sdv_b + hk * sdv_h, [N_CTX, HEAD_DIM], [sdv_n, 1], [BLOCK_N, HEAD_DIM])
    dk_desc.store([start_n, 0], (dk * sm_scale).to(DK.dtype.element_ty))
    dv_desc.store([start_n, 0], dv.to(DV.dtype.element_ty))


@triton.jit
def _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, lo, hi, offs_m, qk_scale,
              BLOCK_N: tl.constexpr,
              MASK: tl.constexpr):          # 0: none, 1: causal (key <= query), 2: P clamped at 1 (see below)
    offs_n0 = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = k_desc.load([start_n, 0])
        v = v_desc.load([start_n, 0])
        p = tl.math.exp2(tl.dot(q, k.T) * qk_scale - lse[:, None])
        if MASK == 1:
            p = tl.where(offs_m[:, None] >= (start_n + offs_n0)[None, :], p, 0.0)
        # keys past N_CTX load as zeros: their score is 0, so P = exp2(-lse), which overflows to inf where
        # every real score of the row is very low (and inf * 0 is NaN in dS K). P <= 1 at every real key, so
        # one min per score makes those finite (dS K is then 0 there) and changes nothing else
        if MASK == 2:
            p = tl.minimum(p, 1.0)
        ds = p * (tl.dot(do, v.T) - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)                   # dQ += dS K   (scale applied at the end)
    return dq


@triton.jit
def attn_bwd_dq(Q, K, V, DO, DQ, LSE, DELTA,         # one program per query block: dQ needs a sum over keys
                sq_b, sq_h, sq_n, sk_b, sk_h, sk_n, sv_b, sv_h, sv_n, sd_b, sd_h, sd_n, sdq_b, sdq_h, sdq_n,
                HQ, GROUP, N_CTX, sm_scale, qk_scale,
                HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                CAUSAL: tl.constexpr):
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    start_m = pid_m * BLOCK_M
    b = (tl.program_id(1) // HQ).to(tl.int64)
    h = (tl.program_id(1) % HQ).to(tl.int64)
    hk = h // GROUP
    offs_m = start_m + tl.arange(0, BLOCK_M)
    q_desc = tl.make_tensor_descriptor(Q + b * sq_b + h * sq_h, [N_CTX, HEAD_DIM], [sq_n, 1], [BLOCK_M, HEAD_DIM])
    do_desc = tl.make_tensor_descriptor(DO + b * sd_b + h * sd_h, [N_CTX, HEAD_DIM], [sd_n, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K + b * sk_b + hk * sk_h, [N_CTX, HEAD_DIM], [sk_n, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + b * sv_b + hk * sv_h, [N_CTX, HEAD_DIM], [sv_n, 1], [BLOCK_N, HEAD_DIM])
    q = q_desc.load([start_m, 0])
    do = do_desc.load([start_m, 0])
    row = tl.program_id(1).to(tl.int64) * N_CTX
    lse = tl.load(LSE + row + offs_m, mask=offs_m < N_CTX, other=0.0)
    delta = tl.load(DELTA + row + offs_m, mask=offs_m < N_CTX, other=0.0)
    dq = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    if CAUSAL:
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, 0, start_m, offs_m, qk_scale, BLOCK_N, 0)
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, start_m, start_m + BLOCK_M, offs_m, qk_scale,
                       BLOCK_N, 1)
    else:
        dq = _dq_tiles(dq, q, do, lse, delta, k_desc, v_desc, 0, N_CTX, offs_m, qk_scale, BLOCK_N, 2)
    dq_desc = tl.make_tensor_descriptor(DQ + b * sdq_b + h * sdq_h, [N_CTX, HEAD_DIM], [sdq_n, 1], [BLOCK_M, HEAD_DIM])
    dq_desc.store([start_m, 0], (dq * sm_scale).to(DQ.dtype.element_ty))
# --8<-- [end:backward]


# --8<-- [start:wrapper]
# Launch settings per (head dim, causal), the fastest correct rows of the sweep on the H200 (see "Tuning").
# BLOCK_M must be a multiple of BLOCK_N in the forward and dQ kernels, BLOCK_N a multiple of BLOCK_M in dK/dV.
FWD_CONFIGS = {(64, False): dict(BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3),
               (64, True): dict(BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3),
               (128, False): dict(BLOCK_M=128, BLOCK_N=128, num_warps=8, num_stages=2),
               (128, True): dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=3),
               # D = 256: a 128 x 256 query tile (64 KB) and two stages of 64-row K and V tiles (128 KB)
               (256, False): dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=2),
               (256, True): dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=2)}
# The two backward kernels are timed on their own on the H200 and take separate settings:
# (BLOCK_M, BLOCK_N, num_warps, num_stages) for dK/dV and for dQ.
BWD_CONFIGS = {(64, False): dict(DKDV=(32, 64, 4, 3), DQ=(128, 64, 8, 3)),
               (64, True): dict(DKDV=(64, 64, 4, 3), DQ=(128, 64, 8, 3)),
               (128, False): dict(DKDV=(64, 64, 4, 2), DQ=(128, 64, 8, 3)),
               (128, True): dict(DKDV=(64, 64, 4, 2), DQ=(128, 64, 8, 4)),
               (256, False): dict(DKDV=(64, 64, 8, 2), DQ=(64, 64, 4, 2)),
               (256, True): dict(DKDV=(64, 64, 8, 2), DQ=(64, 64, 4, 2))}
HEAD_DIMS = (64, 128, 256)
DTYPES = (torch.float16, torch.bfloat16)


def _alloc(size: int, alignment: int, stream):
    # tl.make_tensor_descriptor writes each descriptor to a scratch buffer in device memory
    return torch.empty(size, dtype=torch.int8, device=DEVICE)


def _tma_ready(t: torch.Tensor) -> torch.Tensor:
    """TMA needs unit stride along D, a 16-byte aligned base and 16-byte multiples for other strides."""
    ok = (t.stride(-1) == 1 and t.data_ptr() % 16 == 0
          and all((s * t.element_size()) % 16 == 0 for s in t.stride()[:-1]))
    return t if ok else t.contiguous()


def _empty_like_layout(t: torch.Tensor) -> torch.Tensor:
    """An empty (B, H, N, D) tensor with t's order of dims in memory: token-major, (B, N, H, D), when t is a
    head view of a (B, N, H * D) projection, as SDPA's cuDNN backend returns it; else contiguous. The
    caller's o.transpose(1, 2).reshape(B, N, H * D) is then a view, not a copy."""
    B, H, N, D = t.shape
    if H > 1 and N > 1 and t.stride(1) < t.stride(2):
        return torch.empty((B, N, H, D), device=t.device, dtype=t.dtype).transpose(1, 2)
    return torch.empty((B, H, N, D), device=t.device, dtype=t.dtype)


def _check_inputs(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, torch.Tensor) or t.dim() != 4:
            raise ValueError(f"attention: {name} must be a 4-D tensor (B, H, N, D), got "
                             f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}")
    if not INTERPRET and not all(t.is_cuda for t in (q, k, v)):
        raise ValueError(f"attention: q, k, v must be CUDA tensors, got devices {q.device}, {k.device}, {v.device} "
                         "(or set TRITON_INTERPRET=1 to run on the CPU)")
    if not q.device == k.device == v.device:
        raise ValueError(f"attention: q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in DTYPES:
        raise ValueError(f"attention: q, k, v must all be float16 or all bfloat16, got {q.dtype}, {k.dtype}, {v.dtype}")
    B, HQ, N, D = q.shape
    if k.shape != v.shape or k.shape[0] != B or k.shape[2:] != (N, D):
        raise ValueError(f"attention: k and v must have shape (B, Hkv, N, D) = ({B}, Hkv, {N}, {D}) to match q "
                         f"{tuple(q.shape)}, got k {tuple(k.shape)}, v {tuple(v.shape)}")
    if k.shape[1] == 0 or HQ % k.shape[1]:
        raise ValueError(f"attention: query heads ({HQ}) must be a multiple of key/value heads ({k.shape[1]})")
    if D not in HEAD_DIMS:
        raise ValueError(f"attention: head dim {D} is not supported; use one of {HEAD_DIMS} "
                         "(pad the head dim, e.g. 80 -> 128, and slice the output)")
    if N == 0 or B == 0:
        raise ValueError(f"attention: empty input {tuple(q.shape)}: B and N must be at least 1")


def _forward(q, k, v, causal, scale):
    B, HQ, N, D = q.shape
    cfg = dict(FWD_CONFIGS[(D, causal)])
    if INTERPRET:
        cfg.update(BLOCK_M=16, BLOCK_N=16)
    o = _empty_like_layout(q)
    lse = torch.empty((B, HQ, N), device=q.device, dtype=torch.float32)
    grid = (triton.cdiv(N, cfg["BLOCK_M"]), B * HQ)
    attn_fwd[grid](q, k, v, o, lse, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                   HQ, HQ // k.shape[1], N, scale * LOG2E, HEAD_DIM=D, CAUSAL=causal, **cfg)
    return o, lse


def _backward(q, k, v, o, lse, do, causal, scale):
    B, HQ, N, D = q.shape
    HKV = k.shape[1]
    cfg = dict(BWD_CONFIGS[(D, causal)])
    if INTERPRET:
        cfg.update(DKDV=(16, 16, 4, 1), DQ=(16, 16, 4, 1))
    (m1, n1, w1, s1), (m2, n2, w2, s2) = cfg["DKDV"], cfg["DQ"]
    delta = torch.empty((B, HQ, N), device=q.device, dtype=torch.float32)
    attn_bwd_preprocess[(triton.cdiv(N, 64), B * HQ)](o, do, delta, *o.stride()[:3], *do.stride()[:3], HQ, N,
                                                      HEAD_DIM=D, BLOCK_M=64)
    dq, dk, dv = _empty_like_layout(q), _empty_like_layout(k), _empty_like_layout(v)
    attn_bwd_dkdv[(triton.cdiv(N, n1), B * HKV)](
        q, k, v, do, dk, dv, lse, delta, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *do.stride()[:3],
        *dk.stride()[:3], *dv.stride()[:3], HQ, HKV, HQ // HKV, N, scale, scale * LOG2E,
        HEAD_DIM=D, BLOCK_M=m1, BLOCK_N=n1, CAUSAL=causal, num_warps=w1, num_stages=s1)
    attn_bwd_dq[(triton.cdiv(N, m2), B * HQ)](
        q, k, v, do, dq, lse, delta, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *do.stride()[:3],
        *dq.stride()[:3], HQ, HQ // HKV, N, scale, scale * LOG2E,
        HEAD_DIM=D, BLOCK_M=m2, BLOCK_N=n2, CAUSAL=causal, num_warps=w2, num_stages=s2)
    return dq, dk, dv


class FlashAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, causal, scale):
        dtype = q.dtype
        if INTERPRET and dtype == torch.bfloat16:
            q, k, v = q.float(), k.float(), v.float()      # the interpreter's tl.dot mishandles bf16
        q, k, v = (_tma_ready(t) for t in (q, k, v))
        triton.set_allocator(_alloc)
        o, lse = _forward(q, k, v, causal, scale)
        ctx.save_for_backward(q, k, v, o, lse)              # O(N) extra: no N x N matrix is kept
        ctx.causal, ctx.scale = causal, scale
        return o.to(dtype)

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dtype = do.dtype
        do = _tma_ready(do.to(q.dtype))
        triton.set_allocator(_alloc)
        dq, dk, dv = _backward(q, k, v, o, lse, do, ctx.causal, ctx.scale)
        return dq.to(dtype), dk.to(dtype), dv.to(dtype), None, None


def attention(q, k, v, causal=False, scale=None):
    """softmax(q k^T * scale [+ causal mask]) v, differentiable; scale defaults to 1/sqrt(D)."""
    _check_inputs(q, k, v)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return FlashAttention.apply(q, k, v, bool(causal), scale)
# --8<-- [end:wrapper]


# --8<-- [start:check]
def reference(q, k, v, causal=False, scale=None):
    """fp32 attention that materializes the score matrix; repeats k/v heads for grouped-query attention."""
    group = q.shape[1] // k.shape[1]
    q, k, v = q.float(), k.float().repeat_interleave(group, 1), v.float().repeat_interleave(group, 1)
    s = (q @ k.transpose(-1, -2)) * (scale or 1.0 / math.sqrt(q.shape[-1]))
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def rel_err(a, b):
    # relative to the reference's norm, or absolute where the reference is ~0 (N = 1: dQ = dK = 0)
    return ((a.float() - b.float()).norm() / b.float().norm().clamp(min=1.0)).item()


def check(B, HQ, HKV, N, D, causal, dtype=torch.float16, seed=0):
    """Forward and all three gradients against the fp32 reference; returns the worst relative error."""
    torch.manual_seed(seed)
    q = torch.randn(B, HQ, N, D, device=DEVICE, dtype=dtype, requires_grad=True)
    k, v = (torch.randn(B, HKV, N, D, device=DEVICE, dtype=dtype, requires_grad=True) for _ in range(2))
    do = torch.randn(B, HQ, N, D, device=DEVICE, dtype=dtype)
    o = attention(q, k, v, causal=causal)
    grads = torch.autograd.grad(o, (q, k, v), do)
    qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
    ref = reference(qr, kr, vr, causal)
    refs = torch.autograd.grad(ref, (qr, kr, vr), do.float())
    errs = [rel_err(o, ref)] + [rel_err(g, r) for g, r in zip(grads, refs)]
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
    assert o.dtype == dtype and max(errs) < tol, (B, HQ, HKV, N, D, causal, dtype, errs)
    return max(errs)


if __name__ == "__main__":
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("attention.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    if INTERPRET:     # tiny ragged shapes: the interpreter runs every program in Python
        cases = [(1, 2, 1, 37, 64, True, torch.float16), (1, 2, 2, 21, 64, False, torch.bfloat16)]
    else:             # ragged lengths, GQA 2:1, every head dim, both masks; bf16 on the largest shape
        cases = [(2, 4, 2, 1000, d, c, torch.float16) for d in HEAD_DIMS for c in (False, True)]
        cases += [(1, 8, 8, 1537, d, c, torch.bfloat16) for d, c in ((64, False), (128, True))]
    worst = max(check(b, hq, hkv, n, d, c, dt) for b, hq, hkv, n, d, c, dt in cases)
    print(f"forward and dQ, dK, dV match fp32 on {len(cases)} ragged shapes (GQA, causal and full): "
          f"worst relative error {'< 2e-2' if worst < 2e-2 else worst}")
# --8<-- [end:check]
