#!/usr/bin/env bash
# oneMKL from the mkl-devel wheel: link line from pkg-config, a checked DGEMM.
#   bash snippets/oneapi_installation/mkl.sh     (from the repository root)
set -euo pipefail
source snippets/oneapi_installation/env.sh

# --8<-- [start:dgemm]
# sequential oneMKL (one thread): libmkl_intel_lp64, libmkl_sequential, libmkl_core, by full path from pkg-config
pkg-config --libs mkl-dynamic-lp64-seq | tr ' ' '\n' | grep -o 'libmkl_[a-z_0-9]*' | tr '\n' ' ' && echo
gcc -O2 dgemm.c -o dgemm_seq $(pkg-config --cflags --libs mkl-dynamic-lp64-seq)
# threaded oneMKL on Intel's OpenMP runtime (libiomp5, from the intel-openmp wheel)
gcc -O2 dgemm.c -o dgemm_omp $(pkg-config --cflags --libs mkl-dynamic-lp64-iomp)
./dgemm_seq 512 3 > /dev/null && echo "sequential DGEMM 512: checked OK"
MKL_NUM_THREADS=2 ./dgemm_omp 512 3 > /dev/null && echo "2-thread DGEMM 512: checked OK"
# --8<-- [end:dgemm]
