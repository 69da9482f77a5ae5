# --8<-- [start:aoti]
# AOTInductor: export, compile ahead of time into a .pt2 package, load it, run it without Dynamo.
# Run: python snippets/pytorch_compile_stack/aoti.py
import os
import tempfile

import torch
import torch.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.LayerNorm(256), nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256)).eval()
example = (torch.randn(8, 256),)

# the batch dimension stays symbolic: one package serves batch sizes 1..64
batch = torch.export.Dim("batch", min=1, max=64)
with torch.no_grad():
    exported = torch.export.export(model, example, dynamic_shapes=({0: batch},))
    path = torch._inductor.aoti_compile_and_package(
        exported, package_path=os.path.join(tempfile.mkdtemp(), "mlp.pt2"))

runner = torch._inductor.aoti_load_package(path)      # no Dynamo, no compilation here
with torch.no_grad():
    for b in (1, 8, 64):
        x = torch.randn(b, 256)
        torch.testing.assert_close(runner(x), model(x), rtol=1e-4, atol=1e-4)
print(f"package: {os.path.basename(path)}, {os.path.getsize(path) / 2**20:.1f} MiB; "
      "batch sizes 1, 8, 64 match eager")
# --8<-- [end:aoti]
