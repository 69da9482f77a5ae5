"""Training compilers and inference compilers want different things: four small experiments.

    python snippets/how_ai_compilers_work/train_infer.py     # the CPU parts; the CUDA-graph part needs a GPU

1. What the backward pass makes the forward keep (AOTAutograd's two partitioners).
2. What a new input shape costs (recompilation, and dynamic shapes).
3. What launch overhead costs at inference batch sizes (CUDA graphs, GPU only).
scripts/measure/how_ai_compilers_work/training.py measures the same at scale on the GPU.
"""
# --8<-- [start:partition]
import torch
import torch.nn.functional as F
from functorch.compile import aot_function, default_partition, min_cut_rematerialization_partition


def swiglu_mlp(x, w1, w3, w2):                # the feed-forward block of a Llama-style layer
    return (F.silu(x @ w1) * (x @ w3)) @ w2


def saved_by_forward(fn, partition_fn, *args):
    """Run fn forward and backward through AOTAutograd with the given partitioner; return the
    number and bytes of the tensors the forward graph hands to the backward graph (inputs excluded)."""
    saved = []

    def fw_compiler(gm, _):                   # the forward graph returns (outputs..., saved...)
        def run(args):
            outs = gm(*args)
            saved[:] = outs[1:]               # swiglu_mlp has one output
            return outs
        run._boxed_call = True
        return run

    def bw_compiler(gm, _):
        def run(args):
            return gm(*args)
        run._boxed_call = True
        return run

    out = aot_function(fn, fw_compiler, bw_compiler, partition_fn=partition_fn)(*args)
    if not isinstance(out, torch.Tensor):
        raise ValueError(f"saved_by_forward: fn must return one tensor (its sum starts the backward), got "
                         f"{type(out).__name__}")
    out.sum().backward()
    inputs = {a.untyped_storage().data_ptr() for a in args}
    new = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
           for t in saved if isinstance(t, torch.Tensor) and t.untyped_storage().data_ptr() not in inputs}
    return len(new), sum(new.values())
# --8<-- [end:partition]


# --8<-- [start:dynamic]
import torch
import torch._dynamo
import torch.nn.functional as F

graphs = []


def counting_backend(gm, example_inputs):     # a torch.compile backend that only counts
    graphs.append(gm)
    return gm.forward


def layer(x):
    return F.gelu(x) * x.shape[0]
# --8<-- [end:dynamic]


# --8<-- [start:cudagraph]
import time

import torch


def graphed(fn, static_input):
    """Capture fn(static_input) once; return a callable that replays every kernel in one launch."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):             # warm up outside the capture (allocator, cuBLAS handles)
        for _ in range(3):
            fn(static_input)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        static_output = fn(static_input)

    def replay(x):
        static_input.copy_(x)                 # a graph reads fixed addresses: copy new data in
        g.replay()
        return static_output
    return replay


def us_per_call(fn, x, n=2000):
    """Host wall time per call, synchronized at the end: what a serving loop sees."""
    fn(x)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn(x)
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / n * 1e6
# --8<-- [end:cudagraph]


if __name__ == "__main__":
    # --8<-- [start:partition-run]
    torch.manual_seed(0)
    x = torch.randn(256, 512, requires_grad=True)
    w1, w3 = (torch.randn(512, 1024, requires_grad=True) for _ in range(2))
    w2 = torch.randn(1024, 512, requires_grad=True)
    for name, partition in (("default", default_partition), ("min-cut", min_cut_rematerialization_partition)):
        n, nbytes = saved_by_forward(swiglu_mlp, partition, x, w1, w3, w2)
        print(f"{name:<8} partition: forward saves {n} activations, {nbytes / 2**20:.1f} MiB")
    # --8<-- [end:partition-run]

    # --8<-- [start:dynamic-run]
    for dynamic in (False, None, True):
        torch._dynamo.reset()
        graphs.clear()
        compiled = torch.compile(layer, backend=counting_backend, dynamic=dynamic)
        for n in (8, 16, 32, 64, 128):
            compiled(torch.randn(n, 4))
        print(f"dynamic={dynamic!s:<5}: 5 batch sizes, {len(graphs)} graph(s) compiled")
    # --8<-- [end:dynamic-run]

    if torch.cuda.is_available():
        # --8<-- [start:cudagraph-run]
        mlp = torch.nn.Sequential(*[m for _ in range(4) for m in (torch.nn.Linear(1024, 1024), torch.nn.GELU())])
        mlp = mlp.cuda().half().eval()
        x = torch.randn(8, 1024, device="cuda", dtype=torch.float16)
        with torch.inference_mode():
            replay = graphed(mlp, x.clone())
            torch.testing.assert_close(replay(x), mlp(x))
            eager_us, graph_us = us_per_call(mlp, x), us_per_call(replay, x)
        print(f"8 kernels per call: eager {eager_us:.1f} us, CUDA graph replay {graph_us:.1f} us")
        # --8<-- [end:cudagraph-run]
