"""Step 6: the backward's dK/dV kernel in Gluon (Triton 3.6), warp-specialized for Hopper.

attention.py's attn_bwd_dkdv runs four products per query tile (S^T = K Q^T, dP^T = V dO^T, dV += P^T dO,
dK += dS^T Q) in one warpgroup and leaves their order to the compiler. This kernel gives each program two
key blocks, one per consumer warpgroup, and a loader warp that streams the query-side tiles (Q and dO) that
both consumers read through a shared-memory ring. Each consumer issues S^T and dP^T together, runs the
exponentials while dP^T is still on the tensor cores, and queues dV behind them. The dQ kernel and the
preprocess are attention.py's. Hopper (sm_90) only, no interpreter mode. Run it:
`python snippets/triton_deep_dive/attention_bwd_gluon.py` on an H100/H200; it imports attention.py and
attention_gluon.py from its own directory.
"""
# needs: gpu
# --8<-- [start:kernel]
import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)

import attention as fa            # the input checks, the preprocess and dQ kernels, the fp32 reference
import attention_gluon as fg      # the Gluon forward and its TMA descriptors


@gluon.jit
def _query_range(CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, N_CTX):
    """The first query row this program's 2 * BLOCK_N keys can see, and how many query tiles follow it."""
    if CAUSAL:
        lo = (gl.program_id(0) * 2 * BLOCK_N) // BLOCK_M * BLOCK_M    # queries above the keys see none of them
    else:
        lo = 0
    return lo, gl.cdiv(N_CTX - lo, BLOCK_M)


@gluon.jit
def _dkdv_loader(q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, bars, HKV, GROUP, N_CTX,
                 BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    """One warp: each consumer's K and V block once, then Q_i and dO_i of every query tile of every query
    head in the group, into ring slot it % STAGES as soon as both consumers have released it."""
    kv_ready, q_ready, q_empty = bars
    b = gl.program_id(1) // HKV
    hk = gl.program_id(1) % HKV
    for c in gl.static_range(2):
        mbarrier.expect(kv_ready.index(c), 2 * k_desc.block_type.nbytes)
        row = gl.program_id(0) * 2 * BLOCK_N + c * BLOCK_N
        tma.async_copy_global_to_shared(k_desc, [b, hk, row, 0], kv_ready.index(c), k_smem.index(c))
        tma.async_copy_global_to_shared(v_desc, [b, hk, row, 0], kv_ready.index(c), v_smem.index(c))
    lo, n_tiles = _query_range(CAUSAL, BLOCK_M, BLOCK_N, N_CTX)
    it = 0
    for g in range(GROUP):
        h = hk * GROUP + g
        for i in range(n_tiles):
            slot = it % STAGES
            mbarrier.wait(q_empty.index(slot), ((it // STAGES) & 1) ^ 1)   # a fresh barrier counts as released
            mbarrier.expect(q_ready.index(slot), 2 * q_desc.block_type.nbytes)
            tma.async_copy_global_to_shared(q_desc, [b, h, lo + i * BLOCK_M, 0], q_ready.index(slot),
                                            q_smem.index(slot))
            tma.async_copy_global_to_shared(do_desc, [b, h, lo + i * BLOCK_M, 0], q_ready.index(slot),
                                            do_smem.index(slot))
            it += 1


@gluon.jit
def _dkdv_consumer(q_desc, dk_desc, dv_desc, LSE, DELTA, q_smem, do_smem, k_smem, v_smem, bars, HQ, HKV, GROUP,
                   N_CTX, sm_scale, qk_scale, WG: gl.constexpr, HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr,
                   BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    """One warpgroup, BLOCK_N keys: dK and dV stay in registers (fp32) over every query tile, then leave
    through the shared memory that held this block's K and V, by TMA."""
    kv_ready, q_ready, q_empty = bars
    dtype: gl.constexpr = q_desc.dtype
    # S^T and dP^T: (keys, queries) tiles; dK and dV: (keys, D). Each warp owns 16 keys.
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_M, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, HEAD_DIM, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)  # P^T, dS^T
    col_s: gl.constexpr = gl.SliceLayout(0, s_layout)
    b = gl.program_id(1) // HKV
    hk = gl.program_id(1) % HKV
    start_n = gl.program_id(0) * 2 * BLOCK_N + WG * BLOCK_N
    keys = start_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, s_layout))
    cols = gl.arange(0, BLOCK_M, layout=col_s)
    lo, n_tiles = _query_range(CAUSAL, BLOCK_M, BLOCK_N, N_CTX)
    s_zero = gl.zeros([BLOCK_N, BLOCK_M], gl.float32, s_layout)
    dk = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, acc_layout)
    dv = gl.zeros([BLOCK_N, HEAD_DIM], gl.float32, acc_layout)
    k = k_smem.index(WG).reshape([BLOCK_N, HEAD_DIM])
    v = v_smem.index(WG).reshape([BLOCK_N, HEAD_DIM])
    mbarrier.wait(kv_ready.index(WG), 0)
    it = 0
    for g in range(GROUP):
        row = (b * HQ + hk * GROUP + g).to(gl.int64) * N_CTX
        for i in range(n_tiles):
            q0 = lo + i * BLOCK_M
            qs = q0 + cols
            # rows past N_CTX: Q and dO are zeros there, so with lse = delta = 0 they add nothing
            lse = gl.load(LSE + row + qs, mask=qs < N_CTX, other=0.0)
            delta = gl.load(DELTA + row + qs, mask=qs < N_CTX, other=0.0)
            slot = it % STAGES
            mbarrier.wait(q_ready.index(slot), (it // STAGES) & 1)
            q = q_smem.index(slot).reshape([BLOCK_M, HEAD_DIM])
            do = do_smem.index(slot).reshape([BLOCK_M, HEAD_DIM])
            # both score-side products at once; the exponentials run while dP^T is still computing
            st = warpgroup_mma(k, q.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            dpt = warpgroup_mma(v, do.permute((1, 0)), s_zero, use_acc=False, is_async=True)
            st = warpgroup_mma_wait(1, deps=(st,))
            pt = gl.exp2(st * qk_scale - gl.expand_dims(lse, 0))
            if CAUSAL:
                if q0 < start_n + BLOCK_N:           # the tile reaches the diagonal: keys after the query drop out
                    pt = gl.where(gl.expand_dims(qs, 0) >= gl.expand_dims(keys, 1), pt, 0.0)
            dv = warpgroup_mma(gl.convert_layout(pt.to(dtype), op_layout), do, dv, is_async=True)   # dV += P^T dO
            dpt = warpgroup_mma_wait(1, deps=(dpt,))                 # dP^T is done; dV may still run
            dst = pt * (dpt - gl.expand_dims(delta, 0))              # dS = P * (dP - rowsum(dO * O))
            dk = warpgroup_mma(gl.convert_layout(dst.to(dtype), op_layout), q, dk, is_async=True)   # dK += dS^T Q
            dv, dk = warpgroup_mma_wait(0, deps=(dv, dk))
            mbarrier.arrive(q_empty.index(slot), count=1)           # this consumer is done with Q_i and dO_i
            it += 1
    # K and V are no longer read: their shared memory carries dK and dV out (same block, same layout)
    k_out = k_smem.index(WG)
    v_out = v_smem.index(WG)
    k_out.reshape([BLOCK_N, HEAD_DIM]).store((dk * sm_scale).to(dtype))
    v_out.reshape([BLOCK_N, HEAD_DIM]).store(dv.to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(dk_desc, [b, hk, start_n, 0], k_out)   # rows past N: not written
    tma.async_copy_shared_to_global(dv_desc, [b, hk, start_n, 0], v_out)
    tma.store_wait(0)


@gluon.jit
def attn_bwd_dkdv_ws(q_desc, do_desc, k_desc, v_desc, dk_desc, dv_desc, LSE, DELTA, HQ, HKV, GROUP, N_CTX,
                     sm_scale, qk_scale, HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                     STAGES: gl.constexpr, CAUSAL: gl.constexpr, CONSUMER_REGS: gl.constexpr,
                     LOADER_REGS: gl.constexpr):
    """Grid: (cdiv(N, 2 * BLOCK_N), B * Hkv). Descriptors are 4-D, (1, 1, rows, D) boxes over (B, H, N, D)."""
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_M, HEAD_DIM], q_desc.layout)
    do_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_M, HEAD_DIM], do_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [2, 1, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [2, 1, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    kv_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    q_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(kv_ready.index(i), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=2)              # both consumers release each slot
    bars = (kv_ready, q_ready, q_empty)
    gl.warp_specialize([
        (_dkdv_consumer, (q_desc, dk_desc, dv_desc, LSE, DELTA, q_smem, do_smem, k_smem, v_smem, bars, HQ, HKV,
                          GROUP, N_CTX, sm_scale, qk_scale, 0, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL)),
        (_dkdv_consumer, (q_desc, dk_desc, dv_desc, LSE, DELTA, q_smem, do_smem, k_smem, v_smem, bars, HQ, HKV,
                          GROUP, N_CTX, sm_scale, qk_scale, 1, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL)),
        (_dkdv_loader, (q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, bars, HKV, GROUP, N_CTX,
                        BLOCK_M, BLOCK_N, STAGES, CAUSAL)),
    ], [4, 1], [CONSUMER_REGS, LOADER_REGS])
# --8<-- [end:kernel]


# --8<-- [start:wrapper]
# (head dim, causal) -> query tile, key block per consumer, ring depth
DKDV_WS_CONFIGS = {(64, False): dict(BLOCK_M=64, BLOCK_N=64, STAGES=2),
                   (64, True): dict(BLOCK_M=64, BLOCK_N=64, STAGES=2),
                   (128, False): dict(BLOCK_M=64, BLOCK_N=64, STAGES=2),
                   (128, True): dict(BLOCK_M=64, BLOCK_N=64, STAGES=2)}


def backward_gluon(q, k, v, o, lse, do, causal, scale, **overrides):
    """dQ, dK, dV: attention.py's preprocess and dQ kernel, and the warp-specialized dK/dV kernel above.
    q, k, v, o, do must already be what TMA can read (fa._tma_ready); lse is the forward's, log2 domain."""
    B, HQ, N, D = q.shape
    HKV = k.shape[1]
    cfg = {**DKDV_WS_CONFIGS[(D, bool(causal))], **overrides}
    maxnreg = cfg.pop("maxnreg", fg.MAXNREG)
    regs = dict(CONSUMER_REGS=cfg.pop("CONSUMER_REGS", fg.CONSUMER_REGS),
                LOADER_REGS=cfg.pop("LOADER_REGS", fg.LOADER_REGS))
    m2, n2, w2, s2 = fa.BWD_CONFIGS[(D, bool(causal))]["DQ"]
    triton.set_allocator(fa._alloc)
    delta = torch.empty((B, HQ, N), device=q.device, dtype=torch.float32)
    fa.attn_bwd_preprocess[(triton.cdiv(N, 64), B * HQ)](o, do, delta, *o.stride()[:3], *do.stride()[:3], HQ, N,
                                                         HEAD_DIM=D, BLOCK_M=64)
    dq, dk, dv = fa._empty_like_layout(q), fa._empty_like_layout(k), fa._empty_like_layout(v)
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    descs = [fg._desc(t, rows, True) for t, rows in ((q, bm), (do, bm), (k, bn), (v, bn), (dk, bn), (dv, bn))]
    attn_bwd_dkdv_ws[(triton.cdiv(N, 2 * bn), B * HKV)](
        *descs, lse, delta, HQ, HKV, HQ // HKV, N, scale, scale * fa.LOG2E, HEAD_DIM=D, CAUSAL=bool(causal),
        **cfg, **regs, num_warps=4, maxnreg=maxnreg)
    fa.attn_bwd_dq[(triton.cdiv(N, m2), B * HQ)](
        q, k, v, do, dq, lse, delta, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *do.stride()[:3],
        *dq.stride()[:3], HQ, HQ // HKV, N, scale, scale * fa.LOG2E,
        HEAD_DIM=D, BLOCK_M=m2, BLOCK_N=n2, CAUSAL=bool(causal), num_warps=w2, num_stages=s2)
    return dq, dk, dv


class GluonAttention(torch.autograd.Function):
    """Gluon forward (attention_gluon.forward_gluon) and the backward above; the same saved tensors."""

    @staticmethod
    def forward(ctx, q, k, v, causal, scale):
        q, k, v = (fa._tma_ready(t) for t in (q, k, v))
        o, lse = fg.forward_gluon(q, k, v, causal, scale)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.scale = causal, scale
        return o

    @staticmethod
    def backward(ctx, do):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = backward_gluon(q, k, v, o, lse, fa._tma_ready(do.to(q.dtype)), ctx.causal, ctx.scale)
        return dq, dk, dv, None, None


def attention(q, k, v, causal=False, scale=None):
    """attention.attention with both the forward and the dK/dV kernel in Gluon on Hopper (sm_90); elsewhere
    (other GPUs, the interpreter) it is attention.attention."""
    fa._check_inputs(q, k, v)
    if not fg.uses_gluon(q, k, v):
        return fa.attention(q, k, v, causal, scale)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return GluonAttention.apply(q, k, v, bool(causal), scale)
# --8<-- [end:wrapper]


# --8<-- [start:check]
if __name__ == "__main__":
    torch.manual_seed(0)
    # ragged N, GQA, N = 1, both head dims and masks, fp16 and bf16, strided views of a packed QKV
    for B, HQ, HKV, N, D, causal, dtype, packed in ((2, 4, 2, 1000, 64, False, torch.float16, False),
                                                    (2, 4, 2, 1000, 128, True, torch.float16, False),
                                                    (1, 8, 8, 1537, 128, False, torch.bfloat16, False),
                                                    (1, 2, 1, 77, 64, True, torch.float16, False),
                                                    (1, 2, 2, 1, 128, True, torch.float16, False),
                                                    (2, 4, 4, 1000, 64, True, torch.bfloat16, True)):
        if packed:
            q, k, v = (t.transpose(1, 2) for t in torch.randn(B, N, 3, HQ, D, device="cuda", dtype=dtype).unbind(2))
        else:
            q = torch.randn(B, HQ, N, D, device="cuda", dtype=dtype)
            k, v = (torch.randn(B, HKV, N, D, device="cuda", dtype=dtype) for _ in range(2))
        q, k, v = (t.detach().requires_grad_() for t in (q, k, v))
        o = attention(q, k, v, causal)
        do = torch.randn_like(o)
        grads = torch.autograd.grad(o, (q, k, v), do)
        qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
        ref = fa.reference(qr, kr, vr, causal)
        refs = torch.autograd.grad(ref, (qr, kr, vr), do.float())
        errs = [fa.rel_err(o, ref)] + [fa.rel_err(g, r) for g, r in zip(grads, refs)]
        assert max(errs) < (2e-2 if dtype == torch.bfloat16 else 5e-3), (B, HQ, HKV, N, D, causal, dtype, errs)
    print("the Gluon dK/dV kernel's gradients match the fp32 reference (GQA, ragged N, N = 1, causal and full, "
          "fp16 and bf16, strided views of a packed QKV)")
# --8<-- [end:check]
