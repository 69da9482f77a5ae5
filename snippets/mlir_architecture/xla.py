# --8<-- [start:stablehlo]
# The mlp.mlir layer in JAX: lowered to StableHLO (MLIR), then compiled by XLA (CPU).
import re

import jax
import jax.numpy as jnp


def layer(x, w):
    y = jax.nn.relu(x @ w)          # matmul + elementwise
    return y, jnp.sum(y, axis=1)    # + a row-sum reduction


x = jnp.ones((4, 3), jnp.float32)
w = jnp.ones((3, 2), jnp.float32)
lowered = jax.jit(layer).lower(x, w)
print(lowered.as_text())            # StableHLO: the MLIR module JAX hands to XLA
# --8<-- [end:stablehlo]


# --8<-- [start:hlo]
def without_metadata(hlo: str) -> str:
    """XLA's HLO text without source locations and stack-frame tables (they name
    this file's path)."""
    hlo = re.sub(r", metadata=\{[^}]*\}", "", hlo)
    tables = r"(?ms)^(FileNames|FunctionNames|FileLocations|StackFrames)\n.*?\n\n"
    hlo = re.sub(tables, "", hlo)
    return re.sub(r", backend_config=\{.*\}", "", hlo)


compiled = lowered.compile()        # XLA's CPU pipeline: HLO passes, fusion, then LLVM
print(without_metadata(compiled.as_text()))
# --8<-- [end:hlo]
