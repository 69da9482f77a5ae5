#!/usr/bin/env bash
# Setting up the environment of a full toolkit install. Shown, not run here: no /opt/intel/oneapi on the CI machine.
set -eu

# --8<-- [start:setvars]
source /opt/intel/oneapi/setvars.sh              # component layout: every <component>/latest/env/vars.sh
source /opt/intel/oneapi/2025.1/oneapi-vars.sh   # unified layout (2024.0+): one version's bin/, lib/, include/
source /opt/intel/oneapi/setvars.sh              # a second time: does nothing, says it was already done
source /opt/intel/oneapi/setvars.sh --force      # re-run anyway (after changing a config, or in a dirty shell)
source /opt/intel/oneapi/setvars.sh intel64      # the target architecture argument, passed on to each vars.sh
# only some components, or pinned versions: one line per component, e.g. "mkl=<version>" or "vtune=exclude"
printf 'default=exclude\nmpi=latest\nmkl=latest\ncompiler=latest\n' > ~/oneapi-config.txt
source /opt/intel/oneapi/setvars.sh --config="$HOME/oneapi-config.txt"
# --8<-- [end:setvars]

# --8<-- [start:modules]
# Environment Modules instead of setvars.sh (the usual way on a cluster)
/opt/intel/oneapi/modulefiles-setup.sh --output-dir="$HOME/oneapi-modules"
module use "$HOME/oneapi-modules"
module avail                                     # compiler/<version>  mkl/<version>  mpi/<version> ...
module load compiler mkl mpi
# cluster-wide instead: once, as root, into the shared install; then add that folder to the site's MODULEPATH
# (Environment Modules: a line in /usr/share/Modules/init/.modulespath; Lmod: its MODULEPATH setup)
sudo /opt/intel/oneapi/modulefiles-setup.sh --output-dir=/opt/intel/oneapi/modulefiles
# --8<-- [end:modules]
