"""Check the environment every page of this chapter assumes, and say what is missing.

Run it first: `python snippets/index/environment.py`. Nothing here needs a GPU; it
tells you which pages' GPU sections will run and which will use Triton's interpreter.
"""
# --8<-- [start:check]
import os
import platform

import torch
import triton

print(f"Python {platform.python_version()}, torch {torch.__version__}, Triton {triton.__version__}")

if torch.cuda.is_available():
    major, minor = torch.cuda.get_device_capability()
    print(f"GPU: {torch.cuda.get_device_name()} (compute capability {major}.{minor})")
    if (major, minor) < (8, 0):
        print("Some kernels in this chapter use bf16 and tensor-core paths that need compute capability 8.0+.")
elif os.environ.get("TRITON_INTERPRET") == "1":
    print("No CUDA GPU: Triton kernels will run on the CPU through the interpreter (TRITON_INTERPRET=1).")
else:
    print("No CUDA GPU: set TRITON_INTERPRET=1 before importing triton to run kernels on the CPU.")
# --8<-- [end:check]
