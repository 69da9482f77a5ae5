"""Launch a compiled Triton kernel without the JIT's per-call dispatch, and see what that saves
on the host.   Run: python snippets/triton_kernel_practice/launch_handle.py (CUDA GPU)
It imports softmax.py from its own folder: download both (the links above the page's blocks).
"""
# needs: gpu
import sys
import time
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parent))
from softmax import fused_launch, softmax_row_kernel  # noqa: E402

if not torch.cuda.is_available():
    sys.exit("launch_handle.py: needs a CUDA GPU")

M, N = 4096, 1024
x = 4 * torch.randn(M, N, device="cuda")
out = torch.empty_like(x)
BLOCK = triton.next_power_of_2(N)
ROWS, num_warps = fused_launch(BLOCK)
grid = (triton.cdiv(M, ROWS), 1, 1)
args = (out, x, x.stride(0), x.stride(1), out.stride(0), M, N)

# Compile once for exactly these arguments. The handle is only valid for calls the JIT would have
# specialized the same way: same dtypes, same 16-byte alignment of every pointer, the same integers
# equal to 1 or divisible by 16. Generated code that knows its shapes can promise that; a general
# wrapper cannot.
compiled = softmax_row_kernel.warmup(*args, BLOCK=BLOCK, ROWS=ROWS, num_warps=num_warps, grid=grid)
launch = compiled[grid]          # arguments positional, in signature order, constexprs included
launch(*args, BLOCK, ROWS, 1, False)  # then VEC and WIDE at their defaults: 1,024 columns need no hint
torch.testing.assert_close(out, torch.softmax(x, dim=-1))


def cpu_us_per_call(fn, calls=300):
    fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):       # few enough that the GPU queue never fills
        fn()
    us = (time.perf_counter() - start) / calls * 1e6
    torch.cuda.synchronize()
    return us


jit = cpu_us_per_call(lambda: softmax_row_kernel[grid](*args, BLOCK=BLOCK, ROWS=ROWS, num_warps=num_warps))
handle = cpu_us_per_call(lambda: launch(*args, BLOCK, ROWS, 1, False))
print(f"CPU time per launch: through the JIT {jit:.1f} us, through the handle {handle:.1f} us")
