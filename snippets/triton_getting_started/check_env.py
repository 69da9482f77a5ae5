# --8<-- [start:check_env]
"""What is installed, which GPU torch sees, where Triton caches kernels.

    python snippets/triton_getting_started/check_env.py
"""
import importlib.metadata as md
import platform

import torch
import triton

print("python ", platform.python_version())
print("torch  ", torch.__version__, "| CUDA", torch.version.cuda)
print("triton ", triton.__version__)
# A CUDA build of torch names the one Triton release it was tested with
# ("triton==3.6.0; platform_system == ..."): keep the part before the ";".
pins = [r.split(";")[0].strip() for r in md.requires("torch") or []
        if r.startswith(("triton", "pytorch-triton"))]
print("torch requires", pins[0] if pins else "no Triton (a CPU-only torch)")
if torch.cuda.is_available():
    major, minor = torch.cuda.get_device_capability()
    print("GPU    ", torch.cuda.get_device_name(),
          f"(compute capability {major}.{minor}, sm_{major}{minor})")
    props = torch.cuda.get_device_properties(0)
    # The L2 size decides what "stays in cache" means for a benchmark.
    print("        ", props.multi_processor_count, "SMs, L2",
          props.L2_cache_size, "bytes", f"({props.L2_cache_size / 2**20:.0f} MiB)")
    if major < 8:  # Triton's README: NVIDIA GPUs of compute capability 8.0+
        print("WARNING: Triton supports compute capability 8.0 and newer")
else:
    print("GPU     none: set TRITON_INTERPRET=1 to run kernels on the CPU")
print("interpreter", "on" if triton.knobs.runtime.interpret else "off")
# ~/.triton/cache unless TRITON_CACHE_DIR (or TRITON_HOME) says otherwise
print("kernel cache", triton.knobs.cache.dir)
# --8<-- [end:check_env]
