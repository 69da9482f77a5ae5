"""0/1 specialization and unbacked sizes: why batch 1 gets a graph of its own.

    python snippets/pytorch_compile_stack/zero_one.py

The same counting backend as recompile.py: no compiler runs, only Dynamo's decisions are
counted. Batch sizes 8, 16, 1, 8 go through one layer with three dynamic-shape settings.
"""
# --8<-- [start:zero_one]
import torch
import torch.nn.functional as F


def count_graphs(mark=None, **compile_kwargs):
    torch._dynamo.reset()
    graphs = []
    backend = lambda gm, example_inputs: graphs.append(gm) or gm.forward  # noqa: E731
    f = torch.compile(lambda x, w: F.gelu(x @ w), backend=backend, **compile_kwargs)
    w = torch.randn(32, 32)
    for b in (8, 16, 1, 8):
        x = torch.randn(b, 32)
        if mark == "dynamic":
            torch._dynamo.mark_dynamic(x, 0)
        elif mark == "unbacked":
            torch._dynamo.decorators.mark_unbacked(x, 0)   # no hint, no 0/1 specialization
        f(x, w)
    return len(graphs)


print("batches 8, 16, 1, 8:")
print(f"  dynamic=True         {count_graphs(dynamic=True)} graphs")
print(f"  mark_dynamic(x, 0)   {count_graphs(mark='dynamic')} graphs")
print(f"  mark_unbacked(x, 0)  {count_graphs(mark='unbacked')} graph")
# --8<-- [end:zero_one]
