"""Inference-shaped GEMMs: y = x @ W.T with the weight in nn.Linear layout W (N, K), few rows in x.

fp16/bf16 (and FP8 e4m3 with per-tensor or per-row scales). A decoder's projection layers run
these at M = 1 ... 128 tokens: too few rows of x to fill a 128-row tile, too few tiles to fill 132
multiprocessors, and every byte of W read once. Run it: `python snippets/triton_kernel_practice/linear.py`
on a CUDA GPU, or with TRITON_INTERPRET=1 on a CPU (small sizes).
"""
# --8<-- [start:kernel]
import os

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"
DEVICE = "cpu" if INTERPRET else "cuda"


@triton.jit(do_not_specialize=["M", "split_tiles"])   # one compiled kernel for every M and split
def linear_kernel(x_ptr, w_ptr, y_ptr, ws_ptr, cnt_ptr, sx_ptr, sw_ptr,
                  M, N, K, split_tiles,              # BLOCK_K-wide steps of K per split
                  stride_xm, stride_wn, stride_ym,   # unit stride along K for x and W, along N for y
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  SWAP_AB: tl.constexpr,             # compute y^T = W x^T: W's rows fill the MMA's M side
                  SPLIT: tl.constexpr,               # several programs share one tile's K range
                  SCALE: tl.constexpr,               # 0 none, 1 per-tensor, 2 per-row (FP8)
                  EVEN_K: tl.constexpr,              # K % BLOCK_K == 0: no mask on the K loop
                  M_FIRST: tl.constexpr):            # tile order: along M first (see _tile)
    pid = tl.program_id(0)                           # which (BLOCK_M, BLOCK_N) tile of y
    pid_k = tl.program_id(1)                         # which slice of K
    pid_m, pid_n = _tile(pid, M, N, BLOCK_M, BLOCK_N, M_FIRST)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    rows = tl.where(offs_m < M, offs_m, 0)           # rows past M re-read row 0; never stored
    cols = tl.where(offs_n < N, offs_n, 0)
    x_ptrs = x_ptr + rows[:, None].to(tl.int64) * stride_xm + offs_k[None, :]
    w_ptrs = w_ptr + cols[:, None].to(tl.int64) * stride_wn + offs_k[None, :]
    k_lo = pid_k * split_tiles * BLOCK_K            # a multiple of BLOCK_K: the loads stay 16-byte aligned
    k_hi = tl.minimum(K, k_lo + split_tiles * BLOCK_K)
    x_ptrs += k_lo
    w_ptrs += k_lo
    if SWAP_AB:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi, BLOCK_K):
        if EVEN_K:
            x = tl.load(x_ptrs)
            w = tl.load(w_ptrs)                      # (BLOCK_N, BLOCK_K): K-major, as W is stored
        else:
            x = tl.load(x_ptrs, mask=offs_k[None, :] < k_hi - k, other=0.0)
            w = tl.load(w_ptrs, mask=offs_k[None, :] < k_hi - k, other=0.0)
        if SWAP_AB:
            acc = tl.dot(w, tl.trans(x), acc)        # (BLOCK_N, BLOCK_M): N on the 64-row side
        else:
            acc = tl.dot(x, tl.trans(w), acc)        # (BLOCK_M, BLOCK_N)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    if SWAP_AB:
        acc = tl.trans(acc)                          # back to (BLOCK_M, BLOCK_N)
    _epilogue(acc, pid, pid_k, offs_m, offs_n, M, N, y_ptr, stride_ym, ws_ptr, cnt_ptr, sx_ptr, sw_ptr,
              BLOCK_M, BLOCK_N, SPLIT, SCALE)


@triton.jit
def _tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, M_FIRST: tl.constexpr):
    # Which tile of y program `pid` computes. With M_FIRST, consecutive programs take the M tiles of
    # one weight tile: when M spans two tiles, the two programs that read the same BLOCK_N rows of W
    # are launched side by side and run at the same time, so the weight tile comes from DRAM once and
    # the second program's loads of it hit L2 (the part of a thread-block cluster's multicast that the
    # launch order can give). Otherwise N first: the programs of one M tile sweep the whole weight.
    if M_FIRST:
        num_m = tl.cdiv(M, BLOCK_M)
        return pid % num_m, pid // num_m
    else:
        num_n = tl.cdiv(N, BLOCK_N)
        return pid // num_n, pid % num_n


@triton.jit
def _epilogue(acc, pid, pid_k, offs_m, offs_n, M, N, y_ptr, stride_ym, ws_ptr, cnt_ptr, sx_ptr, sw_ptr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, SPLIT: tl.constexpr, SCALE: tl.constexpr):
    if SPLIT:
        # Each program writes its fp32 partial tile to a workspace and counts itself in; the last
        # of the tile's programs to arrive adds the partials and writes y. One launch, no atomics
        # on y, the same result whichever program comes last (it always adds in split order).
        n_split = tl.num_programs(1)
        ws_tile = ws_ptr + pid.to(tl.int64) * n_split * BLOCK_M * BLOCK_N
        last, acc = _add_parts(acc, ws_tile, pid_k, n_split, cnt_ptr + pid, BLOCK_M, BLOCK_N)
        if last:
            _store(acc, offs_m, offs_n, M, N, y_ptr, stride_ym, sx_ptr, sw_ptr, SCALE)
    else:
        _store(acc, offs_m, offs_n, M, N, y_ptr, stride_ym, sx_ptr, sw_ptr, SCALE)


@triton.jit
def _add_parts(acc, slots, part, n_parts, counter, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # Write this program's partial tile to slot `part` and count in on `counter`. The last of the
    # n_parts programs to arrive gets back the sum of all slots, in slot order, and resets the counter.
    tile = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    tl.store(slots + part * BLOCK_M * BLOCK_N + tile, acc)
    tl.debug_barrier()                               # every thread's partial is written ...
    arrived = tl.atomic_add(counter, 1, sem="acq_rel", scope="gpu")   # ... before we count
    last = arrived == n_parts - 1
    if last:
        tl.debug_barrier()
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for s in range(0, n_parts):
            acc += tl.load(slots + s * BLOCK_M * BLOCK_N + tile, cache_modifier=".cg")  # from L2
        tl.atomic_xchg(counter, 0)                   # leave the counter at zero for the next call
    return last, acc


@triton.jit
def _store(acc, offs_m, offs_n, M, N, y_ptr, stride_ym, sx_ptr, sw_ptr, SCALE: tl.constexpr):
    # SCALE 1: one scale per tensor, 2: one per row of x and of W (FP8), applied once per output
    if SCALE == 1:
        acc = acc * (tl.load(sx_ptr) * tl.load(sw_ptr))
    if SCALE == 2:
        rows = tl.where(offs_m < M, offs_m, 0)
        cols = tl.where(offs_n < N, offs_n, 0)
        acc = acc * tl.load(sx_ptr + rows)[:, None] * tl.load(sw_ptr + cols)[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    y_ptrs = y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["M", "split_tiles"])
def linear_tma_kernel(x_desc, w_desc, y_ptr, ws_ptr, cnt_ptr, sx_ptr, sw_ptr,
                      M, N, K, split_tiles, stride_ym,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      SWAP_AB: tl.constexpr, SPLIT: tl.constexpr, SCALE: tl.constexpr, M_FIRST: tl.constexpr):
    # The same tiles, split and epilogue; x and W arrive as TMA descriptors. The TMA unit fetches
    # each (rows, BLOCK_K) box into shared memory, zero-filling rows past M or N, and the loop below
    # is software-pipelined over num_stages buffers with mbarriers: no address arithmetic, no masks.
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    pid_m, pid_n = _tile(pid, M, N, BLOCK_M, BLOCK_N, M_FIRST)
    k_lo = pid_k * split_tiles * BLOCK_K
    k_hi = tl.minimum(K, k_lo + split_tiles * BLOCK_K)
    acc = _tma_tile(x_desc, w_desc, pid_m, pid_n, k_lo, k_hi, BLOCK_M, BLOCK_N, BLOCK_K, SWAP_AB)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    _epilogue(acc, pid, pid_k, offs_m, offs_n, M, N, y_ptr, stride_ym, ws_ptr, cnt_ptr, sx_ptr, sw_ptr,
              BLOCK_M, BLOCK_N, SPLIT, SCALE)


@triton.jit
def _tma_tile(x_desc, w_desc, pid_m, pid_n, k_lo, k_hi, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
              BLOCK_K: tl.constexpr, SWAP_AB: tl.constexpr):
    # One (BLOCK_M, BLOCK_N) tile of x @ W.T over K in [k_lo, k_hi), accumulated in fp32
    if SWAP_AB:
        acc = tl.zeros((BLOCK_N, BLOCK_M), dtype=tl.float32)
    else:
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi, BLOCK_K):
        x = x_desc.load([pid_m * BLOCK_M, k])       # past K: zeros, so no mask on a ragged K
        w = w_desc.load([pid_n * BLOCK_N, k])
        if SWAP_AB:
            acc = tl.dot(w, x.T, acc)
        else:
            acc = tl.dot(x, w.T, acc)
    if SWAP_AB:
        acc = tl.trans(acc)
    return acc
# --8<-- [end:kernel]


# --8<-- [start:streamk]
@triton.jit(do_not_specialize=["M", "per_prog"])
def linear_streamk_kernel(x_desc, w_desc, y_ptr, ws_ptr, cnt_ptr, M, N, K, per_prog, stride_ym,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          SWAP_AB: tl.constexpr, MAX_SEG: tl.constexpr):
    # Stream-K: the K steps of all tiles, tile after tile, form one sequence of num_tiles * k_steps
    # iterations, and program p runs iterations [p * per_prog, (p + 1) * per_prog) of it. Every program
    # streams the same amount of W whatever the tile count, so no wave is left half empty. A tile
    # whose K steps fall to one program is stored directly; one cut between programs is finished
    # like split-K: each part writes an fp32 partial to the tile's slots, and the last to arrive adds
    # the parts in order and stores y.
    pid = tl.program_id(0)
    k_steps = tl.cdiv(K, BLOCK_K)
    num_m = tl.cdiv(M, BLOCK_M)
    total = num_m * tl.cdiv(N, BLOCK_N) * k_steps
    it = pid * per_prog
    end = tl.minimum(it + per_prog, total)
    while it < end:
        tile = it // k_steps
        seg_end = tl.minimum(end, (tile + 1) * k_steps)
        pid_m, pid_n = tile % num_m, tile // num_m     # M first, as _tile(M_FIRST=True)
        acc = _tma_tile(x_desc, w_desc, pid_m, pid_n, (it - tile * k_steps) * BLOCK_K,
                        (seg_end - tile * k_steps) * BLOCK_K, BLOCK_M, BLOCK_N, BLOCK_K, SWAP_AB)
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        first = (tile * k_steps) // per_prog           # the programs that share this tile's K steps
        n_seg = ((tile + 1) * k_steps - 1) // per_prog - first + 1
        if n_seg == 1:
            _store(acc, offs_m, offs_n, M, N, y_ptr, stride_ym, y_ptr, y_ptr, 0)
        else:
            slots = ws_ptr + tile.to(tl.int64) * MAX_SEG * BLOCK_M * BLOCK_N
            last, acc = _add_parts(acc, slots, pid - first, n_seg, cnt_ptr + tile, BLOCK_M, BLOCK_N)
            if last:
                _store(acc, offs_m, offs_n, M, N, y_ptr, stride_ym, y_ptr, y_ptr, 0)
        it = seg_end
# --8<-- [end:streamk]


# --8<-- [start:launch]
_SCRATCH = {}


def _scratch(device, ws_elems: int, tiles: int):
    """fp32 workspace for split-K partials and one int32 counter per tile, kept per device and grown
    on demand. The counters are zero between calls (the kernel resets them); calls on several
    streams at once would share them, so this wrapper is for one stream."""
    ws, cnt = _SCRATCH.get(str(device), (None, None))
    if ws is None or ws.numel() < ws_elems:
        ws = torch.empty(max(ws_elems, 1 << 20), device=device, dtype=torch.float32)
    if cnt is None or cnt.numel() < tiles:
        cnt = torch.zeros(max(tiles, 4096), device=device, dtype=torch.int32)
    _SCRATCH[str(device)] = (ws, cnt)
    return ws, cnt


FP8 = (torch.float8_e4m3fn,)
_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)   # the current stream, as Triton's driver asks for it


def _check(x, w, x_scale, w_scale):
    if x.dim() != 2 or w.dim() != 2 or x.shape[1] != w.shape[1]:
        raise ValueError(f"linear: need x (M, K) and W (N, K) as in nn.Linear, got {tuple(x.shape)} and {tuple(w.shape)}")
    if x.dtype != w.dtype or x.dtype not in (torch.float16, torch.bfloat16, *FP8):
        raise ValueError(f"linear: x and W must share one dtype, float16, bfloat16 or float8_e4m3fn; "
                         f"got {x.dtype} and {w.dtype}")
    if (x.dtype in FP8) != (x_scale is not None and w_scale is not None):
        raise ValueError("linear: float8 inputs need x_scale and w_scale (and 16-bit inputs take none)")
    if not INTERPRET and not (x.is_cuda and w.is_cuda and x.device == w.device):
        raise ValueError("linear: tensors must be on a CUDA GPU, both on the same one "
                         "(or set TRITON_INTERPRET=1 to run on the CPU)")
    if x.dtype in FP8 and not INTERPRET and torch.cuda.get_device_capability(x.device) < (8, 9):
        raise ValueError("linear: float8_e4m3fn needs a GPU of compute capability 8.9 or newer (Ada, Hopper); "
                         f"this one is {'.'.join(map(str, torch.cuda.get_device_capability(x.device)))}")
    if x.stride(1) != 1 or w.stride(1) != 1:
        raise ValueError("linear: x and W need unit stride along K (call .contiguous())")
    if 0 in x.shape or 0 in w.shape:
        raise ValueError(f"linear: M, N and K must be at least 1, got x {tuple(x.shape)} and W {tuple(w.shape)}")
    for name, s in (("x_scale", x_scale), ("w_scale", w_scale)):
        if s is not None and (not isinstance(s, torch.Tensor) or s.device != x.device):
            raise ValueError(f"linear: {name} must be a tensor on x's device ({x.device}), got "
                             f"{s.device if isinstance(s, torch.Tensor) else type(s).__name__}")


def _check_config(cfg: dict, out_dtype, fp8: bool = False) -> None:
    """The launch settings a caller may pass to linear_splitk: tiles of powers of two, at least 16 along N
    and K (tl.dot needs K >= 16, K >= 32 for 8-bit operands) and at least 8 along M: Triton 3.6 compiles a
    tile of 8 rows of x to mma.sync (HMMA) on sm_90, not wgmma (the page's resource table shows both); at
    least one K split, stage and warp; an output dtype the epilogue can store."""
    tiles = [cfg[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")]
    if any(not isinstance(b, int) or b < low or b & (b - 1) for b, low in zip(tiles, (8, 16, 16))):
        raise ValueError(f"linear: BLOCK_M, BLOCK_N, BLOCK_K must be powers of two, BLOCK_M >= 8 and the others "
                         f">= 16, got {tiles}")
    if fp8 and cfg["BLOCK_K"] < 32:
        raise ValueError(f"linear: float8 inputs need BLOCK_K >= 32 (tl.dot on 8-bit operands), got {cfg['BLOCK_K']}")
    w = cfg["num_warps"]
    if not isinstance(cfg["SPLIT_K"], int) or cfg["SPLIT_K"] < 1 or cfg["num_stages"] < 1 or w < 1 or w & (w - 1):
        raise ValueError(f"linear: SPLIT_K and num_stages must be integers >= 1 and num_warps a power of two, got "
                         f"SPLIT_K={cfg['SPLIT_K']}, num_stages={cfg['num_stages']}, num_warps={w}")
    if not isinstance(cfg.get("STREAM_K") or 0, int) or (cfg.get("STREAM_K") or 0) < 0:
        raise ValueError(f"linear: STREAM_K is programs per multiprocessor, an integer >= 0; got {cfg['STREAM_K']!r}")
    if out_dtype not in (None, torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"linear: out_dtype must be float16, bfloat16 or float32, got {out_dtype}")


def _per_row(scale: torch.Tensor, rows: int) -> torch.Tensor:
    """One fp32 scale per row: a per-tensor scale is broadcast, a per-row one must have `rows` values."""
    if scale.numel() not in (1, rows):
        raise ValueError(f"linear: a scale needs 1 or {rows} values (one per row), got {scale.numel()}")
    return scale.reshape(-1).float().expand(rows).contiguous()


def _tma_ok(x, w) -> bool:
    """TMA boxes need 16-byte aligned base addresses and row strides."""
    elt = x.element_size()
    return not ((x.stride(0) * elt) % 16 or (w.stride(0) * elt) % 16 or x.data_ptr() % 16 or w.data_ptr() % 16)


def _programs(device, per_sm: int) -> int:
    """per_sm programs for each multiprocessor (the interpreter stands in three, so small tests cut tiles)."""
    if INTERPRET:
        return 3 * per_sm
    return per_sm * torch.cuda.get_device_properties(device).multi_processor_count


def _plan_streamk(x, w, cfg: dict, out_dtype):
    """The stream-K launch: as many programs as STREAM_K per multiprocessor, each given the same
    number of K steps (per_prog) of the tile-after-tile sequence; at most MAX_SEG programs share a tile."""
    if not cfg.get("TMA"):
        raise ValueError("linear: STREAM_K loads through TMA descriptors: pass TMA=True")
    M, K = x.shape
    N = w.shape[0]
    BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    k_steps = triton.cdiv(K, BK)
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    per_prog = triton.cdiv(tiles * k_steps, min(tiles * k_steps, _programs(x.device, cfg["STREAM_K"])))
    max_seg = triton.cdiv(k_steps - 1, per_prog) + 1
    ws, cnt = _scratch(x.device, tiles * max_seg * BM * BN, tiles)
    return dict(grid=(triton.cdiv(tiles * k_steps, per_prog), 1, 1), per_prog=per_prog, ws=ws, cnt=cnt,
                consts=dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, SWAP_AB=cfg["SWAP_AB"], MAX_SEG=max_seg))


def _plan(x, w, x_scale, w_scale, cfg: dict, out_dtype):
    """Everything about a call that depends only on shapes, dtypes, strides and alignment: checked and
    computed once, then reused by every call with the same key (see _key)."""
    _check(x, w, x_scale, w_scale)
    _check_config(cfg, out_dtype, fp8=x_scale is not None)
    M, K = x.shape
    N = w.shape[0]
    BM, BN, BK = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    if cfg.get("STREAM_K") and x_scale is not None:
        raise ValueError("linear: the stream-K kernel takes float16 and bfloat16 only (no FP8 scales)")
    split_tiles = triton.cdiv(triton.cdiv(K, cfg["SPLIT_K"]), BK)
    n_split = triton.cdiv(K, split_tiles * BK)       # may be fewer than asked when K is short
    tiles = triton.cdiv(M, BM) * triton.cdiv(N, BN)
    ws, cnt = _scratch(x.device, tiles * n_split * BM * BN if n_split > 1 else 0, tiles)
    scale = 0 if x_scale is None else (1 if x_scale.numel() == w_scale.numel() == 1 else 2)
    if scale == 2:
        _per_row(x_scale, M), _per_row(w_scale, N)    # clear errors for wrong sizes, before any launch
    tma = cfg.get("TMA", False)
    if tma and not _tma_ok(x, w):
        raise ValueError(f"linear: the TMA kernel needs 16-byte aligned x and W and rows of a multiple of 16 "
                         f"bytes (K * {x.element_size()}), got row strides {x.stride(0)} and {w.stride(0)}")
    consts = dict(BLOCK_M=BM, BLOCK_N=BN, BLOCK_K=BK, SWAP_AB=cfg["SWAP_AB"], SPLIT=n_split > 1, SCALE=scale)
    if not tma:
        consts["EVEN_K"] = K % BK == 0
    consts["M_FIRST"] = bool(cfg.get("M_FIRST", False))   # in the kernels' signature order: the last constexpr
    desc = None
    if tma and not INTERPRET:
        # Two descriptor objects for every later call: each call only points them at its tensors
        # (same shape, strides and alignment: that is the plan's key). Triton's launcher still
        # encodes a CUtensorMap from each on every launch.
        desc = (TensorDescriptor.from_tensor(x, [BM, BK]), TensorDescriptor.from_tensor(w, [BN, BK]))
        desc[0].base = desc[1].base = None
    plan = dict(M=M, N=N, K=K, ws=ws, cnt=cnt, scale=scale, split_tiles=split_tiles, grid=(tiles, n_split, 1),
                out_dtype=out_dtype or (torch.bfloat16 if x.dtype in FP8 else x.dtype), tma=tma, desc=desc,
                consts=consts, num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], launch=None, streamk=False)
    if cfg.get("STREAM_K"):
        plan.update(streamk=True, **_plan_streamk(x, w, cfg, out_dtype))
    return plan


def _run(plan, x, w, x_scale, w_scale):
    M, N = plan["M"], plan["N"]
    y = torch.empty((M, N), device=x.device, dtype=plan["out_dtype"])
    if plan["scale"] == 2:
        if x_scale.numel() != M or x_scale.dtype != torch.float32 or not x_scale.is_contiguous():
            x_scale = _per_row(x_scale, M)
        if w_scale.numel() != N or w_scale.dtype != torch.float32 or not w_scale.is_contiguous():
            w_scale = _per_row(w_scale, N)
    ws = plan["ws"]
    scales = (ws if x_scale is None else x_scale, ws if w_scale is None else w_scale)
    if INTERPRET and x.dtype == torch.bfloat16:      # the interpreter's tl.dot mishandles bf16 (see gemm.py)
        x, w = x.float(), w.float()
    desc = plan["desc"]
    if plan["tma"]:
        c = plan["consts"]
        kernel = linear_tma_kernel
        if desc is None:                             # the interpreter (whose x and W may be fp32 copies)
            desc = (TensorDescriptor.from_tensor(x, [c["BLOCK_M"], c["BLOCK_K"]]),
                    TensorDescriptor.from_tensor(w, [c["BLOCK_N"], c["BLOCK_K"]]))
        else:
            desc[0].base, desc[1].base = x, w
        args = (*desc, y, ws, plan["cnt"], *scales, M, N, plan["K"], plan["split_tiles"], N)
        if plan["streamk"]:
            kernel = linear_streamk_kernel
            args = (*desc, y, ws, plan["cnt"], M, N, plan["K"], plan["per_prog"], N)
    else:
        kernel = linear_kernel
        args = (x, w, y, ws, plan["cnt"], *scales, M, N, plan["K"], plan["split_tiles"], x.stride(0), w.stride(0), N)
    consts = plan["consts"]
    if INTERPRET:
        kernel[plan["grid"]](*args, **consts, num_warps=plan["num_warps"], num_stages=plan["num_stages"])
        return y
    try:
        if plan["launch"] is None:                   # first call: the JIT compiles (or loads) the kernel
            compiled = kernel.warmup(*args, **consts, num_warps=plan["num_warps"],
                                     num_stages=plan["num_stages"], grid=plan["grid"])
            launcher = compiled.run                  # loads the cubin, sets compiled.function
            plan["launch"] = (launcher, compiled.function, compiled.packed_metadata, x.device.index,
                              plan["grid"], tuple(consts.values()))
        launcher, function, meta, dev, grid, tail = plan["launch"]
        # What compiled[grid](*args) does on every call, without its lookups of the current device, the
        # launch metadata and the launch hooks (none are passed: tools that rely on Triton's launch hooks
        # do not see these launches). Constexprs go last, positional, in signature order.
        launcher(*grid, _stream(dev), function, meta, None, None, None, *args, *tail)
    finally:
        if plan["tma"] and plan["desc"] is not None:  # the launch has read the addresses: hold no tensor
            plan["desc"][0].base = plan["desc"][1].base = None
    return y


def _key(x, w, x_scale, w_scale):
    """What a plan depends on. The compiled kernel is specialized on the 16-byte alignment of every
    pointer, so the inputs' alignment is part of the key (outputs and workspaces are always aligned)."""
    k = (x.shape, x.stride(), x.dtype, x.device, x.data_ptr() % 16, w.shape, w.stride(), w.dtype, w.device,
         w.data_ptr() % 16)
    if x_scale is None or w_scale is None:
        return (*k, x_scale is None, w_scale is None)
    return (*k, x_scale.shape, x_scale.stride(), x_scale.dtype, x_scale.data_ptr() % 16,
            w_scale.shape, w_scale.stride(), w_scale.dtype, w_scale.data_ptr() % 16)


_PLANS = {}


def linear_splitk(x, w, x_scale=None, w_scale=None, *, BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SPLIT_K=1,
                  SWAP_AB=True, TMA=False, M_FIRST=False, STREAM_K=0, num_warps=4, num_stages=4, out_dtype=None):
    """y = (x @ W.T) [* scales]; x (M, K), W (N, K). One launch of (tiles, SPLIT_K) programs, of
    linear_kernel (pointer loads) or, with TMA=True, of linear_tma_kernel (TMA descriptors); with
    TMA=True and STREAM_K=k, of linear_streamk_kernel on k programs per multiprocessor.

    A kernel that runs for 10-20 us must not spend longer than that on the host: the checks, the
    launch grid and the JIT's dispatch (argument binding, specialization key, cache lookup) are paid
    once per shape; later calls allocate y and launch the compiled kernel."""
    cfg = dict(BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, SPLIT_K=SPLIT_K, SWAP_AB=SWAP_AB, TMA=TMA,
               M_FIRST=M_FIRST, STREAM_K=STREAM_K, num_warps=num_warps, num_stages=num_stages)
    key = (_key(x, w, x_scale, w_scale), out_dtype, *cfg.values())
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan(x, w, x_scale, w_scale, cfg, out_dtype)
    return _run(plan, x, w, x_scale, w_scale)
# --8<-- [end:launch]


# --8<-- [start:choose]
# A setting within noise of the fastest Triton setting of each cell of the inference sweep on the H200
# (fp16, data/triton_kernel_practice/inference_sweep.json; a test ties the two). M is rounded up to the next
# bucket; other (N, K) take the setting of the measured shape with the nearest weight size.
LINEAR_CONFIGS = {  # (M bucket, N, K): BLOCK_M, BLOCK_N, BLOCK_K, SWAP_AB, SPLIT_K, [TMA, M_FIRST, STREAM_K,] warps, stages
    (1, 4096, 4096): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=4, num_warps=4, num_stages=4),
    (8, 4096, 4096): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=2, num_warps=4, num_stages=4),
    (16, 4096, 4096): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=2, num_warps=4, num_stages=4),
    (32, 4096, 4096): dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=2, num_warps=4, num_stages=4),
    (64, 4096, 4096): dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=6),
    (128, 4096, 4096): dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=128, SWAP_AB=False, SPLIT_K=1, TMA=True, M_FIRST=True, num_warps=4, num_stages=6),
    (1, 11008, 4096): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=4),
    (8, 11008, 4096): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=4),
    (16, 11008, 4096): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, num_warps=4, num_stages=4),
    (32, 11008, 4096): dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, num_warps=4, num_stages=4),
    (64, 11008, 4096): dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=128, SWAP_AB=False, SPLIT_K=1, TMA=True, num_warps=4, num_stages=4),
    (128, 11008, 4096): dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, SWAP_AB=False, SPLIT_K=1, TMA=True, num_warps=4, num_stages=6),
    (1, 4096, 11008): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=4, num_warps=4, num_stages=4),
    (8, 4096, 11008): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=4, num_warps=4, num_stages=4),
    (16, 4096, 11008): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=4, num_warps=4, num_stages=4),
    (32, 4096, 11008): dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=2, num_warps=4, num_stages=4),
    (64, 4096, 11008): dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=6),
    (128, 4096, 11008): dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=128, SWAP_AB=False, SPLIT_K=1, TMA=True, M_FIRST=True, num_warps=4, num_stages=6),
    (1, 8192, 8192): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=4),
    (8, 8192, 8192): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=4),
    (16, 8192, 8192): dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, num_warps=4, num_stages=4),
    (32, 8192, 8192): dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, num_warps=4, num_stages=4),
    (64, 8192, 8192): dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=6),
    (128, 8192, 8192): dict(BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, SWAP_AB=False, SPLIT_K=1, TMA=True, M_FIRST=True, num_warps=4, num_stages=8),
}
M_BUCKETS = (1, 8, 16, 32, 64, 128)


def _bucket_config(table: dict, buckets: tuple, M: int, N: int, K: int) -> dict | None:
    """table[(M bucket, N, K)] for the smallest bucket >= M and the measured (N, K), or the measured
    (N, K) with the nearest weight size; None when M is above the largest bucket."""
    if M > buckets[-1]:
        return None
    m = next(b for b in buckets if M <= b)
    shapes = sorted({(n, k) for _, n, k in table})
    n, k = (N, K) if (N, K) in shapes else min(shapes, key=lambda s: abs(s[0] * s[1] - N * K))
    return dict(table[(m, n, k)])


def linear_config(M: int, N: int, K: int) -> dict | None:
    """The settings linear() uses for this shape, or None for M > 128 (the large-tile path)."""
    return _bucket_config(LINEAR_CONFIGS, M_BUCKETS, M, N, K)


def linear(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """nn.functional.linear without bias: x (..., K), W (N, K) -> (..., N)."""
    key = ("linear", _key(x, w, None, None))
    plan = _PLANS.get(key)
    if plan is None:                             # first call with this shape: check, choose, plan
        if x.dim() < 1 or w.dim() != 2:
            raise ValueError(f"linear: need x (..., K) and W (N, K), got {tuple(x.shape)} and {tuple(w.shape)}")
        if x.shape[-1] == 0 or 0 in w.shape:
            raise ValueError(f"linear: K and N must be at least 1, got x {tuple(x.shape)} and W {tuple(w.shape)}")
        x2 = x.reshape(-1, x.shape[-1])
        cfg = linear_config(x2.shape[0], w.shape[0], w.shape[1])
        if cfg is None:                          # many rows: large tiles
            cfg = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, SWAP_AB=False, SPLIT_K=1, num_warps=8, num_stages=3)
        if INTERPRET:                            # keep the CPU interpreter quick
            cfg.update(BLOCK_M=16, BLOCK_N=16, BLOCK_K=32)
        copy = x2.stride(-1) != 1
        x2 = x2.contiguous() if copy else x2
        if cfg.get("TMA") and not _tma_ok(x2, w):  # a shape the TMA kernels cannot take: pointer loads
            cfg.update(TMA=False, STREAM_K=0)
        plan = _plan(x2, w, None, None, cfg, None)
        plan["contiguous"] = copy
        _PLANS[key] = plan
    x2 = x if x.dim() == 2 else x.reshape(-1, x.shape[-1])
    if plan["contiguous"]:
        x2 = x2.contiguous()
    y = _run(plan, x2, w, None, None)
    return y if x.dim() == 2 else y.view(*x.shape[:-1], plan["N"])
# --8<-- [end:choose]


# --8<-- [start:check]
def check(fn, dtype, M, N, K, **kw):
    x = torch.randn(M, K, device=DEVICE, dtype=dtype)
    w = torch.randn(N, K, device=DEVICE, dtype=dtype) / K ** 0.5
    y = fn(x, w, **kw)
    ref = x.double() @ w.double().t()
    err = ((y.double() - ref).norm() / ref.norm()).item()
    assert y.dtype == dtype and y.shape == (M, N) and err < (1e-2 if dtype == torch.bfloat16 else 2e-3), (M, N, K, kw, err)
    return err


if __name__ == "__main__":
    if DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("linear.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    small = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=32) if INTERPRET else {}
    for dtype in (torch.float16, torch.bfloat16):
        for M, N, K in ((1, 40, 96), (5, 33, 200), (17, 70, 64)):       # ragged M, N and K
            for swap in (False, True):
                for split in (1, 3):
                    for tma in (False, True):
                        for m_first in ((False, True) if M > 16 else (False,)):   # two M tiles: both orders
                            check(linear_splitk, dtype, M, N, K, SWAP_AB=swap, SPLIT_K=split, TMA=tma,
                                  M_FIRST=m_first, **small)
        for tma in (False, True):   # narrow tiles: 8 rows of x (mma.sync on sm_90), three of them at M = 17
            check(linear_splitk, dtype, 17, 70, 200, SPLIT_K=3, TMA=tma, **{**small, "BLOCK_M": 8})
        for _ in range(2):   # new tensors of a planned shape: the plan's descriptors point at them
            check(linear_splitk, dtype, 17, 70, 64, TMA=True, M_FIRST=True, **small)
        for per_sm in (1, 2):   # stream-K, at sizes where programs share tiles
            for M, N, K in ((1, 40, 96), (17, 70, 200)) if INTERPRET else ((1, 4096, 11008), (17, 11008, 4096)):
                for swap in (False, True):
                    check(linear_splitk, dtype, M, N, K, TMA=True, STREAM_K=per_sm, SWAP_AB=swap, **small)
        check(linear, dtype, 3, 50, 72)
    print("linear: pointer and TMA kernels, split-K, stream-K, swap-AB, narrow tiles and both tile orders, "
          "fp16 and bf16, ragged shapes, match float64")
# --8<-- [end:check]


# --8<-- [start:fp8]
E4M3_MAX = torch.finfo(torch.float8_e4m3fn).max     # 448: the largest finite e4m3 value


def quantize_fp8(t: torch.Tensor, per_row: bool = False):
    """t ~= q * scale with q in e4m3: one scale for the tensor, or one per row (amax / 448)."""
    if per_row and t.dim() != 2:
        raise ValueError(f"quantize_fp8: per-row scales need a 2-D tensor (rows, K), got shape {tuple(t.shape)}")
    amax = t.abs().amax(dim=1, keepdim=True) if per_row else t.abs().amax()
    scale = (amax.float() / E4M3_MAX).clamp(min=1e-12)
    q = (t.float() / scale).clamp(-E4M3_MAX, E4M3_MAX).to(torch.float8_e4m3fn)
    return q, scale.reshape(-1) if per_row else scale.reshape(1)
# --8<-- [end:fp8]


# --8<-- [start:fp8_tma]
@triton.jit
def fp8_tma_kernel(a_desc, b_desc, c_desc, sa_ptr, sb_ptr, M, N, K,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                   GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
                   PER_ROW: tl.constexpr, EPI_SPLIT: tl.constexpr):
    # A (M, K) and B = W (N, K) both K-major: the only layout wgmma takes for 8-bit operands
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_group = GROUP_M * num_pid_n
    for tile in tl.range(tl.program_id(0), num_pid_m * num_pid_n, NUM_SMS, flatten=True):
        first_m = (tile // per_group) * GROUP_M
        rows_here = min(num_pid_m - first_m, GROUP_M)
        pid_m = first_m + (tile % per_group) % rows_here
        pid_n = (tile % per_group) // rows_here
        off_m = pid_m * BLOCK_M
        off_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([off_m, ki * BLOCK_K])
            b = b_desc.load([off_n, ki * BLOCK_K])
            acc = tl.dot(a, b.T, acc)                # e4m3 x e4m3 -> fp32 on the tensor cores
        # the scales are applied once per output element, in the epilogue
        if PER_ROW:
            rm = off_m + tl.arange(0, BLOCK_M)
            rn = off_n + tl.arange(0, BLOCK_N)
            acc = acc * tl.load(sa_ptr + rm, mask=rm < M, other=0.0)[:, None] \
                      * tl.load(sb_ptr + rn, mask=rn < N, other=0.0)[None, :]
        else:
            acc = acc * (tl.load(sa_ptr) * tl.load(sb_ptr))
        if EPI_SPLIT:
            c0, c1 = acc.reshape(BLOCK_M, 2, BLOCK_N // 2).permute(0, 2, 1).split()
            c_desc.store([off_m, off_n], c0.to(c_desc.dtype))
            c_desc.store([off_m, off_n + BLOCK_N // 2], c1.to(c_desc.dtype))
        else:
            c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


# the fastest at 4096^3 in the FP8 rows of inference_sweep.json (within 2% of the fastest at 8192^3)
FP8_TMA_CONFIG = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=128, GROUP_M=8, EPI_SPLIT=True, num_warps=8, num_stages=4)


def matmul_fp8_tma(a, w, a_scale, w_scale, out_dtype=torch.bfloat16, **config):
    """C = (A @ W.T) * scales for e4m3 A (M, K), W (N, K); Hopper TMA + persistent, large M."""
    from triton.tools.tensor_descriptor import TensorDescriptor
    _check(a, w, a_scale, w_scale)
    if INTERPRET or torch.cuda.get_device_capability(a.device)[0] < 9:     # A's GPU, not the current one
        raise RuntimeError("matmul_fp8_tma: needs a Hopper (sm_90) or newer GPU: FP8 wgmma and TMA do not exist elsewhere")
    if a.dtype not in FP8:
        raise ValueError(f"matmul_fp8_tma: A and W must be float8_e4m3fn, got {a.dtype}")
    M, K = a.shape
    N = w.shape[0]
    if K % 16 or N % 8:
        raise ValueError(f"matmul_fp8_tma: TMA needs K a multiple of 16 and N of 8, got K={K}, N={N}")
    cfg = {**FP8_TMA_CONFIG, **config}
    BM, BN, BK = cfg.pop("BLOCK_M"), cfg.pop("BLOCK_N"), cfg.pop("BLOCK_K")
    per_row = not (a_scale.numel() == w_scale.numel() == 1)
    if per_row:
        a_scale, w_scale = _per_row(a_scale, M), _per_row(w_scale, N)
    c = torch.empty((M, N), device=a.device, dtype=out_dtype)
    a_desc = TensorDescriptor.from_tensor(a, [BM, BK])
    b_desc = TensorDescriptor.from_tensor(w, [BN, BK])
    c_desc = TensorDescriptor.from_tensor(c, [BM, BN // 2 if cfg["EPI_SPLIT"] else BN])
    num_sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    grid = (min(num_sms, triton.cdiv(M, BM) * triton.cdiv(N, BN)),)
    with torch.cuda.device(a.device):                   # launch on A's GPU, not the current one
        fp8_tma_kernel[grid](a_desc, b_desc, c_desc, a_scale, w_scale, M, N, K, BLOCK_M=BM, BLOCK_N=BN,
                             BLOCK_K=BK, NUM_SMS=num_sms, PER_ROW=per_row, **cfg)
    return c


# A setting within noise of the fastest FP8 setting of each cell of the "fp8_sweep" rows of inference_sweep.json (per-tensor
# scales, on the H200; a test ties the two). e4m3 halves the bytes of a K step, so most winners take
# 256-wide steps (256 bytes of each row) and deeper rings than the 16-bit table. M rounds up to 1, 16,
# 32, 64 or 128 (BLOCK_M 16, 16, 32, 64, 128: at M = 64 a 128-row tile would spend half of its MMA
# work and of its x buffers on rows that do not exist), unless an entry sets its own BLOCK_M (64 rows
# in the M-first order at M = 128); other (N, K) take the setting of the measured shape with the
# nearest weight size.
FP8_LINEAR_CONFIGS = {  # (M bucket, N, K): [BLOCK_M,] BLOCK_N, BLOCK_K, SWAP_AB, SPLIT_K, TMA, [M_FIRST,] warps, stages
    (1, 4096, 4096): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (1, 11008, 4096): dict(BLOCK_N=64, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=6),
    (1, 4096, 11008): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=True, num_warps=4, num_stages=6),
    (1, 8192, 8192): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (16, 4096, 4096): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (16, 11008, 4096): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=4),
    (16, 4096, 11008): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (16, 8192, 8192): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (32, 4096, 4096): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (32, 11008, 4096): dict(BLOCK_N=128, BLOCK_K=128, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (32, 4096, 11008): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=2, TMA=False, num_warps=8, num_stages=6),
    (32, 8192, 8192): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (64, 4096, 4096): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (64, 11008, 4096): dict(BLOCK_N=128, BLOCK_K=256, SWAP_AB=False, SPLIT_K=1, TMA=False, num_warps=4, num_stages=4),
    (64, 4096, 11008): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=False, SPLIT_K=1, TMA=False, num_warps=4, num_stages=6),
    (64, 8192, 8192): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=False, SPLIT_K=1, TMA=True, num_warps=4, num_stages=6),
    (128, 4096, 4096): dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=256, SWAP_AB=False, SPLIT_K=1, TMA=True, M_FIRST=True, num_warps=4, num_stages=6),
    (128, 11008, 4096): dict(BLOCK_N=128, BLOCK_K=128, SWAP_AB=False, SPLIT_K=1, TMA=True, num_warps=4, num_stages=6),
    (128, 4096, 11008): dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=256, SWAP_AB=False, SPLIT_K=1, TMA=True, M_FIRST=True, num_warps=4, num_stages=6),
    (128, 8192, 8192): dict(BLOCK_N=64, BLOCK_K=256, SWAP_AB=True, SPLIT_K=1, TMA=False, num_warps=4, num_stages=4),
}
FP8_M_BUCKETS = (1, 16, 32, 64, 128)


def linear_fp8_config(M: int, N: int, K: int) -> dict | None:
    """The settings linear_fp8() uses for this shape, or None for M > 128 (the persistent TMA kernel)."""
    cfg = _bucket_config(FP8_LINEAR_CONFIGS, FP8_M_BUCKETS, M, N, K)
    # BLOCK_M follows the bucket unless the entry sets its own (64-row tiles in the M-first order at 128)
    return cfg if cfg is None else {"BLOCK_M": max(16, next(b for b in FP8_M_BUCKETS if M <= b)), **cfg}


_FP8_CFG = {}


def linear_fp8(x_q, w_q, x_scale, w_scale):
    """FP8 linear: few rows -> the split-K / swap-AB kernel with the scales in its epilogue, set by
    FP8_LINEAR_CONFIGS; many rows -> the persistent TMA kernel. Output bf16."""
    M, N, K = x_q.shape[0], w_q.shape[0], w_q.shape[-1]
    key = (M, N, K, x_q.stride(0), w_q.stride(0), x_q.data_ptr() % 16, w_q.data_ptr() % 16)
    cfg = _FP8_CFG.get(key)
    if cfg is None:                                # first call with this shape: choose once
        cfg = linear_fp8_config(M, N, K)
        if cfg is None:
            cfg = {} if not INTERPRET else dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=128, SWAP_AB=False, SPLIT_K=1)
        if cfg.get("TMA") and not _tma_ok(x_q, w_q):   # rows the TMA kernel cannot take: pointer loads
            cfg["TMA"] = False
        if INTERPRET:                              # keep the CPU interpreter quick
            cfg.update(BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, num_stages=2)
        _FP8_CFG[key] = cfg
    if not cfg:                                    # M > 128 on a GPU
        return matmul_fp8_tma(x_q, w_q, x_scale, w_scale)
    return linear_splitk(x_q, w_q, x_scale, w_scale, **cfg)
# --8<-- [end:fp8_tma]


# --8<-- [start:fp8_check]
def check_fp8(fn, M, N, K, per_row=False, **kw):
    x = torch.randn(M, K, device=DEVICE)
    w = torch.randn(N, K, device=DEVICE) / K ** 0.5
    xq, sx = quantize_fp8(x, per_row)
    wq, sw = quantize_fp8(w, per_row)
    y = fn(xq, wq, sx, sw, **kw)
    # against the exact product of the quantized values: the kernel's own error
    deq = (xq.double() * sx.double().reshape(-1, 1)) @ (wq.double() * sw.double().reshape(-1, 1)).t()
    err_kernel = ((y.double() - deq).norm() / deq.norm()).item()
    # against the unquantized fp32 inputs: what FP8 costs the result
    ref = x.double() @ w.double().t()
    err_total = ((y.double() - ref).norm() / ref.norm()).item()
    assert y.dtype == torch.bfloat16 and err_kernel < 1e-2 and err_total < 8e-2, (M, N, K, per_row, err_kernel, err_total)
    return err_kernel, err_total


if __name__ == "__main__":
    small = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=32) if INTERPRET else {}
    for per_row in (False, True):
        for M, N, K, split in ((1, 48, 96, 1), (19, 40, 160, 3)):
            check_fp8(linear_splitk, M, N, K, per_row, SPLIT_K=split, **small)
        check_fp8(linear_fp8, 7, 64, 128, per_row)
    print("fp8 linear: per-tensor and per-row scales match the dequantized product")
# --8<-- [end:fp8_check]
