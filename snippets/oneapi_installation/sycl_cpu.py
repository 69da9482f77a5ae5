"""SYCL on the CPU from PyPI: list the devices, run a small dpnp computation there, check it against NumPy."""
# needs: oneapi-wheels
# --8<-- [start:icd]
import os
import sys

# The intel-opencl-rt wheel registers its CPU driver in <prefix>/etc/OpenCL/vendors/intel-cpu.icd, a
# folder the OpenCL ICD loader does not search (it reads /etc/OpenCL/vendors), and that file names a
# conda placeholder path anyway. Load the driver by its path before the SYCL runtime starts.
os.environ.setdefault("OCL_ICD_FILENAMES", os.path.join(sys.prefix, "lib", "libintelocl.so"))
# --8<-- [end:icd]

# --8<-- [start:devices]
import dpctl  # noqa: E402

for d in dpctl.get_devices():
    print(f"{d.backend.name}:{d.device_type.name}  compute units {d.max_compute_units}  "
          f"driver {d.driver_version}  SYCL filter '{d.filter_string}'")
cpu = dpctl.SyclDevice("opencl:cpu")          # a filter string: backend:device_type
# --8<-- [end:devices]

# --8<-- [start:dpnp]
import numpy as np  # noqa: E402

import dpnp  # noqa: E402

q = dpctl.SyclQueue(cpu)
rng = np.random.default_rng(0)
a_np, b_np = rng.standard_normal((256, 256)), rng.standard_normal((256, 256))
a, b = dpnp.asarray(a_np, sycl_queue=q), dpnp.asarray(b_np, sycl_queue=q)   # copied to the device
c = dpnp.tanh(a @ b) + dpnp.sum(a, axis=0)    # matmul: oneMKL's SYCL BLAS; tanh: oneMKL VM; sum: dpnp kernel
ref = np.tanh(a_np @ b_np) + a_np.sum(axis=0)
err = float(np.max(np.abs(dpnp.asnumpy(c) - ref)))
assert err < 1e-9, f"dpnp result differs from NumPy by {err}"
print(f"result on {c.sycl_device.backend.name}:{c.sycl_device.device_type.name}, "
      f"shape {c.shape}, max |dpnp - numpy| < 1e-9: OK")
# --8<-- [end:dpnp]
