"""Compile add_kernel for an H100/H200 (sm_90) on any machine, GPU or not, and read what Triton built.

    python snippets/triton_getting_started/inspect_kernel.py

scripts/measure/triton_getting_started_ptx.py writes the page's PTX excerpt and table with these functions.
"""
import re

from vector_add import add_kernel  # the kernel from the page (same folder)

# --8<-- [start:compile]
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

# With TRITON_INTERPRET=1, @triton.jit returned an interpreter wrapper: the compiler needs the JIT function.
jit_add = add_kernel if isinstance(add_kernel, JITFunction) else JITFunction(add_kernel.fn)
SM90 = GPUTarget("cuda", 90, 32)  # backend, compute capability 9.0 (H100, H200), 32 threads per warp


def compile_add(n_multiple_of_16: bool, block_size: int = 1024, num_warps: int = 4, dtype: str = "fp32"):
    """Build what a launch on an sm_90 GPU builds. At launch, the JIT checks which pointers are 16-byte
    aligned (PyTorch's allocations are) and which integers are multiples of 16, and compiles a variant
    that may assume it: these hints are the `attrs` below."""
    hint = [["tt.divisibility", 16]]
    attrs = {(0,): hint, (1,): hint, (2,): hint}  # x_ptr, y_ptr, out_ptr (argument positions)
    if n_multiple_of_16:
        attrs[(3,)] = hint                          # n_elements
    src = ASTSource(jit_add, signature={"x_ptr": f"*{dtype}", "y_ptr": f"*{dtype}", "out_ptr": f"*{dtype}",
                                        "n_elements": "i32", "BLOCK_SIZE": "constexpr"},
                    constexprs={"BLOCK_SIZE": block_size}, attrs=attrs)
    return triton.compile(src, target=SM90, options={"num_warps": num_warps})


def summary(kernel) -> dict:
    ptx, ttgir = kernel.asm["ptx"], kernel.asm["ttgir"]
    return {
        "stages": list(kernel.asm),  # every intermediate form, in compilation order
        "target": re.search(r"^\.target (\S+)", ptx, re.M).group(1),
        "size_per_thread": int(re.search(r"sizePerThread = \[(\d+)\]", ttgir).group(1)),
        # ld.global.v4.b32 moves 16 bytes per thread; ld.global.b32 or .b16 moves one element
        "ld_vector": len(re.findall(r"ld\.global\.v\d", ptx)), "ld_scalar": len(re.findall(r"ld\.global\.b\d", ptx)),
        "st_vector": len(re.findall(r"st\.global\.v\d", ptx)), "st_scalar": len(re.findall(r"st\.global\.b\d", ptx)),
    }


if __name__ == "__main__":
    for multiple in (True, False):
        print(f"n_elements % 16 == 0: {multiple}", summary(compile_add(multiple)))
# --8<-- [end:compile]


def ptx_excerpt(ptx: str) -> str:
    """The kernel's PTX without debug information: the header and the function body, minus
    .loc lines, inline-asm markers, comments, blank lines and labels that nothing branches to."""
    lines = ptx.splitlines()
    head = [l for l in lines if l.startswith((".version", ".target", ".address_size"))]
    start = next(i for i, l in enumerate(lines) if l.startswith(".visible .entry"))
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    body = [re.sub(r"\s*//.*$", "", l).rstrip() for l in lines[start:end + 1]
            if not l.strip().startswith(".loc")]
    used = " ".join(l for l in body if not l.endswith(":"))
    body = [l for l in body if l and not (l.startswith("$L__") and l.endswith(":") and l[:-1] not in used)]
    return "\n".join(head + [""] + body) + "\n"
