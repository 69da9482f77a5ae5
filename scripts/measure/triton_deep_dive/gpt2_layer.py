#!/usr/bin/env python3
"""A GPT-2-medium attention layer trained with the page's FlashAttention against SDPA (default backend).

The page's attention is attention_bwd_gluon.attention: on Hopper the Gluon forward and the backward that
bwd_settings picks for the shape (at 1,024 tokens and head dim 64: the one-consumer Gluon dK/dV kernel and
the Gluon dQ kernel); attention.py's kernels elsewhere. Here q, k, v are
strided views of the QKV projection, which the Gluon kernels read through 4-D TMA descriptors without a
copy; the step row records which forward ran.

Layer: LayerNorm -> QKV projection (1024 -> 3072) -> causal attention, 16 heads of 64 -> output
projection -> residual; batch 32 x 1024 tokens, bf16 autocast, AdamW, MSE loss against a fixed random
target. Three copies (IMPLS): SDPA and attention() on q, k, v views of the projection (view, unbind,
transpose), and attention_qkvpacked() on the projection viewed as (B, T, 3, H, D), whose backward writes
the projection's gradient itself where the other two go through unbind's backward, a stack of the three
gradients (table "stack": that stack timed alone at this shape, and how much less GPU time the packed
layer's "other" kernels take per step in the profile).
All models start from the same weights and see the same data: each loss curve over 200 steps
must agree with SDPA's within bf16 tolerance (largest relative difference recorded). Then one training step
(forward, backward, optimizer) of each is timed, three rounds in turn. Target (issue 14): >= 1.0x SDPA.
Table "profile": where a step's GPU time goes, from torch.profiler over PROFILE_STEPS steps of each
layer: the attention forward's kernels, the attention backward's, and everything else (projections,
LayerNorm, the loss, AdamW, copies), summed per step. Kernels are assigned by name (ATTN_FWD, ATTN_BWD);
"other" must agree between the two layers within OTHER_TOL, or the assignment missed a kernel.
32 sequences, not 8: at 8 a step takes 2-3 ms, short enough for host-side launches to weigh on it; two runs of the same
code at e301acf gave 0.88x and 0.75x SDPA (in the git history of data/triton_deep_dive/gpt2_layer.json); at 32 the GPU work per step is
four times larger, while the host launches the same kernels.
Even at 32 the eager step can wait on the host: the page's attention() builds its TMA descriptors (4 in the forward, 7 in the backward at this shape) and
launches four kernels from Python per step, where SDPA's launches are C++. Column "host_ms": the
host's own time per step (measure.host_us: steps queued behind a GPU spin, so none waits on the GPU).
When the host's time per step comes near the GPU's, a slower spell of the lent machine's CPU turns the
eager step host-bound (a run at 2637c21, before the plans below, measured 0.84x where the runs around it
measured 1.01x).
The wrappers now plan their launches once per input layout (attention_gluon.Launch: descriptor layouts
cached, compiled kernels launched without the JIT's dispatch). Table "host": the host's time for one
attention forward + backward alone at the layer's shape (measure.host_us), with the plans (impl "triton"),
with every launch through kernel[grid] again (impl "triton_jit", Launch.JIT = True) and for SDPA.
Table "host_split": that host time taken apart (host_parts below). Host figures are the fastest of HOST_ROUNDS
interleaved rounds: a slow spell of the lent CPU can only add to a round.
Columns "ms_loop" and "ratio_sdpa_loop": LOOP_STEPS training steps run back to back, as a Python training
loop runs them, timed with CUDA events around the whole loop (no L2 flush between steps, so nothing
gives the host a head start), three rounds in turn. Target: >= 1.0x SDPA.
Columns "ms_graph" and "ratio_sdpa_graph": the same training step of fresh copies of both layers,
captured once in a CUDA graph (AdamW with capturable=True, autocast without its weight cache, as
capture requires) and replayed, so the host is out of the step; the graphs are checked to train (the
loss changes between replays). Target for all three timings: >= 1.0x SDPA.
"""

from __future__ import annotations

META = {"needs": "gpu", "tier": "weekly", "budget_s": 40}

import copy
import sys

from sitekit import data, measure

NAME = data.name_of(__file__)
B, T, C, HEADS = 32, 1024, 1024, 16
STEPS = 200
LOSS_TOL = 0.02
TARGET = 1.0
PROFILE_STEPS = 5
LOOP_STEPS = 20
HOST_CALLS = 20
HOST_ROUNDS = 3  # host figures: the fastest of three interleaved rounds (a slow spell of the CPU only adds)
# kernel-name fragments: Triton's kernels of attention.py, cuDNN's fused attention, and flash/efficient
ATTN_FWD = ("attn_fwd", "fprop", "flash_fwd", "fmha_cutlassF", "efficient_attention_forward")
ATTN_BWD = ("attn_bwd", "bprop", "dot_do_o", "convert_dq", "flash_bwd", "fmha_cutlassB", "efficient_attention_backward")
OTHER_TOL = 0.05
# the layers: SDPA; attention() on q, k, v views of the projection; attention_qkvpacked() on the projection
IMPLS = ("sdpa", "triton", "triton_packed")


def short(kernel: str) -> str:
    """A kernel's name without its template arguments and parameter list, at most 60 characters."""
    name = kernel.split("(")[0].split("<")[0].removeprefix("void ").strip()
    return name if len(name) <= 60 else name[:57] + "..."


def part_of(kernel: str) -> str:
    if any(f in kernel for f in ATTN_BWD):
        return "attention backward"
    if any(f in kernel for f in ATTN_FWD):
        return "attention forward"
    return "other"


def host_parts(fa, q, k, v, qkv, do) -> dict:
    """Table "host_split": where the host time of the attention's forward + backward goes, each part
    timed alone with measure.host_us (so the parts need not add up to the whole exactly):
    - forward, backward: attention() alone, and torch.autograd.grad of its saved output (the autograd
      engine, the Function's backward, the strided views' own backward); SDPA's and attention_qkvpacked()'s
      the same way (the packed one's output has no views to go back through: its gradient is qkv's);
    - backward_gluon: the backward's Python called directly, without autograd;
    - descriptors, allocations, launches: what backward_gluon does, one piece at a time: the TMA
      descriptor objects it builds, its four empty tensors (delta, dQ, dK, dV), and its three launches
      with every argument already built;
    - handoff: torch.autograd.grad through a Python autograd.Function that does no work (its backward
      hands dO back as dQ, dK and dV) on the same strided views: the engine, the hand-off to Python and
      the views' own backward (which stacks the three gradients into the QKV tensor's), without any
      attention kernel.
    Each piece is timed in HOST_ROUNDS interleaved rounds and the fastest round kept."""
    import torch
    import torch.nn.functional as F

    fg, fa0 = fa.fg, fa.fa
    out = {}
    calls = {
        ("triton", "forward"): lambda: fa.attention(q, k, v, causal=True),
        ("sdpa", "forward"): lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    }
    calls[("triton_packed", "forward")] = lambda: fa.attention_qkvpacked(qkv, causal=True)
    o_t, o_s = fa.attention(q, k, v, causal=True), F.scaled_dot_product_attention(q, k, v, is_causal=True)
    o_p = fa.attention_qkvpacked(qkv, causal=True)
    calls[("triton", "backward")] = lambda: torch.autograd.grad(o_t, qkv, do, retain_graph=True)
    calls[("triton_packed", "backward")] = lambda: torch.autograd.grad(o_p, qkv, do, retain_graph=True)
    calls[("sdpa", "backward")] = lambda: torch.autograd.grad(o_s, qkv, do, retain_graph=True)
    # the saved tensors, as the Function's backward gets them
    qq, kk, vv = (fa0._tma_ready(t.detach()) for t in (q, k, v))
    scale = q.shape[-1] ** -0.5
    with torch.no_grad():
        o, lse = fg.forward_gluon(qq, kk, vv, True, scale)
    dd = fa0._tma_ready(do)
    calls[("triton", "backward_gluon")] = lambda: fa.backward_gluon(qq, kk, vv, o, lse, dd, True, scale)
    calls[("triton", "backward_gluon")]()
    key = next(key for key in fg._LAUNCHES if key[0] == "bwd" and key[1] == fg._layout_key(qq, kk, vv, o, dd))
    pre, dq_l, dkdv = fg._LAUNCHES[key]
    B, HQ, N, D = qq.shape
    HKV = kk.shape[1]
    delta = torch.empty((B, HQ, N), device=q.device, dtype=torch.float32)
    dq, dk, dv = fa._empty_grads(qq, kk, vv)
    boxes = [
        (dq_l.kw["BLOCK_M"], (qq, dd, dq)),
        (dq_l.kw["BLOCK_N"], (kk, vv)),
        (dkdv.kw["BLOCK_M"], (qq, dd)),
        (dkdv.kw["BLOCK_N"], (kk, vv, dk, dv)),
    ]
    unique = list(
        {(id(t), rows): (t, rows) for rows, ts in boxes for t in ts}.values()
    )  # as backward_gluon shares them
    descs = {(id(t), rows): fg._desc(t, rows, True) for t, rows in unique}

    def d(t, rows):
        return descs[(id(t), rows)]

    bm, bn, bm2, bn2 = dq_l.kw["BLOCK_M"], dq_l.kw["BLOCK_N"], dkdv.kw["BLOCK_M"], dkdv.kw["BLOCK_N"]

    def launches():
        pre(o, dd, delta, *o.stride()[:3], *dd.stride()[:3], HQ, N)
        dq_l(
            d(qq, bm),
            d(dd, bm),
            d(kk, bn),
            d(vv, bn),
            d(dq, bm),
            lse,
            delta,
            HQ,
            HQ // HKV,
            N,
            scale,
            scale * fa0.LOG2E,
        )
        dkdv(
            d(qq, bm2),
            d(dd, bm2),
            d(kk, bn2),
            d(vv, bn2),
            d(dk, bn2),
            d(dv, bn2),
            lse,
            delta,
            HQ,
            HKV,
            HQ // HKV,
            N,
            scale,
            scale * fa0.LOG2E,
        )

    if dq_l.kernel is fa.attn_bwd_dq_ws:  # the settings at this shape; with attention.py's dQ kernel, no such row
        calls[("triton", "descriptors")] = lambda: [fg._desc(t, rows, True) for t, rows in unique]
        calls[("triton", "launches")] = launches
    calls[("triton", "allocations")] = lambda: (
        torch.empty((B, HQ, N), device=q.device, dtype=torch.float32),
        fa._empty_grads(qq, kk, vv),
    )

    class Handoff(torch.autograd.Function):  # no work either way: what autograd costs around a Python backward
        @staticmethod
        def forward(ctx, q, k, v):
            return torch.empty_like(q)

        @staticmethod
        def backward(ctx, do):
            return do, do, do

    o_h = Handoff.apply(q, k, v)
    calls[("triton", "handoff")] = lambda: torch.autograd.grad(o_h, qkv, do, retain_graph=True)
    each = {key: [] for key in calls}
    for _ in range(HOST_ROUNDS):
        for key, fn in calls.items():
            each[key].append(measure.host_us(fn, calls=HOST_CALLS))
    for key, times in each.items():
        out[key] = {"host_us": min(times)}
    if ("triton", "descriptors") in out:
        out[("triton", "descriptors")]["count"] = len(unique)
    return out


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    args = ap.parse_args(argv)
    measure.need_gpu(NAME)
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    sys.modules["attention"] = measure.snippet("triton_deep_dive/attention")  # imported by these names
    sys.modules["attention_gluon"] = measure.snippet("triton_deep_dive/attention_gluon")
    fa = measure.snippet("triton_deep_dive/attention_bwd_gluon")
    b, t, steps = (1, 256, 5) if args.quick else (B, T, STEPS)

    class AttentionLayer(nn.Module):
        def __init__(self, impl: str):
            super().__init__()
            self.ln = nn.LayerNorm(C)
            self.qkv = nn.Linear(C, 3 * C)
            self.proj = nn.Linear(C, C)
            self.impl = impl

        def forward(self, x):
            qkv = self.qkv(self.ln(x)).view(x.shape[0], x.shape[1], 3, HEADS, C // HEADS)
            q, k, v = (z.transpose(1, 2) for z in qkv.unbind(2))  # (B, H, T, D) views, no copy
            if self.impl == "sdpa":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                self.forward_kernel = "gluon" if fa.fg.uses_gluon(q, k, v) else "triton"
                if self.impl == "triton_packed":  # the projection itself: its gradient is written, not stacked
                    y = fa.attention_qkvpacked(qkv, causal=True)
                else:
                    y = fa.attention(q, k, v, causal=True)
            return x + self.proj(y.transpose(1, 2).reshape(x.shape))

    torch.manual_seed(0)
    models = {"sdpa": AttentionLayer("sdpa").cuda()}
    for impl in IMPLS[1:]:
        models[impl] = copy.deepcopy(models["sdpa"])
        models[impl].impl = impl
    opts = {k: torch.optim.AdamW(m.parameters(), lr=1e-4) for k, m in models.items()}
    gen = torch.Generator(device="cuda").manual_seed(1)
    target = torch.randn(b, t, C, device="cuda", generator=gen)

    def train_step(impl, x):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = F.mse_loss(models[impl](x).float(), target)
        opts[impl].zero_grad(set_to_none=True)
        loss.backward()
        opts[impl].step()
        return loss

    rows = []
    losses = {impl: [] for impl in IMPLS}
    for step in range(steps):
        x = torch.randn(b, t, C, device="cuda", generator=gen)
        for impl in losses:
            losses[impl].append(train_step(impl, x).item())
    worst = {impl: max(abs(a - s) / abs(s) for a, s in zip(losses[impl], losses["sdpa"])) for impl in IMPLS[1:]}
    for step in range(0, steps, max(1, steps // 40)):
        for impl in losses:
            rows.append({"table": "loss", "step": step, "impl": impl, "loss": losses[impl][step]})
    x = torch.randn(b, t, C, device="cuda", generator=gen)
    rounds = 1 if args.quick else 3
    each = measure.bench_each_round({impl: (lambda impl=impl: train_step(impl, x)) for impl in losses}, rounds=rounds)
    host = {impl: measure.host_us(lambda impl=impl: train_step(impl, x), calls=8) / 1e3 for impl in losses}

    def loop_ms(impl):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for _ in range(LOOP_STEPS):
            train_step(impl, x)
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) / LOOP_STEPS

    each_loop = {impl: [] for impl in losses}
    for _ in range(rounds):
        for impl in losses:
            each_loop[impl].append(loop_ms(impl))

    # attention alone, forward + backward, on strided views of one packed QKV tensor as in the layer
    qkv = torch.randn(b, t, 3, HEADS, C // HEADS, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    q, k, v = (z.transpose(1, 2) for z in qkv.unbind(2))
    do = torch.randn(b, HEADS, t, C // HEADS, device="cuda", dtype=torch.bfloat16)
    attn = {
        "triton": lambda: fa.attention(q, k, v, causal=True),
        "triton_packed": lambda: fa.attention_qkvpacked(qkv, causal=True),
        "sdpa": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
    }
    host_attn = {}
    for _ in range(HOST_ROUNDS):  # the fastest of interleaved rounds, as in host_parts
        for impl, jit in (("triton", False), ("triton_jit", True), ("triton_packed", False), ("sdpa", False)):
            fa.fg.Launch.JIT = jit
            try:
                run = attn[impl.removesuffix("_jit")]
                t_us = measure.host_us(lambda run=run: run().backward(do), calls=HOST_CALLS)
            finally:
                fa.fg.Launch.JIT = False
            host_attn[impl] = min(host_attn.get(impl, t_us), t_us)
    host_split = host_parts(fa, q, k, v, qkv, do)

    # the same step, captured in a CUDA graph: fresh copies of the layers, an optimizer that can be captured
    gmodels = {impl: copy.deepcopy(m) for impl, m in models.items()}
    gopts = {impl: torch.optim.AdamW(m.parameters(), lr=1e-4, capturable=True) for impl, m in gmodels.items()}
    static_loss = {}

    def graph_step(impl):
        with torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=False):
            loss = F.mse_loss(gmodels[impl](x).float(), target)
        gopts[impl].zero_grad(set_to_none=True)
        loss.backward()
        gopts[impl].step()
        static_loss[impl] = loss  # the graph's output buffer: each replay writes this step's loss into it

    replays = {impl: measure.graphed(lambda impl=impl: graph_step(impl)) for impl in losses}
    for impl, replay in replays.items():
        seen = []
        for _ in range(3):
            replay()
            seen.append(static_loss[impl].item())
        if not seen[-1] < seen[0]:  # x and the target stay fixed: three training steps must lower the loss
            sys.exit(f"{NAME}: the captured {impl} step does not train (losses {seen})")
    each_g = measure.bench_each_round(replays, rounds=rounds)
    best = {k: min(v) for k, v in each.items()}
    best_g = {k: min(v) for k, v in each_g.items()}
    best_l = {k: min(v) for k, v in each_loop.items()}
    for impl, ms in best.items():
        row = {
            "table": "step",
            "impl": impl,
            "ms": ms,
            "ms_spread": measure.spread(each[impl]),
            "host_ms": host[impl],
            "ms_loop": best_l[impl],
            "ms_loop_spread": measure.spread(each_loop[impl]),
            "ms_graph": best_g[impl],
            "ms_graph_spread": measure.spread(each_g[impl]),
        }
        if impl != "sdpa":
            ratio, ratio_g, ratio_l = best["sdpa"] / ms, best_g["sdpa"] / best_g[impl], best_l["sdpa"] / best_l[impl]
            row.update(
                ratio_sdpa=ratio,
                met_sdpa=ratio >= TARGET,
                ratio_sdpa_loop=ratio_l,
                met_sdpa_loop=ratio_l >= TARGET,
                ratio_sdpa_graph=ratio_g,
                met_sdpa_graph=ratio_g >= TARGET,
                loss_rel_diff=worst[impl],
                met_loss=worst[impl] <= LOSS_TOL,
                forward=models[impl].forward_kernel,
            )
        rows.append(row)
        print(row, flush=True)
    for impl, us in host_attn.items():
        rows.append({"table": "host", "impl": impl, "host_us": us})
        print(rows[-1], flush=True)
    for (impl, piece), cols in host_split.items():
        rows.append({"table": "host_split", "impl": impl, "piece": piece, **cols})
        print(rows[-1], flush=True)
    from torch.profiler import ProfilerActivity, profile

    per_part, names = {}, {}
    for impl in losses:
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(PROFILE_STEPS):
                train_step(impl, x)
            torch.cuda.synchronize()
        parts = {"attention forward": 0.0, "attention backward": 0.0, "other": 0.0}
        names[impl] = {p: set() for p in parts}
        for e in prof.events():
            if e.device_type.name == "CUDA":
                parts[part_of(e.name)] += e.time_range.elapsed_us() / PROFILE_STEPS
                names[impl][part_of(e.name)].add(short(e.name))
        per_part[impl] = parts
    if min(per_part[impl][p] for impl in IMPLS for p in ("attention forward", "attention backward")) <= 0:
        sys.exit(f"{NAME}: the profile found no attention kernel for one of the layers: {per_part}")
    other = [per_part[k]["other"] for k in ("sdpa", "triton")]  # same ops outside the attention call
    if abs(other[0] - other[1]) > OTHER_TOL * max(other):
        sys.exit(
            f"{NAME}: 'other' kernels differ between the layers ({other[0]:.0f} vs {other[1]:.0f} us per step): "
            f"an attention kernel was not recognized by name"
        )
    # the packed layer runs the same ops but one: unbind's backward, which stacks the three gradients (with
    # a kernel that other ops of the step run too, so it cannot be picked out by name)
    g = [torch.randn(b, t, HEADS, C // HEADS, device="cuda", dtype=torch.bfloat16) for _ in range(3)]
    stack_us = min(
        measure.bench_each_round({"stack": lambda: torch.stack(g, dim=2)}, rounds=rounds)["stack"]
    ) * 1e3
    rows.append({"table": "stack", "impl": "triton", "us_step": stack_us})
    rows.append({"table": "stack", "impl": "triton_packed",
                 "us_step": per_part["triton"]["other"] - per_part["triton_packed"]["other"]})
    print(rows[-2:], flush=True)
    for part in ("attention forward", "attention backward", "other"):
        t_sdpa = per_part["sdpa"][part]
        for impl in losses:
            row = {"table": "profile", "impl": impl, "part": part, "us_step": per_part[impl][part]}
            row["ratio_part"] = t_sdpa / per_part[impl][part]
            if part != "other":
                row["kernels"] = ", ".join(sorted(names[impl][part]))
            rows.append(row)
            print(rows[-1], flush=True)
    metrics = {
        "us_step": {"unit": "µs", "noise": 0.1, "fmt": ".0f"},
        "ratio_part": {"unit": "×", "noise": 0.1, "fmt": ".2f"},
        "loss": {"unit": "", "noise": 0.05, "fmt": ".4f"},
        "ms": {"unit": "ms", "noise": 0.1, "fmt": ".2f"},
        "ms_spread": {"unit": "", "noise": 1.0, "fmt": ".1%", "check": False},
        "ratio_sdpa": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "met_sdpa": {"unit": "bool", "noise": 0, "of": "ratio_sdpa", "target": TARGET},
        "host_ms": {"unit": "ms", "noise": 1.0, "fmt": ".2f", "check": False},  # the lent host's CPU: never gated
        "ms_loop": {"unit": "ms", "noise": 0.1, "fmt": ".2f"},
        "ms_loop_spread": {"unit": "", "noise": 1.0, "fmt": ".1%", "check": False},
        "ratio_sdpa_loop": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "met_sdpa_loop": {"unit": "bool", "noise": 0, "of": "ratio_sdpa_loop", "target": TARGET},
        "host_us": {"unit": "µs", "noise": 1.0, "fmt": ".0f", "check": False},  # the lent host's CPU: never gated
        "count": {"unit": "", "noise": 0, "fmt": "d"},
        "ms_graph": {"unit": "ms", "noise": 0.1, "fmt": ".2f"},
        "ms_graph_spread": {"unit": "", "noise": 1.0, "fmt": ".1%", "check": False},
        "ratio_sdpa_graph": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "met_sdpa_graph": {"unit": "bool", "noise": 0, "of": "ratio_sdpa_graph", "target": TARGET},
        "loss_rel_diff": {"unit": "", "noise": 1.0, "fmt": ".1e", "check": False},
        "met_loss": {"unit": "bool", "noise": 0, "of": "loss_rel_diff", "target": LOSS_TOL},
    }
    ds = data.new(NAME, metrics, rows)
    return data.save(ds, args.out, quick=args.quick)


if __name__ == "__main__":
    raise SystemExit(main())
