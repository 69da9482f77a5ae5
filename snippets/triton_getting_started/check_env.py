"""Which Python, torch and Triton are installed, which GPU they see, and where Triton caches kernels.

    python snippets/triton_getting_started/check_env.py
"""
# --8<-- [start:check_env]
import importlib.metadata as md
import platform

import torch
import triton

print("python  ", platform.python_version())
print("torch   ", torch.__version__, "| built for CUDA", torch.version.cuda)
print("triton  ", triton.__version__)
# A CUDA build of torch names the one Triton release it was built and tested with.
pins = [r for r in md.requires("torch") or [] if r.startswith(("triton", "pytorch-triton"))]
print("torch requires", pins[0] if pins else "no Triton (a CPU-only torch: install triton yourself)")
if torch.cuda.is_available():
    major, minor = torch.cuda.get_device_capability()
    print("GPU     ", torch.cuda.get_device_name(), f"(compute capability {major}.{minor}, sm_{major}{minor})")
else:
    print("GPU      none visible to torch: use TRITON_INTERPRET=1 to run kernels on the CPU")
print("interpreter", "on" if triton.knobs.runtime.interpret else "off")
print("kernel cache", triton.knobs.cache.dir)  # ~/.triton/cache unless TRITON_CACHE_DIR is set
# --8<-- [end:check_env]
