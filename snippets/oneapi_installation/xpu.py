"""The Intel GPU path: needs an Intel GPU, its driver (Level Zero) and a PyTorch built for XPU.
Shown on the page, not run by the site's tests: the CI machine has no Intel GPU."""
# needs: intel-gpu
# --8<-- [start:xpu]
import dpctl
import torch

print(dpctl.get_devices(backend="level_zero", device_type="gpu"))   # the GPU through Level Zero
if torch.xpu.is_available():                                         # PyTorch's XPU device
    x = torch.randn(4096, 4096, device="xpu")
    y = torch.compile(lambda t: torch.nn.functional.gelu(t) * 2)(x)  # Inductor emits Triton for Intel GPUs
    print(torch.xpu.get_device_name(), y.shape)
# --8<-- [end:xpu]
