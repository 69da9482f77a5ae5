"""The vector-add wrapper of "Practical Guide: Getting Started with OpenAI Triton", and the error
messages its tables quote.

The snippet module is imported twice: once with TRITON_INTERPRET=1, so the kernel runs on the CPU
through Triton's interpreter (ragged sizes, both dtypes, bad input), and once without, to check
that CPU tensors are refused with a clear message before Triton sees them. Every error message the
page quotes is reproduced here with the installed Triton, so the tables cannot drift from it.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import snippet_loader
import torch

ROOT = Path(__file__).resolve().parents[1]
SNIPPETS = ROOT / "snippets" / "triton_getting_started"
PAGES = {lang: ROOT / "docs" / lang / "triton-getting-started.md" for lang in ("en", "zh")}


def _load(name: str, interpret: bool):
    """Import vector_add.py under a private name, with the interpreter on or off while @triton.jit runs."""
    return snippet_loader.load(SNIPPETS / "vector_add.py", name, interpret)


va = _load("tgs_vector_add_interpreted", interpret=True)
va_jit = _load("tgs_vector_add_compiled", interpret=False)


@pytest.fixture(autouse=True)
def _interpreter_on(monkeypatch):
    # The interpreter reads TRITON_INTERPRET again while a kernel runs, not only when @triton.jit ran.
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def test_modules_are_what_they_claim():
    assert va.INTERPRET and va.DEVICE == "cpu"
    assert not va_jit.INTERPRET


# -- correctness --------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("block_size", [16, 128, 1024])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 255, 1023, 1025, 4097, 10_001])
def test_ragged_sizes(dtype, block_size, n):
    g = torch.Generator().manual_seed(n * 31 + block_size)
    x = torch.randn(n, generator=g).to(dtype)
    y = torch.randn(n, generator=g).to(dtype)
    buf = torch.full((n + block_size + 7,), float("nan"), dtype=dtype)
    out = va.add(x, y, out=buf[:n], block_size=block_size, num_warps=4)
    assert out.data_ptr() == buf.data_ptr() and out.dtype == dtype and out.shape == (n,)
    # Both Triton and the reference round the exact sum once, so they agree bit for bit.
    ref = (x.double() + y.double()).to(dtype)
    torch.testing.assert_close(out, ref, rtol=0, atol=0)
    assert torch.isnan(buf[n:]).all(), "the kernel wrote past the end of the output"


def test_result_is_a_new_tensor_by_default():
    x, y = torch.randn(300), torch.randn(300)
    out = va.add(x, y)
    assert out.data_ptr() not in (x.data_ptr(), y.data_ptr())
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)


def test_non_contiguous_and_multidimensional_inputs():
    a = torch.randn(65, 33)
    b = torch.randn(33, 65)
    out = va.add(a.t(), b)  # a.t() is a strided view
    assert out.shape == (33, 65) and out.is_contiguous()
    torch.testing.assert_close(out, a.t() + b, rtol=0, atol=0)
    c = torch.randn(4000)[::4]  # every fourth element
    torch.testing.assert_close(va.add(c, c), c + c, rtol=0, atol=0)


def test_empty_input_launches_nothing():
    out = va.add(torch.empty(0), torch.empty(0))
    assert out.shape == (0,)


def test_page_check_and_bad_input_sections_run():
    va.check_add(sizes=(3, 1000), dtypes=(torch.float32,))


# -- bad input ----------------------------------------------------------------------------------

X = torch.randn(100)


@pytest.mark.parametrize(
    "call, exc, words",
    [
        (lambda: va.add(X, X[:99]), ValueError, "same shape"),
        (lambda: va.add(X, X.reshape(10, 10)), ValueError, "same shape"),
        (lambda: va.add(X, X.half()), TypeError, "same dtype"),
        (lambda: va.add(X.long(), X.long()), TypeError, "not supported"),
        (lambda: va.add(X.double(), X.double()), TypeError, "not supported"),
        (lambda: va.add(X.bfloat16(), X.bfloat16()), TypeError, "interpreter"),
        (lambda: va.add(X.numpy(), X), TypeError, "must be tensors"),
        (lambda: va.add(X, X, block_size=1000), ValueError, "power of two"),
        (lambda: va.add(X, X, block_size=0), ValueError, "power of two"),
        (lambda: va.add(X, X, out=torch.empty(99)), ValueError, "out must be"),
        (lambda: va.add(X, X, out=torch.empty(200)[::2]), ValueError, "out must be"),
        (lambda: va.add(X, X, out=torch.empty(100, dtype=torch.float16)), ValueError, "out must be"),
    ],
    ids=[
        "length",
        "shape",
        "dtype-mismatch",
        "int64",
        "float64",
        "bf16-interpreter",
        "numpy",
        "block-1000",
        "block-0",
        "out-shape",
        "out-strided",
        "out-dtype",
    ],
)
def test_bad_input_is_refused_with_a_clear_error(call, exc, words):
    with pytest.raises(exc, match=words):
        call()


def test_offsets_that_overflow_int32_are_refused():
    big = torch.empty(2**31 + 1, dtype=torch.float16, device="meta")  # no memory behind it
    with pytest.raises(ValueError, match="32-bit offsets"):
        va.add(big, big)


def test_cpu_tensors_are_refused_when_the_kernel_runs_on_the_gpu(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="runs on the GPU") as e:
        va_jit.add(torch.randn(8), torch.randn(8))
    assert "TRITON_INTERPRET=1" in str(e.value)


# -- the messages the page's error tables quote ---------------------------------------------------

MESSAGES = {
    "no_driver": "0 active drivers ([]). There should only be one.",
    "cpu_tensor": "Pointer argument (at 0) cannot be accessed from Triton (cpu tensor?)",
    "no_grid": "Cannot call @triton.jit'd outside of the scope of a kernel",
    "arange_pow2": "arange's range must be a power of 2",
    "arange_constexpr": "arange's arguments must be of type tl.constexpr",
    "not_a_file": "@jit functions should be defined in a Python file",
    "numpy_24": "only 0-dimensional arrays can be converted to Python scalars",
    "out_of_resource": "out of resource: shared memory",
    "no_cc": "Failed to find C compiler. Please specify via CC environment variable or set triton.knobs.build.impl.",
    "no_libcuda": "libcuda.so cannot found!",
}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_page_quotes_each_message_verbatim(lang):
    text = PAGES[lang].read_text(encoding="utf-8")
    missing = [k for k, m in MESSAGES.items() if m not in text]
    assert not missing, f"{PAGES[lang].name} ({lang}) no longer quotes: {missing}"


def _run(code: str, **env) -> subprocess.CompletedProcess:
    e = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    e.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=SNIPPETS, env=e, timeout=120
    )


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine with a GPU has a driver")
def test_launch_without_gpu_or_interpreter():
    p = _run(
        "import torch\nfrom vector_add import add_kernel\n"
        "x = torch.randn(8)\nadd_kernel[(1,)](x, x, x, 8, BLOCK_SIZE=8)"
    )
    assert p.returncode != 0 and MESSAGES["no_driver"] in p.stderr, p.stderr[-2000:]


def test_cpu_tensor_given_to_a_gpu_launch(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    if not torch.cuda.is_available():
        # Only a GPU launch can raise it; without one, check that Triton still carries the text.
        import triton.backends.nvidia.driver as drv

        assert MESSAGES["cpu_tensor"].replace("(at 0)", "(at %d)") in Path(drv.__file__).read_text()
        return
    x = torch.randn(8)
    with pytest.raises(ValueError, match=r"cannot be accessed from Triton \(cpu tensor\?\)"):
        va_jit.add_kernel[(1,)](x, x, x, 8, BLOCK_SIZE=8)


def test_calling_a_kernel_without_a_grid(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    x = torch.randn(8)
    with pytest.raises(RuntimeError, match="outside of the scope of a kernel"):
        va_jit.add_kernel(x, x, x, 8, BLOCK_SIZE=8)


def _compile_for_sm90(fn, signature, constexprs):
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    return triton.compile(ASTSource(JITFunction(fn), signature, constexprs), target=GPUTarget("cuda", 90, 32))


def test_compile_errors_a_beginner_meets():
    import tempfile

    from triton.compiler.errors import CompilationError

    src = (
        "def fill(x_ptr, n, BLOCK_SIZE{ann}):\n"
        "    offs = tl.arange(0, BLOCK_SIZE)\n"
        "    tl.store(x_ptr + offs, offs, mask=offs < n)\n"
    )
    # Triton reads a kernel's source from its file: write real files, as a reader would.
    with tempfile.TemporaryDirectory() as t:
        for ann, sig, constexprs, key in (
            (
                ": tl.constexpr",
                {"x_ptr": "*fp32", "n": "i32", "BLOCK_SIZE": "constexpr"},
                {"BLOCK_SIZE": 1000},
                "arange_pow2",
            ),
            ("", {"x_ptr": "*fp32", "n": "i32", "BLOCK_SIZE": "i32"}, {}, "arange_constexpr"),
        ):
            path = Path(t) / f"k_{key}.py"
            path.write_text("import triton.language as tl\n\n" + src.format(ann=ann))
            spec = importlib.util.spec_from_file_location(f"k_{key}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            with pytest.raises(CompilationError) as e:
                _compile_for_sm90(mod.fill, sig, constexprs)
            assert MESSAGES[key] in str(e.value)


def test_jit_outside_a_file():
    p = _run("import triton\n@triton.jit\ndef k(x):\n    pass\n")
    assert p.returncode != 0 and MESSAGES["not_a_file"] in p.stderr, p.stderr[-2000:]


def test_out_of_resources_message():
    from triton.runtime.errors import OutOfResources

    assert str(OutOfResources(300000, 232448, "shared memory")).startswith(
        MESSAGES["out_of_resource"] + ", Required: 300000, Hardware limit: 232448"
    )


def test_interpreter_loop_over_a_runtime_bound_depends_on_numpy():
    """Triton 3.6's interpreter turns `range(tl.cdiv(n, BLOCK))` into an int through NumPy;
    NumPy 2.4 stopped converting 1-element arrays to scalars (triton-lang/triton#9171)."""
    p = _run(
        "import torch, triton, triton.language as tl\n"
        "@triton.jit\n"
        "def total(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n"
        "    acc = tl.zeros([BLOCK], tl.float32)\n"
        "    for i in range(0, tl.cdiv(n, BLOCK)):\n"
        "        offs = i * BLOCK + tl.arange(0, BLOCK)\n"
        "        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)\n"
        "    tl.store(out_ptr, tl.sum(acc))\n"
        "x = torch.ones(100); out = torch.zeros(1)\n"
        "total[(1,)](x, out, 100, BLOCK=16)\n"
        "print(out.item())\n",
        TRITON_INTERPRET="1",
    )
    if tuple(int(v) for v in np.__version__.split(".")[:2]) >= (2, 4):
        assert p.returncode != 0 and MESSAGES["numpy_24"] in p.stderr, p.stderr[-2000:]
    else:
        assert p.returncode == 0 and p.stdout.strip() == "100.0", p.stderr[-2000:]


def test_no_c_compiler(tmp_path, monkeypatch):
    # No CC and nothing on the PATH: what a bare container gives Triton when it builds its launcher.
    monkeypatch.delenv("CC", raising=False)
    p = _run(
        f"from triton.runtime.build import _build\n_build('k', 'k.c', {str(tmp_path)!r}, [], [], [], [])\n",
        PATH=str(tmp_path),
    )
    assert p.returncode != 0 and MESSAGES["no_cc"] in p.stderr, p.stderr[-2000:]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine with a GPU has libcuda")
def test_no_libcuda():
    from triton.backends.nvidia.driver import libcuda_dirs

    libcuda_dirs.cache_clear()
    with pytest.raises(AssertionError, match="libcuda.so cannot found!"):
        libcuda_dirs()


# -- sentences of the page that compare measured values (issue 10: claims checked against data) ----


def _vector_add_rows():
    import json

    ds = json.loads((ROOT / "data" / "triton_getting_started" / "vector_add.json").read_text())
    return ds["rows"]


def test_flat_region_of_the_tuning_table():
    """The page: 'From BLOCK_SIZE=256 up, whenever each thread gets between 2 and 128 elements, every
    configuration is within a few percent of the others and of torch.add.' A few percent = 5 %."""
    rows = _vector_add_rows()
    torch_gbps = next(r["torch_gbps"] for r in rows if r["kind"] == "target" and r["dtype"] == "fp32")
    flat = [
        r for r in rows if r["kind"] == "resources" and r["block_size"] >= 256 and 2 <= r["elems_per_thread"] <= 128
    ]
    assert len(flat) >= 20
    off = {
        (r["block_size"], r["num_warps"]): round(r["gbps"] / torch_gbps, 3)
        for r in flat
        if abs(r["gbps"] / torch_gbps - 1) > 0.05
    }
    assert not off, f"cells more than 5 % from torch.add: {off}; rewrite 'Most of the table is flat'"


def test_fp16_row_reuses_the_fp32_setting():
    """The page: the float16 row reuses the setting the sweep chose in float32 (so it moves half the bytes
    per program); the comparison itself is rendered by a verdict marker from the two rows' spread."""
    rows = [r for r in _vector_add_rows() if r["kind"] == "target"]
    fp32 = next(r for r in rows if r["dtype"] == "fp32")
    fp16 = next(r for r in rows if r["dtype"] == "fp16")
    assert (fp16["block_size"], fp16["num_warps"]) == (fp32["block_size"], fp32["num_warps"])


def test_do_bench_interface_the_page_describes():
    """The page: warmup/rep are milliseconds, and do_bench returns the mean unless asked (Triton 3.6)."""
    import inspect

    from triton.testing import do_bench

    params = inspect.signature(do_bench).parameters
    assert params["warmup"].default == 25 and params["rep"].default == 100
    assert params["return_mode"].default == "mean"
    assert "(in ms)" in do_bench.__doc__


def test_sizes_above_2_24_meet():
    """The page: 'Above 2^24 elements the lines meet' (every Triton block size within 5 % of torch.add)."""
    rows = [r for r in _vector_add_rows() if r["kind"] == "sweep" and r["n"] > 2**24]
    torch_at = {r["n"]: r["gbps"] for r in rows if r["impl"] == "torch_add"}
    assert torch_at
    off = {
        (r["n"], r["impl"]): round(r["gbps"] / torch_at[r["n"]], 3)
        for r in rows
        if r["impl"].startswith("triton") and abs(r["gbps"] / torch_at[r["n"]] - 1) > 0.05
    }
    assert not off, f"Triton more than 5 % from torch.add above 2^24: {off}; rewrite 'the lines meet'"


def test_what_the_page_says_of_the_interpreter_and_the_debug_knobs():
    """The page: the interpreter's fp32 tl.dot is a full-fp32 NumPy matmul (not TF32) and its tl.exp is
    NumPy's exp; device asserts are on with TRITON_DEBUG (read at import), triton.knobs.runtime.debug,
    @triton.jit(debug=True) or debug=True at launch; TRITON_ALWAYS_COMPILE bypasses only the on-disk
    cache (a process reuses the kernels it has already loaded). Read from the installed Triton 3.6."""
    import inspect

    from triton.compiler import compiler
    from triton.runtime import interpreter, jit

    interp = inspect.getsource(interpreter)
    assert "np.matmul(a_data, b_data" in interp and "np.exp" in interp
    run = inspect.getsource(jit)
    assert 'kwargs.get("debug", self.debug) or knobs.runtime.debug' in run
    assert "kernel_cache.get(key" in run
    assert "if not always_compile and metadata_path is not None" in inspect.getsource(compiler.compile)
