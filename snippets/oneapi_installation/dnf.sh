#!/usr/bin/env bash
# The same packages on RHEL, Rocky or Alma (DNF/YUM), and through Spack. Shown, not run by the site's
# tests: the CI machine is Debian, and both routes download several GB.
set -euo pipefail

# --8<-- [start:repo]
# Intel's YUM/DNF repository (same signing key as the APT one), then the same package names as APT
sudo tee /etc/yum.repos.d/oneAPI.repo > /dev/null << 'EOF'
[oneAPI]
name=Intel oneAPI repository
baseurl=https://yum.repos.intel.com/oneapi
enabled=1
gpgcheck=1
repo_gpgcheck=1
gpgkey=https://yum.repos.intel.com/intel-gpg-keys/GPG-PUB-KEY-INTEL-SW-PRODUCTS.PUB
EOF
sudo dnf install -y intel-oneapi-compiler-dpcpp-cpp intel-oneapi-mpi-devel intel-oneapi-mkl-devel
# --8<-- [end:repo]

# --8<-- [start:spack]
# Spack: the same binaries, unpacked into the Spack tree (no root)
spack install intel-oneapi-compilers intel-oneapi-mpi intel-oneapi-mkl
spack load intel-oneapi-mpi                        # or module load, once modules.yaml enables module files
spack load intel-oneapi-compilers && spack compiler find   # register icx/ifx before Spack builds anything with them
# --8<-- [end:spack]
