#!/usr/bin/env bash
# Several machines with the full Intel MPI (HPC toolkit or the wheels on a shared file system).
# Shown, not run by the site's tests: the CI machine is one host.
set -euo pipefail

# --8<-- [start:hosts]
printf 'node01\nnode02\n' > hosts                  # one host name per line; passwordless ssh between them
export I_MPI_HYDRA_BOOTSTRAP=ssh                   # or slurm/pbs/lsf under a batch system
export FI_PROVIDER=ucx                             # InfiniBand through UCX (libucp.so.0 on every node); mlx up to Intel MPI 2021.18; tcp for Ethernet
# with the wheels, FI_PROVIDER=verbs also needs FI_PROVIDER_PATH=<env>/lib; efa is for AWS
# hybrid MPI + OpenMP only: export I_MPI_PIN_DOMAIN=omp gives each rank OMP_NUM_THREADS cores for its threads
I_MPI_DEBUG=5 mpiexec -f hosts -n 8 -ppn 4 ./ring  # 4 ranks per node; the debug lines name the provider chosen
mpiexec -f hosts -n 2 -ppn 1 IMB-MPI1 PingPong     # the inter-node latency and bandwidth, the figures that matter
# --8<-- [end:hosts]

# --8<-- [start:slurm]
# Inside a Slurm allocation (sbatch/salloc), Intel MPI's mpiexec reads the node list from Slurm itself
salloc -N 2 --ntasks-per-node=4 mpiexec -n 8 ./ring
# or Slurm starts the ranks (accounting, cgroups, srun's binding) and Intel MPI talks to it through PMI-2
export I_MPI_PMI_LIBRARY=/usr/lib64/libpmi2.so   # Slurm's PMI-2 library; the path depends on the Slurm install
srun -N 2 --ntasks-per-node=4 --mpi=pmi2 ./ring
# --8<-- [end:slurm]
