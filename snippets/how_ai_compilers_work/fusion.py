"""Fusion by hand: three memory-bound patterns, each written as eager PyTorch and as one Triton kernel.

    python snippets/how_ai_compilers_work/fusion.py                      # on a CUDA GPU
    TRITON_INTERPRET=1 python snippets/how_ai_compilers_work/fusion.py   # on a CPU, through Triton's interpreter

Each eager version launches one kernel per line and sends every intermediate
through device memory; each Triton version reads its inputs once and writes its
outputs once. `traffic()` counts the bytes both must move; the page's timings
come from scripts/measure/how_ai_compilers_work/fusion.py, which imports this file.
"""
# --8<-- [start:setup]
import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"   # Triton's CPU interpreter
DEVICE = "cpu" if INTERPRET else "cuda"


def check_inputs(*tensors):
    """Every kernel here takes contiguous float32 tensors on DEVICE: say so clearly otherwise."""
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise RuntimeError("these kernels need a CUDA GPU, or TRITON_INTERPRET=1 to run them on the CPU")
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"expected a torch.Tensor, got {type(t).__name__}")
        if t.device.type != DEVICE:
            raise ValueError(f"expected a tensor on {DEVICE}, got one on {t.device}")
        if t.dtype != torch.float32:
            raise TypeError(f"expected float32, got {t.dtype}")
        if t.numel() >= 2**31:                # offsets such as row * cols + c are 32-bit in these kernels
            raise ValueError(f"expected fewer than 2**31 elements, got {t.numel():,}: these kernels compute "
                             "32-bit offsets (split the tensor, or make the offsets int64 in the kernel)")
        if not t.is_contiguous():
            raise ValueError("expected a contiguous tensor (call .contiguous() first)")
    if len({t.device for t in tensors}) > 1:
        raise ValueError(f"expected tensors on one device, got {', '.join(str(t.device) for t in tensors)}")
# --8<-- [end:setup]


# --8<-- [start:pointwise]
def silu_mul_eager(x, g):
    return torch.sigmoid(x) * x * g          # 3 kernels: sigmoid, mul, mul; 2 temporaries


@triton.jit
def silu_mul_kernel(x_ptr, g_ptr, out_ptr,   # flat float32 arrays of n elements
                    n,                       # number of elements
                    BLOCK: tl.constexpr):    # elements per program instance
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n                          # the last program instance may run past n
    x = tl.load(x_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    # sigmoid, both products: all in registers, nothing written in between
    tl.store(out_ptr + offs, x * tl.sigmoid(x) * g, mask=mask)


def silu_mul(x, g):
    check_inputs(x, g)
    if x.shape != g.shape:
        raise ValueError(f"x and g must have the same shape, got {tuple(x.shape)} and {tuple(g.shape)}")
    out = torch.empty_like(x)
    n = x.numel()
    silu_mul_kernel[(triton.cdiv(n, 1024),)](x, g, out, n, BLOCK=1024)
    return out
# --8<-- [end:pointwise]


# --8<-- [start:horizontal]
def row_sum_max_eager(x):
    return x.sum(dim=1), x.amax(dim=1)       # 2 kernels, each reads all of x


@triton.jit
def row_sum_max_kernel(x_ptr,                # [rows, cols] float32, row-major
                       sum_ptr, max_ptr,     # [rows] outputs
                       cols,                 # row length
                       BLOCK: tl.constexpr):  # columns loaded per step
    row = tl.program_id(0)                   # one program instance per row
    s = tl.zeros([BLOCK], dtype=tl.float32)
    m = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        c = start + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + row * cols + c, mask=c < cols, other=float("-inf"))
        s += tl.where(c < cols, v, 0.0)      # both siblings consume the same loaded tile
        m = tl.maximum(m, v)
    tl.store(sum_ptr + row, tl.sum(s, axis=0))
    tl.store(max_ptr + row, tl.max(m, axis=0))


def row_sum_max(x):
    check_inputs(x)
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D tensor, got {x.dim()}-D")
    rows, cols = x.shape
    s = torch.empty(rows, device=x.device, dtype=x.dtype)
    m = torch.empty(rows, device=x.device, dtype=x.dtype)
    row_sum_max_kernel[(rows,)](x, s, m, cols, BLOCK=2048, num_warps=8)
    return s, m
# --8<-- [end:horizontal]


# --8<-- [start:softmax]
def softmax_eager(x):                        # the textbook formula, one kernel per line
    m = x.amax(dim=1, keepdim=True)
    e = torch.exp(x - m)
    s = e.sum(dim=1, keepdim=True)
    return e / s


@triton.jit
def softmax_kernel(x_ptr, y_ptr,             # [rows, cols] float32, row-major
                   cols,                     # row length
                   BLOCK: tl.constexpr):     # power of two >= cols: a whole row per program instance
    row = tl.program_id(0)
    c = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * cols + c, mask=c < cols, other=float("-inf"))
    e = tl.exp(x - tl.max(x, axis=0))        # max, subtract, exp: the row never leaves the chip
    tl.store(y_ptr + row * cols + c, e / tl.sum(e, axis=0), mask=c < cols)


def softmax(x):
    check_inputs(x)
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D tensor, got {x.dim()}-D")
    rows, cols = x.shape
    if x.numel() == 0:                       # no rows, or rows of no elements: nothing to normalize
        return torch.empty_like(x)
    block = triton.next_power_of_2(cols)
    if block > 16384:
        raise ValueError(f"rows of {cols} elements do not fit one program instance; "
                         "longer rows need the online-softmax formulation")
    y = torch.empty_like(x)
    softmax_kernel[(rows,)](x, y, cols, BLOCK=block, num_warps=8 if block >= 2048 else 4)
    return y
# --8<-- [end:softmax]


# --8<-- [start:traffic]
def traffic(case, shape, elem=4):
    """Bytes (unfused, fused) a version must move through device memory.

    Every tensor a kernel reads or writes counts once per kernel that touches it:
    the compulsory traffic, assuming nothing survives in cache between kernels.
    """
    if case in ("pointwise", "horizontal", "reduction") and len(shape) != (1 if case == "pointwise" else 2):
        raise ValueError(f"{case}: expected a shape of {'(n,)' if case == 'pointwise' else '(rows, cols)'}, "
                         f"got {tuple(shape)}")
    if case == "pointwise":                  # x, g -> out, n elements each
        (n,) = shape
        unfused = (1 + 1) * n + (2 + 1) * n + (2 + 1) * n   # sigmoid, mul, mul
        fused = (2 + 1) * n
    elif case == "horizontal":               # x [r, c] -> sum [r], max [r]
        r, c = shape
        unfused = 2 * (r * c + r)            # two kernels, each reads x, writes r values
        fused = r * c + 2 * r
    elif case == "reduction":                # softmax over rows of x [r, c]
        r, c = shape
        unfused = ((r * c + r)               # amax: read x, write m
                   + (r * c + r + r * c)     # x - m
                   + 2 * r * c               # exp
                   + (r * c + r)             # sum
                   + (r * c + r + r * c))    # e / s
        fused = 2 * r * c
    else:
        raise ValueError(f"unknown case {case!r}; expected pointwise, horizontal or reduction")
    return unfused * elem, fused * elem
# --8<-- [end:traffic]


if __name__ == "__main__":
    # --8<-- [start:check]
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("fusion.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    torch.manual_seed(0)
    x, g = torch.randn(10_000, device=DEVICE), torch.randn(10_000, device=DEVICE)
    torch.testing.assert_close(silu_mul(x, g), silu_mul_eager(x, g))

    a = torch.randn(64, 3000, device=DEVICE)       # 3000: not a multiple of the block, masks matter
    s, m = row_sum_max(a)
    s_ref, m_ref = row_sum_max_eager(a)
    torch.testing.assert_close(s, s_ref, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(m, m_ref)
    torch.testing.assert_close(softmax(a), softmax_eager(a))

    for case, shape in (("pointwise", (2**27,)), ("horizontal", (16384, 8192)), ("reduction", (16384, 4096))):
        unfused, fused = traffic(case, shape)
        print(f"{case:<10} unfused {unfused / 1e9:6.2f} GB  fused {fused / 1e9:5.2f} GB  "
              f"ratio {unfused / fused:.2f}")
    # --8<-- [end:check]
