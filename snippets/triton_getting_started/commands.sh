#!/usr/bin/env bash
# Commands the page "Getting Started with OpenAI Triton" shows; each section is one block.
# --8<-- [start:bench]
python snippets/triton_getting_started/vector_add.py --bench
# --8<-- [end:bench]
# --8<-- [start:ncu]
# Bytes that reached device memory, and the kernel's duration, for one launch of add_kernel
# (the 11th, after the warm-up). Needs Nsight Compute (ncu) and a GPU.
ncu --kernel-name add_kernel --launch-skip 10 --launch-count 1 \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    python snippets/triton_getting_started/vector_add.py --bench
# --8<-- [end:ncu]
