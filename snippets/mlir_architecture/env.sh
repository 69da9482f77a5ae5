# MLIR 22 tools (requirements-mlir.txt) on PATH, then to the page's .mlir files
export PATH="$(python3 snippets/mlir_architecture/tools.py):$PATH"
cd snippets/mlir_architecture
