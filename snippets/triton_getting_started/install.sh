# Linux with an NVIDIA GPU and a recent driver (`nvidia-smi` must work).
python3 -m venv .venv && . .venv/bin/activate
# torch brings the Triton it was built with: do not install triton on top of it.
# The index URL picks the CUDA build (here CUDA 13.0); see pytorch.org for the others.
pip install torch --index-url https://download.pytorch.org/whl/cu130
python -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.is_available())"

# No GPU (a laptop, CI): a CPU torch, the Triton to match, and NumPy below 2.4 for the interpreter.
# pip install torch --index-url https://download.pytorch.org/whl/cpu
# pip install "triton==3.6.0" "numpy<2.4"
# export TRITON_INTERPRET=1
