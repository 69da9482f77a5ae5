export PATH="$(python3 snippets/mlir_architecture/tools.py):$PATH"   # MLIR 22 from PyPI (requirements-mlir.txt)
cd snippets/mlir_architecture                                         # the .mlir files of this page
