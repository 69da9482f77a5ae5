"""A real graph break (a Python `if` on a tensor value) and how to remove it.

    python snippets/pytorch_compile_stack/graph_break.py
    TORCH_LOGS=graph_breaks python snippets/pytorch_compile_stack/graph_break.py   # the log, on stderr

Clipping activations by their norm is common (gradient clipping, stabilised attention
logits). Written with a Python `if`, the branch depends on a tensor's value, which
Dynamo cannot know while tracing: it ends the graph, runs the `if` in Python, and
starts a second graph.
"""
# --8<-- [start:broken]
import torch
import torch.nn.functional as F


def clipped_gelu(x, max_norm: float = 10.0):
    n = x.norm()
    if n > max_norm:                  # Python branch on a tensor value: graph break
        x = x * (max_norm / n)
    return F.gelu(x)
# --8<-- [end:broken]


# --8<-- [start:fixed]
def clipped_gelu_branchless(x, max_norm: float = 10.0):
    n = x.norm()
    x = x * torch.clamp(max_norm / n, max=1.0)   # scale 1.0 when the norm is small: same result
    return F.gelu(x)
# --8<-- [end:fixed]


# --8<-- [start:explain]
x = torch.randn(64, 64)
report = torch._dynamo.explain(clipped_gelu)(x)
print(f"graphs: {report.graph_count}, graph breaks: {report.graph_break_count}")
for r in report.break_reasons:
    frame = r.user_stack[-1]
    print(f"  reason: {r.reason}  at: {frame.line.split('#')[0].strip()}")

try:                                                # fullgraph=True turns a break into an error
    torch.compile(clipped_gelu, fullgraph=True, backend="eager")(x)
except torch._dynamo.exc.Unsupported as e:
    print("fullgraph=True raised:", str(e).splitlines()[0])
# --8<-- [end:explain]

# --8<-- [start:check]
report = torch._dynamo.explain(clipped_gelu_branchless)(x)
print(f"branchless: graphs: {report.graph_count}, graph breaks: {report.graph_break_count}")
for scale in (0.01, 100.0):                         # both sides of the old branch
    xs = torch.randn(64, 64) * scale
    torch.testing.assert_close(clipped_gelu_branchless(xs), clipped_gelu(xs))
print("same results as the branching version")
# --8<-- [end:check]
