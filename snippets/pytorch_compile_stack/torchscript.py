"""Why TorchScript lost: tracing freezes control flow, scripting rejects ordinary Python.

    python snippets/pytorch_compile_stack/torchscript.py

The same clipping function as the graph-break example. torch.jit.trace runs it once
and records the ops that ran: the branch taken for the example input is baked in.
torch.jit.script compiles the source instead, but only a typed subset of Python.
"""
# --8<-- [start:trace]
import warnings

import torch
import torch.nn.functional as F


def clipped_gelu(x, max_norm: float = 10.0):
    n = x.norm()
    if n > max_norm:
        x = x * (max_norm / n)
    return F.gelu(x)


torch.manual_seed(0)
small = torch.randn(4, 4) * 0.1                      # norm < 10: the branch is not taken
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    traced = torch.jit.trace(clipped_gelu, (small,))
print("tracer warnings:", sorted({type(w.message).__name__ for w in caught}))

big = torch.randn(4, 4) * 100                        # norm > 10: eager clips, the trace does not
err = (traced(big) - clipped_gelu(big)).abs().max().item()
print(f"traced vs eager on a large input: max abs difference {err:.1f}")
# --8<-- [end:trace]

# --8<-- [start:script]
def scale_all(xs: list, **scales):                 # untyped list, **kwargs: ordinary Python
    return [x * scales.get("s", 1.0) for x in xs]


try:
    torch.jit.script(scale_all)
except Exception as e:                               # torch.jit.frontend.NotSupportedError
    print("torch.jit.script refused:", type(e).__name__)
# --8<-- [end:script]
