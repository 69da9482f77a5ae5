# Linux, an NVIDIA GPU and its driver (`nvidia-smi` must work), plus a C
# compiler and the Python headers, for the launcher Triton builds at first use:
#   sudo apt install build-essential python3-dev python3-venv
python3 -m venv .venv && . .venv/bin/activate
# torch brings the Triton it was built with: do not install triton over it.
# The index picks the CUDA build (here CUDA 13.0); pytorch.org lists others.
# torch 2.11.0 is the release this page was measured with, and it brings
# triton 3.6.0; drop the "==2.11.0" for the newest pair.
pip install "torch==2.11.0" --index-url https://download.pytorch.org/whl/cu130
python -c "import torch, triton; print(torch.__version__, triton.__version__)"

# No GPU (a laptop, CI): a CPU-only torch, the Triton to match, and a NumPy
# the interpreter works with.
# pip install torch --index-url https://download.pytorch.org/whl/cpu
# pip install "triton==3.6.0" "numpy<2.4"
# export TRITON_INTERPRET=1
