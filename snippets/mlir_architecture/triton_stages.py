"""A Triton matmul kernel compiled for the H200 (sm_90) on a machine with no GPU.

triton.compile runs Triton's MLIR pipeline: Python AST -> TTIR (tt dialect) -> TTGIR
(ttg/ttng dialects, with layouts) -> LLVM IR (through MLIR's llvm and nvvm dialects)
-> PTX -> cubin. Prints the stage sizes, the layouts and a few PTX instruction counts:

    python snippets/mlir_architecture/triton_stages.py

With TRITON_ALWAYS_COMPILE=1 MLIR_ENABLE_DUMP=1 it also prints the IR before every pass
(on stderr).
"""
# --8<-- [start:kernel]
import os

os.environ["TRITON_INTERPRET"] = "0"   # compile for real: the interpreter produces no IR

import re

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr,  # fp16 A (M×K), fp16 B (K×N), fp32 C (M×N)
                  M, N, K,                # sizes, multiples of the block sizes here
                  BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):   # block sizes
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)     # on sm_90: a warpgroup MMA (wgmma) reading shared memory
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)
# --8<-- [end:kernel]


# --8<-- [start:compile]

def compile_for_h200():
    """Compile for compute capability 9.0 (Hopper); no GPU needs to be present."""
    signature = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32",
                 "M": "i32", "N": "i32", "K": "i32",
                 "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    hints = {(i,): [["tt.divisibility", 16]] for i in range(6)}   # all multiples of 16
    src = ASTSource(fn=matmul_kernel, signature=signature,
                    constexprs={"BM": 64, "BN": 64, "BK": 32}, attrs=hints)
    return triton.compile(src, target=GPUTarget("cuda", 90, 32),
                          options={"num_warps": 4, "num_stages": 3})


kernel = compile_for_h200()
for stage in ("ttir", "ttgir", "llir"):
    print(f"{stage:6s} {len(kernel.asm[stage].splitlines()):4d} lines")
for layout in sorted(set(re.findall(r"#ttg\.(\w+)<", kernel.asm["ttgir"]))):
    print("layout in TTGIR:", layout)
for instr in ("cp.async.cg.shared.global", "wgmma.mma_async", "bar.sync"):   # in the PTX
    pattern = r"^\s*" + re.escape(instr)
    print(f"{instr} in PTX: {len(re.findall(pattern, kernel.asm['ptx'], re.M))}")
# --8<-- [end:compile]
