#!/usr/bin/env bash
# The same programs with Open MPI from Debian (apt install openmpi-bin libopenmpi-dev), run without the wheels' lib/.
#   bash snippets/oneapi_installation/openmpi.sh     (from the repository root)
set -euo pipefail
source snippets/oneapi_installation/env.sh

# --8<-- [start:openmpi]
# Debian names its binaries mpicc.openmpi and mpirun.openmpi; plain mpicc is Intel's in this shell
if [ "$(id -u)" = 0 ]; then                       # containers often run as root; Open MPI refuses unless told
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
# Open MPI's commands run without the wheels' lib/, which env.sh put first in LD_LIBRARY_PATH
ompi() { local rest=${LD_LIBRARY_PATH#"$ONEAPI_PREFIX/lib"}; LD_LIBRARY_PATH=${rest#:} "$@"; }
ompi mpirun.openmpi --version | sed -n 1p
for p in hello ring allreduce; do ompi mpicc.openmpi -O2 $p.c -o $p.ompi; done
# why: with that folder first, Debian's libmpi.so.40 loads the wheels' libhwloc (and its OFI plugin, Intel's libfabric)
ldd ./hello.ompi | grep -o "libhwloc.so.15 => [^ ]*" | sed "s|$ONEAPI_PREFIX|<env>|"
ompi ldd ./hello.ompi | grep -o "libhwloc.so.15 => [^ ]*"
ompi mpirun.openmpi -n 2 ./hello.ompi
for n in 2 4; do                                  # more ranks than cores needs --oversubscribe
  ompi mpirun.openmpi --oversubscribe -n $n ./ring.ompi
  ompi mpirun.openmpi --oversubscribe -n $n ./allreduce.ompi
done
# --8<-- [end:openmpi]
