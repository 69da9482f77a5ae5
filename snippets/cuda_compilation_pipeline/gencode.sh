#!/usr/bin/env bash
# What each gencode combination puts in the binary.
#   bash snippets/cuda_compilation_pipeline/gencode.sh     (from the repository root)
set -euo pipefail
source snippets/cuda_compilation_pipeline/env.sh

# --8<-- [start:gencode]
nvcc -arch=sm_90 -fatbin saxpy.cu -o arch_sm90.fatbin
nvcc -gencode arch=compute_90,code=sm_90 -fatbin saxpy.cu -o sass_only.fatbin
nvcc -gencode arch=compute_90,code=compute_90 -fatbin saxpy.cu -o ptx_only.fatbin
nvcc -gencode arch=compute_80,code=[sm_80,sm_90,compute_80] -fatbin saxpy.cu -o two_sass.fatbin
nvcc -gencode arch=compute_90a,code=sm_90a -fatbin saxpy.cu -o sm90a.fatbin
for f in arch_sm90 sass_only ptx_only two_sass sm90a; do
  echo "== $f.fatbin"
  cuobjdump --list-elf --list-ptx $f.fatbin 2>/dev/null || true   # it says so on stderr when a kind is absent
done
# --8<-- [end:gencode]
