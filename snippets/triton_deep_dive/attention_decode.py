"""Decoding from a paged KV cache: one new query token per sequence against every key cached so far.

q has shape (B, Hq, D): one token per sequence. The cache is a pool of pages, k_cache and v_cache of shape
(num_pages, PAGE, Hkv, D), handed out to sequences in any order; block_table (B, max_pages, int32) lists
each sequence's pages in token order, and seq_lens (B, int32) its number of cached tokens, the new token's
key and value already written. The caches are laid out as FlashAttention-2's flash_attn_with_kvcache takes
them with a block table (and as vLLM's FlashAttention backend keeps them).
Token t of sequence b lives in page block_table[b, t // PAGE], row t % PAGE.

A decode step reads every cached key and value once: per key and KV head 2 * D elements of 2 bytes, against
4 * D * GROUP FLOPs (GROUP = Hq / Hkv query heads share each K/V head), GROUP FLOPs per byte. It is bound
by memory, not by the tensor cores.
One program per (sequence, KV head) covers all GROUP query heads of that KV head, so each K/V tile is read
once for the whole group. With few sequences, that is too few programs to keep every SM streaming, so the
keys of each sequence are cut into splits ("Flash-Decoding"): each program returns its split's output and
log-sum-exp, and a second kernel combines the splits with the same rescaling as the forward's online softmax.
Run it: `python snippets/triton_deep_dive/attention_decode.py` on a GPU, or with TRITON_INTERPRET=1 on a CPU
(small sizes). It imports attention.py from its own directory for the checks it shares and LOG2E.
"""
# --8<-- [start:kernels]
import math

import torch
import triton
import triton.language as tl

import attention as fa      # attention.py, in the same directory: dtypes, head dims, LOG2E, rel_err


# N_SPLITS and SPLIT change from call to call (with the longest length): not specialized, so one compiled
# kernel serves them all
@triton.jit(do_not_specialize=["N_SPLITS", "SPLIT"])
def decode_split(Q, K, V, BLOCK_TABLE, SEQ_LENS, O_PART, LSE_PART, O,   # one program per (sequence, KV head, split)
                 sq_b, sq_h, sk_p, sk_t, sk_h, sv_p, sv_t, sv_h, sbt_b, so_b, so_h,
                 HKV, N_SPLITS, SPLIT, qk_scale,
                 GROUP: tl.constexpr, GROUP_PAD: tl.constexpr, HEAD_DIM: tl.constexpr,
                 PAGE: tl.constexpr, BLOCK_N: tl.constexpr, ONE_SPLIT: tl.constexpr):
    b = tl.program_id(0) // HKV
    hk = tl.program_id(0) % HKV
    s = tl.program_id(1)
    n = tl.load(SEQ_LENS + b)
    lo = s * SPLIT                                       # this split's keys: lo <= t < hi
    hi = tl.minimum(lo + SPLIT, n)
    rows = tl.arange(0, GROUP_PAD)                       # the group's query heads, padded to a tl.dot tile
    heads = hk * GROUP + rows
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(Q + b * sq_b + heads[:, None] * sq_h + d[None, :], mask=rows[:, None] < GROUP, other=0.0)
    m_i = tl.full([GROUP_PAD], -float("inf"), tl.float32)
    l_i = tl.zeros([GROUP_PAD], tl.float32)
    acc = tl.zeros([GROUP_PAD, HEAD_DIM], tl.float32)
    for start in range(lo, hi, BLOCK_N):
        t = start + tl.arange(0, BLOCK_N)
        live = t < hi
        # the block table turns token t into (page, row): one gather per token row of K and of V
        page = tl.load(BLOCK_TABLE + b * sbt_b + t // PAGE, mask=live, other=0).to(tl.int64)
        row = t % PAGE
        k = tl.load(K + page[:, None] * sk_p + row[:, None] * sk_t + hk * sk_h + d[None, :],
                    mask=live[:, None], other=0.0)
        v = tl.load(V + page[:, None] * sv_p + row[:, None] * sv_t + hk * sv_h + d[None, :],
                    mask=live[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)) * qk_scale       # (GROUP_PAD, BLOCK_N), log2 domain
        scores = tl.where(live[None, :], scores, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(scores, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(scores - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    done = rows < GROUP
    l_safe = tl.maximum(l_i, 1e-30)                  # a sequence of length 0 (a padding slot): o = 0
    if ONE_SPLIT:   # the whole sequence in this program: the final output, no combine
        tl.store(O + b * so_b + heads[:, None] * so_h + d[None, :], (acc / l_safe[:, None]).to(O.dtype.element_ty),
                 mask=done[:, None])
    else:           # the split's output and its log2-sum-exp; a split past the end ran no tile: lse = -inf, o = 0
        part = (b * HKV * GROUP + heads) * N_SPLITS + s
        tl.store(LSE_PART + part, tl.where(l_i > 0, m_i + tl.math.log2(l_safe), -float("inf")), mask=done)
        tl.store(O_PART + part[:, None] * HEAD_DIM + d[None, :], acc / l_safe[:, None], mask=done[:, None])


@triton.jit(do_not_specialize=["N_SPLITS"])
def decode_combine(O_PART, LSE_PART, O, so_b, so_h, HQ, N_SPLITS,   # one program per (sequence, query head)
                   HEAD_DIM: tl.constexpr, SPLITS_PAD: tl.constexpr):
    b = tl.program_id(0) // HQ
    h = tl.program_id(0) % HQ
    sp = tl.arange(0, SPLITS_PAD)
    d = tl.arange(0, HEAD_DIM)
    first = tl.program_id(0) * N_SPLITS
    lse = tl.load(LSE_PART + first + sp, mask=sp < N_SPLITS, other=-float("inf"))
    # o = sum_s o_s * l_s * 2^(m_s - m) / sum_s l_s * 2^(m_s - m), and l_s * 2^m_s = 2^lse_s
    m = tl.max(lse, 0)
    m = tl.where(m == -float("inf"), 0.0, m)            # a sequence with no key at all: every weight 0, o = 0
    w = tl.math.exp2(lse - m)
    o = tl.load(O_PART + (first + sp[:, None]) * HEAD_DIM + d[None, :], mask=sp[:, None] < N_SPLITS, other=0.0)
    out = tl.sum(o * w[:, None], 0) / tl.maximum(tl.sum(w, 0), 1e-30)
    tl.store(O + b * so_b + h * so_h + d, out.to(O.dtype.element_ty))
# --8<-- [end:kernels]


# --8<-- [start:wrapper]
# The setting the H200 sweep found fastest (data/triton_deep_dive/attention_decode.json, table "tuning",
# timed from CUDA graphs; a test checks that it stays within noise of the sweep's best).
# PROGRAMS_PER_SM is the split kernel's occupancy there: 114-128 registers x 128 threads, 4 programs in an
# SM's 65,536 registers.
CONFIG = dict(BLOCK_N=64, num_stages=3, PROGRAMS_PER_SM=4)
MIN_SPLIT = 128       # keys per split at the least: below that, a split's start and its partial result cost more
MAX_SPLITS = 64       # decode_combine holds every split of one head in registers at once


def _check_decode(q, k_cache, v_cache, block_table, seq_lens):
    """Refuse what the kernels cannot take, with what was expected."""
    for name, t, dims in (("q", q, "(B, Hq, D)"), ("k_cache", k_cache, "(num_pages, PAGE, Hkv, D)"),
                          ("v_cache", v_cache, "(num_pages, PAGE, Hkv, D)")):
        want = 3 if name == "q" else 4
        if not isinstance(t, torch.Tensor) or t.dim() != want:
            raise ValueError(f"decode_attention: {name} must be a {want}-D tensor {dims}, got "
                             f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}")
    if not fa.INTERPRET and not all(t.is_cuda for t in (q, k_cache, v_cache, block_table, seq_lens)):
        raise ValueError("decode_attention: q, the caches, block_table and seq_lens must be CUDA tensors, got "
                         f"{q.device}, {k_cache.device}, {v_cache.device}, {block_table.device}, {seq_lens.device} "
                         "(or set TRITON_INTERPRET=1 to run on the CPU)")
    if not (q.dtype == k_cache.dtype == v_cache.dtype) or q.dtype not in fa.DTYPES:
        raise ValueError(f"decode_attention: q and the caches must all be float16 or all bfloat16, got "
                         f"{q.dtype}, {k_cache.dtype}, {v_cache.dtype}")
    B, HQ, D = q.shape
    if k_cache.shape != v_cache.shape or k_cache.shape[3] != D:
        raise ValueError(f"decode_attention: k_cache and v_cache must have one shape (num_pages, PAGE, Hkv, D) "
                         f"with D = {D} as in q, got {tuple(k_cache.shape)} and {tuple(v_cache.shape)}")
    if k_cache.shape[0] == 0 or k_cache.shape[1] == 0:
        raise ValueError(f"decode_attention: the caches need at least one page of at least one token, got "
                         f"{k_cache.shape[0]} pages of {k_cache.shape[1]}")
    HKV = k_cache.shape[2]
    if HKV == 0 or HQ % HKV:
        raise ValueError(f"decode_attention: query heads ({HQ}) must be a multiple of KV heads ({HKV})")
    if D not in fa.HEAD_DIMS:
        raise ValueError(f"decode_attention: head dim {D} is not supported; use one of {fa.HEAD_DIMS}")
    if any(t.stride(-1) != 1 for t in (q, k_cache, v_cache)):
        raise ValueError(f"decode_attention: q, k_cache and v_cache need unit stride along D, got strides "
                         f"{q.stride(-1)}, {k_cache.stride(-1)}, {v_cache.stride(-1)}")
    if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != B:
        raise ValueError(f"decode_attention: block_table must be int32 of shape (B, max_pages) with B = {B}, got "
                         f"{block_table.dtype} {tuple(block_table.shape)}")
    if seq_lens.dtype != torch.int32 or tuple(seq_lens.shape) != (B,):
        raise ValueError(f"decode_attention: seq_lens must be int32 of shape ({B},), got "
                         f"{seq_lens.dtype} {tuple(seq_lens.shape)}")
    if block_table.stride(1) != 1 or seq_lens.stride(0) != 1:   # the kernel steps through both one entry at a time
        raise ValueError(f"decode_attention: block_table and seq_lens need unit stride along their last dim (call "
                         f".contiguous()), got strides {block_table.stride()} and {seq_lens.stride()}")
    devices = {t.device for t in (q, k_cache, v_cache, block_table, seq_lens)}
    if len(devices) > 1:
        raise ValueError(f"decode_attention: q, the caches, block_table and seq_lens must be on one device, got "
                         f"{sorted(map(str, devices))}")
    if B == 0:
        raise ValueError("decode_attention: empty batch")


def _validate(k_cache, block_table, seq_lens):
    """One read back to the host: every length at least 1 and within the block table, every page a sequence
    uses inside the pool. Returns the longest length and the total."""
    num_pages, page = k_cache.shape[:2]
    cap = block_table.shape[1] * page
    used = torch.arange(block_table.shape[1], device=block_table.device)[None, :] * page < seq_lens[:, None]
    bad_page = (used & ((block_table < 0) | (block_table >= num_pages))).sum()
    shortest, longest, total, bad = torch.stack([seq_lens.min(), seq_lens.max(), seq_lens.sum(), bad_page]).tolist()
    if shortest < 1:
        raise ValueError(f"decode_attention: every sequence needs at least one cached token (its new one), "
                         f"got a length of {shortest}")
    if longest > cap:
        raise ValueError(f"decode_attention: a sequence of {longest} tokens needs more than the block table's "
                         f"{block_table.shape[1]} pages of {page}")
    if bad:
        raise ValueError(f"decode_attention: {bad} block-table entries in use point outside the pool of "
                         f"{num_pages} pages")
    return longest, total


def split_plan(HKV: int, B: int, longest: int, total: int, sms: int, splits=None, config=CONFIG) -> tuple[int, int]:
    """(splits launched per sequence, keys per split). Every split has the same length, whole BLOCK_N steps,
    so a long sequence gets more splits than a short one. Asked for no count: the shortest splits (at least
    MIN_SPLIT keys) whose programs with work still fit in one wave, PROGRAMS_PER_SM resident on every SM. The
    programs are counted from B, the longest length and the total: exact when all lengths are equal, at most
    B - 1 too many otherwise."""
    def length(s):                                   # keys per split when the longest is cut s ways
        return triton.cdiv(triton.cdiv(longest, s), config["BLOCK_N"]) * config["BLOCK_N"]

    if splits is None:
        slots = config["PROGRAMS_PER_SM"] * sms

        def fits(s):
            per = length(s)
            return per >= MIN_SPLIT and HKV * min(B * triton.cdiv(longest, per), triton.cdiv(total, per) + B - 1) <= slots

        lo, hi = 1, MAX_SPLITS                       # fits() turns false once as s grows: the last s where it holds
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
        splits = lo
    per = length(min(splits, MAX_SPLITS))
    return triton.cdiv(longest, per), per


def _plan(q, k_cache, v_cache, block_table, seq_lens, scale, config):
    """What depends only on the key (shapes, strides, dtypes, device, alignment, scale, config): checked and
    worked out on the first call, then reused, as linear() does for the inference GEMMs."""
    _check_decode(q, k_cache, v_cache, block_table, seq_lens)
    if set(config) != set(CONFIG) or config["BLOCK_N"] < 1 or config["BLOCK_N"] & (config["BLOCK_N"] - 1):
        raise ValueError(f"decode_attention: config needs exactly the keys {sorted(CONFIG)} with a power-of-two "
                         f"BLOCK_N (a tl.arange length), got {config}")
    B, HQ, D = q.shape
    HKV, page = k_cache.shape[2], k_cache.shape[1]
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    sms = 4 if fa.INTERPRET else torch.cuda.get_device_properties(q.device).multi_processor_count
    return dict(B=B, HQ=HQ, HKV=HKV, D=D, sms=sms, qk_scale=scale * fa.LOG2E, config=config,
                strides=(q.stride(0), q.stride(1), *k_cache.stride()[:3], *v_cache.stride()[:3], block_table.stride(0)),
                consts=dict(GROUP=HQ // HKV, GROUP_PAD=max(16, triton.next_power_of_2(HQ // HKV)), HEAD_DIM=D,
                            PAGE=page, BLOCK_N=config["BLOCK_N"]),
                runners={})


def _launch(plan, kernel, key, grid, args, consts, **options):
    """The compiled kernel for these constexprs, launched directly: the JIT's dispatch (argument binding,
    specialization key, cache lookup) runs once per plan and constexpr value, not on every call."""
    if fa.INTERPRET:
        return kernel[grid](*args, **consts, **options)
    compiled = plan["runners"].get(key)
    if compiled is None:
        compiled = plan["runners"][key] = kernel.warmup(*args, **consts, **options, grid=grid)
    compiled[grid](*args, *consts.values())          # constexprs positional, in signature order


_PLANS = {}


def decode_attention(q, k_cache, v_cache, block_table, seq_lens, scale=None, max_seqlen=None, total_tokens=None,
                     splits=None, config=None):
    """softmax(q K^T * scale) V for each sequence over its cached keys; returns (B, Hq, D) in q's dtype.
    max_seqlen (the longest seq_lens) and total_tokens (their sum) size the splits. With max_seqlen given,
    nothing is read back and nothing checks the lengths and the block table (a sequence of length 0, such as a
    padding slot, then gives zeros), and total_tokens defaults to B * max_seqlen; with max_seqlen None, seq_lens
    is read back once (a host sync) and bad lengths and pages are refused.
    splits: the split count asked for (None: split_plan's choice). config: BLOCK_N, num_stages and
    PROGRAMS_PER_SM (None: CONFIG)."""
    config = CONFIG if config is None else config
    key = tuple((t.shape, t.stride(), t.dtype, t.device, t.data_ptr() % 16) if isinstance(t, torch.Tensor) else None
                for t in (q, k_cache, v_cache, block_table, seq_lens)) + (scale, *config.values())
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _plan(q, k_cache, v_cache, block_table, seq_lens, scale, config)
    if splits is not None and not 1 <= int(splits) <= MAX_SPLITS:
        raise ValueError(f"decode_attention: splits must be between 1 and {MAX_SPLITS}, got {splits}")
    B, HQ, HKV, D = plan["B"], plan["HQ"], plan["HKV"], plan["D"]
    if max_seqlen is None:
        longest, total = _validate(k_cache, block_table, seq_lens)
    else:
        longest = int(max_seqlen)
        total = B * longest if total_tokens is None else int(total_tokens)
        if longest < 1 or not 1 <= total <= B * longest:
            raise ValueError(f"decode_attention: need max_seqlen >= 1 and 1 <= total_tokens <= B * max_seqlen "
                             f"(the longest length and the sum of all), got {max_seqlen} and {total_tokens}")
    n_splits, split = split_plan(HKV, B, longest, total, plan["sms"], splits, config)
    dtype = q.dtype
    if fa.INTERPRET and dtype == torch.bfloat16:       # the interpreter's tl.dot mishandles bf16
        q, k_cache, v_cache = q.float(), k_cache.float(), v_cache.float()
    o = torch.empty((B, HQ, D), device=q.device, dtype=dtype)
    one = n_splits == 1
    # partial outputs and log-sum-exps of every split, in one allocation (none needed for a single split)
    ws = torch.empty(0 if one else B * HQ * n_splits * (D + 1), device=q.device, dtype=torch.float32)
    o_part, lse_part = ws[:B * HQ * n_splits * D], ws[B * HQ * n_splits * D:]
    args = (q, k_cache, v_cache, block_table, seq_lens, o_part, lse_part, o, *plan["strides"], o.stride(0),
            o.stride(1), HKV, n_splits, split, plan["qk_scale"])
    _launch(plan, decode_split, ("split", one), (B * HKV, n_splits, 1), args, {**plan["consts"], "ONE_SPLIT": one},
            num_warps=4, num_stages=config["num_stages"])
    if not one:
        pad = max(2, triton.next_power_of_2(n_splits))
        _launch(plan, decode_combine, ("combine", pad), (B * HQ, 1, 1),
                (o_part, lse_part, o, o.stride(0), o.stride(1), HQ, n_splits),
                dict(HEAD_DIM=D, SPLITS_PAD=pad), num_warps=4)
    return o
# --8<-- [end:wrapper]


# --8<-- [start:check]
def paged_cache(lengths, HKV, D, page, dtype=torch.float16, seed=0, device=fa.DEVICE, spare=3):
    """A pool of pages holding random keys and values for sequences of the given lengths, the pages dealt out
    in a shuffled order (as an allocator hands them out), and spare pages no sequence uses; returns
    (k_cache, v_cache, block_table, seq_lens)."""
    g = torch.Generator().manual_seed(seed)
    pages = [triton.cdiv(n, page) for n in lengths]
    total = sum(pages) + spare
    order = torch.randperm(total, generator=g)
    table = torch.zeros(len(lengths), max(pages), dtype=torch.int32)
    at = 0
    for b, n in enumerate(pages):
        table[b, :n] = order[at:at + n]
        at += n
    k_cache, v_cache = (torch.randn(total, page, HKV, D, generator=g).to(dtype) for _ in range(2))
    to = dict(device=device)
    return k_cache.to(**to), v_cache.to(**to), table.to(**to), torch.tensor(lengths, dtype=torch.int32, **to)


def reference_decode(q, k_cache, v_cache, block_table, seq_lens, scale=None):
    """fp32 attention of each sequence's query over its keys, gathered from the pages one sequence at a time."""
    B, HQ, D = q.shape
    page, HKV = k_cache.shape[1], k_cache.shape[2]
    scale = scale or 1.0 / math.sqrt(D)
    out = []
    for b, n in enumerate(seq_lens.tolist()):
        pages = block_table[b, :triton.cdiv(n, page)].long()
        k, v = (c[pages].reshape(-1, HKV, D)[:n].float().repeat_interleave(HQ // HKV, 1) for c in (k_cache, v_cache))
        s = torch.einsum("hd,thd->ht", q[b].float(), k) * scale            # (Hq, n)
        out.append(torch.einsum("ht,thd->hd", torch.softmax(s, -1), v))
    return torch.stack(out)


def check_decode(lengths, HQ, HKV, D, page, dtype=torch.float16, splits=None, seed=0):
    """The kernels against the fp32 reference; returns the relative error."""
    k_cache, v_cache, table, lens = paged_cache(lengths, HKV, D, page, dtype, seed)
    q = torch.randn(len(lengths), HQ, D, generator=torch.Generator().manual_seed(seed + 1)).to(dtype).to(k_cache.device)
    o = decode_attention(q, k_cache, v_cache, table, lens, splits=splits)
    err = fa.rel_err(o, reference_decode(q, k_cache, v_cache, table, lens))
    tol = 2e-2 if dtype == torch.bfloat16 else 5e-3
    assert o.dtype == dtype and o.shape == q.shape and err < tol, (lengths, HQ, HKV, D, page, dtype, splits, err)
    return err


if __name__ == "__main__":
    if fa.DEVICE == "cuda" and not torch.cuda.is_available():
        raise SystemExit("attention_decode.py: needs a CUDA GPU; TRITON_INTERPRET=1 runs it on the CPU")
    if fa.INTERPRET:     # tiny: one token, a tail of a page, lengths across several splits
        cases = [([1, 37, 300], 4, 1, 64, 16, torch.float16, None), ([70, 5], 2, 2, 64, 32, torch.bfloat16, 1)]
    else:                # lengths far apart, GQA 4:1 and 8:1, every head dim, pages of 16 and 256, one and many splits
        lengths = [1, 17, 1000, 4096, 9000, 255]
        cases = [(lengths, 32, 8, d, page, torch.float16, s) for d in fa.HEAD_DIMS for page in (16, 256)
                 for s in (None, 1)]
        cases += [(lengths, 64, 8, 128, 16, torch.bfloat16, None)]
    worst = max(check_decode(*case) for case in cases)
    print(f"decode from a paged cache: matches fp32 on {len(cases)} cases (shuffled pages, ragged lengths, "
          f"GQA, split and unsplit): worst relative error {worst:.1e}")
# --8<-- [end:check]
