"""saxpy.cu's kernel written in Triton, compiled for the H200 (sm_90) on a machine without a GPU.

Triton has its own front half (Python -> TTIR -> TTGIR -> LLVM IR -> PTX) and the same back half
as nvcc: ptxas turns the PTX into a cubin of SASS. The Triton wheel carries its own ptxas,
cuobjdump and nvdisasm (triton/backends/nvidia/bin), so no CUDA toolkit is needed here.

    python snippets/cuda_compilation_pipeline/triton_saxpy.py
"""
# --8<-- [start:imports]
import os

os.environ["TRITON_INTERPRET"] = "0"   # compile for real: the interpreter produces no IR

import re
import subprocess
import tempfile
from pathlib import Path

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

TRITON_BIN = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"   # ptxas, cuobjdump, nvdisasm

# --8<-- [end:imports]


# --8<-- [start:kernel]
@triton.jit
def saxpy_kernel(x_ptr,                 # input
                 y_ptr,                 # input and output
                 n,                     # number of elements
                 a,                     # scale factor
                 BLOCK: tl.constexpr):  # elements per program instance
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n                     # the last program instance may run past n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, a * x + y, mask=mask)
# --8<-- [end:kernel]


# --8<-- [start:compile]
def compile_saxpy(capability: int = 90, aligned: bool = True):
    """Compile for a GPU of this compute capability; no GPU needs to be present."""
    signature = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "a": "fp32", "BLOCK": "constexpr"}
    # A real launch checks which pointers and integers are multiples of 16 and specializes the
    # kernel for it; compiling ahead of time, we state it ourselves (arguments 0, 1 and 2).
    hints = {(i,): [["tt.divisibility", 16]] for i in range(3)} if aligned else {}
    src = ASTSource(fn=saxpy_kernel, signature=signature, constexprs={"BLOCK": 1024}, attrs=hints)
    return triton.compile(src, target=GPUTarget("cuda", capability, 32), options={"num_warps": 4})


def sass(cubin: bytes) -> str:
    """Disassemble a cubin with the cuobjdump that ships inside the Triton wheel."""
    with tempfile.TemporaryDirectory() as t:
        f = Path(t) / "saxpy_kernel.cubin"
        f.write_bytes(cubin)
        return subprocess.run([str(TRITON_BIN / "cuobjdump"), "-sass", str(f)],
                              capture_output=True, text=True, check=True).stdout
# --8<-- [end:compile]


if __name__ == "__main__":
    # --8<-- [start:main]
    for aligned in (False, True):
        k = compile_saxpy(aligned=aligned)
        sizes = ", ".join(f"{s} {len(k.asm[s].splitlines())} lines" for s in ("ttir", "ttgir", "llir"))
        header = " ".join(l.strip() for l in k.asm["ptx"].splitlines() if l.startswith((".version", ".target")))
        loads = re.findall(r"\bLDG\S*", sass(k.asm["cubin"]))
        print(f"aligned={aligned}: {sizes}")
        print(f"  PTX: {header}; SASS: {len(loads)} global loads per thread, {sorted(set(loads))}")
    # --8<-- [end:main]
