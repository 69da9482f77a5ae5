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

# --8<-- [start:wgmma]
nvcc -gencode arch=compute_90a,code=sm_90a -fatbin wgmma_fence.cu -o gencode_90a.fatbin && echo "gencode compute_90a,sm_90a: built"
nvcc -arch=sm_90a -fatbin wgmma_fence.cu -o arch_90a.fatbin 2>&1 || echo "-arch=sm_90a: failed"
nvcc -arch=sm_90a -DGUARDED -fatbin wgmma_fence.cu -o guarded.fatbin && echo "-arch=sm_90a -DGUARDED: built"
cuobjdump --list-elf --list-ptx guarded.fatbin
for ptx in guarded.1.sm_90.ptx guarded.2.sm_90a.ptx; do
  cuobjdump -xptx $ptx guarded.fatbin > /dev/null
  echo "$ptx: $(grep -c 'wgmma\.fence' $ptx || true) wgmma.fence"
done
# --8<-- [end:wgmma]

# --8<-- [start:dropped]
# CUDA 13.0 builds nothing older than Turing (sm_75), and Jetson Thor is sm_110 (sm_101 in 12.x)
for arch in sm_70 sm_72 sm_75 sm_101 sm_110; do
  if nvcc -arch=$arch -cubin saxpy.cu -o saxpy_$arch.cubin 2> error.txt; then echo "$arch: built"; else echo "$arch: $(head -n 1 error.txt)"; fi
done
# --8<-- [end:dropped]
