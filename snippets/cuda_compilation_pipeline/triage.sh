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
