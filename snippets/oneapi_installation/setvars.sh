#!/usr/bin/env bash
# Setting up the environment of a full toolkit install. Shown, not run here: no /opt/intel/oneapi on the CI machine.
set -eu

# --8<-- [start:setvars]
# One of these per shell, not all of them: pick the line that fits (the others are comments).
source /opt/intel/oneapi/setvars.sh              # component layout: every <component>/latest/env/vars.sh
# source /opt/intel/oneapi/2025.1/oneapi-vars.sh   # or the unified layout (2024.0+): one version's bin/, lib/, include/
# source /opt/intel/oneapi/setvars.sh intel64      # or with the architecture argument (intel64 is the default)

# Sourced again in the same shell, setvars.sh prints "setvars.sh has already been run. Skipping re-execution."
# and changes nothing; --force runs it anyway, and every vars.sh adds its folders to the paths once more.
# Only some components, or pinned versions: one line per component, e.g. "mkl=<version>" or "vtune=exclude".
# In a new shell this needs no --force; after the line above it does, and it adds to what that line set
printf 'default=exclude\nmpi=latest\nmkl=latest\ncompiler=latest\n' > ~/oneapi-config.txt
source /opt/intel/oneapi/setvars.sh --force --config="$HOME/oneapi-config.txt"
# --8<-- [end:setvars]

# --8<-- [start:modules]
# Environment Modules instead of setvars.sh (the usual way on a cluster). Needs Environment Modules or Lmod
# (apt-get/dnf install environment-modules, or Lmod) and a new login shell, which defines the module command
/opt/intel/oneapi/modulefiles-setup.sh --output-dir="$HOME/oneapi-modules"
module use "$HOME/oneapi-modules"
module avail                                     # compiler/<version>  mkl/<version>  mpi/<version> ...
module load compiler mkl mpi
# cluster-wide instead: once, as root, into the shared install; then add that folder to the site's MODULEPATH
# (Environment Modules: a line in /etc/environment-modules/modulespath on Debian/Ubuntu,
#  /usr/share/Modules/init/.modulespath on RHEL; Lmod: its MODULEPATH setup)
sudo /opt/intel/oneapi/modulefiles-setup.sh --output-dir=/opt/intel/oneapi/modulefiles
# --8<-- [end:modules]
