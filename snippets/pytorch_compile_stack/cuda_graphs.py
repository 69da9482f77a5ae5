"""mode="reduce-overhead" in a training loop: CUDA graphs, and the one call they need.

    python snippets/pytorch_compile_stack/cuda_graphs.py      # needs a CUDA GPU

reduce-overhead records each compiled graph into a CUDA graph and replays it: one
launch instead of one per kernel, so the CPU stops being the bottleneck of small,
fast steps. Outputs live in a memory pool the next replay overwrites, which is why
a training loop marks where each step begins.
"""
# needs: gpu
# --8<-- [start:train]
import copy

import torch
import torch.nn as nn

if not torch.cuda.is_available():
    raise SystemExit("this example needs a CUDA GPU (reduce-overhead records CUDA graphs)")
torch.manual_seed(0)
model = nn.Sequential(nn.LayerNorm(512), nn.Linear(512, 2048), nn.GELU(), nn.Linear(2048, 512)).cuda()
reference = copy.deepcopy(model)                       # trained eagerly, for the check
opt = torch.optim.SGD(model.parameters(), lr=0.1)
opt_ref = torch.optim.SGD(reference.parameters(), lr=0.1)
step_fn = torch.compile(model, mode="reduce-overhead")

for step in range(5):
    x = torch.randn(64, 512, device="cuda")
    torch.compiler.cudagraph_mark_step_begin()         # a new step: earlier outputs may be overwritten
    loss = step_fn(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)

    loss_ref = reference(x).square().mean()
    loss_ref.backward()
    opt_ref.step()
    opt_ref.zero_grad(set_to_none=True)
    torch.testing.assert_close(loss, loss_ref, rtol=1e-3, atol=1e-5)

for p, q in zip(model.parameters(), reference.parameters()):
    torch.testing.assert_close(p, q, rtol=1e-3, atol=1e-5)
print("5 SGD steps with CUDA graphs match eager")
# --8<-- [end:train]
