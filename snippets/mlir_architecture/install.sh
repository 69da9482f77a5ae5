# Everything this page's blocks need, in a virtual environment, from the repository root.
python3 -m venv .venv && . .venv/bin/activate
# MLIR 22.1.8 tools, the MLIR Python bindings (iree-base-compiler), JAX, torch-mlir
pip install -r requirements-mlir.txt
# torch (for torch-mlir's importer) and Triton (the Triton blocks) are not in that file; these
# are the versions requirements-test.txt pins (the tests install that file, which includes it).
# A CPU build of torch is enough here:
pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu
pip install triton==3.6.0
python3 snippets/mlir_architecture/tools.py   # the MLIR 22 folders that env.sh puts on PATH
