"""Steps 4 and 5 of the attention forward, written in Gluon (Triton 3.6) for Hopper.

Step 4 (attn_fwd_fa3): what plain Triton decides for us, this kernel writes out: shared-memory rings for
K and V filled by TMA and tracked by mbarriers, asynchronous wgmma, the order of work inside the loop, and
O written back through shared memory by one TMA store.
The order is the one FlashAttention-3 calls intra-warpgroup overlap: the tensor cores compute
S_{j+1} = Q K_{j+1}^T while O is rescaled for tile j, then P_j V_j while the softmax of S_{j+1} runs on
the CUDA cores. With 8 warps, two warpgroups of 64 query rows each share the K and V tiles, in lockstep.
Step 5 (attn_fwd_pingpong): the same loop, warp-specialized: a loader warp, two consumer warpgroups that
take turns on the tensor cores (ping-pong), and registers moved from the loader to the consumers.
Both are Hopper (sm_90) only, and Gluon kernels do not run in the interpreter; `attention()` at the end
is the trainable entry point that uses them on Hopper and attention.py's forward everywhere else. Run it:
`python snippets/triton_deep_dive/attention_gluon.py` on an H100/H200; it imports attention.py from
its own directory for the input checks, the fp32 reference and the backward kernels.
"""
# needs: gpu
# --8<-- [start:kernel]
import functools
import math

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

import attention as fa    # attention.py, in the same directory: input checks, LOG2E, the reference


@gluon.jit
def _softmax_step(s, m_i, l_i, qk_scale, rows, cols, N_CTX, MASK: gl.constexpr, CAUSAL: gl.constexpr):
    """Online softmax of one score tile: returns P (unnormalized), the rescale factor and the new m, l."""
    if MASK:      # the diagonal tile (causal) or the tile holding key N_CTX - 1
        keep = gl.expand_dims(cols, 0) < N_CTX
        if CAUSAL:
            keep = keep & (gl.expand_dims(cols, 0) <= gl.expand_dims(rows, 1))
        s = gl.where(keep, s, -float("inf"))
    m_new = gl.maximum(m_i, gl.max(s, 1) * qk_scale)          # log2 domain
    p = gl.exp2(s * qk_scale - gl.expand_dims(m_new, 1))      # one FMA and one exp2 per score
    alpha = gl.exp2(m_i - m_new)
    return p, alpha, m_new, l_i * alpha + gl.sum(p, 1)


@gluon.jit
def _load(desc, bar, dst, b, h, base, row, HEADS: gl.constexpr, pred=True):
    """TMA one tile into `dst`; `bar` counts its bytes. HEADS: a 4-D descriptor, the (1, 1, rows, D) box at
    [b, h, row, 0] (rows past N are out of bounds: zeros). Else a 2-D descriptor over (B*H*N, D) rows, the
    box at [base + row, 0] (base: the head's first row)."""
    if HEADS:
        tma.async_copy_global_to_shared(desc, [b, h, row, 0], bar, dst, pred=pred)
    else:
        tma.async_copy_global_to_shared(desc, [base + row, 0], bar, dst, pred=pred)


@gluon.jit
def _refill(desc, bars, smem, slot, b, h, base, row, pred, HEADS: gl.constexpr):
    """Load one tile into ring slot `slot`; the slot's barrier flips when its bytes have landed."""
    mbarrier.expect(bars.index(slot), desc.block_type.nbytes, pred=pred)
    _load(desc, bars.index(slot), smem.index(slot), b, h, base, row, HEADS, pred)


@gluon.jit
def _tile(ring, slot, ROWS: gl.constexpr, HEAD_DIM: gl.constexpr, HEADS: gl.constexpr):
    """Slot `slot` of a ring as the (ROWS, D) tile that wgmma reads. A (1, 1, ROWS, D) box is reshaped:
    its two leading dims are 1, so the bytes and their swizzle are those of the 2-D tile."""
    t = ring.index(slot)
    if HEADS:
        t = t.reshape([ROWS, HEAD_DIM])
    return t


@gluon.jit
def attn_fwd_fa3(q_desc, k_desc, v_desc, o_desc,     # q, k, v: see _load; o: 4-D, (1, 1, BLOCK_M, D) boxes
                 LSE, HQ, GROUP, N_CTX, qk_scale,          # LSE: (B*Hq, N) fp32
                 HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                 K_STAGES: gl.constexpr, V_STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                 HEADS: gl.constexpr, num_warps: gl.constexpr):
    pid_m = gl.num_programs(0) - 1 - gl.program_id(0) if CAUSAL else gl.program_id(0)
    bh = gl.program_id(1)                                     # b * HQ + h
    b = bh // HQ
    h = bh % HQ
    hk = h // GROUP                                           # the key/value head this query head reads
    q_base = bh * N_CTX                                       # first rows of the heads, in (B*H*N, D) rows
    kv_base = (b * (HQ // GROUP) + hk) * N_CTX
    if CAUSAL:
        n_blocks = gl.cdiv((pid_m + 1) * BLOCK_M, BLOCK_N)
        mask_from = (pid_m * BLOCK_M) // BLOCK_N             # tiles from here on cross the diagonal
    else:
        n_blocks = gl.cdiv(N_CTX, BLOCK_N)
        mask_from = N_CTX // BLOCK_N                          # the ragged last tile, if any
    dtype: gl.constexpr = q_desc.dtype

    # wgmma accumulators: each warp owns 16 rows, so the 8 warps form 2 warpgroups of 64 rows
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                                       instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)  # P from registers
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)

    if HEADS:
        q_box = gl.allocate_shared_memory(dtype, [1, 1, BLOCK_M, HEAD_DIM], q_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [K_STAGES, 1, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [V_STAGES, 1, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
        q_smem = q_box.reshape([BLOCK_M, HEAD_DIM])
    else:
        q_box = gl.allocate_shared_memory(dtype, [BLOCK_M, HEAD_DIM], q_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [K_STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [V_STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
        q_smem = q_box
    o_smem = gl.allocate_shared_memory(dtype, [1, 1, BLOCK_M, HEAD_DIM], o_desc.layout)   # O leaves through it
    q_bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    k_bars = gl.allocate_shared_memory(gl.int64, [K_STAGES, 1], mbarrier.MBarrierLayout())
    v_bars = gl.allocate_shared_memory(gl.int64, [V_STAGES, 1], mbarrier.MBarrierLayout())
    mbarrier.init(q_bar, count=1)
    for i in gl.static_range(K_STAGES):
        mbarrier.init(k_bars.index(i), count=1)
    for i in gl.static_range(V_STAGES):
        mbarrier.init(v_bars.index(i), count=1)

    # prologue: Q once, then fill both rings
    mbarrier.expect(q_bar, q_desc.block_type.nbytes)
    _load(q_desc, q_bar, q_box, b, h, q_base, pid_m * BLOCK_M, HEADS)
    for i in gl.static_range(K_STAGES):
        _refill(k_desc, k_bars, k_smem, i, b, hk, kv_base, i * BLOCK_N, i < n_blocks, HEADS)
    for i in gl.static_range(V_STAGES):
        _refill(v_desc, v_bars, v_smem, i, b, hk, kv_base, i * BLOCK_N, i < n_blocks, HEADS)

    rows = pid_m * BLOCK_M + gl.arange(0, BLOCK_M, layout=row_s)
    cols0 = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, row_s)
    l_i = gl.zeros([BLOCK_M], gl.float32, row_s)
    acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, o_layout)
    s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)

    mbarrier.wait(q_bar, 0)
    mbarrier.wait(k_bars.index(0), 0)
    s = warpgroup_mma(q_smem, _tile(k_smem, 0, BLOCK_N, HEAD_DIM, HEADS).permute((1, 0)), s_zero, use_acc=False,
                      is_async=True)
    s = warpgroup_mma_wait(0, deps=(s,))
    if mask_from == 0:
        p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, rows, cols0, N_CTX, True, CAUSAL)
    else:
        p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, rows, cols0, N_CTX, False, CAUSAL)
    gl.thread_barrier()                                       # both warpgroups are done with K_0
    _refill(k_desc, k_bars, k_smem, 0, b, hk, kv_base, K_STAGES * BLOCK_N, K_STAGES < n_blocks, HEADS)
    for j in range(0, n_blocks - 1):
        # 1. tensor cores: start S_{j+1} = Q K_{j+1}^T, and meanwhile rescale O for tile j
        kn = (j + 1) % K_STAGES
        mbarrier.wait(k_bars.index(kn), ((j + 1) // K_STAGES) & 1)
        s = warpgroup_mma(q_smem, _tile(k_smem, kn, BLOCK_N, HEAD_DIM, HEADS).permute((1, 0)), s_zero, use_acc=False,
                          is_async=True)
        acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
        # 2. queue O += P_j V_j behind it
        mbarrier.wait(v_bars.index(j % V_STAGES), (j // V_STAGES) & 1)
        acc = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), _tile(v_smem, j % V_STAGES, BLOCK_N, HEAD_DIM, HEADS),
                            acc, is_async=True)
        # 3. S_{j+1} is done (wgmma groups finish in order); its softmax runs while P_j V_j is on the tensor cores
        s = warpgroup_mma_wait(1, deps=(s,))
        if j + 1 >= mask_from:
            p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, rows, (j + 1) * BLOCK_N + cols0, N_CTX,
                                               True, CAUSAL)
        else:
            p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, rows, cols0, N_CTX, False, CAUSAL)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        # 4. both warpgroups are done with K_{j+1} and V_j: refill their slots
        gl.thread_barrier()
        _refill(k_desc, k_bars, k_smem, kn, b, hk, kv_base, (j + 1 + K_STAGES) * BLOCK_N, j + 1 + K_STAGES < n_blocks,
                HEADS)
        _refill(v_desc, v_bars, v_smem, j % V_STAGES, b, hk, kv_base, (j + V_STAGES) * BLOCK_N, j + V_STAGES < n_blocks,
                HEADS)
    # the last tile's P V
    j = n_blocks - 1
    acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
    mbarrier.wait(v_bars.index(j % V_STAGES), (j // V_STAGES) & 1)
    acc = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), _tile(v_smem, j % V_STAGES, BLOCK_N, HEAD_DIM, HEADS), acc)

    gl.store(LSE + bh.to(gl.int64) * N_CTX + rows, m_i + gl.log2(l_i), mask=rows < N_CTX)   # as in attn_fwd
    # O: registers -> shared memory -> one TMA store, which leaves rows past N unwritten
    o = acc / gl.expand_dims(gl.convert_layout(l_i, row_o), 1)
    o_smem.reshape([BLOCK_M, HEAD_DIM]).store(o.to(dtype))
    fence_async_shared()                                      # make the writes visible to the TMA unit
    tma.async_copy_shared_to_global(o_desc, [b, h, pid_m * BLOCK_M, 0], o_smem)
    tma.store_wait(0)
# --8<-- [end:kernel]


# --8<-- [start:wrapper]
# (head dim, causal) -> tiles, ring depths, warps and register cap: the fastest correct rows of the
# "fwd_gluon" sweep in data/triton_deep_dive/attention_tuning.json (B=4 H=32 N=4096; a test keeps them within
# its noise). 8 warps = 2 warpgroups sharing one K/V ring; 4 warps = 1 warpgroup, and two CTAs fit on an SM.
# maxnreg=128: 64-key tiles need no more, so four CTAs fit on an SM and hide each other's loads and stores.
FA3_CONFIGS = {(64, False): dict(BLOCK_M=64, BLOCK_N=128, K_STAGES=2, V_STAGES=2, num_warps=4),
               (64, True): dict(BLOCK_M=64, BLOCK_N=64, K_STAGES=2, V_STAGES=2, num_warps=4, maxnreg=128),
               (128, False): dict(BLOCK_M=128, BLOCK_N=128, K_STAGES=2, V_STAGES=2, num_warps=8),
               (128, True): dict(BLOCK_M=128, BLOCK_N=128, K_STAGES=2, V_STAGES=2, num_warps=8)}


@functools.lru_cache(maxsize=None)
def _layout(block: tuple, dtype: torch.dtype) -> gl.NVMMASharedLayout:
    """The shared-memory layout (swizzle) of a TMA box: the same for every call with this box and dtype, so
    it is worked out once; get_default_for costs several µs of Python on each call otherwise."""
    return gl.NVMMASharedLayout.get_default_for(list(block), getattr(gl, str(dtype)[6:]))


def _desc(t: torch.Tensor, block_rows: int, heads: bool) -> TensorDescriptor:
    """A TMA descriptor over a (B, H, N, D) tensor. heads: 4-D, as the tensor lies in memory, boxes of
    (1, 1, block_rows, D); it follows the strides, so head views of one packed QKV projection need no copy
    (fa._tma_ready has checked what TMA needs). Else 2-D over the (B*H*N, D) rows of a contiguous tensor."""
    if not heads:
        t = t.view(-1, t.shape[-1])
    block = (1, 1, block_rows, t.shape[-1]) if heads else (block_rows, t.shape[-1])
    return TensorDescriptor(t, list(t.shape), list(t.stride()), list(block), _layout(block, t.dtype))


class Launch:
    """One kernel with its grid, constexprs and launch options fixed (kw), for one input layout.
    kernel[grid](*args, **kw) runs the JIT's dispatch on every call: it binds the arguments, builds the
    specialization key (each argument's type, pointer alignment, integers equal to 1 or divisible by 16,
    each descriptor's dtype, box and layout) and looks it up. A Launch does that on its first call only,
    then hands the arguments to the compiled kernel, constexprs positional in signature order. The
    wrappers keep one per key in _LAUNCHES; the key (shapes, strides, dtype, mask, descriptor kind,
    settings) fixes everything the JIT specializes on, so the compiled kernel stays the right one.
    Launch.JIT = True sends every call through kernel[grid] again (the GPT-2 producer times both)."""
    JIT = False

    def __init__(self, kernel, grid, **kw):
        self.kernel, self.kw, self.run = kernel, kw, None
        self.grid = (*grid, 1, 1)[:3]                 # the compiled kernel's runner takes all three dims

    def __call__(self, *args):
        if Launch.JIT:
            self.kernel[self.grid](*args, **self.kw)
            return
        if self.run is None:            # first call: the JIT compiles the kernel or loads it from its cache
            compiled = self.kernel.warmup(*args, grid=self.grid, **self.kw)
            rest = self.kernel.params[len(args):]
            assert all(p.is_constexpr for p in rest), f"{self.kernel.__name__}: pass every runtime argument"
            self.tail = [self.kw[p.name] if p.name in self.kw else p.default for p in rest]
            self.run = compiled[self.grid]
        self.run(*args, *self.tail)


_LAUNCHES: dict = {}


def _layout_key(*tensors) -> tuple:
    """What a Launch's key takes from its tensors: shapes and strides (dtype and device from the first;
    fa._tma_ready has made every base 16-byte aligned)."""
    return (tensors[0].dtype, tensors[0].device, *((t.shape, t.stride()) for t in tensors))


@functools.lru_cache(maxsize=None)
def _is_hopper(device: torch.device) -> bool:
    """Whether device is a Hopper GPU (sm_90). Asked once per device: torch.cuda.get_device_capability costs
    a few µs of host time, and every call of attention() needs the answer."""
    return torch.cuda.get_device_capability(device)[0] == 9


def _prepare(q, k, v, heads, who):
    """What both wrappers check and do first: the inputs, a Hopper GPU, views TMA can read; heads=None picks
    4-D descriptors unless q, k and v are all contiguous."""
    fa._check_inputs(q, k, v)
    if (q.shape[-1], False) not in FA3_CONFIGS:
        raise ValueError(f"{who}: head dim {q.shape[-1]}: the Gluon forwards are built for "
                         f"{sorted({d for d, _ in FA3_CONFIGS})}; attention() runs attention.py's kernels at other head dims")
    if fa.INTERPRET or not _is_hopper(q.device):
        raise RuntimeError(f"{who}: the Gluon kernel needs a Hopper GPU (sm_90); Gluon has no interpreter mode")
    q, k, v = (fa._tma_ready(t) for t in (q, k, v))
    contiguous = all(t.is_contiguous() for t in (q, k, v))
    if heads is None:
        heads = not contiguous
    elif not heads and not contiguous:
        raise ValueError(f"{who}: heads=False reads (B*H*N, D) rows and needs contiguous q, k, v")
    return q, k, v, bool(heads)


def forward_fa3(q, k, v, causal=False, scale=None, heads=None, **overrides):
    """Attention forward with the Gluon kernel: returns (o, lse), lse in the log2 domain like attn_fwd's,
    so the backward kernels of attention.py take it unchanged. heads=None picks the descriptors: 2-D rows
    when q, k, v are all contiguous, 4-D otherwise (the "Step by step" table times both on the same inputs)."""
    q, k, v, heads = _prepare(q, k, v, heads, "forward_fa3")
    B, HQ, N, D = q.shape
    key = ("fa3", _layout_key(q, k, v), bool(causal), heads, repr(overrides))
    launch = _LAUNCHES.get(key)
    if launch is None:                                        # once per input layout
        # FA3_CONFIGS is read here only: a change to it reaches layouts planned before only after
        # _LAUNCHES.clear() (overrides are part of the key and need no clearing)
        cfg = {**FA3_CONFIGS[(D, bool(causal))], **overrides}
        launch = _LAUNCHES[key] = Launch(attn_fwd_fa3, (triton.cdiv(N, cfg["BLOCK_M"]), B * HQ), HEAD_DIM=D,
                                         CAUSAL=bool(causal), HEADS=heads, **cfg)
    scale = D ** -0.5 if scale is None else float(scale)
    o = fa._empty_like_layout(q)
    lse = torch.empty((B, HQ, N), device=q.device, dtype=torch.float32)
    triton.set_allocator(fa._alloc)                           # launch scratch, as for attention.py's kernels
    bm, bn = launch.kw["BLOCK_M"], launch.kw["BLOCK_N"]
    launch(_desc(q, bm, heads), _desc(k, bn, heads), _desc(v, bn, heads),
           _desc(o, bm, True),                 # O always 4-D: the TMA store leaves rows past N unwritten
           lse, HQ, HQ // k.shape[1], N, scale * fa.LOG2E)
    return o, lse


# --8<-- [end:wrapper]


# --8<-- [start:pingpong]
# Step 5. attn_fwd_fa3 runs its two warpgroups in lockstep: CTA-wide barriers around every refill keep
# them together, so both run their softmax at the same time, with only one P_j V_j each on the tensor
# cores and no QK^T able to start. Here
# gl.warp_specialize splits the CTA into partitions that share shared memory and mbarriers:
# - a loader (1 warp): TMA loads into the K and V rings, each slot refilled once both consumers let it go;
# - two consumers (1 warpgroup, 64 query rows each): step 4's loop, releasing a slot with an mbarrier
#   arrive instead of a CTA barrier;
# - a turn handshake between the consumers (two mbarriers): a consumer issues its wgmma only in its turn
#   and passes the turn on once they are issued, so one warpgroup's softmax runs while the other's
#   products are on the tensor cores. FlashAttention-3 calls this ping-pong scheduling.
@gluon.jit
def _block_coords(tile, HQ, GROUP, N_CTX, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, CAUSAL: gl.constexpr):
    """Row block number `tile` -> its head, its block of 2 * BLOCK_M query rows, and the key tiles it visits
    (both consumers visit the same ones: they must take as many turns as each other). Blocks are numbered
    head by head, so programs working at the same time share a head's K and V in L2; causal blocks of a
    head run longest first."""
    n_m = gl.cdiv(N_CTX, 2 * BLOCK_M)
    bh = tile // n_m                                          # b * HQ + h
    pid_m = n_m - 1 - tile % n_m if CAUSAL else tile % n_m
    b = bh // HQ
    h = bh % HQ
    hk = h // GROUP                                           # the key/value head this query head reads
    if CAUSAL:
        n_blocks = gl.cdiv((pid_m + 1) * 2 * BLOCK_M, BLOCK_N)
        mask_from = (pid_m * 2 * BLOCK_M) // BLOCK_N
    else:
        n_blocks = gl.cdiv(N_CTX, BLOCK_N)
        mask_from = N_CTX // BLOCK_N
    return pid_m, b, h, hk, bh * N_CTX, (b * (HQ // GROUP) + hk) * N_CTX, n_blocks, mask_from


# Every partition walks the same row blocks: tile = program_id, program_id + programs, ... With one program
# per row block that is one block each; with one program per SM the kernel is persistent, and the loader
# fetches the next block's Q, K and V while the consumers finish this one. Ring slots and phases count K/V
# tiles over all the blocks a program has visited (it), turns likewise (t).
@gluon.jit
def _load_partition(q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, bars, HQ, GROUP, N_CTX, n_tiles,
                    BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr,
                    HEADS: gl.constexpr):
    """One warp, 24 registers: a block's Q for both consumers (once both are done with the last one), then
    K_i and V_i into ring slot it % STAGES as soon as both consumers have released what the slot held (its
    `empty` barrier counts 2 arrivals)."""
    q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn = bars
    it = 0
    n_done = 0
    for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        pid_m, b, h, hk, q_base, kv_base, n_blocks, mask_from = _block_coords(tile, HQ, GROUP, N_CTX, BLOCK_M,
                                                                             BLOCK_N, CAUSAL)
        for c in gl.static_range(2):
            mbarrier.wait(q_empty.index(c), (n_done & 1) ^ 1)  # a fresh barrier counts as phase 1 done
            mbarrier.expect(q_ready.index(c), q_desc.block_type.nbytes)
            _load(q_desc, q_ready.index(c), q_smem.index(c), b, h, q_base, (2 * pid_m + c) * BLOCK_M, HEADS)
        for i in range(n_blocks):
            slot = it % STAGES
            free = ((it // STAGES) & 1) ^ 1
            mbarrier.wait(k_empty.index(slot), free)
            mbarrier.expect(k_ready.index(slot), k_desc.block_type.nbytes)
            _load(k_desc, k_ready.index(slot), k_smem.index(slot), b, hk, kv_base, i * BLOCK_N, HEADS)
            mbarrier.wait(v_empty.index(slot), free)
            mbarrier.expect(v_ready.index(slot), v_desc.block_type.nbytes)
            _load(v_desc, v_ready.index(slot), v_smem.index(slot), b, hk, kv_base, i * BLOCK_N, HEADS)
            it += 1
        n_done += 1


@gluon.jit
def _take_turn(turn, t, WG: gl.constexpr):
    """Wait until it is this consumer's turn number t. Consumer 0 goes first: its barrier starts with
    phase 1 complete, as every fresh mbarrier does."""
    mbarrier.wait(turn.index(WG), (t + 1 - WG) & 1)


@gluon.jit
def _pass_turn(turn, WG: gl.constexpr):
    mbarrier.arrive(turn.index(1 - WG), count=1)


@gluon.jit
def _consumer(q_desc, k_desc, v_desc, o_desc, LSE, q_smem, k_smem, v_smem, o_smem, bars, HQ, GROUP, N_CTX,
              qk_scale, n_tiles, WG: gl.constexpr, HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr,
              BLOCK_N: gl.constexpr, STAGES: gl.constexpr, CAUSAL: gl.constexpr, HEADS: gl.constexpr):
    """One warpgroup, BLOCK_M query rows of each block: step 4's loop order (S_{j+1} and P_j V_j in flight
    together), with slots released by mbarrier arrives instead of CTA barriers, and every group of wgmma
    issued in this consumer's turn. O is rescaled before the turn is taken: no wgmma writes it then, and
    the other consumer's products run meanwhile. A finished block's O leaves through this consumer's buffer
    in shared memory and one TMA store, which runs on while the next block starts."""
    q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn = bars
    dtype: gl.constexpr = q_desc.dtype
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, HEAD_DIM, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    row_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    row_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    cols0 = gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
    s_zero = gl.zeros([BLOCK_M, BLOCK_N], gl.float32, s_layout)
    q = _tile(q_smem, WG, BLOCK_M, HEAD_DIM, HEADS)
    it = 0
    t = 0
    n_done = 0
    for tile in range(gl.program_id(0), n_tiles, gl.num_programs(0)):
        pid_m, b, h, hk, q_base, kv_base, n_blocks, mask_from = _block_coords(tile, HQ, GROUP, N_CTX, BLOCK_M,
                                                                             BLOCK_N, CAUSAL)
        row0 = (2 * pid_m + WG) * BLOCK_M
        rows = row0 + gl.arange(0, BLOCK_M, layout=row_s)
        m_i = gl.full([BLOCK_M], -float("inf"), gl.float32, row_s)
        l_i = gl.zeros([BLOCK_M], gl.float32, row_s)
        acc = gl.zeros([BLOCK_M, HEAD_DIM], gl.float32, o_layout)

        mbarrier.wait(q_ready.index(WG), n_done & 1)
        slot = it % STAGES
        mbarrier.wait(k_ready.index(slot), (it // STAGES) & 1)
        _take_turn(turn, t, WG)
        s = warpgroup_mma(q, _tile(k_smem, slot, BLOCK_N, HEAD_DIM, HEADS).permute((1, 0)), s_zero, use_acc=False,
                          is_async=True)
        _pass_turn(turn, WG)
        s = warpgroup_mma_wait(0, deps=(s,))
        mbarrier.arrive(k_empty.index(slot), count=1)          # this consumer is done with K_0
        mbarrier.arrive(q_empty.index(WG), count=1, pred=n_blocks == 1)   # ... and with Q, if K_0 was the last
        if mask_from == 0:
            p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, rows, cols0, N_CTX, True, CAUSAL)
        else:
            p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, rows, cols0, N_CTX, False, CAUSAL)
        for j in range(0, n_blocks - 1):
            kn = (it + j + 1) % STAGES
            vs = (it + j) % STAGES
            mbarrier.wait(k_ready.index(kn), ((it + j + 1) // STAGES) & 1)
            mbarrier.wait(v_ready.index(vs), ((it + j) // STAGES) & 1)
            acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)   # before the turn: nothing writes O now
            _take_turn(turn, t + j + 1, WG)
            s = warpgroup_mma(q, _tile(k_smem, kn, BLOCK_N, HEAD_DIM, HEADS).permute((1, 0)), s_zero, use_acc=False,
                              is_async=True)
            acc = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), _tile(v_smem, vs, BLOCK_N, HEAD_DIM, HEADS),
                                acc, is_async=True)
            _pass_turn(turn, WG)                               # both products issued: the other warpgroup's turn
            s = warpgroup_mma_wait(1, deps=(s,))
            mbarrier.arrive(k_empty.index(kn), count=1)
            mbarrier.arrive(q_empty.index(WG), count=1, pred=j == n_blocks - 2)   # the block's last read of Q
            if j + 1 >= mask_from:
                p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, rows, (j + 1) * BLOCK_N + cols0, N_CTX,
                                                   True, CAUSAL)
            else:
                p, alpha, m_i, l_i = _softmax_step(s, m_i, l_i, qk_scale, rows, cols0, N_CTX, False, CAUSAL)
            acc = warpgroup_mma_wait(0, deps=(acc,))
            mbarrier.arrive(v_empty.index(vs), count=1)
        vs = (it + n_blocks - 1) % STAGES
        acc = acc * gl.expand_dims(gl.convert_layout(alpha, row_o), 1)
        mbarrier.wait(v_ready.index(vs), ((it + n_blocks - 1) // STAGES) & 1)
        _take_turn(turn, t + n_blocks, WG)
        acc = warpgroup_mma(gl.convert_layout(p.to(dtype), p_layout), _tile(v_smem, vs, BLOCK_N, HEAD_DIM, HEADS),
                            acc, is_async=True)
        _pass_turn(turn, WG)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(v_empty.index(vs), count=1)
        it += n_blocks
        t += n_blocks + 1
        n_done += 1

        gl.store(LSE + (b * HQ + h).to(gl.int64) * N_CTX + rows, m_i + gl.log2(l_i), mask=rows < N_CTX)
        o = acc / gl.expand_dims(gl.convert_layout(l_i, row_o), 1)
        tma.store_wait(0)                                      # the previous block's O has left the buffer
        o_smem.index(WG).reshape([BLOCK_M, HEAD_DIM]).store(o.to(dtype))
        fence_async_shared()                                   # make the writes visible to the TMA unit
        tma.async_copy_shared_to_global(o_desc, [b, h, row0, 0], o_smem.index(WG))   # rows past N: not written
    tma.store_wait(0)


@gluon.jit
def attn_fwd_pingpong(q_desc, k_desc, v_desc, o_desc, LSE, HQ, GROUP, N_CTX, qk_scale, n_tiles,
                      HEAD_DIM: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr,
                      STAGES: gl.constexpr, CAUSAL: gl.constexpr, HEADS: gl.constexpr,
                      CONSUMER_REGS: gl.constexpr, LOADER_REGS: gl.constexpr):
    dtype: gl.constexpr = q_desc.dtype
    if HEADS:
        q_smem = gl.allocate_shared_memory(dtype, [2, 1, 1, BLOCK_M, HEAD_DIM], q_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_N, HEAD_DIM], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [STAGES, 1, 1, BLOCK_N, HEAD_DIM], v_desc.layout)
    else:
        q_smem = gl.allocate_shared_memory(dtype, [2, BLOCK_M, HEAD_DIM], q_desc.layout)
        k_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], k_desc.layout)
        v_smem = gl.allocate_shared_memory(dtype, [STAGES, BLOCK_N, HEAD_DIM], v_desc.layout)
    o_smem = gl.allocate_shared_memory(dtype, [2, 1, 1, BLOCK_M, HEAD_DIM], o_desc.layout)   # O: always 4-D
    q_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    q_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(2):
        mbarrier.init(q_ready.index(i), count=1)
        mbarrier.init(q_empty.index(i), count=1)
        mbarrier.init(turn.index(i), count=1)
    for i in gl.static_range(STAGES):
        mbarrier.init(k_ready.index(i), count=1)
        mbarrier.init(v_ready.index(i), count=1)
        mbarrier.init(k_empty.index(i), count=2)              # both consumers release each slot
        mbarrier.init(v_empty.index(i), count=2)
    bars = (q_ready, q_empty, k_ready, k_empty, v_ready, v_empty, turn)
    gl.warp_specialize([
        (_consumer, (q_desc, k_desc, v_desc, o_desc, LSE, q_smem, k_smem, v_smem, o_smem, bars, HQ, GROUP, N_CTX,
                     qk_scale, n_tiles, 0, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL, HEADS)),         # 4 warps
        (_consumer, (q_desc, k_desc, v_desc, o_desc, LSE, q_smem, k_smem, v_smem, o_smem, bars, HQ, GROUP, N_CTX,
                     qk_scale, n_tiles, 1, HEAD_DIM, BLOCK_M, BLOCK_N, STAGES, CAUSAL, HEADS)),         # 4 more
        (_load_partition, (q_desc, k_desc, v_desc, q_smem, k_smem, v_smem, bars, HQ, GROUP, N_CTX, n_tiles,
                           BLOCK_M, BLOCK_N, STAGES, CAUSAL, HEADS)),                                   # 1 warp
    ], [4, 1], [CONSUMER_REGS, LOADER_REGS])
# --8<-- [end:pingpong]


# --8<-- [start:pingpong_wrapper]
# (head dim, causal) -> key tile and ring depth, for the (head dim, causal) pairs where the fastest correct row
# of the "fwd_pingpong" sweep in data/triton_deep_dive/attention_tuning.json is not behind the step-4 kernel's
# best by more than the sweep's noise; a test checks that, and that every pair where it is ahead by more is
# here. BLOCK_M is one warpgroup's share: 64 query rows, the M of one wgmma. At D = 128 a third K/V stage no
# longer fits beside the two O buffers (2 x 16 KB).
PINGPONG_CONFIGS = {(64, False): dict(BLOCK_M=64, BLOCK_N=128, STAGES=2, PERSISTENT=True),
                    (128, False): dict(BLOCK_M=64, BLOCK_N=128, STAGES=2, PERSISTENT=True),
                    (128, True): dict(BLOCK_M=64, BLOCK_N=128, STAGES=2, PERSISTENT=False)}
PINGPONG_DEFAULT = dict(BLOCK_M=64, BLOCK_N=128, STAGES=2, PERSISTENT=False)   # for the pairs it has none
# 4 + 4 + 1 warps are allocated as 3 warpgroups (384 threads). 65,536 registers / 384 = 170, so the kernel
# launches with 168 per thread; then the loader's warpgroup gives all but 24 back and each consumer takes 240.
MAXNREG, CONSUMER_REGS, LOADER_REGS = 168, 240, 24


def forward_pingpong(q, k, v, causal=False, scale=None, heads=None, **overrides):
    """Attention forward with the warp-specialized ping-pong kernel: (o, lse), as forward_fa3 returns them.
    Settings: PINGPONG_CONFIGS[(D, causal)] (else PINGPONG_DEFAULT), or the sweep's overrides (BLOCK_N,
    STAGES, PERSISTENT: one program per SM instead of one per row block)."""
    q, k, v, heads = _prepare(q, k, v, heads, "forward_pingpong")
    B, HQ, N, D = q.shape
    key = ("pingpong", _layout_key(q, k, v), bool(causal), heads, repr(overrides))
    launch = _LAUNCHES.get(key)
    if launch is None:                                        # once per input layout
        cfg = {**PINGPONG_CONFIGS.get((D, bool(causal)), PINGPONG_DEFAULT), **overrides}
        persistent = cfg.pop("PERSISTENT")
        cfg = {"maxnreg": MAXNREG, "CONSUMER_REGS": CONSUMER_REGS, "LOADER_REGS": LOADER_REGS, **cfg}
        n_tiles = triton.cdiv(N, 2 * cfg["BLOCK_M"]) * B * HQ    # row blocks of 2 * BLOCK_M queries, all heads
        # persistent: one program per SM (the kernel needs a whole SM's registers), each walking several blocks
        sms = torch.cuda.get_device_properties(q.device).multi_processor_count
        launch = _LAUNCHES[key] = Launch(attn_fwd_pingpong, (min(n_tiles, sms) if persistent else n_tiles,),
                                         HEAD_DIM=D, CAUSAL=bool(causal), HEADS=heads, num_warps=4, **cfg)
    scale = D ** -0.5 if scale is None else float(scale)
    o = fa._empty_like_layout(q)
    lse = torch.empty((B, HQ, N), device=q.device, dtype=torch.float32)
    triton.set_allocator(fa._alloc)
    bm, bn = launch.kw["BLOCK_M"], launch.kw["BLOCK_N"]
    launch(_desc(q, bm, heads), _desc(k, bn, heads), _desc(v, bn, heads),
           _desc(o, bm, True),                 # O always 4-D: the TMA store leaves rows past N unwritten
           lse, HQ, HQ // k.shape[1], N, scale * fa.LOG2E, triton.cdiv(N, 2 * bm) * B * HQ)
    return o, lse
# --8<-- [end:pingpong_wrapper]


# --8<-- [start:entry]
def uses_gluon(q, k, v) -> bool:
    """Whether attention() runs the Gluon forward: on Hopper (sm_90), for any strides TMA can follow, at the
    head dims FA3_CONFIGS has settings for (64 and 128; at 256, attention.py's kernels run)."""
    return not fa.INTERPRET and q.is_cuda and _is_hopper(q.device) and (q.shape[-1], False) in FA3_CONFIGS


def forward_gluon(q, k, v, causal=False, scale=None):
    """The Gluon forward that attention() runs: the ping-pong kernel (step 5) where PINGPONG_CONFIGS has a
    setting for (head dim, causal), the step-4 kernel elsewhere. Both return (o, lse), lse in the log2 domain."""
    if (q.shape[-1], bool(causal)) in PINGPONG_CONFIGS:
        return forward_pingpong(q, k, v, causal, scale)
    return forward_fa3(q, k, v, causal, scale)


class GluonForwardAttention(torch.autograd.Function):
    """attention.py's FlashAttention with a Gluon forward: the same saved tensors (q, k, v, o and the
    log2-domain lse), so the same backward kernels."""

    @staticmethod
    def forward(ctx, q, k, v, causal, scale):
        q, k, v = (fa._tma_ready(t) for t in (q, k, v))     # what the backward's descriptors read, too
        o, lse = forward_gluon(q, k, v, causal, scale)
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal, ctx.scale = causal, scale
        return o

    backward = staticmethod(fa.FlashAttention.backward)


def attention(q, k, v, causal=False, scale=None):
    """attention.attention, with the forward run by the Gluon kernel on Hopper (sm_90). Elsewhere (other
    GPUs, the interpreter) it is attention.attention."""
    fa._check_inputs(q, k, v)
    if not uses_gluon(q, k, v):
        return fa.attention(q, k, v, causal, scale)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else float(scale)
    return GluonForwardAttention.apply(q, k, v, bool(causal), scale)
# --8<-- [end:entry]


# --8<-- [start:check]
if __name__ == "__main__":
    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9:
        raise SystemExit("attention_gluon.py: needs a Hopper GPU (sm_90); Gluon kernels have no CPU interpreter")
    torch.manual_seed(0)
    # the last case: q, k, v as head views of one packed (B, N, 3, H, D) projection, read through their strides
    for B, HQ, HKV, N, D, causal, dtype, packed in ((2, 4, 2, 1000, 64, False, torch.float16, False),
                                                    (2, 4, 2, 1000, 128, True, torch.float16, False),
                                                    (1, 8, 8, 1537, 128, False, torch.bfloat16, False),
                                                    (1, 2, 1, 77, 64, True, torch.float16, False),
                                                    (1, 2, 2, 1, 128, True, torch.float16, False),
                                                    (2, 4, 4, 1000, 64, True, torch.bfloat16, True)):
        if packed:
            q, k, v = torch.randn(B, N, 3, HQ, D, device="cuda", dtype=dtype).unbind(2)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        else:
            q = torch.randn(B, HQ, N, D, device="cuda", dtype=dtype)
            k, v = (torch.randn(B, HKV, N, D, device="cuda", dtype=dtype) for _ in range(2))
        qr, kr, vr = (t.float().requires_grad_() for t in (q, k, v))
        ref = fa.reference(qr, kr, vr, causal)
        tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
        # both Gluon forwards, whichever attention() picks; the ping-pong one launched both ways
        for fwd, kw in ((forward_fa3, {}), (forward_pingpong, dict(PERSISTENT=False)),
                        (forward_pingpong, dict(PERSISTENT=True))):
            err = fa.rel_err(fwd(q, k, v, causal, **kw)[0], ref)
            assert err < tol, (fwd.__name__, kw, B, HQ, HKV, N, D, causal, dtype, packed, err)
        # the trainable entry point: a Gluon forward, then attention.py's backward kernels on the saved lse
        qg, kg, vg = (t.detach().requires_grad_() for t in (q, k, v))
        o = attention(qg, kg, vg, causal)
        do = torch.randn_like(o)
        grads = torch.autograd.grad(o, (qg, kg, vg), do)
        refs = torch.autograd.grad(ref, (qr, kr, vr), do.float())
        errs = [fa.rel_err(o, ref)] + [fa.rel_err(g, r) for g, r in zip(grads, refs)]
        assert max(errs) < tol, (B, HQ, HKV, N, D, causal, dtype, errs)
    print("both Gluon forwards (step 4 and the ping-pong kernel) match the fp32 reference, and so do the "
          "gradients of attention() (GQA, ragged N, causal and full, fp16 and bf16, strided views of a packed QKV)")
# --8<-- [end:check]
