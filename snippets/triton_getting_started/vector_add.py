"""Vector addition in Triton: kernel, checked wrapper, correctness check, benchmark.

    python snippets/triton_getting_started/vector_add.py           # check it
    python snippets/triton_getting_started/vector_add.py --bench   # and time it

The check runs on a GPU, or on the CPU with TRITON_INTERPRET=1; --bench needs
a GPU. The page "Practical Guide: Getting Started with OpenAI Triton" shows this
file section by section, and scripts/measure/triton_getting_started/vector_add.py
measures the page's figures with it.
"""
import argparse
import sys

if __name__ == "__main__":  # parse the command line first, so --help is instant
    _ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _ap.add_argument("--bench", action="store_true",
                     help="time add, torch.add and a copy (needs a CUDA GPU)")
    _ap.add_argument("--n", type=int, default=2**28,
                     help="elements per array for --bench (default 2**28)")
    ARGS = _ap.parse_args()
    if ARGS.n < 1:
        _ap.error(f"--n must be at least 1, got {ARGS.n}")

# --8<-- [start:kernel]
import torch
import triton
import triton.language as tl


@triton.jit
def add_kernel(
    x_ptr,                     # pointer to the first element of x
    y_ptr,                     # pointer to the first element of y
    out_ptr,                   # pointer to the first element of out
    n_elements,                # how many elements x, y and out hold
    BLOCK_SIZE: tl.constexpr,  # elements per program instance (compile time)
):
    # Program instance `pid` owns elements pid * BLOCK_SIZE ... + BLOCK_SIZE - 1.
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    # The last block runs past the end unless BLOCK_SIZE divides n_elements:
    # lanes where the mask is False neither load nor store.
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
# --8<-- [end:kernel]


# --8<-- [start:wrapper]
# True if TRITON_INTERPRET=1 was set before @triton.jit ran: the kernel then
# runs on the CPU, through Triton's interpreter.
INTERPRET = triton.knobs.runtime.interpret
SUPPORTED_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


def add(x, y, out=None, *, block_size=1024, num_warps=4):
    """Return x + y, computed by add_kernel. Raises on input it cannot take."""
    if not isinstance(x, torch.Tensor) or not isinstance(y, torch.Tensor):
        raise TypeError(f"add: x and y must be tensors, "
                        f"got {type(x).__name__} and {type(y).__name__}")
    if x.shape != y.shape:
        raise ValueError(f"add: x and y must have the same shape (no "
                         f"broadcasting), got {tuple(x.shape)} and "
                         f"{tuple(y.shape)}")
    if x.dtype != y.dtype:
        raise TypeError(f"add: x and y must have the same dtype, "
                        f"got {x.dtype} and {y.dtype}")
    if x.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"add: dtype {x.dtype} is not supported, use one of "
                        + ", ".join(str(d) for d in SUPPORTED_DTYPES))
    if x.device != y.device:
        raise ValueError(f"add: x and y must be on the same device, "
                         f"got {x.device} and {y.device}")
    if not INTERPRET and x.device.type != "cuda":
        raise ValueError(
            f"add: x and y are on {x.device}, but add_kernel runs on the GPU; "
            "move them with .cuda(), or set TRITON_INTERPRET=1 before "
            "importing triton to run on the CPU")
    if INTERPRET and x.dtype == torch.bfloat16:
        raise TypeError("add: Triton's interpreter gets bfloat16 wrong (NumPy "
                        "has no bfloat16); use float32, or run on a GPU")
    if block_size < 1 or block_size & (block_size - 1):
        raise ValueError(f"add: block_size must be a power of two "
                         f"(tl.arange needs one), got {block_size}")
    n = x.numel()
    if triton.cdiv(n, block_size) * block_size > 2**31:
        raise ValueError(f"add: {n} elements overflow the 32-bit offsets")
    # The kernel walks flat memory: a strided view (x[::2], x.t()) is copied
    # first, which costs one more read and write of it.
    x, y = x.contiguous(), y.contiguous()
    if out is None:
        out = torch.empty_like(x)
    elif (out.shape != x.shape or out.dtype != x.dtype
          or out.device != x.device or not out.is_contiguous()):
        raise ValueError(f"add: out must be a contiguous {x.dtype} tensor "
                         f"of shape {tuple(x.shape)} on {x.device}")
    if n > 0:
        grid = (triton.cdiv(n, block_size),)  # one program instance per block
        add_kernel[grid](x, y, out, n, BLOCK_SIZE=block_size,
                         num_warps=num_warps)
    return out
# --8<-- [end:wrapper]


# --8<-- [start:check]
DEVICE = "cpu" if INTERPRET else "cuda"


def check_add(sizes=(1, 17, 1000, 4096, 4097, 65_537),
              dtypes=(torch.float32, torch.float16)):
    """add() against a float64 reference, on lengths the block does not divide."""
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("No CUDA GPU here: set TRITON_INTERPRET=1 before "
                         "importing triton to run on the CPU")
    torch.manual_seed(0)
    for dtype in dtypes:
        for n in sizes:
            x = torch.randn(n, device=DEVICE, dtype=dtype)
            y = torch.randn(n, device=DEVICE, dtype=dtype)
            # Write into the front of a NaN-filled buffer: the mask must
            # leave the rest of it alone.
            buf = torch.full((n + 4096,), float("nan"), device=DEVICE,
                             dtype=dtype)
            out = add(x, y, out=buf[:n])
            ref = (x.double() + y.double()).to(dtype)  # exact, rounded once
            torch.testing.assert_close(out, ref, rtol=0, atol=0)
            assert torch.isnan(buf[n:]).all(), f"n={n}: wrote past the end"
        print(f"{dtype}: add matches the float64 reference for "
              f"n = {', '.join(map(str, sizes))}")


if __name__ == "__main__":  # in a script, a notebook, a page block; not on import
    check_add()
# --8<-- [end:check]


# --8<-- [start:bad_inputs]
def show_error(call):
    try:
        call()
    except (TypeError, ValueError) as e:
        print(f"{type(e).__name__}: {e}")
    else:
        raise AssertionError("add accepted an input it should refuse")


if __name__ == "__main__":
    a = torch.randn(1000, device=DEVICE)
    show_error(lambda: add(a, a[:999]))             # shapes differ
    show_error(lambda: add(a, a.half()))            # dtypes differ
    show_error(lambda: add(a.long(), a.long()))     # integers: not here
    show_error(lambda: add(a, a, block_size=1000))  # not a power of two
    strided = torch.randn(2000, device=DEVICE)[::2]  # not contiguous
    print("strided input:", torch.equal(add(strided, a), strided + a))
# --8<-- [end:bad_inputs]


# --8<-- [start:bench]
from triton.testing import do_bench


def median_ms(fn):
    """Median time of fn() in ms. do_bench warms up, times many runs with
    CUDA events, and overwrites the L2 cache before each run."""
    return do_bench(fn, warmup=25, rep=100, return_mode="median")


def gbps(n_bytes, ms):
    return n_bytes / (ms * 1e-3) / 1e9


def bench_add(n, dtype=torch.float32, block_size=1024, num_warps=4):
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.randn(n, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    # A launch returns the compiled kernel: its PTX, registers and spills.
    kernel = add_kernel[(triton.cdiv(n, block_size),)](
        x, y, out, n, BLOCK_SIZE=block_size, num_warps=num_warps)
    torch.testing.assert_close(out, x + y, rtol=0, atol=0)  # correct first
    ms = median_ms(lambda: add(x, y, out, block_size=block_size,
                               num_warps=num_warps))
    return {"ms": ms,
            "gbps": gbps(3 * n * x.element_size(), ms),  # read 2, write 1
            "n_regs": kernel.n_regs, "n_spills": kernel.n_spills,
            "vector_loads": kernel.asm["ptx"].count("ld.global.v4")}


def bench_torch_add(n, dtype=torch.float32):
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.randn(n, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    ms = median_ms(lambda: torch.add(x, y, out=out))
    return {"ms": ms, "gbps": gbps(3 * n * x.element_size(), ms)}


def bench_copy(n, dtype=torch.float32):
    """The reference for a kernel that streams memory: read n, write n."""
    x = torch.randn(n, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    ms = median_ms(lambda: out.copy_(x))
    return {"ms": ms, "gbps": gbps(2 * n * x.element_size(), ms)}
# --8<-- [end:bench]


if __name__ == "__main__" and ARGS.bench:
    if INTERPRET or not torch.cuda.is_available():
        sys.exit("vector_add.py: --bench needs a CUDA GPU, "
                 "and TRITON_INTERPRET unset")
    n = ARGS.n
    t, ref, cp = bench_add(n), bench_torch_add(n), bench_copy(n)
    print(f"n = {n}, float32, {torch.cuda.get_device_name()}")
    print(f"triton add  {t['gbps']:7.0f} GB/s  {t['ms']:.4f} ms  "
          f"({t['n_regs']} registers, {t['n_spills']} spills)")
    print(f"torch.add   {ref['gbps']:7.0f} GB/s  {ref['ms']:.4f} ms")
    print(f"copy        {cp['gbps']:7.0f} GB/s  {cp['ms']:.4f} ms")
    print(f"triton / torch.add = {t['gbps'] / ref['gbps']:.3f}, "
          f"triton / copy = {t['gbps'] / cp['gbps']:.3f}")
