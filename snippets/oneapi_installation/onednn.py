"""oneDNN inside PyTorch's CPU build: which version, whether it is built in and whether it is enabled."""
# --8<-- [start:onednn]
import re

import torch

config = torch.__config__.show()
onednn = re.search(r"MKL-DNN v([\d.]+)", config).group(1)          # oneDNN's former name, kept in the string
print(f"torch {torch.__version__.split('+')[0]}: oneDNN {onednn}, built in: {torch.backends.mkldnn.is_available()}, "
      f"enabled: {torch.backends.mkldnn.enabled}")
print("BLAS:", re.search(r"BLAS_INFO=(\w+)", config).group(1), " LAPACK:", re.search(r"LAPACK_INFO=(\w+)", config).group(1))
# --8<-- [end:onednn]
