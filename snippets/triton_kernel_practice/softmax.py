"""Row softmax in three steps: torch's composition, a fused one-row-per-program kernel,
and a persistent online kernel for rows too long to hold on chip.

Run it: `python snippets/triton_kernel_practice/softmax.py` on a CUDA GPU, or with
TRITON_INTERPRET=1 on a CPU (small sizes).
"""
# --8<-- [start:naive]
import os

import torch
import triton
import triton.language as tl

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"


def softmax_naive(x: torch.Tensor) -> torch.Tensor:
    # five separate kernels; each reads its input from device memory and writes its result back
    x_max = x.max(dim=1, keepdim=True).values    # read M*N, write M
    z = x - x_max                                # read M*N + M, write M*N
    num = torch.exp(z)                           # read M*N, write M*N
    den = num.sum(dim=1, keepdim=True)           # read M*N, write M
    return num / den                             # read M*N + M, write M*N
    # total: 5 reads and 3 writes of M*N elements, where 1 read and 1 write would do
# --8<-- [end:naive]


# --8<-- [start:fused]
def _check(x: torch.Tensor) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"softmax: expected a torch.Tensor, got {type(x).__name__}")
    if x.dim() < 1 or x.numel() == 0:
        raise ValueError(f"softmax: need a non-empty tensor, got shape {tuple(x.shape)}")
    if x.dtype not in (torch.float32, torch.float16, torch.bfloat16):
        raise ValueError(f"softmax: dtype must be float32, float16 or bfloat16, got {x.dtype}")
    if not INTERPRET and not x.is_cuda:
        raise ValueError("softmax: tensor must be on a CUDA GPU (or set TRITON_INTERPRET=1 to run on the CPU)")
    # softmax over the last dim; other dims fold into rows (a view when strides allow)
    return x if x.dim() == 2 else x.reshape(-1, x.shape[-1])


def _pow2(name: str, v) -> None:
    """Block sizes, rows per program and warp counts are powers of two (tl.arange and the layouts need it)."""
    if not isinstance(v, int) or v < 1 or v & (v - 1):
        raise ValueError(f"softmax: {name} must be a power of two >= 1, got {v!r}")


@triton.jit
def softmax_row_kernel(out_ptr, in_ptr,
                       in_row_stride, in_col_stride,     # strides in elements: any 2-D view works
                       out_row_stride,
                       n_rows, n_cols,
                       BLOCK: tl.constexpr,              # next power of two >= n_cols: a whole row
                       ROWS: tl.constexpr,               # rows per program: > 1 only for short rows
                       VEC: tl.constexpr = 1,            # n_cols and the row strides are multiples of VEC
                       WIDE: tl.constexpr = False):      # column * column stride may pass 2^31: 64-bit offsets
    if VEC > 1:
        # The launch tells the compiler which integers are multiples of 16, nothing finer: with 3,000
        # columns it can prove neither that every row starts on a 16-byte boundary nor that the mask
        # changes only at multiples of 4 columns, so it falls back to 4-byte accesses. Rounding to VEC
        # changes no value (the wrapper checked the divisibility) and hands the compiler that fact.
        n_cols = n_cols // VEC * VEC
        in_row_stride = in_row_stride // VEC * VEC
        out_row_stride = out_row_stride // VEC * VEC
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    col_ok = cols[None, :] < n_cols
    # rows past the end re-read the last row (never stored): no masked-out row turns into NaN
    src = tl.minimum(rows, n_rows - 1).to(tl.int64)      # 64-bit: row * stride may pass 2^31
    col_off = cols.to(tl.int64) * in_col_stride if WIDE else cols * in_col_stride
    # the padding lanes read -inf: exp(-inf) = 0 adds nothing to the sum
    x = tl.load(in_ptr + src[:, None] * in_row_stride + col_off[None, :],
                mask=col_ok, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=1)[:, None]
    num = tl.exp(z)
    out = num / tl.sum(num, axis=1)[:, None]
    tl.store(out_ptr + rows.to(tl.int64)[:, None] * out_row_stride + cols[None, :],
             out.to(out_ptr.dtype.element_ty), mask=(rows[:, None] < n_rows) & col_ok)


@triton.jit
def softmax_tail_kernel(out_ptr, in_ptr, in_row_stride, in_col_stride, out_row_stride, n_rows, n_cols,
                        BLOCK: tl.constexpr,             # largest power of two <= n_cols: always in the row
                        TAIL: tl.constexpr,              # power of two >= n_cols - BLOCK: the rest, masked
                        ROWS: tl.constexpr, VEC: tl.constexpr = 1, WIDE: tl.constexpr = False):
    # A ragged row as two power-of-two pieces: 20,000 columns take 16,384 + 4,096 lanes, not 32,768.
    if VEC > 1:                                          # as in softmax_row_kernel
        n_cols = n_cols // VEC * VEC
        in_row_stride = in_row_stride // VEC * VEC
        out_row_stride = out_row_stride // VEC * VEC
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    src = in_ptr + tl.minimum(rows, n_rows - 1).to(tl.int64)[:, None] * in_row_stride
    dst = out_ptr + rows.to(tl.int64)[:, None] * out_row_stride
    head = tl.arange(0, BLOCK)[None, :]
    tail = BLOCK + tl.arange(0, TAIL)[None, :]
    head_off = head.to(tl.int64) * in_col_stride if WIDE else head * in_col_stride     # as in softmax_row_kernel
    tail_off = tail.to(tl.int64) * in_col_stride if WIDE else tail * in_col_stride
    x = tl.load(src + head_off).to(tl.float32)                             # no mask: BLOCK <= n_cols
    xt = tl.load(src + tail_off, mask=tail < n_cols, other=-float("inf")).to(tl.float32)
    m = tl.maximum(tl.max(x, axis=1), tl.max(xt, axis=1))[:, None]
    num, num_t = tl.exp(x - m), tl.exp(xt - m)
    inv = 1.0 / (tl.sum(num, axis=1) + tl.sum(num_t, axis=1))[:, None]
    row_ok = rows[:, None] < n_rows
    tl.store(dst + head, (num * inv).to(out_ptr.dtype.element_ty), mask=row_ok)
    tl.store(dst + tail, (num_t * inv).to(out_ptr.dtype.element_ty), mask=row_ok & (tail < n_cols))


# (ROWS, num_warps) by BLOCK: the setting closest to the fastest at both 4,096 and 32,768 rows in the
# width sweep on the H200 (scripts/measure/triton_kernel_practice/softmax_widths.py), at fp32 and fp16.
# Narrow rows put several rows in one program, one warp per 1,024 values; wide rows spread one row
# over more warps.
FUSED_LAUNCH = {256: (4, 1), 512: (2, 1), 1024: (1, 2), 2048: (2, 4), 4096: (1, 2), 8192: (1, 16),
                16384: (1, 16), 32768: (1, 16), 65536: (1, 32)}


# Ragged widths between two powers of two: (ROWS, num_warps) by the head BLOCK, from table "tail" of the
# same sweep (the fastest setting at each swept width, within noise; a test ties them).
TAIL_LAUNCH = {2048: (1, 2), 4096: (1, 4), 8192: (1, 8), 16384: (1, 16)}


def tail_split(n_cols: int) -> tuple[int, int]:
    """(BLOCK, TAIL) for a row of n_cols: the largest power of two <= n_cols plus the smallest power of two
    that covers the rest, when that takes fewer lanes than the next power of two and TAIL_LAUNCH has a
    setting for the head; else (next power of two, 0), the padded row."""
    if n_cols < 1:
        raise ValueError(f"tail_split: a row needs at least one column, got {n_cols}")
    head = 1 << (n_cols.bit_length() - 1)
    rest = n_cols - head
    if rest and head in TAIL_LAUNCH and head + triton.next_power_of_2(rest) < 2 * head:
        return head, triton.next_power_of_2(rest)
    return triton.next_power_of_2(n_cols), 0


def fused_launch(block: int, n_rows: int | None = None, n_sms: int = 132, tail: bool = False) -> tuple[int, int]:
    """(ROWS, num_warps) for one row width (tail: for a split row with this head, from TAIL_LAUNCH); fewer
    rows per program when that would leave multiprocessors idle (fewer than two programs per multiprocessor)."""
    _pow2("block", block)
    if tail and block not in TAIL_LAUNCH:
        raise ValueError(f"fused_launch: a split row's head must be one of {sorted(TAIL_LAUNCH)}, got {block}")
    rows, warps = TAIL_LAUNCH[block] if tail else FUSED_LAUNCH[max(256, min(block, 65536))]
    if block < 256:                         # tiny rows: keep about 4096 values per program
        rows = min(64, 4096 // block)
    while n_rows is not None and rows > 1 and triton.cdiv(n_rows, rows) < 2 * n_sms:
        rows //= 2
    return rows, warps


_SMS = {}
_PLANS = {}


def _num_sms(device) -> int:
    if INTERPRET or device.type != "cuda":
        return 132
    if device.index not in _SMS:
        _SMS[device.index] = torch.cuda.get_device_properties(device).multi_processor_count
    return _SMS[device.index]


def wide_offsets(x2: torch.Tensor) -> bool:
    """Whether a column's offset, column * column stride, can reach 2^31 elements (a transposed view of a
    matrix of 2^31 elements or more): then the kernels compute it in 64 bits. Row offsets always are."""
    return (x2.shape[1] - 1) * abs(x2.stride(1)) >= 2**31


def vec_width(x2: torch.Tensor) -> int:
    """The most elements, up to 16 bytes' worth, that divide the row length and the row stride (the
    output's row stride is the row length): 1 when the columns are not adjacent."""
    if x2.stride(1) != 1 and x2.shape[1] > 1:
        return 1
    v = 16 // x2.element_size()
    while v > 1 and (x2.shape[1] % v or x2.stride(0) % v):
        v //= 2
    return v


def softmax_fused(x: torch.Tensor, ROWS=None, num_warps=None, VEC=None, split=True) -> torch.Tensor:
    # Checks, launch settings and the JIT's dispatch are paid once per (shape, strides, dtype,
    # alignment); later calls allocate the output and launch the compiled kernel (launch-cost section).
    # split=False keeps a ragged row in one padded power-of-two block (the sweep times both).
    key = (x.shape, x.stride(), x.dtype, x.device, x.data_ptr() % 16, ROWS, num_warps, VEC, split)
    plan = _PLANS.get(key)
    if plan is None:
        x2 = _check(x)
        for name, v in (("ROWS", ROWS), ("num_warps", num_warps)):
            if v is not None:
                _pow2(name, v)
        M, N = x2.shape
        BLOCK, TAIL = tail_split(N) if split else (triton.next_power_of_2(N), 0)
        rows, warps = fused_launch(BLOCK, M, _num_sms(x.device), tail=TAIL > 0)
        vec = vec_width(x2)
        if VEC is not None and (VEC not in (1, 2, 4, 8) or vec % VEC):
            raise ValueError(f"softmax_fused: VEC={VEC} must be 1, 2, 4 or 8 and divide the row length and the "
                             f"row stride ({N} and {x2.stride(0)}; the largest that does here is {vec})")
        plan = _PLANS[key] = dict(M=M, N=N, BLOCK=BLOCK, TAIL=TAIL, ROWS=ROWS or rows, num_warps=num_warps or warps,
                                  VEC=VEC or vec, WIDE=wide_offsets(x2), grid=(triton.cdiv(M, ROWS or rows), 1, 1),
                                  runner=None)
    M, N, BLOCK, TAIL, ROWS, VEC, WIDE = (plan[k] for k in ("M", "N", "BLOCK", "TAIL", "ROWS", "VEC", "WIDE"))
    x2 = x if x.dim() == 2 else x.reshape(-1, N)
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    args = (out, x2, x2.stride(0), x2.stride(1), N, M, N)
    kernel, consts = ((softmax_tail_kernel, dict(BLOCK=BLOCK, TAIL=TAIL, ROWS=ROWS, VEC=VEC, WIDE=WIDE)) if TAIL
                      else (softmax_row_kernel, dict(BLOCK=BLOCK, ROWS=ROWS, VEC=VEC, WIDE=WIDE)))
    if INTERPRET:
        kernel[plan["grid"]](*args, **consts, num_warps=plan["num_warps"])
    else:
        if plan["runner"] is None:
            plan["runner"] = kernel.warmup(*args, **consts, num_warps=plan["num_warps"],
                                           grid=plan["grid"])[plan["grid"]]
        plan["runner"](*args, *consts.values())          # constexprs positional, in signature order
    return out if x.dim() == 2 else out.view(x.shape)
# --8<-- [end:fused]


# --8<-- [start:check]
def check(softmax, M, N, dtype=torch.float32, transpose=False):
    x = 3 * torch.randn(N, M, device=DEVICE, dtype=dtype).t() if transpose else 3 * torch.randn(M, N, device=DEVICE, dtype=dtype)
    y = softmax(x)
    ref = torch.softmax(x.double(), dim=-1)
    tol = 1e-5 if dtype == torch.float32 else 1e-2    # fp16/bf16: output rounding dominates
    err = (y.double() - ref).abs().max().item()
    assert y.dtype == dtype and y.shape == x.shape and err < tol, (softmax.__name__, M, N, dtype, err)


if __name__ == "__main__":
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("softmax.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    for M, N in ((5, 1), (37, 1000), (64, 1025), (3, 4099), (7, 130)):  # odd widths: the masks do the work
        check(softmax_fused, M, N)
    check(softmax_fused, 17, 300, transpose=True)              # column stride != 1
    check(softmax_fused, 9, 777, torch.float16)
    check(softmax_fused, 9, 777, torch.bfloat16)
    print("fused softmax matches float64 on ragged, strided, fp32/fp16/bf16 inputs")
# --8<-- [end:check]


# --8<-- [start:online]
@triton.jit
def softmax_online_kernel(out_ptr, in_ptr, in_row_stride, in_col_stride, out_row_stride,
                          n_rows, n_cols,
                          BLOCK: tl.constexpr,       # columns per chunk: the row is streamed chunk by chunk
                          STAGES: tl.constexpr,      # loads kept in flight by the software pipeline
                          UNROLL: tl.constexpr,      # copies of the loop body per iteration
                          WIDE: tl.constexpr = False):   # 64-bit column offsets, as in softmax_row_kernel
    cols = tl.arange(0, BLOCK)
    if WIDE:
        cols = cols.to(tl.int64)
    # grid-stride: a fixed number of programs (a few per multiprocessor) strides over the rows; not
    # persistent, since at the default setting only one program fits on a multiprocessor at a time
    for row in tl.range(tl.program_id(0), n_rows, tl.num_programs(0)):
        in_row = in_ptr + tl.cast(row, tl.int64) * in_row_stride
        out_row = out_ptr + tl.cast(row, tl.int64) * out_row_stride
        # pass 1: per-lane running max m and running sum s of exp(x - m), one read of the row
        m = tl.full([BLOCK], -float("inf"), tl.float32)
        s = tl.zeros([BLOCK], tl.float32)
        for start in tl.range(0, n_cols, BLOCK, num_stages=STAGES, loop_unroll_factor=UNROLL):
            mask = start + cols < n_cols
            x = tl.load(in_row + (start + cols) * in_col_stride, mask=mask, other=-float("inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            m_ref = tl.where(m_new == -float("inf"), 0.0, m_new)   # lanes that saw only padding: avoid inf - inf
            s = s * tl.exp(m - m_ref) + tl.exp(x - m_ref)
            m = m_new
        row_max = tl.max(m, axis=0)
        row_sum = tl.sum(s * tl.exp(m - row_max), axis=0)          # rescale every lane to the row max
        inv = 1.0 / row_sum
        # pass 2: read the row again (from DRAM at the wide rows this kernel gets), write the result once
        for start in tl.range(0, n_cols, BLOCK, num_stages=STAGES, loop_unroll_factor=UNROLL):
            mask = start + cols < n_cols
            x = tl.load(in_row + (start + cols) * in_col_stride, mask=mask, other=0.0).to(tl.float32)
            y = tl.exp(x - row_max) * inv
            tl.store(out_row + start + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax_online(x: torch.Tensor, BLOCK=8192, num_warps=16, STAGES=3, UNROLL=1, programs_per_sm=4) -> torch.Tensor:
    x2 = _check(x)
    for name, v in (("BLOCK", BLOCK), ("num_warps", num_warps)):
        _pow2(name, v)
    if min(STAGES, UNROLL, programs_per_sm) < 1:
        raise ValueError(f"softmax_online: STAGES, UNROLL and programs_per_sm must be >= 1, "
                         f"got {STAGES}, {UNROLL}, {programs_per_sm}")
    M, N = x2.shape
    out = torch.empty((M, N), device=x.device, dtype=x.dtype)
    BLOCK = min(BLOCK, triton.next_power_of_2(N))
    if INTERPRET:
        BLOCK, grid = min(BLOCK, 256), (min(M, 4),)
    else:
        grid = (min(M, programs_per_sm * _num_sms(x.device)),)
    softmax_online_kernel[grid](out, x2, x2.stride(0), x2.stride(1), out.stride(0), M, N,
                                BLOCK=BLOCK, STAGES=STAGES, UNROLL=UNROLL, WIDE=wide_offsets(x2), num_warps=num_warps)
    return out if x.dim() == 2 else out.view(x.shape)


# Widest BLOCK the fused kernel takes in softmax(); wider rows are streamed. Set from the width
# sweep (softmax_widths.json), where the two kernels are timed side by side at every width.
FUSED_MAX_BLOCK = 32768


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Whole row in registers while it fits; stream it in chunks beyond that."""
    n = x.shape[-1] if isinstance(x, torch.Tensor) and x.dim() else _check(x)   # _check says what is wrong
    if triton.next_power_of_2(n) <= FUSED_MAX_BLOCK:
        return softmax_fused(x)
    return softmax_online(x)


if __name__ == "__main__":
    for M, N in ((5, 1), (6, 1000), (7, 3000), (3, 4099)):
        check(softmax_online, M, N)
    check(softmax_online, 9, 1500, transpose=True)
    check(softmax_online, 5, 700, torch.bfloat16)
    print("online softmax matches float64 on ragged, strided, fp32/bf16 inputs")
# --8<-- [end:online]
