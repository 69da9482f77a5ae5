#!/usr/bin/env bash
# Reading what ptxas produced: SASS, source lines, control flow.
#   bash snippets/cuda_compilation_pipeline/inspect.sh     (from the repository root)
set -euo pipefail
source snippets/cuda_compilation_pipeline/env.sh

# --8<-- [start:sass]
# stage two alone: PTX -> SASS for the real architecture sm_90, in a bare cubin
nvcc -arch=sm_90 -cubin saxpy.cu -o saxpy.cubin
cuobjdump -sass saxpy.cubin
# --8<-- [end:sass]

# --8<-- [start:nvdisasm]
# -lineinfo keeps source lines in the cubin; nvdisasm -g prints them between instructions
nvcc -arch=sm_90 -cubin -lineinfo saxpy.cu -o saxpy.cubin
nvdisasm -c -g saxpy.cubin | grep -v -w NOP        # NOPs only pad the function past its end
# --8<-- [end:nvdisasm]

# --8<-- [start:cfg]
# the control-flow graph of a kernel with a loop, in Graphviz's DOT language
nvcc -arch=sm_90 -cubin grid_stride.cu -o grid_stride.cubin
nvdisasm -cfg grid_stride.cubin
# --8<-- [end:cfg]
