"""Recompilations caused by changing shapes, and the three ways to control them.

    python snippets/pytorch_compile_stack/recompile.py
    TORCH_LOGS=recompiles python snippets/pytorch_compile_stack/recompile.py   # why each one happened

A counting backend records every graph Dynamo captures; five batch sizes go through
the same layer. No compiler runs (the backend returns the graph as is), so what is
counted is Dynamo's decisions alone.
"""
# --8<-- [start:counter]
import torch
import torch.nn.functional as F


def counting_backend(log: list):
    def backend(gm, example_inputs):
        # a symbolic size arrives as a SymInt (e.g. s77), a static one is baked into the shapes
        log.append([tuple(t.shape) if isinstance(t, torch.Tensor) else str(t) for t in example_inputs])
        return gm.forward
    return backend


def layer(x, w):
    return F.gelu(x @ w)


w = torch.randn(32, 32)
batches = [8, 16, 24, 32, 40]


def run(label, mark=False, **compile_kwargs):
    torch._dynamo.reset()                      # forget earlier compilations
    log = []
    f = torch.compile(layer, backend=counting_backend(log), **compile_kwargs)
    for b in batches:
        x = torch.randn(b, 32)
        if mark:
            torch._dynamo.mark_dynamic(x, 0)   # dimension 0 varies: never specialize it
        f(x, w)
    print(f"{label:<20} {len(log)} compile(s); last graph takes {log[-1]}")
# --8<-- [end:counter]


# --8<-- [start:runs]
run("dynamic=False", dynamic=False)    # specialize on every shape: one graph per batch size
run("default (None)")                  # static first, dynamic after the first size change
run("mark_dynamic(x, 0)", mark=True)   # dynamic from the first call, for that dimension only
run("dynamic=True", dynamic=True)      # every dimension symbolic, w's too
# --8<-- [end:runs]
