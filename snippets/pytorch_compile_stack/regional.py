# --8<-- [start:regional]
# Regional compilation: compile the repeated block once instead of the whole model.
# Run: python snippets/pytorch_compile_stack/regional.py
import os
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch._dynamo.utils import counters


class Block(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.ln, self.up, self.down = nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.ln(x))))


class Stack(nn.Module):
    def __init__(self, d: int = 64, depth: int = 6):
        super().__init__()
        self.blocks = nn.ModuleList(Block(d) for _ in range(depth))

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return x


torch.manual_seed(0)
x = torch.randn(4, 32, 64)
torch.compile(lambda t: t * 2)(x)              # the process's one-time compiler start-up, paid here
for how in ("whole model", "each block"):
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp()   # empty cache: really compile
    torch._dynamo.reset()
    counters.clear()
    model = Stack()
    with torch.no_grad():
        want = model(x)
        if how == "whole model":
            model.compile()
        else:
            for blk in model.blocks:           # regional: the repeated region only
                blk.compile()
        t0 = time.perf_counter()
        got = model(x)                         # first call compiles
        seconds = time.perf_counter() - t0
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    print(f"{how:<12} graphs compiled: {counters['stats']['unique_graphs']}, "
          f"ops captured: {counters['stats']['calls_captured']}, first call {seconds:.1f} s")
# --8<-- [end:regional]
