#!/usr/bin/env bash
# Commands the page "Getting Started with OpenAI Triton" shows; each section is one block.
# --8<-- [start:bench]
python snippets/triton_getting_started/vector_add.py --bench
# --8<-- [end:bench]
# --8<-- [start:ncu]
# Bytes that reached device memory, and the kernel's duration, for one launch of add_kernel: the
# 21st (the first 13 are the script's correctness checks, the 14th on are the 2^28-element benchmark).
# Needs Nsight Compute (ncu) and a GPU. ncu locks the clocks to their base frequency
# (--clock-control base, its default), so its duration is not do_bench's.
ncu --kernel-name add_kernel --launch-skip 20 --launch-count 1 \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
    python snippets/triton_getting_started/vector_add.py --bench
# --8<-- [end:ncu]
