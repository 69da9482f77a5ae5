# the MLIR 22 tools of requirements-mlir.txt on PATH, then into the folder of the page's .mlir files
export PATH="$(python3 snippets/mlir_architecture/tools.py):$PATH"
cd snippets/mlir_architecture
