#!/usr/bin/env bash
# Intel MPI Benchmarks as shipped in the impi-rt wheel, and the same-program comparison with Open MPI.
#   bash snippets/oneapi_installation/imb.sh     (from the repository root)
set -euo pipefail
source snippets/oneapi_installation/env.sh

# --8<-- [start:imb]
# PingPong between 2 ranks and Allreduce, message sizes 2^0 .. 2^16 bytes, 100 repetitions each. Kept: each
# benchmark's name, its column header and the sizes from 1 KiB (Mbytes/sec: 10^6 bytes per second)
mpiexec -n 2 IMB-MPI1 -msglog 0:16 -iter 100 -iter_policy off PingPong Allreduce \
  | grep -E "^# Benchmarking|^ +#bytes|^ +[0-9]+ +[0-9]+ " | awk '$1 == "#" || $1 == "#bytes" || $1 >= 1024'
# --8<-- [end:imb]
