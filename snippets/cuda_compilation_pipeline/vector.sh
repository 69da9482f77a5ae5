#!/usr/bin/env bash
# 4-byte against 16-byte accesses, as SASS shows them.
#   bash snippets/cuda_compilation_pipeline/vector.sh     (from the repository root)
set -euo pipefail
source snippets/cuda_compilation_pipeline/env.sh

# --8<-- [start:vector-sass]
nvcc -arch=sm_90 -cubin vector_loads.cu -o vector_loads.cubin
cuobjdump -sass vector_loads.cubin | grep -E "Function|LDG|STG"
# --8<-- [end:vector-sass]
