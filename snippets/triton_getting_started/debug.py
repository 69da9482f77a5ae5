# --8<-- [start:debug]
"""Debugging on the CPU: Triton's interpreter, tl.device_print, tl.static_assert.

    python snippets/triton_getting_started/debug.py

It runs the same with or without a GPU: it switches the interpreter on itself.
"""
import os

# Before @triton.jit runs: kernels then execute as NumPy code on the CPU.
os.environ["TRITON_INTERPRET"] = "1"

import torch
import triton
import triton.language as tl


@triton.jit
def buggy_add_kernel(x_ptr, y_ptr, out_ptr, n_elements,
                     BLOCK_SIZE: tl.constexpr):
    # Checked when the kernel is compiled (here: when it first runs).
    tl.static_assert((BLOCK_SIZE & (BLOCK_SIZE - 1)) == 0,
                     "BLOCK_SIZE must be a power of two")
    pid = tl.program_id(axis=0)
    offsets = pid + tl.arange(0, BLOCK_SIZE)  # bug: pid * BLOCK_SIZE + ...
    tl.device_print("offsets", offsets)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


n = 10
x, y = torch.arange(n, dtype=torch.float32), torch.ones(n)
out = torch.full((n,), float("nan"))  # NaN marks what was never written
buggy_add_kernel[(triton.cdiv(n, 4),)](x, y, out, n, BLOCK_SIZE=4)
print(out)

try:
    buggy_add_kernel[(2,)](x, y, out, n, BLOCK_SIZE=6)
except Exception as e:  # InterpreterError here, CompilationError on a GPU
    print(f"{type(e).__name__}: {e}")
# --8<-- [end:debug]
