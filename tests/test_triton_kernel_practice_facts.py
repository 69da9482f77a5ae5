"""Version facts that "Triton Kernel Practice" states about the installed Triton (3.6), checked on
the CPU so that an upgrade that changes one of them fails here instead of leaving the page wrong.
Each test names the sentence it guards. About 5 s (tiny kernels compiled for sm_90)."""

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
    """'tl.dot on fp32 operands runs on the tensor cores in TF32 by default': tl.dot's own default
    (language/core.py), which TRITON_F32_DEFAULT overrides, not the backend's option."""
    import triton.language as tl_lang
    from triton.backends.nvidia.compiler import CUDAOptions

    src = inspect.getsource(tl_lang.dot)
    assert "fp32_default" in src and '"tf32"' in src, "tl.dot no longer picks its own fp32 default"
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


@triton.jit
def _tma_dot_kernel(a_desc, b_desc, c_ptr, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([pn * BN, k]).T, acc)
    offs_m = pm * BM + tl.arange(0, BM)
    offs_n = pn * BN + tl.arange(0, BN)
    tl.store(c_ptr + offs_m[:, None] * BN + offs_n[None, :], acc.to(tl.float16))


def _compile_tma_dot(bm: int, bn: int, num_ctas: int) -> tuple[bool, str]:
    """Compile _tma_dot_kernel for sm_90 in a fresh process: (compiled, PTX or the error output)."""
    import os
    import subprocess
    import sys

    code = (
        "import importlib.util, triton\n"
        f"spec = importlib.util.spec_from_file_location('kp_facts', {__file__!r})\n"
        "m = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(m)\n"
        f"sig = {{'a_desc': 'tensordesc<fp16[{bm}, 64]>', 'b_desc': 'tensordesc<fp16[{bn}, 64]>', 'c_ptr': '*fp16',\n"
        "       'K': 'i32', 'BM': 'constexpr', 'BN': 'constexpr', 'BK': 'constexpr'}\n"
        f"src = m.ASTSource(m._tma_dot_kernel, sig, {{'BM': {bm}, 'BN': {bn}, 'BK': 64}})\n"
        f"k = triton.compile(src, target=m.SM90, options={{'num_warps': 4, 'num_stages': 4, 'num_ctas': {num_ctas}}})\n"
        "print(k.asm['ptx'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    return p.returncode == 0, p.stdout if p.returncode == 0 else p.stderr


def test_clusters_without_multicast_on_hopper():
    """'In Triton 3.6 on sm_90, num_ctas=2 splits one program's tile over a two-program cluster, and
    each program loads its own operands: no TMA multicast is emitted, a 128 x 64 tile does not compile
    ("Failed to find a valid layout"), and Gluon's Hopper TMA copy has no multicast argument'."""
    from triton.experimental.gluon.language.nvidia.hopper import tma

    ok, one = _compile_tma_dot(64, 64, 1)
    assert ok and "m64n64k16" in one and "%cluster_ctarank" not in one
    ok, two = _compile_tma_dot(64, 64, 2)
    assert ok, two[-2000:]
    assert "%cluster_ctarank" in two and "m64n32k16" in two  # a cluster of two, each with half the tile
    bulk = re.findall(r"cp\.async\.bulk\.tensor\S*", two)
    assert bulk and not any("multicast" in b for b in bulk), set(bulk)
    ok, err = _compile_tma_dot(128, 64, 2)
    assert not ok and "Failed to find a valid layout" in err, err[-2000:]
    assert "multicast" not in inspect.signature(tma.async_copy_global_to_shared).parameters


def test_integers_are_specialized_by_the_native_specializer():
    """'Triton's launcher specializes every integer argument on whether it equals 1 and whether it is a
    multiple of 16 ... (the launcher's native_specialize_impl ... marks the multiples of 16; the Python
    get_int_specialization in backends/compiler.py is not on that path)'."""
    import triton.runtime.jit as jit
    from triton._C.libtriton import native_specialize_impl
    from triton.backends import BaseBackend

    assert native_specialize_impl(BaseBackend, 1, False, True, True) == ("constexpr", 1)
    assert native_specialize_impl(BaseBackend, 4096, False, True, True) == ("i32", "D")
    assert native_specialize_impl(BaseBackend, 4100, False, True, True) == ("i32", "")
    assert native_specialize_impl(BaseBackend, 3000, False, True, True) == ("i32", "")
    assert "native_specialize_impl" in inspect.getsource(jit)
    assert "get_int_specialization" not in inspect.getsource(jit)
