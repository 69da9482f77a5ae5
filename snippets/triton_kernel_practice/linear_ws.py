"""A warp-specialized GEMM in Gluon for inference shapes on Hopper: y = x @ W.T, W (N, K) in nn.Linear layout.

One warp only issues TMA loads into a ring of shared-memory stages; one or two consumer warpgroups only
issue wgmma on the stages that have landed and hand each stage back with an mbarrier arrive. Nothing
waits for a load in the consumers' instruction stream, and the ring can be as deep as shared memory
allows. Hopper (sm_90) only; Gluon has no interpreter mode. Run it: `python
snippets/triton_kernel_practice/linear_ws.py` on an H100/H200.
"""
# needs: gpu
# --8<-- [start:kernel]
import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                               warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


@gluon.jit
def _loader(x_desc, w_desc, x_smem, w_smem, ready, empty, off_m, off_n, n_k,
            BN: gl.constexpr, BK: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr):
    """One warp: the x tile and each consumer's W tile of K step i into stage i % STAGES, once every
    consumer has released that stage (a fresh barrier counts as released)."""
    for i in range(n_k):
        s = i % STAGES
        mbarrier.wait(empty.index(s), ((i // STAGES) & 1) ^ 1)
        mbarrier.expect(ready.index(s), x_desc.block_type.nbytes + CONSUMERS * w_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(x_desc, [off_m, i * BK], ready.index(s), x_smem.index(s))
        for c in gl.static_range(CONSUMERS):
            tma.async_copy_global_to_shared(w_desc, [off_n + c * BN, i * BK], ready.index(s),
                                            w_smem.index(s * CONSUMERS + c))


@gluon.jit
def _consumer(y_desc, x_smem, w_smem, y_smem, ready, empty, off_m, off_n, n_k, C: gl.constexpr,
              BM: gl.constexpr, BN: gl.constexpr, STAGES: gl.constexpr, CONSUMERS: gl.constexpr):
    """One warpgroup: acc (BM tokens x BN weight rows, fp32) += x_tile @ W_tile^T for every K step; the
    stage of step i-1 goes back to the loader as soon as step i's wgmma is issued and i-1's is done."""
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BN, 16])
    acc = gl.zeros([BM, BN], gl.float32, acc_layout)
    for i in range(n_k):
        s = i % STAGES
        mbarrier.wait(ready.index(s), (i // STAGES) & 1)
        acc = warpgroup_mma(x_smem.index(s), w_smem.index(s * CONSUMERS + C).permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(1, deps=(acc,))             # step i in flight, step i-1 done
        if i > 0:
            mbarrier.arrive(empty.index((i - 1) % STAGES), count=1)
    acc = warpgroup_mma_wait(0, deps=(acc,))
    out = y_smem.index(C)
    out.store(acc.to(y_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(y_desc, [off_m, off_n + C * BN], out)   # rows past M, columns past N: not written
    tma.store_wait(0)


@gluon.jit
def linear_ws_kernel(x_desc, w_desc, y_desc, K, BM: gl.constexpr, BN: gl.constexpr, BK: gl.constexpr,
                     STAGES: gl.constexpr, CONSUMERS: gl.constexpr):
    """Grid: (cdiv(M, BM), cdiv(N, CONSUMERS * BN)). A program owns BM tokens and CONSUMERS * BN weight rows;
    with two consumers the x tile in each stage is loaded once for both."""
    dtype: gl.constexpr = x_desc.dtype
    off_m = gl.program_id(0) * BM
    off_n = gl.program_id(1) * (CONSUMERS * BN)
    n_k = gl.cdiv(K, BK)                                      # the last step's columns past K are zeros (TMA)
    x_smem = gl.allocate_shared_memory(dtype, [STAGES, BM, BK], x_desc.layout)
    w_smem = gl.allocate_shared_memory(dtype, [STAGES * CONSUMERS, BN, BK], w_desc.layout)
    y_smem = gl.allocate_shared_memory(dtype, [CONSUMERS, BM, BN], y_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=CONSUMERS)        # every consumer releases each stage
    if CONSUMERS == 2:
        gl.warp_specialize([
            (_consumer, (y_desc, x_smem, w_smem, y_smem, ready, empty, off_m, off_n, n_k, 0, BM, BN, STAGES, 2)),
            (_consumer, (y_desc, x_smem, w_smem, y_smem, ready, empty, off_m, off_n, n_k, 1, BM, BN, STAGES, 2)),
            (_loader, (x_desc, w_desc, x_smem, w_smem, ready, empty, off_m, off_n, n_k, BN, BK, STAGES, 2)),
        ], [4, 1], [232, 40])                                 # 4 + 4 + 1 warps
    else:
        gl.warp_specialize([
            (_consumer, (y_desc, x_smem, w_smem, y_smem, ready, empty, off_m, off_n, n_k, 0, BM, BN, STAGES, 1)),
            (_loader, (x_desc, w_desc, x_smem, w_smem, ready, empty, off_m, off_n, n_k, BN, BK, STAGES, 1)),
        ], [1], [40])                                         # 4 + 1 warps
# --8<-- [end:kernel]


# --8<-- [start:wrapper]
def _desc(t: torch.Tensor, block: list) -> TensorDescriptor:
    layout = gl.NVMMASharedLayout.get_default_for(block, getattr(gl, str(t.dtype)[6:]))
    return TensorDescriptor(t, list(t.shape), list(t.stride()), block, layout)


def linear_ws(x: torch.Tensor, w: torch.Tensor, BN: int = 64, BK: int = 64, STAGES: int = 8,
              CONSUMERS: int = 1) -> torch.Tensor:
    """y = x @ w.T for x (M, K), w (N, K), fp16 or bf16, on Hopper; 64-token tiles (one wgmma's M)."""
    if not (isinstance(x, torch.Tensor) and isinstance(w, torch.Tensor) and x.dim() == 2 and w.dim() == 2):
        raise ValueError("linear_ws: need x (M, K) and w (N, K) as 2-D tensors")
    if x.shape[1] != w.shape[1]:
        raise ValueError(f"linear_ws: x (M, K) = {tuple(x.shape)} and w (N, K) = {tuple(w.shape)} differ in K")
    if not (x.is_cuda and w.is_cuda) or torch.cuda.get_device_capability(x.device)[0] != 9:
        raise RuntimeError("linear_ws: needs CUDA tensors on a Hopper GPU (sm_90); Gluon has no interpreter mode")
    if x.dtype != w.dtype or x.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"linear_ws: x and w must both be float16 or both bfloat16, got {x.dtype}, {w.dtype}")
    x, w = (t if t.stride(1) == 1 and (t.stride(0) * 2) % 16 == 0 and t.data_ptr() % 16 == 0 else t.contiguous()
            for t in (x, w))
    M, K = x.shape
    N = w.shape[0]
    if (K * 2) % 16 or (N * 2) % 16:
        raise ValueError(f"linear_ws: TMA needs rows of a multiple of 16 bytes: K = {K} and N = {N} must be "
                         "multiples of 8")
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, 64), triton.cdiv(N, CONSUMERS * BN))
    linear_ws_kernel[grid](_desc(x, [64, BK]), _desc(w, [BN, BK]), _desc(y, [64, BN]), K, BM=64, BN=BN, BK=BK,
                           STAGES=STAGES, CONSUMERS=CONSUMERS, num_warps=4)
    return y
# --8<-- [end:wrapper]


# --8<-- [start:check]
if __name__ == "__main__":
    torch.manual_seed(0)
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K in ((1, 40, 96), (77, 136, 200), (128, 4096, 4096), (130, 1000, 1032)):   # ragged M, N, K
            x = torch.randn(M, K, device="cuda", dtype=dtype)
            w = torch.randn(N, K, device="cuda", dtype=dtype) / K ** 0.5
            ref = x.double() @ w.double().t()
            for cfg in (dict(), dict(BN=32, CONSUMERS=2), dict(BN=128, STAGES=4, BK=128), dict(STAGES=13)):
                y = linear_ws(x, w, **cfg)
                err = ((y.double() - ref).norm() / ref.norm()).item()
                assert y.shape == (M, N) and err < (1e-2 if dtype == torch.bfloat16 else 2e-3), (M, N, K, cfg, err)
    print("linear_ws: one and two consumers, ring depths 4-13, fp16 and bf16, ragged M, N and K, match float64")
# --8<-- [end:check]
