#!/usr/bin/env bash
# The same programs with Open MPI from Debian (apt install openmpi-bin libopenmpi-dev).
#   bash snippets/oneapi_installation/openmpi.sh     (from the repository root)
set -euo pipefail
source snippets/oneapi_installation/env.sh

# --8<-- [start:openmpi]
# Debian names its binaries mpicc.openmpi and mpirun.openmpi; plain mpicc is Intel's in this shell
if [ "$(id -u)" = 0 ]; then                       # containers often run as root; Open MPI refuses unless told
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
mpirun.openmpi --version | sed -n 1p
for p in hello ring allreduce; do mpicc.openmpi -O2 $p.c -o $p.ompi; done
mpirun.openmpi -n 2 ./hello.ompi
for n in 2 4; do                                  # more ranks than cores needs --oversubscribe
  mpirun.openmpi --oversubscribe -n $n ./ring.ompi
  mpirun.openmpi --oversubscribe -n $n ./allreduce.ompi
done
# --8<-- [end:openmpi]
