# The oneAPI pieces from PyPI (pip install -r requirements-oneapi.txt) live in this Python's prefix
ONEAPI_PREFIX=$(python3 -c 'import sys; print(sys.prefix)')
[ -x "$ONEAPI_PREFIX/bin/mpiexec.hydra" ] || { echo "no Intel MPI under $ONEAPI_PREFIX: pip install -r requirements-oneapi.txt" >&2; exit 1; }
export I_MPI_ROOT="$ONEAPI_PREFIX"        # mpicc/mpicxx read it; unset, they point at a placeholder path
export PATH="$ONEAPI_PREFIX/bin:$PATH"    # Intel's mpicc, mpiexec and IMB-MPI1 come first
export LD_LIBRARY_PATH="$ONEAPI_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"   # libmpi, Intel's libfabric, MKL
export PKG_CONFIG_PATH="$ONEAPI_PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"  # mkl-*.pc
export OCL_ICD_FILENAMES="$ONEAPI_PREFIX/lib/libintelocl.so"   # the loader never reads the wheel's .icd file
REPO=$PWD
WORK=$(mktemp -d) && trap 'rm -rf "$WORK"' EXIT    # build in a scratch folder
cp snippets/oneapi_installation/*.c "$WORK" && cd "$WORK"
