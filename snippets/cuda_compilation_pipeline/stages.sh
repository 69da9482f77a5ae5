#!/usr/bin/env bash
# The two stages of nvcc, seen from outside: every step it runs and every file it leaves.
#   bash snippets/cuda_compilation_pipeline/stages.sh     (from the repository root)
set -euo pipefail

# --8<-- [start:install]
# from a checkout of this site's repository
python3 -m venv .venv && . .venv/bin/activate
pip install -r requirements-cuda.txt
pip install --no-deps -e .    # the repository's own scripts (sitekit), which every block's env.sh imports
pip install triton==3.6.0     # only for the last section: Triton with its own ptxas, cuobjdump, nvdisasm
# --8<-- [end:install]

source snippets/cuda_compilation_pipeline/env.sh    # after the install: it cds into a scratch folder

# --8<-- [start:setup]
nvcc --version | tail -n 2                        # the CUDA release of the H200's driver: 13.0
nvcc --list-gpu-code | tr '\n' ' ' && echo        # the base real architectures it writes SASS for (not the a/f variants)
python3 "$REPO/scripts/measure/cuda_compilation_pipeline/_pipeline.py" check-arch sm_95 2>&1 || true   # a typo gets the valid list
# --8<-- [end:setup]

# --8<-- [start:dryrun]
# every program nvcc would run for a full build, and how; --dryrun runs none of them
nvcc --dryrun -arch=sm_90 saxpy.cu -o saxpy -L"$CUDA_LIB" 2>&1
# --8<-- [end:dryrun]

# --8<-- [start:keep]
# the same build for real, keeping every intermediate file
mkdir kept
nvcc --keep --keep-dir kept -arch=sm_90 saxpy.cu -o saxpy -L"$CUDA_LIB"
ls kept
# --8<-- [end:keep]

# --8<-- [start:ptx]
# stage one alone: CUDA C++ -> PTX for the virtual architecture compute_90
nvcc -arch=sm_90 -ptx saxpy.cu -o saxpy.ptx
cat saxpy.ptx
# --8<-- [end:ptx]
