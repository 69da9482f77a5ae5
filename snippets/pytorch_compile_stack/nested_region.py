# --8<-- [start:nested_region]
# torch.compiler.nested_compile_region in a whole-model compile, against the same model unmarked.
# Run: python snippets/pytorch_compile_stack/nested_region.py
# (TORCH_LOGS=+hierarchical_compile logs each reuse of the region, and each failed reuse)
import operator
import os
import re
import tempfile
from collections import Counter

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.testing import CompileCounterWithBackend
from torch._dynamo.utils import compilation_time_metrics
from torch._inductor.utils import run_and_get_code


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.ln, self.up, self.down = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.ln(x))))


class MarkedBlock(Block):
    @torch.compiler.nested_compile_region     # the same block, marked as a region
    def forward(self, x):
        return super().forward(x)


class Stack(nn.Module):
    def __init__(self, block, d: int = 64, depth: int = 6):
        super().__init__()
        self.blocks = nn.ModuleList(block(d) for _ in range(depth))

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


def compile_and_count(block, depth: int = 6) -> dict:
    """Compile the whole Stack with Inductor on an empty cache; count what each stage did."""
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()   # empty cache: really compile
    torch._dynamo.reset()
    compilation_time_metrics.clear()          # one entry per run of each step the compiler times
    backend = CompileCounterWithBackend("inductor")   # Inductor, counting its calls, keeping the graph
    torch.manual_seed(0)
    model, x = Stack(block, depth=depth), torch.randn(4, 32, 64)
    with torch.no_grad():
        want = model(x)
        got, (code,) = run_and_get_code(torch.compile(model, backend=backend), x)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    (gm,) = backend.graphs                    # the graph Dynamo handed to Inductor
    ops = [n for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    calls = [n for n in ops if n.target is torch.ops.higher_order.invoke_subgraph]
    bodies = {n.args[0].target for n in calls}     # the subgraph each call runs: subgraph_0, ...
    steps = lambda name: len(compilation_time_metrics.get(name, []))  # noqa: E731
    return {
        "backend_calls": backend.frame_count,
        "ops": len(ops),
        "region_calls": len(calls),
        "bodies": len(bodies),
        "body_ops": sum(n.op == "call_function" for b in bodies for n in getattr(gm, b).graph.nodes),
        "traced": steps("invoke_subgraph_trace"),             # Dynamo traced the region's body
        "stamped": steps("invoke_subgraph_reuse_stamp_out"),  # Dynamo reused that trace
        "aot_traced": steps("invoke_subgraph_proxy_tensor"),  # AOTAutograd traced the body to ATen
        "lowered": steps("GraphLowering.run"),                # Inductor lowered a graph or a subgraph
        "kernels": re.findall(r"^cpp_fused_(\w+?)_\d+ = async_compile", code, re.M),
        "fn_calls": Counter(re.findall(r"= (repeated_subgraph\d+)\(", code)),
    }


for name, block in (("whole model", Block), ("nested region", MarkedBlock)):
    c = compile_and_count(block)
    kernels = ", ".join(k + (f" x{n}" if n > 1 else "") for k, n in Counter(c["kernels"]).items())
    print(f"{name}: backend called {c['backend_calls']} time(s)")
    if c["region_calls"]:
        print(f"  Dynamo graph: {c['region_calls']} invoke_subgraph calls of {c['bodies']} subgraph ({c['body_ops']} ops)")
        print(f"  region body traced: {c['traced']}x by Dynamo (then stamped out {c['stamped']}x), "
              f"{c['aot_traced']}x by AOTAutograd")
    else:
        print(f"  Dynamo graph: {c['ops']} ops")
    print(f"  Inductor: {c['lowered']} graph(s) lowered, {len(c['kernels'])} C++ kernels ({kernels})")
    for fn, n in c["fn_calls"].items():
        print(f"  output code: {fn}() called {n} times")
# --8<-- [end:nested_region]
