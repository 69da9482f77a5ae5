"""What a launch looks at in each run-time argument, with Triton 3.6.

    python snippets/triton_getting_started/specialize.py

No GPU needed. `native_specialize_impl` is the function Triton's JIT calls on every
argument of every launch to build the key of the compiled variant. It is internal to
Triton, not a public API: this file shows what Triton 3.6 does, and the site's tests
fail when a new release changes it.
"""
# --8<-- [start:specialize]
import torch
from triton._C.libtriton import native_specialize_impl
from triton.backends.nvidia.compiler import CUDABackend


def key(arg, specialize=True, align=True):
    """(type, hint) as the JIT records it. "D": an integer divisible by 16, or a
    pointer aligned to 16 bytes. An integer equal to 1 becomes a constant."""
    return native_specialize_impl(CUDABackend, arg, False, specialize, align)


x = torch.empty(4097)
for n in (4096, 4097, 1):
    print(f"n_elements = {n}:", key(n))
print("x_ptr = x:    ", key(x))
print("x_ptr = x[1:]:", key(x[1:]))  # 4 bytes past an aligned address
# @triton.jit(do_not_specialize=["n_elements"]) drops both integer hints,
# do_not_specialize_on_alignment=[...] only the multiple-of-16 one:
print("do_not_specialize, n = 1:", key(1, specialize=False))
print("do_not_specialize_on_alignment, n = 4096:", key(4096, align=False))
# --8<-- [end:specialize]
