"""Vector addition, the bandwidth baseline of "Triton Kernel Practice".

Run it: `python snippets/triton_kernel_practice/vector_add.py` on a CUDA GPU, or
`TRITON_INTERPRET=1 python ...` on a CPU (small sizes, same kernel).
"""
# --8<-- [start:kernel]
import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"   # kernels run on the CPU, in numpy
DEVICE = "cpu" if INTERPRET else "cuda"


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr,  # pointers to element 0 of each vector
               n,                      # number of elements; any value, the mask covers the tail
               BLOCK: tl.constexpr):   # elements per program instance (a power of two)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n                    # the last program may hang over the end
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def add(x: torch.Tensor, y: torch.Tensor, BLOCK: int = 4096, num_warps: int = 8) -> torch.Tensor:
    if x.shape != y.shape or x.dtype != y.dtype:
        raise ValueError(f"add: x and y must match, got {tuple(x.shape)} {x.dtype} and {tuple(y.shape)} {y.dtype}")
    if not INTERPRET and not (x.is_cuda and y.is_cuda):
        raise ValueError("add: tensors must be on a CUDA GPU (or set TRITON_INTERPRET=1 to run on the CPU)")
    if x.device != y.device:
        raise ValueError(f"add: x and y must be on one device, got {x.device} and {y.device}")
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise TypeError(f"add: float16, bfloat16 or float32 tensors, got {x.dtype}")
    if INTERPRET and x.dtype == torch.bfloat16:     # the interpreter runs on NumPy, which has no bfloat16
        raise TypeError("add: Triton's interpreter gets bfloat16 wrong; use float32, or run on a GPU")
    if BLOCK < 1 or BLOCK & (BLOCK - 1):
        raise ValueError(f"add: BLOCK must be a power of two (tl.arange needs one), got {BLOCK}")
    x, y = x.contiguous(), y.contiguous()   # a strided view becomes one flat pass
    out = torch.empty_like(x)
    n = x.numel()
    add_kernel[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK, num_warps=num_warps)
    return out


if __name__ == "__main__":
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("vector_add.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    n = 3 * 1000 + 7 if INTERPRET else (1 << 24) + 7   # deliberately not a multiple of BLOCK
    x = torch.randn(n, device=DEVICE)
    y = torch.randn(n, device=DEVICE)
    torch.testing.assert_close(add(x, y), x + y, rtol=0, atol=0)
    print("vector add matches torch")
# --8<-- [end:kernel]
