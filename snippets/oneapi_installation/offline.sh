#!/usr/bin/env bash
# The offline installer (one self-extracting .sh per toolkit). Shown, not run by the site's tests: see the page.
set -euo pipefail

# --8<-- [start:silent]
INSTALLER=intel-oneapi-base-toolkit-2025.1.0.651_offline.sh   # the name of the file you downloaded from intel.com
# everything, system-wide under /opt/intel/oneapi (as root), no questions asked
sudo sh "./$INSTALLER" -a --silent --eula accept
# only some components, into a directory you own (no root), e.g. a cluster's shared file system
sh "./$INSTALLER" -a --silent --eula accept --install-dir "$HOME/intel/oneapi" \
  --components intel.oneapi.lin.dpcpp-cpp-compiler:intel.oneapi.lin.mkl.devel
# --8<-- [end:silent]

# --8<-- [start:remove]
INSTALLER=intel-oneapi-base-toolkit-2025.1.0.651_offline.sh   # as above: the installer you installed with
# as the user who installed: the installer keeps one record of installs for root and one per user
sh "./$INSTALLER" -s -a --list-products          # what this user installed, with product ids and versions
PRODUCT_ID=...; PRODUCT_VER=...                   # copy both from the list above
sh "./$INSTALLER" -s -a --silent --action remove --product-id "$PRODUCT_ID" --product-ver "$PRODUCT_VER"
# the system-wide install under /opt/intel/oneapi: the same two commands, each with sudo in front
# --8<-- [end:remove]
