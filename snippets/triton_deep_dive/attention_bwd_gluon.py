"""Step 6: the backward's two big kernels in Gluon (Triton 3.6), warp-specialized for Hopper.

attention.py's attn_bwd_dkdv runs four products per query tile (S^T = K Q^T, dP^T = V dO^T, dV += P^T dO,
dK += dS^T Q) in one warpgroup and leaves their order to the compiler. attn_bwd_dkdv_ws gives each of one
or two consumer warpgroups a key block, and a loader warp streams the query-side tiles (Q and dO) they read
through a shared-memory ring. Each consumer issues S^T and dP^T together, runs the exponentials while dP^T
is still on the tensor cores, and queues dV behind them. attn_bwd_dq_ws does the same for dQ (three
products per key tile): one consumer owns a query tile, the loader streams K and V. The preprocess (Delta)
is attention.py's, and so is the dQ kernel where it measured faster. Hopper (sm_90) only, no interpreter
mode. Run it: `python snippets/triton_deep_dive/attention_bwd_gluon.py` on an H100/H200; it imports
attention.py and attention_gluon.py from its own directory.
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
def _query_range(CAUSAL: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CONSUMERS: gl.constexpr,
                 N_CTX):
    """The first query row this program's CONSUMERS * BLOCK_N keys can see, and how many query tiles follow."""
    if CAUSAL:
        lo = (gl.program_id(0) * CONSUMERS * BLOCK_N) // BLOCK_M * BLOCK_M   # queries above the keys see none
    else:
        lo = 0
    return lo, gl.cdiv(N_CTX - lo, BLOCK_M)


@gluon.jit
def _dkdv_loader(q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, bars, HKV, GROUP, N_CTX,
                 BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                 CONSUMERS: gl.constexpr):
    """One warp: each consumer's K and V block once, then Q_i and dO_i of every query tile of every query
    head in the group, into ring slot it % STAGES as soon as every consumer has released it."""
    kv_ready, q_ready, q_empty = bars
    b = gl.program_id(1) // HKV
    hk = gl.program_id(1) % HKV
    for c in gl.static_range(CONSUMERS):
        mbarrier.expect(kv_ready.index(c), 2 * k_desc.block_type.nbytes)
        row = gl.program_id(0) * CONSUMERS * BLOCK_N + c * BLOCK_N
        tma.async_copy_global_to_shared(k_desc, [b, hk, row, 0], kv_ready.index(c), k_smem.index(c))
        tma.async_copy_global_to_shared(v_desc, [b, hk, row, 0], kv_ready.index(c), v_smem.index(c))
    lo, n_tiles = _query_range(CAUSAL, BLOCK_M, BLOCK_N, CONSUMERS, N_CTX)
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
                   BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, CONSUMERS: gl.constexpr):
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
    start_n = gl.program_id(0) * CONSUMERS * BLOCK_N + WG * BLOCK_N
    keys = start_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(1, s_layout))
    cols = gl.arange(0, BLOCK_M, layout=col_s)
    lo, n_tiles = _query_range(CAUSAL, BLOCK_M, BLOCK_N, CONSUMERS, N_CTX)
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
                     STAGES: gl.constexpr, CAUSAL: gl.constexpr, CONSUMERS: gl.constexpr,
                     CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr):
    """Grid: (cdiv(N, CONSUMERS * BLOCK_N), B * Hkv). Descriptors are 4-D, (1, 1, rows, D) boxes over
    (B, H, N, D). CONSUMERS: 2 warpgroups share the loader and the Q/dO ring (one program per SM), or 1, a
    program half the size, so that two fit on an SM and one's start and end hide behind the other's work."""
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_M, HEAD_DIM], q_desc.layout)
    do_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_M, HEAD_DIM], do_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [CONSUMERS, 1, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [CONSUMERS, 1, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    kv_ready = gl.allocate_shared_memory(gl.int64, [CONSUMERS, 1], mbarrier.MBarrierLayout())
    q_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(CONSUMERS):
        mbarrier.init(kv_ready.index(i), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=CONSUMERS)      # every consumer releases each slot
    bars = (kv_ready, q_ready, q_empty)
    if CONSUMERS == 2:
        gl.warp_specialize([
            (_dkdv_consumer, (q_desc, dk_desc, dv_desc, LSE, DELTA, q_smem, do_smem, k_smem, v_smem, bars, HQ, HKV,
                              GROUP, N_CTX, sm_scale, qk_scale, 0, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL, 2)),
            (_dkdv_consumer, (q_desc, dk_desc, dv_desc, LSE, DELTA, q_smem, do_smem, k_smem, v_smem, bars, HQ, HKV,
                              GROUP, N_CTX, sm_scale, qk_scale, 1, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL, 2)),
            (_dkdv_loader, (q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, bars, HKV, GROUP,
                            N_CTX, BLOCK_M, BLOCK_N, STAGES, CAUSAL, 2)),
        ], [4, 1], [CONSUMER_REGS, LOADER_REGS])   # 4 + 4 + 1 warps
    else:                                          # the default partition's 4 warps and the loader's 1
        gl.warp_specialize([
            (_dkdv_consumer, (q_desc, dk_desc, dv_desc, LSE, DELTA, q_smem, do_smem, k_smem, v_smem, bars, HQ, HKV,
                              GROUP, N_CTX, sm_scale, qk_scale, 0, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL, 1)),
            (_dkdv_loader, (q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, bars, HKV, GROUP,
                            N_CTX, BLOCK_M, BLOCK_N, STAGES, CAUSAL, 1)),
        ], [1], [LOADER_REGS])
# --8<-- [end:kernel]


# --8<-- [start:dq]
# The dQ kernel in the same style. A program owns BLOCK_M query rows (one consumer warpgroup): Q_i and dO_i
# are loaded once, and the loader warp streams K_j and V_j through a ring. Per key tile: S = Q K_j^T and
# dP = dO V_j^T issued together, P and dS from them in registers, then dQ += dS K_j with dS as the A operand
# straight from registers. It launches at 128 registers so that two programs share an SM.
@gluon.jit
def _dq_loader(q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, bars, HQ, GROUP, N_CTX,
               BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr):
    """One warp: Q_i and dO_i once, then K_j and V_j into slot j % STAGES once the consumer released it."""
    q_ready, kv_ready, kv_empty = bars
    pid_m = gl.num_programs(0) - 1 - gl.program_id(0) if CAUSAL else gl.program_id(0)   # longest first
    b = gl.program_id(1) // HQ
    h = gl.program_id(1) % HQ
    hk = h // GROUP
    mbarrier.expect(q_ready, 2 * q_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(q_desc, [b, h, pid_m * BLOCK_M, 0], q_ready, q_smem)
    tma.async_copy_global_to_shared(do_desc, [b, h, pid_m * BLOCK_M, 0], q_ready, do_smem)
    n_tiles = gl.cdiv((pid_m + 1) * BLOCK_M, BLOCK_N) if CAUSAL else gl.cdiv(N_CTX, BLOCK_N)
    for j in range(n_tiles):
        slot = j % STAGES
        mbarrier.wait(kv_empty.index(slot), ((j // STAGES) & 1) ^ 1)   # a fresh barrier counts as released
        mbarrier.expect(kv_ready.index(slot), 2 * k_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(k_desc, [b, hk, j * BLOCK_N, 0], kv_ready.index(slot), k_smem.index(slot))
        tma.async_copy_global_to_shared(v_desc, [b, hk, j * BLOCK_N, 0], kv_ready.index(slot), v_smem.index(slot))


@gluon.jit
def _dq_consumer(dq_desc, LSE, DELTA, q_smem, do_smem, k_smem, v_smem, bars, HQ, N_CTX, sm_scale, qk_scale,
                 HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
                 CAUSAL: gl.constexpr):
    q_ready, kv_ready, kv_empty = bars
    dtype: gl.constexpr = dq_desc.dtype
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, HEAD_DIM, 16])
    op_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=acc_layout, k_width=2)   # dS
    pid_m = gl.num_programs(0) - 1 - gl.program_id(0) if CAUSAL else gl.program_id(0)
    b = gl.program_id(1) // HQ
    h = gl.program_id(1) % HQ
    rows = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, s_layout))
    cols = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    row = gl.program_id(1).to(gl.int64) * N_CTX
    lse = gl.load(LSE + row + rows, mask=rows < N_CTX, other=0.0)
    delta = gl.load(DELTA + row + rows, mask=rows < N_CTX, other=0.0)
    if CAUSAL:
        n_tiles = gl.cdiv((pid_m + 1) * BLOCK_M, BLOCK_N)
        mask_from = (pid_m * BLOCK_M) // BLOCK_N              # tiles from here on cross the diagonal
    else:
        n_tiles = gl.cdiv(N_CTX, BLOCK_N)
        mask_from = N_CTX // BLOCK_N                          # the ragged last tile, if there is one
    s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
    dq = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, acc_layout)
    q = q_smem.reshape([BLOCK_M, HEAD_DIM])
    do = do_smem.reshape([BLOCK_M, HEAD_DIM])
    mbarrier.wait(q_ready, 0)
    for j in range(n_tiles):
        slot = j % STAGES
        mbarrier.wait(kv_ready.index(slot), (j // STAGES) & 1)
        k = k_smem.index(slot).reshape([BLOCK_N, HEAD_DIM])
        v = v_smem.index(slot).reshape([BLOCK_N, HEAD_DIM])
        s = warpgroup_mma(q, k.permute((1, 0)), s_zero, use_acc=False, is_async=True)
        dp = warpgroup_mma(do, v.permute((1, 0)), s_zero, use_acc=False, is_async=True)
        s = warpgroup_mma_wait(1, deps=(s,))
        p = gl.exp2(s * qk_scale - gl.expand_dims(lse, 1))
        if j >= mask_from:
            keys = gl.expand_dims(j * BLOCK_N + cols, 0)
            if CAUSAL:                                        # the diagonal tile: later keys drop out
                p = gl.where(gl.expand_dims(rows, 1) >= keys, p, 0.0)
            else:   # keys past N_CTX load as zeros: P = exp2(-lse) would overflow where all real scores are low
                p = gl.where(keys < N_CTX, p, 0.0)
        dp = warpgroup_mma_wait(0, deps=(dp,))
        ds = p * (dp - gl.expand_dims(delta, 1))             # dS = P * (dP - Delta)
        dq = warpgroup_mma(gl.convert_layout(ds.to(dtype), op_layout), k, dq, is_async=True)   # dQ += dS K
        dq = warpgroup_mma_wait(0, deps=(dq,))
        mbarrier.arrive(kv_empty.index(slot), count=1)
    # Q is no longer read: its shared memory carries dQ out
    q.store((dq * sm_scale).to(dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(dq_desc, [b, h, pid_m * BLOCK_M, 0], q_smem)   # rows past N: not written
    tma.store_wait(0)


@gluon.jit
def attn_bwd_dq_ws(q_desc, do_desc, k_desc, v_desc, dq_desc, LSE, DELTA, HQ, GROUP, N_CTX, sm_scale, qk_scale,
                   HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
                   CAUSAL: gl.constexpr, LOADER_REGS: gl.constexpr):
    """Grid: (cdiv(N, BLOCK_M), B * Hq). Descriptors are 4-D, (1, 1, rows, D) boxes over (B, H, N, D)."""
    dtype: gl.constexpr = q_desc.dtype
    q_smem = gl.allocate_shared_memory(dtype, [1, 1, BLOCK_M, HEAD_DIM], q_desc.layout)
    do_smem = gl.allocate_shared_memory(dtype, [1, 1, BLOCK_M, HEAD_DIM], do_desc.layout)
    k_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
    v_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    q_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    kv_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    kv_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_ready, count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(kv_ready.index(i), count=1)
        mbarrier.init(kv_empty.index(i), count=1)
    bars = (q_ready, kv_ready, kv_empty)
    gl.warp_specialize([
        (_dq_consumer, (dq_desc, LSE, DELTA, q_smem, do_smem, k_smem, v_smem, bars, HQ, N_CTX, sm_scale, qk_scale,
                        HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL)),                                   # 4 warps
        (_dq_loader, (q_desc, do_desc, k_desc, v_desc, q_smem, do_smem, k_smem, v_smem, bars, HQ, GROUP, N_CTX,
                      BLOCK_M, BLOCK_N, STAGES, CAUSAL)),                                               # 1 warp
    ], [1], [LOADER_REGS])
# --8<-- [end:dq]


# --8<-- [start:wrapper]
# (head dim, causal) -> settings of the two kernels, the fastest correct rows of the "bwd_gluon" sweep in
# data/triton_deep_dive/attention_tuning.json at N = 4096 (a test keeps them within its noise).
# dK/dV: query tile, key block per consumer, ring depth, consumers per program.
DKDV_WS_CONFIGS = {(64, False): dict(BLOCK_M=64, BLOCK_N=64, STAGES=2, CONSUMERS=1),
                   (64, True): dict(BLOCK_M=64, BLOCK_N=64, STAGES=2, CONSUMERS=2),
                   (128, False): dict(BLOCK_M=64, BLOCK_N=64, STAGES=2, CONSUMERS=2),
                   (128, True): dict(BLOCK_M=64, BLOCK_N=64, STAGES=2, CONSUMERS=2)}
# dQ: GLUON, attn_bwd_dq_ws above with its query tile, key tile and ring depth; else attention.py's
# attn_bwd_dq at its BWD_CONFIGS setting (at D = 64 its two warpgroups share each K/V tile).
GLUON_DQ = dict(GLUON=True, BLOCK_M=64, BLOCK_N=64, STAGES=2)
DQ_WS_CONFIGS = {(64, False): dict(GLUON=False), (64, True): dict(GLUON=False),
                 (128, False): GLUON_DQ, (128, True): GLUON_DQ}
# Sequences of at most SHORT_N tokens: a program covers few tiles, so its start (loads before the first
# product) and its end (the stores) weigh more, and two programs per SM hide them behind each other. What
# changes there, per (head dim, causal): the "bwd_gluon" rows at N = SHORT_N.
SHORT_N = 1024
SHORT_CONFIGS = {(64, False): dict(CONSUMERS=1, DQ=GLUON_DQ), (64, True): dict(CONSUMERS=1, DQ=GLUON_DQ),
                 (128, False): {}, (128, True): {}}
# Launch register caps. Two consumers: 3 warpgroups, one program per SM (65,536 / 384 threads -> 168).
# One consumer (both kernels): 2 warpgroups at 128 each, so two programs fit on an SM; setmaxnreg then gives
# the loader 24 and the consumer what the loader handed back: 128 + (128 - 24) = 232 (the compiler's split).
MAXNREG = {2: fg.MAXNREG, 1: 128}
ONE_CONSUMER_REGS = 2 * MAXNREG[1] - fg.LOADER_REGS


def bwd_settings(D: int, causal: bool, N: int) -> dict:
    """The settings backward_gluon runs for this head dim, mask and sequence length."""
    key = (D, bool(causal))
    if key not in DKDV_WS_CONFIGS:
        raise ValueError(f"backward_gluon: head dim {D}: the Gluon backward is built for "
                         f"{sorted({d for d, _ in DKDV_WS_CONFIGS})}; attention() runs attention.py's backward at other head dims")
    cfg = {**DKDV_WS_CONFIGS[key], "DQ": DQ_WS_CONFIGS[key]}
    return {**cfg, **SHORT_CONFIGS[key]} if N <= SHORT_N else cfg


def backward_gluon(q, k, v, o, lse, do, causal, scale, grads=None, **overrides):
    """dQ, dK, dV: attention.py's preprocess (Delta), then the two warp-specialized kernels above.
    q, k, v, o, do must already be what TMA can read (fa._tma_ready); lse is the forward's, log2 domain.
    Settings: bwd_settings(D, causal, N); overrides replace the dK/dV kernel's, and DQ=dict(...) the dQ
    kernel's (GLUON=True or False picks the kernel). The three launches are planned once per input layout
    (attention_gluon.Launch). grads: (dq, dk, dv) to write into, each shaped and TMA-ready like q, k, v
    (the packed entry point below passes views of one gradient tensor); else they are allocated here."""
    B, HQ, N, D = q.shape
    HKV = k.shape[1]
    out = () if grads is None else tuple(grads)       # their strides are part of the plan too
    key = ("bwd", fg._layout_key(q, k, v, o, do, *out), bool(causal), repr(overrides))
    launches = fg._LAUNCHES.get(key)
    if launches is None:                              # once per input layout: check, then plan
        if fa.INTERPRET or not q.is_cuda or not fg._is_hopper(q.device):
            raise RuntimeError("backward_gluon: the Gluon kernels need a Hopper GPU (sm_90); Gluon has no interpreter mode")
        launches = fg._LAUNCHES[key] = _bwd_launches(q, k, causal, dict(overrides))
    pre, dq_launch, dkdv = launches
    triton.set_allocator(fa._alloc)
    delta = torch.empty((B, HQ, N), device=q.device, dtype=torch.float32)
    dq, dk, dv = out or _empty_grads(q, k, v)
    pre(o, do, delta, *o.stride()[:3], *do.stride()[:3], HQ, N)
    descs = {}

    def desc(t, rows):  # one descriptor per tensor and box: with equal tiles both kernels read q, dO, K, V through the same
        d = descs.get((id(t), rows))
        if d is None:
            d = descs[(id(t), rows)] = fg._desc(t, rows, True)
        return d

    if dq_launch.kernel is attn_bwd_dq_ws:
        bm, bn = dq_launch.kw["BLOCK_M"], dq_launch.kw["BLOCK_N"]
        dq_launch(desc(q, bm), desc(do, bm), desc(k, bn), desc(v, bn), desc(dq, bm),
                  lse, delta, HQ, HQ // HKV, N, scale, scale * fa.LOG2E)
    else:
        dq_launch(q, k, v, do, dq, lse, delta, *q.stride()[:3], *k.stride()[:3], *v.stride()[:3], *do.stride()[:3],
                  *dq.stride()[:3], HQ, HQ // HKV, N, scale, scale * fa.LOG2E)
    bm, bn = dkdv.kw["BLOCK_M"], dkdv.kw["BLOCK_N"]
    dkdv(desc(q, bm), desc(do, bm), desc(k, bn), desc(v, bn), desc(dk, bn), desc(dv, bn),
         lse, delta, HQ, HKV, HQ // HKV, N, scale, scale * fa.LOG2E)
    return dq, dk, dv


def _empty_grads(q, k, v):
    """Empty dQ, dK, dV, each laid out like its input (fa._empty_like_layout: token-major for head views of
    a projection), carved from one allocation per shape and layout: three when q, k, v share both (no
    GQA), else dK and dV share one. Each torch.empty costs the host several µs; a view costs less."""
    out, groups = [None] * 3, {}
    for i, t in enumerate((q, k, v)):
        B, H, N, D = t.shape
        token_major = H > 1 and N > 1 and t.stride(1) < t.stride(2)   # the test fa._empty_like_layout makes
        groups.setdefault((B, H, N, D, token_major), []).append(i)
    for (B, H, N, D, token_major), idx in groups.items():
        if token_major:
            buf = torch.empty((len(idx), B, N, H, D), device=q.device, dtype=q.dtype).transpose(2, 3)
        else:
            buf = torch.empty((len(idx), B, H, N, D), device=q.device, dtype=q.dtype)
        for j, i in enumerate(idx):
            out[i] = buf[j]
    return out


def _bwd_launches(q, k, causal, overrides):
    """backward_gluon's three launches for this input layout: preprocess, dQ (Gluon or attention.py's), dK/dV."""
    B, HQ, N, D = q.shape
    cfg = bwd_settings(D, causal, N)
    dq_cfg = {**cfg.pop("DQ"), **overrides.pop("DQ", {})}
    cfg.update(overrides)
    cfg = {"maxnreg": MAXNREG[cfg["CONSUMERS"]], "CONSUMER_REGS": fg.CONSUMER_REGS, "LOADER_REGS": fg.LOADER_REGS,
           **cfg}
    pre = fg.Launch(fa.attn_bwd_preprocess, (triton.cdiv(N, 64), B * HQ), HEAD_DIM=D, BLOCK_M=64)
    if dq_cfg.pop("GLUON"):
        dq_cfg = {k: dq_cfg.get(k, GLUON_DQ[k]) for k in ("BLOCK_M", "BLOCK_N", "STAGES")}
        dq = fg.Launch(attn_bwd_dq_ws, (triton.cdiv(N, dq_cfg["BLOCK_M"]), B * HQ), HEAD_DIM=D, CAUSAL=bool(causal),
                       **dq_cfg, LOADER_REGS=fg.LOADER_REGS, num_warps=4, maxnreg=MAXNREG[1])
    else:
        m2, n2, w2, s2 = fa.BWD_CONFIGS[(D, bool(causal))]["DQ"]
        dq = fg.Launch(fa.attn_bwd_dq, (triton.cdiv(N, m2), B * HQ), HEAD_DIM=D, BLOCK_M=m2, BLOCK_N=n2,
                       CAUSAL=bool(causal), num_warps=w2, num_stages=s2)
    dkdv = fg.Launch(attn_bwd_dkdv_ws, (triton.cdiv(N, cfg["CONSUMERS"] * cfg["BLOCK_N"]), B * k.shape[1]),
                     HEAD_DIM=D, CAUSAL=bool(causal), num_warps=4, **cfg)
    return pre, dq, dkdv


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
    """attention.attention with the Gluon forward and backward_gluon on Hopper (sm_90): the dK/dV kernel in
    Gluon, the dQ kernel in Gluon or attention.py's as bwd_settings picks; elsewhere (other GPUs, the
    interpreter) it is attention.attention."""
    fa._check_inputs(q, k, v)
    if not fg.uses_gluon(q, k, v):
        return fa.attention(q, k, v, causal, scale)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return GluonAttention.apply(q, k, v, bool(causal), scale)
# --8<-- [end:wrapper]


# --8<-- [start:packed]
# A layer that splits its QKV projection into q, k, v views (view, unbind, transpose) gets three separate
# gradients from attention's backward; autograd's backward of unbind then stacks them into the projection's
# gradient: a copy of all three, 3 * B * N * H * D elements read and written again, every step. When
# attention takes the projection itself, its backward can write dQ, dK and dV straight into one tensor shaped
# like the projection: three head views with q, k and v's strides, written through TMA descriptors or, where
# the dQ kernel is attention.py's (bwd_settings), through pointers and those strides. That tensor is the
# projection's gradient as it stands.
def _heads(qkv):
    """(B, N, 3, H, D) -> the (B, H, N, D) views of q, k and v, no copy."""
    return [t.transpose(1, 2) for t in qkv.unbind(2)]


def _tma_ok(t):
    """fa._tma_ready's test, without the copy it makes when the test fails."""
    return (t.stride(-1) == 1 and t.data_ptr() % 16 == 0
            and all(s * t.element_size() % 16 == 0 for s in t.stride()[:-1]))


class GluonPackedAttention(torch.autograd.Function):
    """GluonAttention on one packed (B, N, 3, H, D) tensor: the same kernels, one gradient for all three."""

    @staticmethod
    def forward(ctx, qkv, causal, scale):
        q, k, v = _heads(qkv)
        if not all(_tma_ok(t) for t in (q, k, v)):                 # e.g. a misaligned view: one aligned copy
            qkv = qkv.clone(memory_format=torch.contiguous_format)
            q, k, v = _heads(qkv)
        o, lse = fg.forward_gluon(q, k, v, causal, scale)
        ctx.save_for_backward(qkv, o, lse)
        ctx.causal, ctx.scale = causal, scale
        return o

    @staticmethod
    def backward(ctx, do):
        qkv, o, lse = ctx.saved_tensors
        dqkv = torch.empty(qkv.shape, device=qkv.device, dtype=qkv.dtype)    # contiguous, so TMA-ready
        backward_gluon(*_heads(qkv), o, lse, fa._tma_ready(do.to(qkv.dtype)), ctx.causal, ctx.scale,
                       grads=_heads(dqkv))
        return dqkv, None, None


def attention_qkvpacked(qkv, causal=False, scale=None):
    """attention() on a packed projection qkv of shape (B, N, 3, H, D), e.g. a (B, N, 3 * H * D) linear output
    viewed as (B, N, 3, H, D): returns o (B, H, N, D) as attention() does. Where attention() runs the Gluon
    kernels (Hopper, head dims 64 and 128), its backward writes qkv's gradient directly instead of stacking
    three; elsewhere it is attention() on the three views."""
    if not isinstance(qkv, torch.Tensor) or qkv.dim() != 5 or qkv.shape[2] != 3:
        raise ValueError("attention_qkvpacked: qkv must be a 5-D tensor (B, N, 3, H, D), got "
                         f"{tuple(qkv.shape) if isinstance(qkv, torch.Tensor) else type(qkv).__name__}")
    q, k, v = _heads(qkv)
    fa._check_inputs(q, k, v)
    if not fg.uses_gluon(q, k, v):
        return fa.attention(q, k, v, causal, scale)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return GluonPackedAttention.apply(qkv, bool(causal), scale)
# --8<-- [end:packed]


# --8<-- [start:check]
if __name__ == "__main__":
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        raise SystemExit("attention_bwd_gluon.py: needs a Hopper GPU (sm_90); Gluon kernels have no CPU interpreter")
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
        tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
        errs = [fa.rel_err(o, ref)] + [fa.rel_err(g, r) for g, r in zip(grads, refs)]
        assert max(errs) < tol, (B, HQ, HKV, N, D, causal, dtype, errs)
        # the other settings backward_gluon can run: one or two dK/dV consumers, either dQ kernel, 3 dQ stages
        q, k, v = (fa._tma_ready(t.detach()) for t in (q, k, v))
        o, lse = fg.forward_gluon(q, k, v, causal, D ** -0.5)
        for kw in (dict(CONSUMERS=1), dict(CONSUMERS=2), dict(DQ=dict(GLUON=False)), dict(DQ=dict(STAGES=3))):
            grads = backward_gluon(q, k, v, o, lse, fa._tma_ready(do), causal, D ** -0.5, **kw)
            errs = [fa.rel_err(g, r) for g, r in zip(grads, refs)]
            assert max(errs) < tol, (kw, B, HQ, HKV, N, D, causal, dtype, errs)
    # the packed entry point: the gradient of the packed tensor itself, against the reference through unbind
    for B, H, N, D, causal, dtype in ((2, 4, 1000, 64, True, torch.bfloat16), (1, 3, 77, 128, False, torch.float16)):
        qkv = torch.randn(B, N, 3, H, D, device="cuda", dtype=dtype, requires_grad=True)
        o = attention_qkvpacked(qkv, causal)
        do = torch.randn_like(o)
        (dqkv,) = torch.autograd.grad(o, qkv, do)
        ref_in = qkv.detach().float().requires_grad_()
        ref = fa.reference(*_heads(ref_in), causal)
        (ref_g,) = torch.autograd.grad(ref, ref_in, do.float())
        errs = [fa.rel_err(o, ref), fa.rel_err(dqkv, ref_g)]
        assert dqkv.shape == qkv.shape and max(errs) < (2e-2 if dtype == torch.bfloat16 else 5e-3), (B, H, N, D, errs)
    # every score far below zero (q near +4, k near -4) with a ragged last key tile: keys past N load as
    # zeros, and unmasked their P = exp2(0 - lse) is inf, which turned dQ into NaN
    for D in (64, 128):
        q = (torch.randn(1, 2, 1000, D, device="cuda") + 4).half().requires_grad_()
        k, v = (torch.randn(1, 2, 1000, D, device="cuda") - 4).half(), torch.randn(1, 2, 1000, D, device="cuda").half()
        k, v = k.requires_grad_(), v.requires_grad_()
        o = attention(q, k, v)
        do = torch.randn_like(o)
        grads = torch.autograd.grad(o, (q, k, v), do)
        qr, kr, vr = (t.detach().float().requires_grad_() for t in (q, k, v))
        refs = torch.autograd.grad(fa.reference(qr, kr, vr), (qr, kr, vr), do.float())
        errs = [fa.rel_err(g, r) for g, r in zip(grads, refs)]
        assert all(torch.isfinite(g).all() for g in grads) and max(errs) < 1e-2, (D, errs)
    print("the Gluon backward's gradients match the fp32 reference (GQA, ragged N, N = 1, causal and full, "
          "fp16 and bf16, strided views of a packed QKV, every score far below zero; one or two dK/dV "
          "consumers, either dQ kernel), and so does the packed entry point's gradient of the packed tensor")
# --8<-- [end:check]
