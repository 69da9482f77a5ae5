"""What TorchDynamo hands to a backend, and when it compiles again.

    python snippets/pytorch_compile_stack/dynamo_capture.py

A backend is any callable that takes the captured FX graph and example inputs and
returns something to run. This one prints what it receives and runs the graph as is,
so no compiler is involved: the output shows Dynamo alone (graph capture and guards).
"""
# --8<-- [start:backend]
import torch
import torch.nn.functional as F

graphs = []


def inspect_backend(gm: torch.fx.GraphModule, example_inputs):
    """Called by Dynamo once per captured graph; returns the callable Dynamo will run."""
    graphs.append(gm)
    ins = [tuple(t.shape) if isinstance(t, torch.Tensor) else str(t) for t in example_inputs]
    ops = [n.target.__name__ if callable(n.target) else str(n.target)
           for n in gm.graph.nodes if n.op in ("call_function", "call_method")]
    print(f"graph {len(graphs)}: inputs {ins}, ops {ops}")
    return gm.forward          # no compiler: run the captured graph eagerly


def scaled_act(x, scale: float, act: str):
    y = x * scale
    if act == "gelu":          # a Python string: Dynamo guards on its value
        y = F.gelu(y)
    return y.sum(-1)
# --8<-- [end:backend]

# --8<-- [start:run]
f = torch.compile(scaled_act, backend=inspect_backend)
f(torch.randn(4, 8), 2.0, "gelu")    # first call: capture graph 1
f(torch.randn(4, 8), 2.0, "gelu")    # guards hold: graph 1 runs again, nothing printed
f(torch.randn(4, 8), 3.0, "gelu")    # scale changed: the float becomes a graph input
f(torch.randn(4, 8), 3.0, "relu")    # act changed: the if takes the other branch
f(torch.randn(6, 8), 3.0, "gelu")    # batch changed: the size becomes a symbol
print(f"{len(graphs)} graphs captured for 5 calls")
print(graphs[0].code.strip())
# --8<-- [end:run]
