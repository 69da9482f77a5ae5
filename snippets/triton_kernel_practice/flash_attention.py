"""FlashAttention forward core: online softmax over K/V tiles, causal masking, TMA loads.

O = softmax(Q K^T * sm_scale) V for Q, K, V of shape (B, H, N, D) in fp16 or bf16.
Run it: `python snippets/triton_kernel_practice/flash_attention.py` on a Hopper GPU, or with
TRITON_INTERPRET=1 on a CPU (small sizes).
"""
# --8<-- [start:kernel]
import contextlib
import math
import os
import warnings

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"


@triton.jit
def attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, lo, hi, offs_m, N_CTX, qk_scale,
               BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr,
               MASK: tl.constexpr,          # 0: no mask, 1: causal (key <= query), 2: keys past N_CTX
               WARP_SPEC: tl.constexpr):    # let the compiler split loads and math into warp groups
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPEC):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = k_desc.load([start_n, 0])
        qk = tl.dot(q, k.T)                                    # (BLOCK_M, BLOCK_N) scores, fp32
        if MASK == 0:
            # scale folded into the max and the exponent: exp2((s - m) * scale * log2 e)
            m_new = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
            qk = qk * qk_scale - m_new[:, None]
        else:
            if MASK == 1:
                keep = offs_m[:, None] >= (start_n + offs_n)[None, :]
            else:
                keep = (start_n + offs_n)[None, :] < N_CTX
            qk = qk * qk_scale + tl.where(keep, 0.0, -1.0e6)  # a large finite value: never inf - inf
            m_new = tl.maximum(m_i, tl.max(qk, 1))
            qk = qk - m_new[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_new)                       # rescales what was summed so far
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(Q, K, V, O,                     # (B, H, N, D) tensors, unit stride along D
                    sq_b, sq_h, sq_n, sk_b, sk_h, sk_n, sv_b, sv_h, sv_n, so_b, so_h, so_n,
                    B, H, N_CTX, sm_scale,
                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                    CAUSAL: tl.constexpr, WARP_SPEC: tl.constexpr,
                    EVEN_N: tl.constexpr):          # N_CTX % BLOCK_N == 0
    # causal: the last query blocks have the most keys, so launch them first (better tail balance)
    pid_m = tl.num_programs(0) - 1 - tl.program_id(0) if CAUSAL else tl.program_id(0)
    b = tl.program_id(1) // H
    h = tl.program_id(1) % H
    # One 2-D TMA descriptor per (batch, head) and tensor, built on the device: any (B, H, N)
    # strides work, rows past N_CTX load as zeros and are never stored.
    b, h = b.to(tl.int64), h.to(tl.int64)
    q_desc = tl.make_tensor_descriptor(Q + b * sq_b + h * sq_h, [N_CTX, HEAD_DIM], [sq_n, 1], [BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K + b * sk_b + h * sk_h, [N_CTX, HEAD_DIM], [sk_n, 1], [BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V + b * sv_b + h * sv_h, [N_CTX, HEAD_DIM], [sv_n, 1], [BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(O + b * so_b + h * so_h, [N_CTX, HEAD_DIM], [so_n, 1], [BLOCK_M, HEAD_DIM])

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)    # running row max (log2 domain)
    l_i = tl.zeros([BLOCK_M], tl.float32)                  # running row sum of exp2
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)        # running, unnormalized output
    qk_scale = sm_scale * 1.4426950408889634               # log2(e): exp(x) = exp2(x * log2 e)
    q = q_desc.load([pid_m * BLOCK_M, 0])                 # stays on chip for the whole loop

    if CAUSAL:
        # keys strictly left of this query block need no mask ...
        acc, l_i, m_i = attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, 0, pid_m * BLOCK_M, offs_m,
                                   N_CTX, qk_scale, BLOCK_N, HEAD_DIM, 0, False)
        # ... only the diagonal block masks keys right of each query
        acc, l_i, m_i = attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, pid_m * BLOCK_M, (pid_m + 1) * BLOCK_M,
                                   offs_m, N_CTX, qk_scale, BLOCK_N, HEAD_DIM, 1, False)
    else:
        # whole key tiles need no mask; keys past N_CTX load as zeros, so a ragged N_CTX masks its last tile
        n_full = N_CTX if EVEN_N else (N_CTX // BLOCK_N) * BLOCK_N
        acc, l_i, m_i = attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, 0, n_full, offs_m,
                                   N_CTX, qk_scale, BLOCK_N, HEAD_DIM, 0, WARP_SPEC)
        if not EVEN_N:
            acc, l_i, m_i = attn_tiles(acc, l_i, m_i, q, k_desc, v_desc, n_full, N_CTX, offs_m,
                                       N_CTX, qk_scale, BLOCK_N, HEAD_DIM, 2, False)
    out = acc / l_i[:, None]
    o_desc.store([pid_m * BLOCK_M, 0], out.to(O.dtype.element_ty))
# --8<-- [end:kernel]


# --8<-- [start:wrapper]
def _tma_ok(t: torch.Tensor) -> bool:
    return (t.stride(-1) == 1 and t.data_ptr() % 16 == 0
            and all((s * t.element_size()) % 16 == 0 for s in t.stride()[:-1]))


def _allocator(device):
    # tl.make_tensor_descriptor writes each descriptor to a scratch buffer in device memory, on q's device
    return lambda size, alignment, stream: torch.empty(size, dtype=torch.int8, device=device)


# Configurations measured on the H200 (see the tuning section): (HEAD_DIM, causal) -> launch settings.
# Warp specialization stays off: Triton 3.6 documents `warp_specialize` for Blackwell GPUs only
# (the tl.range docstring), and on the H200 it gave wrong outputs with BLOCK_N=64 and in a masked loop.
ATTN_CONFIGS = {
    (64, False): dict(BLOCK_M=128, BLOCK_N=64, WARP_SPEC=False, num_warps=4, num_stages=3),
    (64, True): dict(BLOCK_M=128, BLOCK_N=64, WARP_SPEC=False, num_warps=4, num_stages=3),
    (128, False): dict(BLOCK_M=64, BLOCK_N=64, WARP_SPEC=False, num_warps=4, num_stages=3),
    (128, True): dict(BLOCK_M=64, BLOCK_N=64, WARP_SPEC=False, num_warps=4, num_stages=3),
}


def attention(q, k, v, causal=False, sm_scale=None, **config):
    if q.dim() != 4 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"attention: q, k, v must share one (B, H, N, D) shape, got "
                         f"{tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)}")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"attention: q, k, v must all be float16 or all bfloat16, got {q.dtype}, {k.dtype}, {v.dtype}")
    D = q.shape[-1]
    if D not in (16, 32, 64, 128):
        raise ValueError(f"attention: head dim {D} not supported (16, 32, 64 or 128)")
    if not INTERPRET and not (q.is_cuda and k.is_cuda and v.is_cuda):
        raise ValueError("attention: tensors must be on a CUDA GPU (or set TRITON_INTERPRET=1 to run on the CPU)")
    if not q.device == k.device == v.device:
        raise ValueError(f"attention: q, k, v must be on one device, got {q.device}, {k.device}, {v.device}")
    if not isinstance(causal, bool):
        raise ValueError(f"attention: causal must be True or False, got {causal!r}")
    if q.shape[2] == 0:
        raise ValueError("attention: sequence length must be at least 1")
    # TMA reads any (B, H, N) strides as long as D is contiguous and strides are 16-byte multiples
    # (a copy, not .contiguous(), which returns a contiguous view that starts off a 16-byte boundary as is)
    q, k, v = (t if _tma_ok(t) else t.clone(memory_format=torch.contiguous_format) for t in (q, k, v))
    B, H, N, _ = q.shape
    o = torch.empty((B, H, N, D), device=q.device, dtype=q.dtype)
    cfg = {**ATTN_CONFIGS[(128 if D > 64 else 64, causal)], **config}
    if causal and cfg["BLOCK_M"] % cfg["BLOCK_N"] != 0:   # the unmasked loop would run past the diagonal
        raise ValueError(f"attention: causal needs BLOCK_M to be a multiple of BLOCK_N, got "
                         f"BLOCK_M={cfg['BLOCK_M']}, BLOCK_N={cfg['BLOCK_N']}")
    if cfg["WARP_SPEC"] and (causal or N % cfg["BLOCK_N"] != 0):
        raise ValueError("attention: WARP_SPEC=True only for the unmasked loop (not causal, N % BLOCK_N == 0)")
    if cfg["WARP_SPEC"] and not INTERPRET and torch.cuda.get_device_capability(q.device)[0] < 10:
        warnings.warn("attention: WARP_SPEC=True on a pre-Blackwell GPU: Triton 3.6 documents warp_specialize "
                      "for Blackwell only; check the output", stacklevel=2)
    if INTERPRET:
        cfg.update(BLOCK_M=32, BLOCK_N=16, WARP_SPEC=False)
    if INTERPRET and q.dtype == torch.bfloat16:     # interpreter's tl.dot mishandles bf16 (see gemm.py)
        q, k, v = q.float(), k.float(), v.float()
    triton.set_allocator(_allocator(q.device))   # process-wide: replaces any allocator set before
    grid = (triton.cdiv(N, cfg["BLOCK_M"]), B * H)
    with contextlib.nullcontext() if INTERPRET else torch.cuda.device(q.device):   # launch on q's GPU
        attn_fwd_kernel[grid](q, k, v, o, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *o.stride()[:3],
                              B, H, N, 1.0 / math.sqrt(D) if sm_scale is None else sm_scale, HEAD_DIM=D,
                              CAUSAL=causal, EVEN_N=N % cfg["BLOCK_N"] == 0, **cfg)
    return o
# --8<-- [end:wrapper]


# --8<-- [start:check]
def reference(q, k, v, causal):
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        n = q.shape[2]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, dim=-1) @ v.double()


def check(B, H, N, D, causal, dtype=torch.float16, layout="bhnd"):
    if layout == "bnhd":     # (B, N, H, D) memory viewed as (B, H, N, D), as after a QKV projection
        q, k, v = (torch.randn(B, N, H, D, device=DEVICE, dtype=dtype).transpose(1, 2) for _ in range(3))
    else:
        q, k, v = (torch.randn(B, H, N, D, device=DEVICE, dtype=dtype) for _ in range(3))
    o = attention(q, k, v, causal=causal)
    ref = reference(q, k, v, causal)
    err = ((o.double() - ref).norm() / ref.norm()).item()
    assert o.dtype == dtype and err < (1e-2 if dtype == torch.bfloat16 else 2e-3), (B, H, N, D, causal, dtype, err)


if __name__ == "__main__":
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("flash_attention.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    sizes = [(1, 2, 40, 16), (2, 1, 67, 32), (1, 1, 64, 64)] if INTERPRET else [(2, 3, 1000, 64), (1, 4, 1537, 128), (2, 2, 1024, 128), (1, 2, 40, 64)]
    for B, H, N, D in sizes:
        for causal in (False, True):
            check(B, H, N, D, causal)
    check(*sizes[0], causal=True, dtype=torch.bfloat16)
    check(*sizes[1], causal=False, layout="bnhd")
    print("attention matches float64: ragged N, causal and not, fp16/bf16, strided layout")
# --8<-- [end:check]
