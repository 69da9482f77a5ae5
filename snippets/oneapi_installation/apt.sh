#!/usr/bin/env bash
# The APT route (Debian/Ubuntu), as root. Shown, not run by the site's tests: see the page for why.
set -euo pipefail

# --8<-- [start:repo]
# the tools the next lines use, which minimal images lack (as root in a container without sudo, drop "sudo")
sudo apt-get update && sudo apt-get install -y wget gnupg ca-certificates
# Intel's signing key, and the repository signed by it
wget -O- https://apt.repos.intel.com/intel-gpg-keys/GPG-PUB-KEY-INTEL-SW-PRODUCTS.PUB \
  | gpg --dearmor | sudo tee /usr/share/keyrings/oneapi-archive-keyring.gpg > /dev/null
echo "deb [signed-by=/usr/share/keyrings/oneapi-archive-keyring.gpg] https://apt.repos.intel.com/oneapi all main" \
  | sudo tee /etc/apt/sources.list.d/oneAPI.list
sudo apt-get update
# --8<-- [end:repo]

# --8<-- [start:toolkits]
# whole toolkits (several GB each) ...
sudo apt-get install -y intel-oneapi-base-toolkit      # icx/icpx, oneMKL, oneDNN, oneTBB, oneCCL, DPCT, VTune, Advisor ...
sudo apt-get install -y intel-oneapi-hpc-toolkit       # adds Intel MPI and ifx (Fortran)
# --8<-- [end:toolkits]

# --8<-- [start:components]
# ... or only the components a cluster node needs
sudo apt-get install -y intel-oneapi-compiler-dpcpp-cpp   # icx, icpx (SYCL with -fsycl)
sudo apt-get install -y intel-oneapi-mpi-devel            # mpiicx, mpirun, headers
sudo apt-get install -y intel-oneapi-mkl-devel            # oneMKL headers and libraries
sudo apt-get install -y intel-oneapi-compiler-fortran     # ifx
apt-cache search --names-only '^intel-oneapi-' | wc -l    # what else there is
# --8<-- [end:components]

# --8<-- [start:remove]
sudo apt-get remove -y 'intel-oneapi-*' && sudo apt-get autoremove -y
# --8<-- [end:remove]
