#!/usr/bin/env bash
# Triage for "no kernel image is available": what the binary carries against what the GPU is.
#   bash snippets/cuda_compilation_pipeline/triage.sh     (from the repository root)
set -euo pipefail
source snippets/cuda_compilation_pipeline/env.sh

# --8<-- [start:triage]
nvcc -gencode arch=compute_80,code=sm_80 saxpy.cu -o saxpy_sm80 -L"$CUDA_LIB"   # the binary that failed on the H200
# 1. the GPU, on the machine that fails:  nvidia-smi --query-gpu=name,compute_cap --format=csv
# 2. what the binary carries (an executable also holds the device-link cubin: two sm_80 ELFs)
cuobjdump --list-elf --list-ptx saxpy_sm80 2>&1 || true
# 3. the rules, applied (triage.py does steps 2 and 3; without --cc it asks nvidia-smi)
python3 "$REPO/snippets/cuda_compilation_pipeline/triage.py" saxpy_sm80 --cc 9.0 || echo "exit code $?"
python3 "$REPO/snippets/cuda_compilation_pipeline/triage.py" saxpy_sm80 --cc 8.9
# --8<-- [end:triage]

# --8<-- [start:gpus]
# one build per row, eight GPUs per column: SASS = runs its SASS, JIT = compiles its PTX, - = no kernel image
nvcc -fatbin saxpy.cu -o default.fatbin
nvcc -arch=sm_90 -fatbin saxpy.cu -o arch_sm90.fatbin
nvcc -gencode arch=compute_90,code=compute_90 -fatbin saxpy.cu -o ptx90.fatbin
nvcc -gencode arch=compute_80,code=[sm_80,sm_90,compute_80] -fatbin saxpy.cu -o two_sass.fatbin
nvcc -arch=sm_90a -fatbin saxpy.cu -o arch_sm90a.fatbin
nvcc -gencode arch=compute_90a,code=sm_90a -fatbin saxpy.cu -o sm90a.fatbin
nvcc -arch=sm_100f -fatbin saxpy.cu -o arch_sm100f.fatbin
nvcc -gencode arch=compute_120,code=compute_120 -fatbin saxpy.cu -o ptx120.fatbin
python3 "$REPO/snippets/cuda_compilation_pipeline/triage.py" --table *.fatbin
# --8<-- [end:gpus]
