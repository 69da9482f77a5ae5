#!/usr/bin/env bash
# The compatibility rules, tried on a real GPU (the page ran them on an H200, sm_90).
#   bash snippets/cuda_compilation_pipeline/run_h200.sh     (from the repository root)
set -euo pipefail
source snippets/cuda_compilation_pipeline/env.sh

# --8<-- [start:compat]
nvcc -arch=sm_90 saxpy.cu -o saxpy_sm90 -L"$CUDA_LIB"                              # SASS sm_90 + PTX compute_90
nvcc -gencode arch=compute_90,code=compute_90 saxpy.cu -o saxpy_ptx90 -L"$CUDA_LIB"  # PTX only
nvcc -gencode arch=compute_80,code=sm_80 saxpy.cu -o saxpy_sm80 -L"$CUDA_LIB"        # SASS for sm_80 only
jit=$(mktemp -d)                               # an empty JIT cache of our own (not exported: your shell keeps its own)
CUDA_CACHE_PATH=$jit ./saxpy_sm90              # matching SASS: nothing to compile
find "$jit" -type f | wc -l                    # 0 files: the driver compiled nothing
CUDA_CACHE_PATH=$jit ./saxpy_ptx90             # no SASS for sm_90: the driver JIT-compiles the PTX
find "$jit" -type f | wc -l                    # ... and stores the result
CUDA_CACHE_PATH=$jit ./saxpy_ptx90             # the same PTX again: taken from the cache
CUDA_CACHE_PATH=$(mktemp -d) CUDA_FORCE_PTX_JIT=1 ./saxpy_sm90   # ignore the SASS, compile the PTX (empty cache)
if ./saxpy_sm80 2> error.txt; then echo 'unexpected: it ran' >&2; false; fi   # SASS for another GPU and no PTX
cat error.txt
grep -q cudaErrorNoKernelImageForDevice error.txt
# --8<-- [end:compat]

# --8<-- [start:ptx-isa]
nvcc -arch=sm_90 load_ptx.cu -o load_ptx -L"$CUDA_LIB"
nvcc -arch=sm_90 -ptx saxpy.cu -o saxpy.ptx                      # nvcc 13.0 writes .version 9.0
./load_ptx saxpy.ptx > load.txt || true; cat load.txt           # the driver (CUDA 13.0) compiles it
grep -q ': ok$' load.txt || { echo 'unexpected: not loaded' >&2; false; }
sed 's/^\.version 9\.0$/.version 9.1/' saxpy.ptx > saxpy_isa9.1.ptx
# one ISA version too new, and what nvcc 13.5 writes: both refused as too new, and for that reason only
for ptx in saxpy_isa9.1.ptx "$REPO/data/cuda_compilation_pipeline/ir/saxpy_nvcc13.5.ptx"; do
  ./load_ptx "$ptx" > load.txt || true; cat load.txt
  grep -q cudaErrorUnsupportedPtxVersion load.txt || { echo 'unexpected: not refused as too new' >&2; false; }
done
# --8<-- [end:ptx-isa]

# --8<-- [start:vector]
nvcc -arch=sm_90 vector_loads.cu -o vector_loads -L"$CUDA_LIB"
./vector_loads
# --8<-- [end:vector]

# --8<-- [start:registers]
for flags in "" "-DMIN_BLOCKS=6" "-DMIN_BLOCKS=8" "-maxrregcount=24"; do
  nvcc -arch=sm_90 $flags registers.cu -o registers -L"$CUDA_LIB"
  out=$(./registers)                             # on a failed check it says which on stderr and exits 1
  echo "nvcc -arch=sm_90 $flags: $out"
done
# --8<-- [end:registers]
