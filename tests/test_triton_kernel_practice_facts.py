"""Version facts that "Triton Kernel Practice" states about the installed Triton (3.6), checked on
the CPU so that an upgrade that changes one of them fails here instead of leaving the page wrong.
Each test names the sentence it guards. About 5 s (three tiny kernels compiled for sm_90)."""

from __future__ import annotations

import inspect
import re

import pytest
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.jit import JITFunction

SM90 = GPUTarget("cuda", 90, 32)


def _ptx_here(fn, signature, constants):
    jit = fn if isinstance(fn, JITFunction) else JITFunction(fn.fn)
    return triton.compile(ASTSource(jit, signature, constants), target=SM90).asm["ptx"]


def _ptx(fn, signature, constants):
    """Compile in a fresh process: once any kernel has run through the interpreter in this process
    (another test, under xdist), Triton has patched triton.language for it and a real compile fails."""
    import os
    import subprocess
    import sys

    name = getattr(fn, "__name__", None) or fn.fn.__name__
    code = (
        "import importlib.util\n"
        f"spec = importlib.util.spec_from_file_location('kp_facts', {__file__!r})\n"
        "m = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        f"print(m._ptx_here(m.{name}, {signature!r}, {constants!r}))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout


@triton.jit
def _exp_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs)))


@triton.jit
def _dot_kernel(a_ptr, c_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs[:, None] * BLOCK + offs[None, :])
    tl.store(c_ptr + offs[:, None] * BLOCK + offs[None, :], tl.dot(a, a))


def test_tl_exp_is_the_approximate_ex2():
    """'tl.exp ... issues the hardware's approximate base-2 exponential, ex2.approx.f32'."""
    ptx = _ptx(_exp_kernel, {"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 128})
    assert "ex2.approx.f32" in ptx


def test_fp32_dot_is_tf32_by_default():
    """'tl.dot on fp32 operands runs on the tensor cores in TF32 by default'."""
    from triton.backends.nvidia.compiler import CUDAOptions

    assert CUDAOptions.default_dot_input_precision == "tf32"
    assert {"ieee", "tf32x3"} <= set(CUDAOptions.allowed_dot_input_precisions)
    ptx = _ptx(_dot_kernel, {"a_ptr": "*fp32", "c_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    assert re.search(r"wgmma\.mma_async\S*\.tf32\.tf32", ptx)


def test_descriptors_become_pointers_below_sm90():
    """'for older GPUs Triton 3.6's NVIDIA backend rewrites descriptor loads and stores into ordinary
    pointer loads' (make_ttir)."""
    from triton.backends.nvidia.compiler import CUDABackend

    src = inspect.getsource(CUDABackend.make_ttir)
    assert "capability // 10 < 9" in src and "add_rewrite_tensor_descriptor_to_pointer" in src


def test_range_docstring_on_num_stages_and_warp_specialize():
    """'the launch option only pipelines loads that feed a tl.dot, while the loop attribute tries to
    pipeline most loads'; and warp specialization is documented for Blackwell only."""
    doc = " ".join(tl.range.__doc__.split())
    assert "only pipelines loads that feed into :code:`dot` operations" in doc
    assert "warp specialization is only supported on Blackwell GPUs" in doc


def test_block_pointers_still_compile_without_a_warning():
    """'tl.make_block_ptr still compiles without a warning in Triton 3.6'."""
    src = inspect.getsource(tl.make_block_ptr)
    assert "deprecat" not in src.lower()


def test_device_descriptors_need_an_allocator():
    """'without triton.set_allocator(...) the launch fails'."""
    from triton.runtime import _allocation

    src = inspect.getsource(_allocation)
    assert "no allocator was set" in src


@pytest.mark.parametrize("name", ["make_tensor_descriptor"])
def test_tensor_descriptors_exist(name):
    """'Tensor descriptors, host-side and in-kernel, exist' (since 3.4; here: in the installed 3.6)."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    assert hasattr(tl, name) and hasattr(TensorDescriptor, "from_tensor")
