# The pinned CUDA 13.0 toolchain from PyPI (pip install -r requirements-cuda.txt), found in the venv
REPO=${REPO:-$PWD} && cd "$REPO"                  # the repository root (pasted blocks return to it)
CUDA_BIN=$(python3 scripts/measure/cuda_compilation_pipeline/_pipeline.py bin) ||   # says what to install if it is missing
  echo "no CUDA toolchain: the message above says what to install; the lines below will fail" >&2
CUDA_LIB=$(python3 scripts/measure/cuda_compilation_pipeline/_pipeline.py lib)   # libcudart of the same wheels: link with -L"$CUDA_LIB"
export PATH="$CUDA_BIN:$PATH"
WORK=$(mktemp -d) && SCRATCH+=("$WORK")   # a scratch folder for this block, deleted with the others at exit
trap '[ -n "${KEEP:-}" ] || rm -rf "${SCRATCH[@]}"' EXIT   # KEEP=1 keeps them
cp snippets/cuda_compilation_pipeline/*.cu "$WORK" && cd "$WORK"
