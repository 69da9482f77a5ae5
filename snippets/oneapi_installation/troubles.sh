#!/usr/bin/env bash
# The errors of the troubleshooting table, each caused on purpose and reduced to its telling line.
#   bash snippets/oneapi_installation/troubles.sh     (from the repository root)
set -euo pipefail
source snippets/oneapi_installation/env.sh

# --8<-- [start:reproduce]
try() { "$@" 2>&1 || true; }                      # run a command that is meant to fail, keep its messages
first() { awk -v p="$1" 'NR == 1 {l = $0} !n && $0 ~ p {print; n = 1} END {if (!n) print "(no line matching " p "; the first was: " l ")"}'; }  # the telling line
mpicc -O2 hello.c -o hello
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
ompi() { local rest=${LD_LIBRARY_PATH#"$ONEAPI_PREFIX/lib"}; LD_LIBRARY_PATH=${rest#:} "$@"; }  # Open MPI without the wheels' lib/

echo "1. mpicc without I_MPI_ROOT"
try env -u I_MPI_ROOT mpicc hello.c -o h | first "error"
env -u I_MPI_ROOT mpicc -show | grep -o "I_MPI_SUBSTITUTE_INSTALLDIR/include"

echo "2. IMB-MPI1 without LD_LIBRARY_PATH"
try env -u LD_LIBRARY_PATH IMB-MPI1 PingPong | first "error while loading"

echo "3. a fabric provider this libfabric does not ship (cxi, for HPE Slingshot)"
# mpiexec writes each rank's stderr to err.<rank> (%r: the rank) instead of the terminal: under load, a
# job that aborts in MPI_Init sometimes printed nothing, and now and then left no file either: up to 3 tries
for attempt in 1 2 3; do
  rm -f err.*
  try env I_MPI_FABRICS=ofi FI_PROVIDER=cxi mpiexec -n 2 -errfile-pattern err.%r ./hello >/dev/null
  cat err.* 2>/dev/null | grep -q fi_getinfo && break
done
try cat err.* | first "fi_getinfo"

echo "4. Intel MPI picking the distribution's libfabric"
try env -u LD_LIBRARY_PATH I_MPI_DEBUG=5 I_MPI_FABRICS=ofi mpiexec -n 2 ./hello | first "libfabric version"
try env I_MPI_DEBUG=5 I_MPI_FABRICS=ofi mpiexec -n 2 ./hello | first "libfabric version"

echo "5. an Intel MPI program started by Open MPI's mpirun"
try mpirun.openmpi -n 2 ./hello | grep "rank"           # with the wheels' lib/: the Intel MPI program needs its libmpi

echo "6. more Open MPI ranks than cores, without --oversubscribe"
ompi mpicc.openmpi hello.c -o hello.ompi
try ompi mpirun.openmpi -n $(( $(nproc) + 2 )) ./hello.ompi | first "not enough slots" | grep -o "There are not enough slots available in the system"

echo "7. no OpenCL driver found (OCL_ICD_FILENAMES unset)"
try env -u OCL_ICD_FILENAMES python3 -u -c "import dpctl; print(dpctl.get_devices()); dpctl.select_default_device()" \
  | grep -E "^\[|Error"

echo "8. a SYCL device selector without the wheels' lib/ in LD_LIBRARY_PATH"
try env -u LD_LIBRARY_PATH ONEAPI_DEVICE_SELECTOR=opencl:cpu python3 -c "import dpctl; print(dpctl.get_devices())" \
  | first "UR adapter"
# --8<-- [end:reproduce]
