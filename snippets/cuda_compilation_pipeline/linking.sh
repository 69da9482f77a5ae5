#!/usr/bin/env bash
# Where kernels get registered, and what the device link does with -rdc=true.
#   bash snippets/cuda_compilation_pipeline/linking.sh     (from the repository root)
set -euo pipefail
source snippets/cuda_compilation_pipeline/env.sh

# --8<-- [start:register]
# whole-program mode (the default): who registers the kernel, and what the device link adds
mkdir kept
nvcc --keep --keep-dir kept -arch=sm_90 saxpy.cu -o saxpy -L"$CUDA_LIB"
grep -o -E "__cudaRegister(Binary|Entry)|__constructor__" kept/saxpy.cudafe1.stub.c | sort -u
cat kept/saxpy_dlink.reg.c
echo "code sections in saxpy_dlink.sm_90.cubin: $(cuobjdump -elf kept/saxpy_dlink.sm_90.cubin | grep -c '^\.section \.text' || true)"
# --8<-- [end:register]

# --8<-- [start:rdc]
# a call into another file: whole-program mode cannot build it
nvcc -arch=sm_90 -c rdc_apply.cu -o whole.o 2>&1 || echo "-c without -rdc: failed"
# separate compilation: -dc (= -rdc=true -c) per file, one device link, then the host link
nvcc -arch=sm_90 -dc rdc_apply.cu rdc_scale.cu
nvcc -arch=sm_90 -dlink rdc_apply.o rdc_scale.o -o device_link.o
nvcc -arch=sm_90 rdc_apply.o rdc_scale.o device_link.o -o rdc_app -L"$CUDA_LIB"
cuobjdump -sass device_link.o | grep -E "Function|CALL|FADD"    # the linked cubin: both functions
# --8<-- [end:rdc]
