"""Tiled GEMM in four steps: naive tiles, grouped order, autotuning, TMA + persistent (Hopper).

C = A @ B with A (M, K), B (K, N) in fp16 or bf16, fp32 accumulation, C in the input dtype.
Run it: `python snippets/triton_kernel_practice/gemm.py` on a CUDA GPU, or with
TRITON_INTERPRET=1 on a CPU (small sizes). The TMA kernel at the end needs a Hopper GPU:
gemm_hopper.py checks and times it.
"""
# --8<-- [start:setup]
import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"


def _prepare(a: torch.Tensor, b: torch.Tensor):
    """Check the operands and allocate C; raise a clear error on bad input."""
    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: need A (M, K) and B (K, N), got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"matmul: A and B must both be float16 or both bfloat16, got {a.dtype} and {b.dtype}")
    if not INTERPRET and not (a.is_cuda and b.is_cuda):
        raise ValueError("matmul: tensors must be on a CUDA GPU (or set TRITON_INTERPRET=1 to run on the CPU)")
    if a.device != b.device:
        raise ValueError(f"matmul: A and B must be on one device, got {a.device} and {b.device}")
    if max(a.numel(), b.numel(), a.shape[0] * b.shape[1]) >= 2**31:
        raise ValueError("matmul: these kernels use 32-bit offsets; split matrices above 2^31 elements")
    c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
    if INTERPRET and a.dtype == torch.bfloat16:
        # Triton 3.6's interpreter computes tl.dot on bf16 wrongly; fp32 operands hold
        # bf16 values exactly, so the products are the same. GPU runs never take this branch.
        a, b = a.float(), b.float()
    return a, b, c
# --8<-- [end:setup]


# --8<-- [start:tile]
@triton.jit
def gemm_tile(a_ptr, b_ptr, c_ptr, M, N, K,
              stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
              pid_m, pid_n,                     # which (BLOCK_M, BLOCK_N) tile of C this program owns
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
              EVEN_K: tl.constexpr):            # K % BLOCK_K == 0: the K loop needs no mask
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    # Rows/columns past the edge read row/column 0 instead of being masked: the loads stay
    # unmasked (vectorized) and the store mask below throws those results away.
    rows = tl.max_contiguous(tl.multiple_of(tl.where(offs_m < M, offs_m, 0), BLOCK_M), BLOCK_M)
    cols = tl.max_contiguous(tl.multiple_of(tl.where(offs_n < N, offs_n, 0), BLOCK_N), BLOCK_N)
    a_ptrs = a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:                                   # K % BLOCK_K != 0: every step masks, the last one pads zeros
            k_left = K - k * BLOCK_K
            a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)                 # tensor cores, fp32 accumulator
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
# --8<-- [end:tile]


# --8<-- [start:naive]
@triton.jit
def matmul_naive_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                        stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                        BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                        EVEN_K: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n                   # row-major: neighbouring programs walk along a row of C
    pid_n = pid % num_pid_n
    gemm_tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
              stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K)


def matmul_naive(a, b, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4, num_stages=3):
    a, b, c = _prepare(a, b)
    if INTERPRET:                               # keep the CPU interpreter quick
        BLOCK_M = BLOCK_N = BLOCK_K = 32
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_naive_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                              BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, EVEN_K=K % BLOCK_K == 0,
                              num_warps=num_warps, num_stages=num_stages)
    return c
# --8<-- [end:naive]


# --8<-- [start:check]
def check(matmul, dtype, M, N, K, transpose_b=False):
    a = torch.randn(M, K, device=DEVICE, dtype=dtype)
    # a transposed view exercises the stride arguments (B is then column-major)
    b = torch.randn(N, K, device=DEVICE, dtype=dtype).t() if transpose_b else torch.randn(K, N, device=DEVICE, dtype=dtype)
    c = matmul(a, b)
    ref = a.double() @ b.double()
    err = ((c.double() - ref).norm() / ref.norm()).item()
    # rounding C to 8 (bf16) or 11 (fp16) mantissa bits dominates the error
    assert c.dtype == dtype and err < (1e-2 if dtype == torch.bfloat16 else 2e-3), (matmul.__name__, dtype, err)
    return err


if __name__ == "__main__":
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gemm.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K, tb in ((67, 45, 83, False), (64, 96, 128, True)):   # ragged and strided
            check(matmul_naive, dtype, M, N, K, tb)
    print("naive: fp16 and bf16, ragged and transposed shapes, match float64")
# --8<-- [end:check]


# --8<-- [start:grouped]
@triton.jit
def tile_order(pid, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """Map a linear program id to a tile so that GROUP_M rows of tiles are swept together."""
    per_group = GROUP_M * num_pid_n            # programs in one band of GROUP_M tile rows
    first_m = (pid // per_group) * GROUP_M
    rows_here = min(num_pid_m - first_m, GROUP_M)   # the last band may be shorter
    pid_m = first_m + (pid % per_group) % rows_here
    pid_n = (pid % per_group) // rows_here
    return pid_m, pid_n


@triton.jit
def matmul_grouped_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                          stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid_m, pid_n = tile_order(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    gemm_tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
              stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K)


def matmul_grouped(a, b, BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=4, num_stages=3):
    a, b, c = _prepare(a, b)
    if INTERPRET:
        BLOCK_M = BLOCK_N = BLOCK_K = 32
    M, K = a.shape
    N = b.shape[1]
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    matmul_grouped_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride(),
                                BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M,
                                EVEN_K=K % BLOCK_K == 0, num_warps=num_warps, num_stages=num_stages)
    return c


if __name__ == "__main__":
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K, tb in ((67, 45, 83, False), (130, 97, 64, True)):
            check(matmul_grouped, dtype, M, N, K, tb)
    print("grouped: fp16 and bf16, ragged and transposed shapes, match float64")
# --8<-- [end:grouped]


# --8<-- [start:autotune]
def gemm_configs():
    if INTERPRET:                              # one small config: nothing to time on a CPU
        return [triton.Config({"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32, "GROUP_M": 8}, num_warps=4, num_stages=1)]
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=s)
            for bm, bn, bk, w, s in ((128, 256, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 3),
                                     (128, 128, 64, 4, 4), (128, 128, 64, 8, 5), (128, 256, 32, 8, 4))]


@triton.autotune(configs=gemm_configs(), key=["M", "N", "K"])    # re-tune when the shape changes
@triton.heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
@triton.jit
def matmul_autotuned_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                            stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                            GROUP_M: tl.constexpr, EVEN_K: tl.constexpr):
    pid_m, pid_n = tile_order(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    gemm_tile(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
              stride_cm, stride_cn, pid_m, pid_n, BLOCK_M, BLOCK_N, BLOCK_K, EVEN_K)


def matmul_autotuned(a, b):
    a, b, c = _prepare(a, b)
    M, K = a.shape
    N = b.shape[1]
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    matmul_autotuned_kernel[grid](a, b, c, M, N, K, *a.stride(), *b.stride(), *c.stride())
    return c


if __name__ == "__main__":
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K, tb in ((67, 45, 83, False), (96, 64, 100, True)):
            check(matmul_autotuned, dtype, M, N, K, tb)
    print("autotuned: fp16 and bf16, ragged and transposed shapes, match float64")
# --8<-- [end:autotune]


# --8<-- [start:tma]
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def matmul_tma_kernel(a_desc, b_desc, c_desc,   # TMA descriptors: shape, strides and box of A, B, C
                      M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr,
                      NUM_SMS: tl.constexpr,    # the GPU's SM count: the grid, unless there are fewer tiles
                      B_KMAJOR: tl.constexpr,   # B arrives as B^T (N, K) in memory, e.g. a weight W.t()
                      EPI_SPLIT: tl.constexpr): # store C in two halves: less shared memory for the epilogue
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    # Persistent: each program walks over tiles start, start + NUM_SMS, ... (with fewer tiles than SMs the
    # grid is one program per tile and each takes one); NUM_SMS is the same for every shape on a GPU, so
    # the tile count does not add a compiled variant. flatten=True lets the
    # compiler pipeline the K loop across tile boundaries, so the next tile's loads overlap this
    # tile's epilogue.
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        pid_m, pid_n = tile_order(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            # one TMA copy per operand tile; out-of-bounds rows/columns arrive as zeros
            a = a_desc.load([off_m, ki * BLOCK_K])
            if B_KMAJOR:
                b = b_desc.load([off_n, ki * BLOCK_K]).T
            else:
                b = b_desc.load([ki * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        if EPI_SPLIT:
            c0, c1 = acc.reshape(BLOCK_M, 2, BLOCK_N // 2).permute(0, 2, 1).split()
            c_desc.store([off_m, off_n], c0.to(c_desc.dtype))
            c_desc.store([off_m, off_n + BLOCK_N // 2], c1.to(c_desc.dtype))
        else:
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))   # TMA clips rows/columns past the edge


def _tma_ok(t: torch.Tensor) -> bool:
    # TMA needs a 16-byte aligned base and 16-byte multiples for every stride but the unit one
    return t.data_ptr() % 16 == 0 and all((s * t.element_size()) % 16 == 0 for s in t.stride() if s != 1)


# One configuration for both dtypes and both sizes: within noise of the fastest TMA rows of the
# tuning section on the H200 (timed beside cuBLAS round after round); the noise does not rank those rows.
TMA_CONFIGS = {
    torch.float16: dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=16, EPI_SPLIT=True, num_warps=8, num_stages=3),
    torch.bfloat16: dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, GROUP_M=16, EPI_SPLIT=True, num_warps=8, num_stages=3),
}


def matmul_tma(a, b, **config):
    a, b, c = _prepare(a, b)
    if INTERPRET or torch.cuda.get_device_capability(a.device)[0] < 9:     # A's GPU, not the current one
        raise RuntimeError("matmul_tma: needs a Hopper (sm_90) or newer GPU: TMA and wgmma do not exist elsewhere")
    cfg = {**TMA_CONFIGS[a.dtype], **config}
    BM, BN, BK = cfg.pop("BLOCK_M"), cfg.pop("BLOCK_N"), cfg.pop("BLOCK_K")
    b_kmajor = b.stride(0) == 1 and b.stride(1) != 1    # B = W.t() of a row-major W (N, K)
    if a.stride(1) != 1 or not (b_kmajor or b.stride(1) == 1) or not all(map(_tma_ok, (a, b, c))):
        raise ValueError("matmul_tma: A must be row-major and B row- or column-major, with 16-byte aligned "
                         "strides; use matmul_autotuned for other layouts")
    M, K = a.shape
    N = b.shape[1]
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(b.t(), [BN, BK]) if b_kmajor else TensorDescriptor.from_tensor(b, [BK, BN])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN // 2 if cfg["EPI_SPLIT"] else BN])
    num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    grid = (min(num_sms, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    with torch.cuda.device(a.device):                   # launch on A's GPU, not the current one
        matmul_tma_kernel[grid](a_desc, b_desc, c_desc, M, N, K, BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK,
                                NUM_SMS=num_sms, B_KMAJOR=b_kmajor, **cfg)
    return c
# --8<-- [end:tma]

