"""Compile add_kernel for an H100/H200 (sm_90) on any machine, and read the result.

    python snippets/triton_getting_started/inspect_kernel.py

No GPU needed. scripts/measure/triton_getting_started/ptx.py writes the page's
PTX sample and PTX table with these functions.
"""
# --8<-- [start:compile]
import re

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

# The page's kernel: vector_add.py, in the same folder as this file.
from vector_add import add_kernel

# Under TRITON_INTERPRET=1, @triton.jit returned an interpreter wrapper;
# the compiler needs the JIT function itself.
if isinstance(add_kernel, JITFunction):
    jit_add = add_kernel
else:
    jit_add = JITFunction(add_kernel.fn)
# backend, compute capability 9.0 (H100, H200), 32 threads per warp
SM90 = GPUTarget("cuda", 90, 32)


def compile_add(n_multiple_of_16, block_size=1024, num_warps=4, dtype="fp32"):
    """Build what a launch on an sm_90 GPU builds. At each launch the JIT
    notes which pointers are 16-byte aligned (PyTorch's are) and which
    integers are multiples of 16; the `attrs` below are those hints."""
    hint = [["tt.divisibility", 16]]
    attrs = {(0,): hint, (1,): hint, (2,): hint}  # x_ptr, y_ptr, out_ptr
    if n_multiple_of_16:
        attrs[(3,)] = hint                         # n_elements
    ptr = f"*{dtype}"
    signature = {"x_ptr": ptr, "y_ptr": ptr, "out_ptr": ptr,
                 "n_elements": "i32", "BLOCK_SIZE": "constexpr"}
    src = ASTSource(jit_add, signature, {"BLOCK_SIZE": block_size}, attrs)
    return triton.compile(src, target=SM90, options={"num_warps": num_warps})


def count(pattern, text):
    return len(re.findall(pattern, text))


def summary(kernel):
    ptx, ttgir = kernel.asm["ptx"], kernel.asm["ttgir"]
    layout = re.search(r"sizePerThread = \[(\d+)\]", ttgir)
    return {
        "stages": list(kernel.asm),  # every form, in compilation order
        "target": re.search(r"^\.target (\S+)", ptx, re.M).group(1),
        "size_per_thread": int(layout.group(1)),
        # ld.global.v4.b32: 16 bytes per thread; .b32 or .b16: one element
        "ld_vector": count(r"ld\.global\.v\d", ptx),
        "ld_scalar": count(r"ld\.global\.b\d", ptx),
        "st_vector": count(r"st\.global\.v\d", ptx),
        "st_scalar": count(r"st\.global\.b\d", ptx),
    }


if __name__ == "__main__":
    for multiple in (True, False):
        print(f"n_elements % 16 == 0: {multiple}",
              summary(compile_add(multiple)))
# --8<-- [end:compile]


def ptx_excerpt(ptx: str) -> str:
    """The kernel's PTX without debug information: the header and the function
    body, minus .loc lines, comments, blank lines and unused labels."""
    lines = ptx.splitlines()
    head = [ln for ln in lines
            if ln.startswith((".version", ".target", ".address_size"))]
    start = next(i for i, ln in enumerate(lines)
                 if ln.startswith(".visible .entry"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    body = [re.sub(r"\s*//.*$", "", ln).rstrip() for ln in lines[start:end + 1]
            if not ln.strip().startswith(".loc")]
    used = " ".join(ln for ln in body if not ln.endswith(":"))
    body = [ln for ln in body
            if ln and not (ln.startswith("$L__") and ln.endswith(":")
                           and ln[:-1] not in used)]
    return "\n".join(head + [""] + body) + "\n"
