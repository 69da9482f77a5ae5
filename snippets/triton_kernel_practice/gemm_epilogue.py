"""nn.Linear followed by its bias and a GELU, in one kernel: gemm.py's TMA + persistent GEMM with the
epilogue fused into the store. y = gelu_tanh(x @ W.T + b), x (M, K), W (N, K) as nn.Linear stores it,
b (N,); fp16 or bf16, fp32 accumulation and epilogue, y in the input dtype.
Run it: `python snippets/triton_kernel_practice/gemm_epilogue.py` on a Hopper GPU, or with
TRITON_INTERPRET=1 on a CPU (small sizes; the interpreter runs the descriptors as plain loads).
"""
# --8<-- [start:kernel]
import math
import os

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"
GELU_C = tl.constexpr(math.sqrt(2.0 / math.pi))   # a global a kernel reads must be a constexpr


@triton.jit
def tanh_approx(u):
    # PTX's tanh.approx.f32: one MUFU.TANH instruction on the special-function unit
    return tl.inline_asm_elementwise("tanh.approx.f32 $0, $1;", "=r,r", [u], dtype=tl.float32,
                                     is_pure=True, pack=1)


@triton.jit
def gelu_tanh(v, FAST: tl.constexpr):
    # PyTorch's gelu(approximate="tanh"): 0.5 v (1 + tanh(u)), u = sqrt(2/pi) (v + 0.044715 v^3)
    u = GELU_C * (v + 0.044715 * v * v * v)
    if FAST:                        # on the GPU: one special-function instruction per element
        h = 0.5 * v
        return h + h * tanh_approx(u)
    return v * tl.sigmoid(2.0 * u)  # the same function (0.5 (1 + tanh u) = sigmoid 2u): an exp and a
                                    # division; the interpreter cannot run inline PTX


@triton.jit
def linear_gelu_kernel(x_desc, w_desc, y_desc, bias_ptr, M, N, K,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                       NUM_SMS: tl.constexpr, BIAS: tl.constexpr, GELU: tl.constexpr,
                       FAST_TANH: tl.constexpr, EPI_SPLIT: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # Persistent, as gemm.py's TMA kernel; tiles in M-first order: the programs of one wave cover a few
    # strips of W, each with all the rows of x, and both fit in L2 at the shapes measured below.
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        off_m = (tile % num_pid_m) * BLOCK_M
        off_n = (tile // num_pid_m) * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            x = x_desc.load([off_m, k])                # (BLOCK_M, BLOCK_K); past M or K: zeros
            w = w_desc.load([off_n, k])                # (BLOCK_N, BLOCK_K): K-major, as W is stored
            acc = tl.dot(x, w.T, acc)
        # The epilogue, on the fp32 accumulator while it is still in registers: what an unfused
        # version does in a second kernel that reads y back from DRAM and writes it again.
        if BIAS:
            cols = off_n + tl.arange(0, BLOCK_N)
            acc += tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)[None, :]
        if GELU:
            acc = gelu_tanh(acc, FAST_TANH)
        if EPI_SPLIT:                                  # two half-width stores: half the staging buffer
            c0, c1 = acc.reshape(BLOCK_M, 2, BLOCK_N // 2).permute(0, 2, 1).split()
            y_desc.store([off_m, off_n], c0.to(y_desc.dtype))
            y_desc.store([off_m, off_n + BLOCK_N // 2], c1.to(y_desc.dtype))
        else:
            y_desc.store([off_m, off_n], acc.to(y_desc.dtype))   # TMA clips rows/columns past the edge
# --8<-- [end:kernel]


# --8<-- [start:wrapper]
# gemm.py's TMA_CONFIGS tiles; the epilogue adds a few registers and half a KiB of shared memory
CONFIG = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, EPI_SPLIT=True, num_warps=8, num_stages=3)
SMALL = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, EPI_SPLIT=True, num_warps=4, num_stages=1)   # interpreter


def linear_gelu(x: torch.Tensor, w: torch.Tensor, bias: torch.Tensor | None = None, gelu: bool = True,
                **config) -> torch.Tensor:
    """gelu_tanh(x @ w.T + bias) in one launch; bias=None and gelu=False leave out either step."""
    if x.dim() != 2 or w.dim() != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"linear_gelu: x must be (M, K) and w (N, K) with the same K, got {tuple(x.shape)} "
                         f"and {tuple(w.shape)}")
    if x.dtype not in (torch.float16, torch.bfloat16) or w.dtype != x.dtype:
        raise ValueError(f"linear_gelu: x and w must both be fp16 or both bf16, got {x.dtype} and {w.dtype}")
    if bias is not None and (bias.shape != (w.shape[0],) or bias.dtype != x.dtype or bias.stride(0) != 1):
        raise ValueError(f"linear_gelu: bias must be a contiguous ({w.shape[0]},) tensor in {x.dtype}, got "
                         f"{tuple(bias.shape)} in {bias.dtype} with stride {tuple(bias.stride())}")
    devices = {t.device for t in (x, w) + ((bias,) if bias is not None else ())}
    if {d.type for d in devices} != {DEVICE} or len(devices) > 1:
        raise ValueError(f"linear_gelu: tensors must all be on one {DEVICE!r} device, got {sorted(map(str, devices))}"
                         + ("" if INTERPRET else " (set TRITON_INTERPRET=1 to run on the CPU)"))
    if 0 in x.shape or 0 in w.shape:
        raise ValueError(f"linear_gelu: M, N and K must be at least 1, got x {tuple(x.shape)} and w {tuple(w.shape)}")
    if not INTERPRET and torch.cuda.get_device_capability(x.device)[0] < 9:
        raise RuntimeError("linear_gelu: needs a Hopper (sm_90) or newer GPU: its configuration is chosen for "
                           "TMA and wgmma")
    M, K = x.shape
    N = w.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    # TMA: unit stride along K (and N for y), every other stride and the base 16-byte aligned
    aligned = all(t.data_ptr() % 16 == 0 and t.stride(0) * t.element_size() % 16 == 0 for t in (x, w, y))
    if x.stride(1) != 1 or w.stride(1) != 1 or not aligned:
        raise ValueError(f"linear_gelu: TMA needs row-major x and w and 16-byte aligned rows: K and N multiples "
                         f"of 8 (got K={K}, N={N}); call .contiguous() on a strided view")
    cfg = {**(SMALL if INTERPRET else CONFIG), **config}
    BM, BN, BK = cfg.pop("BLOCK_M"), cfg.pop("BLOCK_N"), cfg.pop("BLOCK_K")
    if any(not isinstance(b, int) or b < 16 or b & (b - 1) for b in (BM, BN, BK)):
        raise ValueError(f"linear_gelu: BLOCK_M, BLOCK_N, BLOCK_K must be powers of two >= 16, got {BM}, {BN}, {BK}")
    xs, ws = (x.float(), w.float()) if INTERPRET else (x, w)   # the interpreter's tl.dot mishandles bf16
    x_desc = TensorDescriptor.from_tensor(xs, [BM, BK])
    w_desc = TensorDescriptor.from_tensor(ws, [BN, BK])
    y_desc = TensorDescriptor.from_tensor(y, [BM, BN // 2 if cfg["EPI_SPLIT"] else BN])
    sms = 4 if INTERPRET else torch.cuda.get_device_properties(x.device).multi_processor_count
    grid = (min(sms, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    linear_gelu_kernel[grid](x_desc, w_desc, y_desc, y if bias is None else bias, M, N, K,
                             BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, NUM_SMS=sms,
                             BIAS=bias is not None, GELU=gelu, FAST_TANH=not INTERPRET, **cfg)
    return y
# --8<-- [end:wrapper]


# --8<-- [start:check]
def reference(x, w, bias=None, gelu=True):
    """The same function in float64, with PyTorch's tanh GELU."""
    y = torch.nn.functional.linear(x.double(), w.double(), None if bias is None else bias.double())
    return torch.nn.functional.gelu(y, approximate="tanh") if gelu else y


if __name__ == "__main__":
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("gemm_epilogue.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    torch.manual_seed(0)
    sizes = ((33, 48, 40), (70, 104, 64)) if INTERPRET else ((1000, 1000, 1000), (300, 4104, 1992), (4096, 11008, 4096))
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K in sizes:
            x = torch.randn(M, K, device=DEVICE, dtype=dtype)
            w = torch.randn(N, K, device=DEVICE, dtype=dtype) / K ** 0.5
            b = torch.randn(N, device=DEVICE, dtype=dtype)
            for bias, gelu in ((b, True), (None, True), (b, False)):
                ref = reference(x, w, bias, gelu)
                err = ((linear_gelu(x, w, bias, gelu).double() - ref).norm() / ref.norm()).item()
                assert err < (1e-2 if dtype == torch.bfloat16 else 2e-3), (dtype, M, N, K, bias is None, gelu, err)
    print("linear_gelu: bias + tanh GELU fused into the GEMM's store matches float64, fp16 and bf16, ragged shapes")
# --8<-- [end:check]
