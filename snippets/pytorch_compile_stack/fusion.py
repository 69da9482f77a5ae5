"""Compile the LayerNorm-MLP and list the kernels Inductor generated, by name.

    python snippets/pytorch_compile_stack/fusion.py

Inductor names each generated kernel after the ATen ops fused into it
(cpp_fused_* on the CPU, triton_{poi,red,per,tem}_fused_* on a GPU), so the
names alone say what was fused. Library calls (GEMMs, convolutions, attention)
stay outside the generated kernels and appear as extern_kernels.* calls.
"""
import torch
from models import LayerNormMLP, randomize_norms   # shown on the page in the block above

# --8<-- [start:compile]
import re

from torch._inductor.utils import run_and_get_code

device = "cpu"                       # "cuda" gives triton_* kernels instead of cpp_* ones
torch.manual_seed(0)
mlp = randomize_norms(LayerNormMLP(d_model=256, hidden=1024)).to(device)
x = torch.randn(8, 64, 256, device=device)

with torch.no_grad():
    compiled = torch.compile(mlp)
    out, (code,) = run_and_get_code(compiled, x)      # the wrapper Inductor generated
    torch.testing.assert_close(out, mlp(x), rtol=1e-4, atol=1e-4)

kernels = re.findall(r"^(\w+) = async_compile\.\w+\(", code, flags=re.M)
calls = re.findall(r"\b(extern_kernels\.\w+)\(", code)
print("generated kernels:", *kernels, sep="\n  ")
print("library calls:", *sorted(set(calls)), sep="\n  ")
# --8<-- [end:compile]
