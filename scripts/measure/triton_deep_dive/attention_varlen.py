#!/usr/bin/env python3
"""Packed variable-length attention of "Deep Dive into OpenAI Triton" (attention_varlen.py) on a GPU:
checked, then timed against what a reader would use without it, in the same run.

Checks ("check" rows): the snippet's own GPU cases (lengths 1000, 1, 513, 2048, 77, 0 and 1537 packed
together; GQA 2:1; D 64, 128 and 256; causal and full; fp16, and bf16 on one case), forward and the three
gradients against attention.py's fp32 reference one sequence at a time; and, for four sequences of
one length, whether the packed kernels give bit for bit what attention.py's batched kernels give.

Speed ("speed" rows): fp16, H = 16, D = 128, the twelve LENGTHS below packed into T tokens, causal and
full, forward and backward (torch.autograd.grad of a saved forward). Beside the packed kernels:
- "sdpa_loop": F.scaled_dot_product_attention once per sequence (PyTorch's default backend choice), the
  usual code without a packed kernel;
- "sdpa_njt" (full attention only): SDPA on nested jagged tensors built from the same packed rows, which
  PyTorch sends to a packed kernel of its own (the backend it picks is recorded; a causal jagged row is
  not measured);
- "triton_padded" (causal only): attention.py's batched kernels on the sequences zero-padded to the
  longest one, (B, H, max, D); with the causal mask a padded row never reaches a real row, so the real
  rows come out right (checked) and the time is what padding costs.
Every output is checked against the packed kernels first. FLOPs count real tokens only, 4 * H * D * sum(n^2),
halved for causal, backward 2.5x the forward's; three rounds in turn, best median kept, spread recorded.
- "torch_varlen": torch.nn.attention.varlen.varlen_attn, PyTorch's own packed kernel (its flash backend;
  the backend it reports is recorded), forward and, where this release gives it a backward, backward.

Keys packed apart (cu_seqlens_k): "check" rows with keys "apart" run the snippet's cross cases (queries
300, 1, 0, 700 against keys 1000, 513, 64, 700, causal, GQA 2:1, D 64, 128 and 256). "convention" rows: the
causal output for 6 queries against 20 keys compared with varlen_attn's causal output and with SDPA's
is_causal=True (whose mask starts at the top left for rectangular inputs). "prefill" rows: a chunked
prefill, forward only: the last min(n, CHUNK) tokens of each of the twelve sequences as queries against
all n of its keys, causal (the mask ending at the last key); beside the packed kernels, varlen_attn. SDPA
once per sequence with torch.nn.attention.bias.causal_lower_right as its mask gives the same rows (a
"convention" row) but is not timed: two runs at f6492d9 timed it at 0.70 and 1.49 ms for the same work, its
twelve short calls waiting on the host's launches. FLOPs count the query-key pairs the mask keeps:
4 * H * D * sum(n_q * (n_k - n_q) + n_q * (n_q + 1) / 2).
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 60}

import inspect
import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
LENGTHS = [8192, 5000, 3100, 2048, 1300, 1024, 777, 512, 400, 256, 129, 64]
QUICK_LENGTHS = [1024, 300, 77]
CHECK = [1000, 1, 513, 2048, 77, 0, 1537]  # the snippet's own GPU cases
QUICK_CHECK = [37, 1, 0, 20]
H, D = 16, 128
DEVICE = "cuda"  # a CPU dry run of this script (interpreter, tiny sizes) sets it to "cpu"
ROUNDS = 3
CHUNK = 512  # prefill: queries per sequence (at most), against all its keys
CROSS_Q, CROSS_K = [300, 1, 0, 700], [1000, 513, 64, 700]  # the snippet's GPU cases with keys packed apart
QUICK_CROSS_Q, QUICK_CROSS_K = [5, 0, 12], [40, 3, 12]
SETUP = {"sequences": "", "tokens": "", "longest": "tokens", "chunk": "tokens", "prefill_queries": "tokens"}


def torch_varlen():
    """torch.nn.attention.varlen.varlen_attn as f(q, k, v, cu_q, cu_k, max_q, max_k, causal), and the
    backend it says it uses; (None, reason) where this release has no such function. Releases differ in
    how causal is asked for: is_causal=True, or window_size=(-1, 0)."""
    try:
        from torch.nn.attention import varlen as tv
    except ImportError as e:
        return None, f"not available ({e})"
    params = inspect.signature(tv.varlen_attn).parameters

    def call(q, k, v, cu_q, cu_k, max_q, max_k, causal):
        if "window_size" in params:
            kw = {"window_size": (-1, 0) if causal else (-1, -1)}
        else:
            kw = {"is_causal": causal}
        return tv.varlen_attn(q, k, v, cu_q, cu_k, max_q, max_k, **kw)

    use_cudnn = getattr(tv, "_should_use_cudnn", None)
    backend = "not read" if use_cudnn is None else ("cudnn" if use_cudnn(0) else "flash_attention")
    return call, backend


def main(argv=None) -> int:
    args = data.arg_parser(__doc__, NAME).parse_args(argv)
    measure.need_gpu(NAME)
    import torch
    import torch.nn.functional as F

    fa = measure.snippet("triton_deep_dive/attention")
    sys.modules["attention"] = fa  # attention_varlen.py imports it by this name
    av = measure.snippet("triton_deep_dive/attention_varlen")
    rows = []

    # checks: the snippet's GPU cases, then bit-for-bit against the batched kernels on equal lengths
    lengths = QUICK_CHECK if args.quick else CHECK
    cases = [(lengths, 4, 2, d, c, torch.float16) for d in fa.HEAD_DIMS for c in (False, True)]
    cases += [(lengths, 8, 8, 128, True, torch.bfloat16)]
    cross_q, cross_k = (QUICK_CROSS_Q, QUICK_CROSS_K) if args.quick else (CROSS_Q, CROSS_K)
    cases += [(cross_q, 4, 2, d, True, torch.float16, 0, cross_k) for d in fa.HEAD_DIMS]
    for case in cases:
        err = av.check_varlen(*case)
        rows.append(
            {
                "table": "check",
                "D": case[3],
                "mask": "causal" if case[4] else "none",
                "dtype": str(case[5]).removeprefix("torch."),
                "heads": f"{case[1]}:{case[2]}",
                "keys": "apart" if len(case) > 7 else "shared",
                "max_rel_err": err,
            }
        )
        print(rows[-1], flush=True)
    varlen_attn, torch_backend = torch_varlen()
    q, k, v, cu_q, cu_k = av.packed([6], 2, 2, 64, device=DEVICE, lengths_k=[20])
    with torch.no_grad():
        ours = av.attention_varlen(q, k, v, cu_q, causal=True, cu_seqlens_k=cu_k)
        others = {
            "sdpa_is_causal": F.scaled_dot_product_attention(
                *(t.transpose(0, 1) for t in (q, k, v)), is_causal=True
            ).transpose(0, 1)
        }
        if varlen_attn is not None:
            try:  # no CPU kernel behind it (the interpreter's dry run), or a release that refuses these inputs
                others["torch_varlen"] = varlen_attn(q, k, v, cu_q, cu_k, 6, 20, True)
            except (RuntimeError, NotImplementedError, ValueError) as e:
                print(f"{NAME}: varlen_attn failed, no torch_varlen rows: {str(e).splitlines()[0]}", flush=True)
                varlen_attn, torch_backend = None, ""
    for name, out in others.items():
        rows.append({"table": "convention", "impl": name, "max_rel_err": measure.rel_err(ours, out)})
        print(rows[-1], flush=True)
    for d in fa.HEAD_DIMS:
        for causal in (False, True):
            n = 19 if args.quick else 700
            q, k, v, cu, _ = av.packed([n] * 4, 4, 2, d, device=DEVICE)
            o = av.attention_varlen(q, k, v, cu, causal=causal)
            do = torch.randn_like(o)
            grads = torch.autograd.grad(o, (q, k, v), do)
            heads = [t.detach().view(4, n, t.shape[1], d).transpose(1, 2).requires_grad_() for t in (q, k, v)]
            ob = fa.attention(*heads, causal=causal)
            gb = torch.autograd.grad(ob, heads, do.view(4, n, 4, d).transpose(1, 2))
            same = torch.equal(o, ob.transpose(1, 2).reshape(o.shape)) and all(
                torch.equal(g, b.transpose(1, 2).reshape(g.shape)) for g, b in zip(grads, gb)
            )
            rows.append({"table": "bitwise", "D": d, "mask": "causal" if causal else "none", "same": same})
            print(rows[-1], flush=True)

    # speed
    lens = QUICK_LENGTHS if args.quick else LENGTHS
    q, k, v, cu, _ = av.packed(lens, H, H, D, device=DEVICE)
    T, B, longest = q.shape[0], len(lens), max(lens)
    starts = cu.tolist()
    offsets = cu.long()
    sq = sum(n * n for n in lens)
    do = torch.randn_like(q)
    for causal in (False, True):

        def varlen():
            return av.attention_varlen(q, k, v, cu, longest, causal=causal, validate=False)

        def loop():
            outs = [
                F.scaled_dot_product_attention(*(t[s:e].transpose(0, 1)[None] for t in (q, k, v)), is_causal=causal)
                for s, e in zip(starts[:-1], starts[1:])
            ]
            return torch.cat([o[0].transpose(0, 1) for o in outs])

        impls = {"triton_varlen": varlen, "sdpa_loop": loop}
        if varlen_attn is not None:
            impls["torch_varlen"] = lambda causal=causal: varlen_attn(q, k, v, cu, cu, longest, longest, causal)
        backend = ""
        if not causal:

            def njt():
                nts = [
                    torch.nested.nested_tensor_from_jagged(t, offsets, min_seqlen=min(lens), max_seqlen=longest)
                    for t in (q, k, v)
                ]
                return F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in nts)).transpose(1, 2).values()

            try:  # a prototype API: if this release refuses it, the run goes on without these rows
                njt()
                impls["sdpa_njt"] = njt
            except (RuntimeError, ValueError, NotImplementedError) as e:
                print(f"{NAME}: SDPA on nested jagged tensors failed, no sdpa_njt rows: {e}", flush=True)
            try:  # which backend the jagged path picks (a private helper; its signature may change)
                from torch.nested._internal.sdpa import _select_sdp_backend

                nts = [torch.nested.nested_tensor_from_jagged(t, offsets).transpose(1, 2) for t in (q, k, v)]
                backend = _select_sdp_backend(*nts, None, 0.0, False, False).name.lower()
            except (ImportError, TypeError, AttributeError) as e:
                backend = f"not read ({type(e).__name__})"
        else:
            pad = [torch.zeros(B, H, longest, D, device=DEVICE, dtype=q.dtype) for _ in range(3)]
            with torch.no_grad():
                for t, p in zip((q, k, v), pad):
                    for i, (s, e) in enumerate(zip(starts[:-1], starts[1:])):
                        p[i, :, : e - s] = t[s:e].transpose(0, 1)
            pad = [p.requires_grad_() for p in pad]

            def padded():
                return fa.attention(*pad, causal=True)

            impls["triton_padded"] = padded

        ref = varlen().detach()
        for name, fn in impls.items():
            out = fn().detach()
            if name == "triton_padded":
                out = torch.cat(
                    [out[i, :, : e - s].transpose(0, 1) for i, (s, e) in enumerate(zip(starts, starts[1:]))]
                )
            err = measure.rel_err(out, ref)
            if not err < 5e-3:
                sys.exit(f"{NAME}: {name} causal={causal}: relative error {err:.2e} against the packed kernels")

        flops = 4 * H * D * sq / (2 if causal else 1)
        for direction in ("fwd", "bwd"):
            fns = {}
            for name, fn in impls.items():
                if direction == "fwd":

                    def timed(fn=fn):
                        with torch.no_grad():
                            return fn()
                else:
                    leaves = pad if name == "triton_padded" else (q, k, v)
                    o = fn()
                    if o.grad_fn is None:
                        print(f"{NAME}: {name} has no backward in this release, no bwd row", flush=True)
                        continue
                    grad_out = torch.randn_like(o) if name == "triton_padded" else do

                    def timed(o=o, leaves=leaves, grad_out=grad_out):
                        return torch.autograd.grad(o, leaves, grad_out, retain_graph=True)

                fns[name] = timed
            each = measure.bench_each_round(fns, rounds=1 if args.quick else ROUNDS)
            best = {name: min(ts) for name, ts in each.items()}
            work = flops * (2.5 if direction == "bwd" else 1.0)
            for name, t in best.items():
                row = {
                    "table": "speed",
                    "mask": "causal" if causal else "none",
                    "pass": direction,
                    "impl": name,
                    "backend": {"sdpa_njt": backend, "torch_varlen": torch_backend}.get(name, ""),
                    "ms": t,
                    "tflops": work / t / 1e9,
                    "tflops_spread": measure.spread(each[name]),
                    "speedup": t / best["triton_varlen"],
                }
                rows.append(row)
                print(row, flush=True)
            del fns
    # chunked prefill: the last min(n, CHUNK) tokens of each sequence as queries against all n of its keys
    lens_q = [min(n, CHUNK) for n in lens]
    qp, kp, vp, cu_q, cu_k = av.packed(lens_q, H, H, D, device=DEVICE, lengths_k=lens, seed=1)
    starts_q, starts_k = cu_q.tolist(), cu_k.tolist()
    pairs = sum(m * (n - m) + m * (m + 1) // 2 for m, n in zip(lens_q, lens))
    from torch.nn.attention.bias import causal_lower_right

    def prefill_loop():
        outs = []
        for b, (m, n) in enumerate(zip(lens_q, lens)):
            qb, kb, vb = (
                t[s[b] : s[b + 1]].transpose(0, 1)[None] for t, s in ((qp, starts_q), (kp, starts_k), (vp, starts_k))
            )
            outs.append(
                F.scaled_dot_product_attention(qb, kb, vb, attn_mask=causal_lower_right(m, n))[0].transpose(0, 1)
            )
        return torch.cat(outs)

    prefill = {
        "triton_varlen": lambda: av.attention_varlen(
            qp, kp, vp, cu_q, max(lens_q), causal=True, validate=False, cu_seqlens_k=cu_k, max_seqlen_k=longest
        ),
    }
    if varlen_attn is not None:
        prefill["torch_varlen"] = lambda: varlen_attn(qp, kp, vp, cu_q, cu_k, max(lens_q), longest, True)
    with torch.no_grad():
        ref = prefill["triton_varlen"]()
        for name, fn in prefill.items():
            err = measure.rel_err(fn(), ref)
            if not err < 5e-3:
                sys.exit(f"{NAME}: prefill {name}: relative error {err:.2e} against the packed kernels")
        # SDPA once per sequence with the bottom-right mask gives the same rows; it is not timed: at a few
        # hundred queries per sequence its twelve calls wait on the host's launches, not on the GPU
        rows.append(
            {"table": "convention", "impl": "sdpa_lower_right", "max_rel_err": measure.rel_err(prefill_loop(), ref)}
        )
        print(rows[-1], flush=True)

    def no_grad(fn):
        def run():
            with torch.no_grad():
                return fn()

        return run

    each = measure.bench_each_round({n: no_grad(f) for n, f in prefill.items()}, rounds=1 if args.quick else ROUNDS)
    best = {name: min(ts) for name, ts in each.items()}
    for name, t in best.items():
        row = {
            "table": "prefill",
            "mask": "causal",
            "pass": "fwd",
            "impl": name,
            "backend": torch_backend if name == "torch_varlen" else "",
            "ms": t,
            "tflops": 4 * H * D * pairs / t / 1e9,
            "tflops_spread": measure.spread(each[name]),
            "speedup": t / best["triton_varlen"],
        }
        rows.append(row)
        print(row, flush=True)
    metrics = {
        "max_rel_err": {"unit": "", "noise": 1.0, "fmt": ".1e", "check": False},
        "same": {"unit": "bool", "noise": 0},
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".2f", "check": False},
        "tflops": {"unit": "TFLOP/s", "noise": 0.07, "fmt": ".0f"},
        "tflops_spread": {"unit": "fraction", "noise": 1.0, "fmt": ".1%", "check": False},
        "speedup": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
    }
    rows.append(
        {
            "table": "setup",
            "lengths": ", ".join(map(str, lens)),
            "heads": H,
            "D": D,
            "sequences": B,
            "tokens": T,
            "longest": longest,
            "chunk": CHUNK,
            "prefill_queries": sum(lens_q),
        }
    )
    metrics.update({m: {"unit": unit, "noise": 0, "fmt": "d"} for m, unit in SETUP.items()})
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
