# The oneAPI pieces from PyPI (pip install -r requirements-oneapi.txt), in this Python's prefix (or in ~/.local
# after pip install --user). A toolkit user sources /opt/intel/oneapi/setvars.sh instead of the export lines.
# Run from the repository's root folder. If something is missing it says what and changes nothing: no exit,
# so that a block pasted into a terminal does not close it.
ONEAPI_PREFIX=$(python3 -c 'import os, site, sys; print(next((p for p in (sys.prefix, site.USER_BASE) if os.path.isfile(p + "/bin/mpiexec.hydra")), sys.prefix))') &&
  { [ -x "$ONEAPI_PREFIX/bin/mpiexec.hydra" ] || { echo "no Intel MPI under $ONEAPI_PREFIX: activate the environment, or pip install -r requirements-oneapi.txt" >&2; false; }; } &&
  { [ -d snippets/oneapi_installation ] || { echo "no snippets/oneapi_installation here: cd to the repository's root folder first" >&2; false; }; } &&
  export I_MPI_ROOT="$ONEAPI_PREFIX" &&       # mpicc/mpicxx read it; unset, they point at a placeholder path
  export PATH="$ONEAPI_PREFIX/bin:$PATH" &&   # Intel's mpicc, mpiexec and IMB-MPI1 come first
  export LD_LIBRARY_PATH="$ONEAPI_PREFIX/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" &&   # libmpi, Intel's libfabric, MKL
  export PKG_CONFIG_PATH="$ONEAPI_PREFIX/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" &&  # mkl-*.pc
  export OCL_ICD_FILENAMES="$ONEAPI_PREFIX/lib/libintelocl.so" &&  # the loader never reads the wheel's .icd file
  REPO=$PWD && WORK=$(mktemp -d) && trap 'rm -rf "$WORK"' EXIT &&  # a scratch folder, removed when the shell exits
  cp snippets/oneapi_installation/*.c "$WORK" && cd "$WORK"         # build there; cd "$REPO" goes back
