# --8<-- [start:import]
# The mlp.mlir layer as a torch.nn.Module, imported into MLIR by torch-mlir.
import torch
from torch_mlir import fx


class Layer(torch.nn.Module):
    def forward(self, x, w):
        y = torch.relu(x @ w)
        return y, y.sum(dim=1)


x, w = torch.ones(4, 3), torch.ones(3, 2)
print(fx.export_and_import(Layer(), x, w))           # the torch dialect
print(fx.export_and_import(Layer(), x, w,            # linalg, arith and tensor
                           output_type="linalg-on-tensors"))
# --8<-- [end:import]
