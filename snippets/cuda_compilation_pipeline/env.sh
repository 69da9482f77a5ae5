# The pinned CUDA 13.0 toolchain from PyPI (pip install -r requirements-cuda.txt), found in the venv
CUDA_BIN=$(python3 scripts/cuda_pipeline.py bin)   # fails, saying what to install, if it is missing
CUDA_LIB=$(python3 scripts/cuda_pipeline.py lib)   # libcudart of the same wheels: link with -L"$CUDA_LIB"
export PATH="$CUDA_BIN:$PATH"
REPO=$PWD
WORK=$(mktemp -d) && trap 'rm -rf "$WORK"' EXIT    # build in a scratch folder
cp snippets/cuda_compilation_pipeline/*.cu "$WORK" && cd "$WORK"
