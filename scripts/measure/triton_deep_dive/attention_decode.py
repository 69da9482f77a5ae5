#!/usr/bin/env python3
"""Decoding from a paged KV cache, attention_decode.py of "Deep Dive into OpenAI Triton", on a GPU: checked,
then timed beside what a reader would use without it, in the same run.

Checks ("check" rows): the snippet's own GPU cases (lengths 1, 17, 1000, 4096, 9000 and 255 in pages dealt
out in a shuffled order; GQA 32:8, and 64:8 in bf16; D 64, 128 and 256; pages of 16 and of 256 tokens; the
split count the wrapper picks and a single split), against an fp32 reference that gathers each sequence's
keys from its pages.

Speed ("speed" rows): fp16, Hq = 32, Hkv = 8, D = 128 (the heads of a Llama-3-8B layer), pages of PAGE
tokens, B sequences of n cached tokens each, one query token per sequence:
- "triton": decode_attention, called from Python, with the split count split_plan picks (column "splits");
- "triton_nosplit": the same kernels with one split, one program per (sequence, KV head);
- "sdpa": F.scaled_dot_product_attention(enable_gqa=True) on the same keys and values laid out contiguously,
  (B, Hkv, n, D): what a cache without pages would give; PyTorch's default backend choice;
- "gather_sdpa": the pages gathered into that contiguous layout (k_cache[block_table]) and then SDPA, what
  a reader with a paged cache and no paged kernel would run;
- "triton_graph", "sdpa_graph": "triton" and "sdpa" captured in a CUDA graph and replayed, as a server
  replays its decode step: the kernels' time without the host's.
Every output is checked against the Triton one first. "tbps" counts the bytes of K and V read
(2 * B * n * Hkv * D * 2), not q, the output or the block table; "frac_copy" divides it by the device copy
bandwidth measured in the same run ("copy" row); "speedup" is SDPA's time over each one's, called the same way
(eager rows over "sdpa", graph rows over "sdpa_graph"). Three rounds in turn, the best median kept.
"pages" rows: the B = 16, n = 8192 case with pages of 16, 64 and 256 tokens, eager and graphed.
"ragged" rows: sixteen sequences of RAGGED lengths, split and unsplit, eager and graphed (SDPA would need
padding or a mask); the split count follows their total of tokens.
"flex" rows (GPU only): the B = 16, n = 8192 case and the ragged one on pages of FLEX_PAGE tokens, ours beside
torch.compile(flex_attention) on PyTorch's experimental PagedAttention cache holding the same keys and values
(Inductor's generated decoding kernel), both from CUDA graphs; "vs_flex" is FlexAttention's time over each one's.
"split_sweep" rows: the four speed cases and the ragged one at forced split counts ("split_count", a
parameter; "picked" marks split_plan's choice), timed from CUDA graphs, with the programs that have work
("programs"). "setup" records the compiled split kernel's registers and shared memory, which set how many
programs an SM holds.
"tuning" rows: decode_attention's settings (parameters block_n, num_stages, programs_per_sm) swept over the
four speed cases and the ragged one, timed from CUDA graphs, two rounds each; a setting the compiler refuses
(shared memory) is left out. CONFIG is chosen from these rows.
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 150}

import sys

import triton
from sitekit import data, measure

NAME = data.name_of(__file__)
HQ, HKV, D = 32, 8, 128
PAGE = 16
SHAPES = [(1, 32768), (4, 16384), (16, 8192), (64, 2048)]  # (B, n): sequences and cached tokens per sequence
QUICK_SHAPES = [(1, 300), (3, 64)]
PAGES = [16, 64, 256]
RAGGED = [31, 17000, 2048, 513, 9000, 64, 4100, 12000, 1, 777, 6000, 300, 15000, 2500, 8191, 100]
QUICK_RAGGED = [31, 200, 1]
CHECK = [1, 17, 1000, 4096, 9000, 255]  # the snippet's own GPU cases
QUICK_CHECK = [1, 37, 300]
DEVICE = "cuda"  # a CPU dry run of this script (interpreter, tiny sizes) sets it to "cpu"
ROUNDS = 3
FLEX_PAGE = 128  # FlexAttention's kv block is the page: 128, its default block size
FLEX_CASES = {"B16": [8192] * 16, "ragged": RAGGED}
TUNE_BLOCK_N, TUNE_STAGES, TUNE_PROGRAMS = [32, 64, 128], [2, 3], [2, 3, 4, 6]
SWEEP_SPLITS = [1, 2, 3, 4, 5, 6, 8, 10, 12, 14, 16, 20, 24, 32, 48, 64]
TUNE_ROUNDS = 2


def main(argv=None) -> int:
    args = data.arg_parser(__doc__, NAME).parse_args(argv)
    measure.need_gpu(NAME)
    import torch
    import torch.nn.functional as F

    fa = measure.snippet("triton_deep_dive/attention")
    sys.modules["attention"] = fa  # attention_decode.py imports it by this name
    dec = measure.snippet("triton_deep_dive/attention_decode")
    rows = []
    quick = args.quick

    lengths = QUICK_CHECK if quick else CHECK
    dims = fa.HEAD_DIMS[:1] if quick else fa.HEAD_DIMS  # the interpreter's dry run: one head dim is enough
    cases = [(lengths, HQ, HKV, d, page, torch.float16, s) for d in dims for page in (16, 256) for s in (None, 1)]
    cases += [(lengths, 64, HKV, 128, 16, torch.bfloat16, None)]
    for case in cases:
        err = dec.check_decode(*case)
        rows.append(
            {
                "table": "check",
                "D": case[3],
                "page": case[4],
                "dtype": str(case[5]).removeprefix("torch."),
                "heads": f"{case[1]}:{case[2]}",
                "splitting": "auto" if case[6] is None else "one",
                "max_rel_err": err,
            }
        )
        print(rows[-1], flush=True)

    if DEVICE == "cuda":
        copy, _ = measure.copy_tbps()
    else:  # the dry run: a stand-in, so the fractions have something to divide by
        copy = 1.0
    rows.append({"table": "copy", "impl": "copy", "tbps": copy})

    def setup(lengths, page, seed=0):
        k_cache, v_cache, table, lens = dec.paged_cache(lengths, HKV, D, page, torch.float16, seed, device=DEVICE)
        q = torch.randn(len(lengths), HQ, D, device=DEVICE, dtype=torch.float16)
        return q, k_cache, v_cache, table, lens

    def no_grad(fn):
        def run():
            with torch.no_grad():
                return fn()

        return run

    def timed(fns, lengths, table, extra, splits, own_splits=None, ref=None, ratio="speedup"):
        """Time fns and add one row each. splits: the page's kernel's split count, recorded on the rows of
        that kernel ("triton...") and of FlexAttention given the same partition ("flex_split..."); own_splits:
        {name: count} for rows with a count of their own. SDPA's rows carry none: it is not given one."""
        kv_bytes = 2 * sum(lengths) * HKV * D * 2
        each = measure.bench_each_round({k: no_grad(f) for k, f in fns.items()}, rounds=1 if quick else ROUNDS)
        best = {k: min(v) for k, v in each.items()}
        for name, t in best.items():
            row = {
                "table": table,
                **extra,
                "splits": (own_splits or {}).get(name, splits if name.startswith(("triton", "flex_split")) else None),
                "impl": name,
                "us": t * 1e3,
                "tbps": kv_bytes / t / 1e9,
                "frac_copy": kv_bytes / t / 1e9 / copy,
                "us_spread": measure.spread(each[name]),
            }
            if row["splits"] is None:  # not our kernel: no split count
                del row["splits"]
            base = best.get(ref or ("sdpa_graph" if name.endswith("_graph") else "sdpa"))
            if base is not None:
                row[ratio] = base / t
            rows.append(row)
            print(row, flush=True)

    graph = measure.graphed if DEVICE == "cuda" else (lambda fn: fn)  # the dry run has no CUDA graphs
    sms = torch.cuda.get_device_properties(0).multi_processor_count if DEVICE == "cuda" else 4

    def splits_of(lengths, splits=None, config=None):
        return dec.split_plan(HKV, len(lengths), max(lengths), sum(lengths), sms, splits, config or dec.CONFIG)[0]

    def paged(q, k_cache, v_cache, table, lens, lengths, **kw):
        return lambda: dec.decode_attention(
            q, k_cache, v_cache, table, lens, max_seqlen=max(lengths), total_tokens=sum(lengths), **kw
        )

    shapes = QUICK_SHAPES if quick else SHAPES
    for B, n in shapes:
        q, k_cache, v_cache, table, lens = setup([n] * B, PAGE)
        pages = table.shape[1]

        def contiguous(c):  # (num_pages, PAGE, Hkv, D) -> (B, Hkv, n, D) in token order
            return c[table[:, :pages].long()].reshape(B, pages * PAGE, HKV, D)[:, :n].transpose(1, 2)

        kc, vc = contiguous(k_cache).contiguous(), contiguous(v_cache).contiguous()
        fns = {
            "triton": paged(q, k_cache, v_cache, table, lens, [n] * B),
            "triton_nosplit": paged(q, k_cache, v_cache, table, lens, [n] * B, splits=1),
            "sdpa": lambda: F.scaled_dot_product_attention(q[:, :, None], kc, vc, enable_gqa=True)[:, :, 0],
            "gather_sdpa": lambda: F.scaled_dot_product_attention(
                q[:, :, None], contiguous(k_cache), contiguous(v_cache), enable_gqa=True
            )[:, :, 0],
        }
        with torch.no_grad():
            ours = fns["triton"]()
            for name, fn in fns.items():
                err = measure.rel_err(fn(), ours)
                if not err < 5e-3:
                    sys.exit(f"{NAME}: {name} at B={B}, n={n}: relative error {err:.2e} against the Triton kernels")
            fns["triton_graph"], fns["sdpa_graph"] = graph(fns["triton"]), graph(fns["sdpa"])
        splits = {"triton_nosplit": 1}
        timed(fns, [n] * B, "speed", {"B": B, "n": n, "page": PAGE}, splits_of([n] * B), splits)
        del kc, vc, k_cache, v_cache, fns

    B, n = (2, 200) if quick else (16, 8192)
    for page in PAGES:
        q, k_cache, v_cache, table, lens = setup([n] * B, page)
        fns = {"triton": paged(q, k_cache, v_cache, table, lens, [n] * B)}
        with torch.no_grad():
            fns["triton_graph"] = graph(fns["triton"])
        timed(fns, [n] * B, "pages", {"B": B, "n": n, "page": page}, splits_of([n] * B))

    lengths = QUICK_RAGGED if quick else RAGGED
    q, k_cache, v_cache, table, lens = setup(lengths, PAGE, seed=2)
    fns = {
        "triton": paged(q, k_cache, v_cache, table, lens, lengths),
        "triton_nosplit": paged(q, k_cache, v_cache, table, lens, lengths, splits=1),
    }
    with torch.no_grad():
        err = measure.rel_err(fns["triton"](), dec.reference_decode(q, k_cache, v_cache, table, lens))
        if not err < 5e-3:
            sys.exit(f"{NAME}: ragged lengths: relative error {err:.2e} against the fp32 reference")
        fns["triton_graph"] = graph(fns["triton"])
    timed(
        fns,
        lengths,
        "ragged",
        {"B": len(lengths), "n": max(lengths), "page": PAGE},
        splits_of(lengths),
        {"triton_nosplit": 1},
    )
    del fns

    # the compiled split kernel's registers and shared memory, what sets how many programs an SM holds: read
    # from one plan, the ragged case's just timed (the speed cases' page size and heads, the default config;
    # its split and one-split launches), before FlexAttention's rows add plans of another page size
    mine = [
        plan
        for plan in dec._PLANS.values()
        if plan["config"] == dec.CONFIG
        and (plan["consts"]["PAGE"], plan["HQ"], plan["HKV"], plan["D"], plan["B"]) == (PAGE, HQ, HKV, D, len(lengths))
        and {key for key in plan["runners"] if key[0] == "split"} == {("split", True), ("split", False)}
    ]
    occupancy = {}
    if DEVICE == "cuda":  # the interpreter's dry run compiles nothing
        if not mine:
            sys.exit(f"{NAME}: no plan of the ragged case (page {PAGE}) with both split launches to read occupancy")
        split, one = mine[-1]["runners"][("split", False)], mine[-1]["runners"][("split", True)]
        occupancy = {
            "regs_split": split.n_regs,
            "regs_one": one.n_regs,
            "smem": split.metadata.shared,
            "warps": split.metadata.num_warps,
        }

    if DEVICE == "cuda":  # FlexAttention's paged path compiles through Inductor: GPU only
        flex_rows(torch, dec, fa, rows, timed, graph, no_grad, setup)

    cases = {f"B{B}": [n] * B for B, n in shapes}
    cases["ragged"] = lengths
    # the split count, swept at the default setting: where one wave of resident programs ends
    for case, lens_list in cases.items():
        q, k_cache, v_cache, table, lens = setup(lens_list, PAGE, seed=3)
        fns, asked_of = {}, {}
        for asked in [*SWEEP_SPLITS, None]:  # None: split_plan's own pick
            n_splits = splits_of(lens_list, asked)
            if n_splits in fns:
                continue
            asked_of[n_splits] = asked
            with torch.no_grad():
                fns[n_splits] = graph(paged(q, k_cache, v_cache, table, lens, lens_list, splits=asked))
        kv_bytes = 2 * sum(lens_list) * HKV * D * 2
        each = measure.bench_each_round({k: no_grad(f) for k, f in fns.items()}, rounds=1 if quick else TUNE_ROUNDS)
        picked = splits_of(lens_list)
        for n_splits, ts in sorted(each.items()):
            per = dec.split_plan(HKV, len(lens_list), max(lens_list), sum(lens_list), sms, asked_of[n_splits])[1]
            rows.append(
                {
                    "table": "split_sweep",
                    "case": case,
                    "B": len(lens_list),
                    "n": max(lens_list),
                    "split_count": n_splits,
                    "programs": HKV * sum(-(-x // per) for x in lens_list),
                    "picked": n_splits == picked,
                    "us": min(ts) * 1e3,
                    "frac_copy": kv_bytes / min(ts) / 1e9 / copy,
                    "us_spread": measure.spread(ts),
                }
            )
            print(rows[-1], flush=True)
        del fns, k_cache, v_cache

    # the sweep behind CONFIG: every setting on every case, timed from CUDA graphs
    settings = [
        dict(BLOCK_N=bn, num_stages=st, PROGRAMS_PER_SM=pp)
        for bn in TUNE_BLOCK_N
        for st in TUNE_STAGES
        for pp in TUNE_PROGRAMS
    ]
    if quick:
        settings = settings[:2]
    for case, lens_list in cases.items():
        q, k_cache, v_cache, table, lens = setup(lens_list, PAGE, seed=3)
        with torch.no_grad():
            ref = paged(q, k_cache, v_cache, table, lens, lens_list)()
        fns, meta = {}, {}
        for cfg in settings:
            name = f"{cfg['BLOCK_N']}/{cfg['num_stages']}/{cfg['PROGRAMS_PER_SM']}"
            call = paged(q, k_cache, v_cache, table, lens, lens_list, config=cfg)
            try:
                with torch.no_grad():
                    err = measure.rel_err(call(), ref)
            except triton.runtime.errors.OutOfResources as e:  # too much shared memory for this setting
                print(f"{case} {name}: left out ({e})", flush=True)
                continue
            if not err < 5e-3:
                sys.exit(f"{NAME}: setting {name} on {case}: relative error {err:.2e} against the default")
            with torch.no_grad():
                fns[name] = graph(call)
            meta[name] = cfg
        kv_bytes = 2 * sum(lens_list) * HKV * D * 2
        each = measure.bench_each_round({k: no_grad(f) for k, f in fns.items()}, rounds=1 if quick else TUNE_ROUNDS)
        for name, ts in each.items():
            t, cfg = min(ts), meta[name]
            rows.append(
                {
                    "table": "tuning",
                    "case": case,
                    "B": len(lens_list),
                    "n": max(lens_list),
                    "block_n": cfg["BLOCK_N"],
                    "num_stages": cfg["num_stages"],
                    "programs_per_sm": cfg["PROGRAMS_PER_SM"],
                    "splits": splits_of(lens_list, None, cfg),
                    "us": t * 1e3,
                    "frac_copy": kv_bytes / t / 1e9 / copy,
                    "us_spread": measure.spread(ts),
                }
            )
            print(rows[-1], flush=True)
        del fns, k_cache, v_cache

    rows.append(
        {
            "table": "setup",
            "hq": HQ,
            "hkv": HKV,
            "head_dim": D,
            "sms": sms,
            **occupancy,
            "ragged": ", ".join(map(str, lengths)),
        }
    )
    metrics = {
        "max_rel_err": {"unit": "", "noise": 1.0, "fmt": ".1e", "check": False},
        "us": {"unit": "µs", "noise": 0.1, "fmt": ".1f", "check": False},
        "us_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        "tbps": {"unit": "TB/s", "noise": 0.07, "fmt": ".2f"},
        "frac_copy": {"unit": "fraction", "noise": 0.07, "fmt": ".2f"},
        "speedup": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "vs_flex": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "splits": {"unit": "", "noise": 0, "fmt": "d"},
        **{m: {"unit": "", "noise": 0, "fmt": "d"} for m in ("hq", "hkv", "head_dim", "sms")},
        **{
            m: {"unit": "", "noise": 0, "fmt": "d", "check": False} for m in ("regs_one", "regs_split", "smem", "warps")
        },
        "programs": {"unit": "", "noise": 0, "fmt": "d"},
        "picked": {"unit": "bool", "noise": 0, "check": False},
    }
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=quick)


def flex_rows(torch, dec, fa, rows, timed, graph, no_grad, setup):
    """Table "flex": the same batches in FlexAttention's paged cache (a (1, Hkv, pages * PAGE, D) pool per
    tensor, allocated here, PyTorch's experimental PagedAttention keeping the page table, and a block mask
    whose kv blocks are the pages), attended by torch.compile(flex_attention), Inductor's generated decoding kernel; beside ours on
    pages of the same size. Both replayed from CUDA graphs.

    Two FlexAttention rows. "flex": the mask as create_block_mask builds it. With one query row padded to a
    128-row block it has no full block, but it still carries a (zero) full-block list, and that list alone
    makes Inductor's decoding template size each of its SPLIT_KV splits from the kv length of the tensors it
    is given (here the whole pool of pages), not from the sequence's blocks; SPLIT_KV defaults to
    max(1, 2 * (SMs // (B * Hkv))), recorded as the row's split count. "flex_split": the same blocks rebuilt
    with no full-block list (the template then splits the sequence's own blocks) and SPLIT_KV set to our
    split count: for equal lengths, FlexAttention given the same partition of the work as ours."""
    import triton
    from torch.nn.attention.experimental._paged_attention import PagedAttention
    from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

    flex = torch.compile(flex_attention, dynamic=False)
    for case, lengths in FLEX_CASES.items():
        q, k_cache, v_cache, table, lens = setup(lengths, FLEX_PAGE, seed=4)
        B, n_pages = len(lengths), k_cache.shape[0]
        paged = PagedAttention(n_pages, FLEX_PAGE, B, device="cuda")
        pool_k = torch.zeros(1, HKV, n_pages * FLEX_PAGE, D, device="cuda", dtype=torch.float16)
        pool_v = torch.zeros_like(pool_k)
        for b, n in enumerate(lengths):  # the same keys and values, copied in through its own allocator
            at = torch.tensor([b], device="cuda")
            paged.reserve(at, torch.tensor([n], device="cuda"))
            pages = table[b, : triton.cdiv(n, FLEX_PAGE)].long()
            kb, vb = (c[pages].reshape(-1, HKV, D)[:n].transpose(0, 1)[None] for c in (k_cache, v_cache))
            paged.assign(at, torch.arange(n, device="cuda")[None], kb, vb, pool_k, pool_v)

        def within(b, h, q_idx, kv_idx, lens=lens):  # logical positions: a sequence's own length
            return kv_idx < lens[b]

        longest = max(lengths)
        logical = create_block_mask(
            within, B, None, 1, triton.cdiv(longest, FLEX_PAGE) * FLEX_PAGE, device="cuda", BLOCK_SIZE=(128, FLEX_PAGE)
        )
        mask = paged.convert_logical_block_mask(logical)
        blocks = torch.tensor([triton.cdiv(n, FLEX_PAGE) for n in lengths], device="cuda", dtype=torch.int32)
        every = torch.arange(logical.kv_indices.shape[-1], device="cuda", dtype=torch.int32)
        partial = BlockMask.from_kv_blocks(
            blocks[:, None, None],  # the partial blocks only: no full-block list
            every.expand(B, 1, 1, -1).contiguous(),
            BLOCK_SIZE=(128, FLEX_PAGE),
            mask_mod=within,
            seq_lengths=logical.seq_lengths,
        )
        mask_split = paged.convert_logical_block_mask(partial)
        sms = torch.cuda.get_device_properties(0).multi_processor_count
        splits = dec.split_plan(HKV, B, longest, sum(lengths), sms)[0]
        q4 = q[:, :, None]
        opts = {"SPLIT_KV": splits}
        fns = {
            "triton": lambda: dec.decode_attention(
                q, k_cache, v_cache, table, lens, max_seqlen=longest, total_tokens=sum(lengths)
            ),
            "flex": lambda: flex(q4, pool_k, pool_v, block_mask=mask, enable_gqa=True)[:, :, 0],
            "flex_split": lambda: flex(q4, pool_k, pool_v, block_mask=mask_split, enable_gqa=True, kernel_options=opts)[
                :, :, 0
            ],
        }
        with torch.no_grad():
            ours = fns["triton"]()
            for name in ("flex", "flex_split"):
                err = measure.rel_err(fns[name](), ours)
                if not err < 5e-3:
                    sys.exit(f"{NAME}: {name} on {case}: relative error {err:.2e} against the Triton kernels")
            fns = {f"{k}_graph": graph(f) for k, f in fns.items()}
        timed(
            fns,
            lengths,
            "flex",
            {"case": case, "B": B, "n": longest, "page": FLEX_PAGE},
            splits,
            {"flex_graph": max(1, sms // (B * HKV) * 2)},  # the template's default SPLIT_KV (get_split_k)
            ref="flex_graph",
            ratio="vs_flex",
        )
        del fns, pool_k, pool_v, k_cache, v_cache


if __name__ == "__main__":
    raise SystemExit(main())
