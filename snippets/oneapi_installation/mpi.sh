#!/usr/bin/env bash
# Intel MPI from PyPI: versions, then hello / ring / allreduce on 2 and 4 ranks of one machine.
#   bash snippets/oneapi_installation/mpi.sh     (from the repository root)
set -euo pipefail
source snippets/oneapi_installation/env.sh

# --8<-- [start:versions]
mpiexec --version | sed -n 1p                      # the launcher: Intel MPI's Hydra
mpicc -v 2>&1 | sed -n 1p                         # the compiler wrapper: Intel's script around gcc
pkg-config --modversion mkl-dynamic-lp64-seq      # oneMKL from the mkl-devel wheel
python3 -c "import dpctl, dpnp, mpi4py; print('dpctl', dpctl.__version__, 'dpnp', dpnp.__version__, 'mpi4py', mpi4py.__version__)"
# --8<-- [end:versions]

# --8<-- [start:hello]
mpicc -O2 hello.c -o hello
mpiexec -n 2 ./hello
mpiexec -n 4 ./hello                              # 4 ranks on 2 cores: Intel MPI shares cores without asking
# --8<-- [end:hello]

# --8<-- [start:pinning]
mpicc -O2 hello.c -o hello
# I_MPI_DEBUG=4 prints the library and the CPU each rank is pinned to (on one node, no fabric line)
I_MPI_DEBUG=4 mpiexec -n 4 ./hello 2>&1 | grep -E "MPI startup\(\): (Rank|[0-9]+ )|libfabric|library kind"
# --8<-- [end:pinning]

# --8<-- [start:ring]
mpicc -O2 ring.c -o ring && mpicc -O2 allreduce.c -o allreduce
for n in 2 4; do
  mpiexec -n $n ./ring                            # exits non-zero if the token comes back wrong
  mpiexec -n $n ./allreduce                       # exits non-zero if any element is wrong
done
# --8<-- [end:ring]

# --8<-- [start:mpi4py]
# the same Intel MPI under Python: mpi4py's wheel loads the first libmpi it finds
mpiexec -n 4 python3 "$REPO/snippets/oneapi_installation/mpi4py_check.py"
# --8<-- [end:mpi4py]
