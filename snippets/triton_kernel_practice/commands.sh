#!/usr/bin/env bash
# Commands the page "Triton Kernel Practice" shows; each section is one block (GPU only).
# --8<-- [start:gemm_hopper]
python snippets/triton_kernel_practice/gemm_hopper.py
# --8<-- [end:gemm_hopper]
# --8<-- [start:flash_attention]
python snippets/triton_kernel_practice/flash_attention.py
# --8<-- [end:flash_attention]
# --8<-- [start:launch_handle]
python snippets/triton_kernel_practice/launch_handle.py
# --8<-- [end:launch_handle]
# --8<-- [start:gemm_epilogue]
python snippets/triton_kernel_practice/gemm_epilogue.py
# --8<-- [end:gemm_epilogue]
