#!/usr/bin/env python3
"""Best config found against configs measured, for four search routes, replayed on the H200 timings.

No GPU: this reads the committed data/how_ai_compilers_work/autotune.json, whose 140 config rows
hold the time @triton.autotune measured for every config of the page's GEMM + bias + GELU kernel
(fp16, 8192 x 8192 x 2048) on the H200, and replays each search route against those times:

  random        b configs drawn without replacement; the distribution of the best of them is
                exact (order statistics over the 140 measured times), no sampling
  model_topk    the analytical model's top b (stable sort by predicted time, as the autotuner's
                prune_configs_by does); deterministic, so configs the model ties are taken in the order
                gemm_tuning.config_space() lists them
  model_topk_ties  the same top b with the model's ties broken at random: whole tie groups while they
                fit, then a uniformly random subset of the next group (exact, like random)
  learned       gemm_tuning.guided_search (ridge regression, 8 random configs, then rounds of the
                3 best-ranked + 1 random pick) with the measured times as its "measure", over
                --seeds seeds; the best-so-far after each measurement

For each route and budget b it records the median and the 90th percentile of (best time found /
best time of the whole space) and the probability of landing within 5 % of it. It also recomputes
the analytical model's rank correlation with average ranks for ties (the autotune script breaks
ties arbitrarily).

Caveat recorded with the data: each config was timed once (a 25 ms window); between two H200
runs single configs moved by up to ~10 %, so differences of a few percent here are inside noise.

    python scripts/measure/how_ai_compilers_work/search_budget.py [--out PATH] [--seeds 50]
"""
META = {"needs": "cpu", "tier": "nightly", "budget_s": 10}   # 5 s on the 2-core CI machine

import json
import math
import os
import sys
from math import comb
from pathlib import Path

from sitekit import data, measure

NAME = "how_ai_compilers_work/search_budget"
BUDGETS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48)
M, N, K = 8192, 8192, 2048


def average_ranks(xs):
    """Ranks 1..n, ties sharing the mean of the ranks they span (what Spearman's rho needs)."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    ranks = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def pearson(a, b):
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    cov = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    return cov / math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))


def random_best(times, b):
    """Exact distribution of min of b of the n times drawn without replacement:
    P(best is the k-th fastest) = C(n-k, b-1) / C(n, b)."""
    ts = sorted(times)
    n = len(ts)
    return [(ts[k - 1], comb(n - k, b - 1) / comb(n, b)) for k in range(1, n - b + 2)]


def model_topk_random_ties(times, pred, b):
    """Exact distribution of the best time among the model's top b when configs with equal predictions
    are ordered at random: the groups of equal prediction, fastest predicted first, are taken whole while
    they fit; the remaining r slots go to a uniformly random r-subset of the next group."""
    groups = {}
    for t, p in zip(times, pred):
        groups.setdefault(p, []).append(t)
    taken, fixed = 0, math.inf
    for p in sorted(groups):
        g = groups[p]
        if taken + len(g) <= b:
            fixed, taken = min(fixed, *g), taken + len(g)
            if taken == b:
                return [(fixed, 1.0)]
            continue
        return [(min(fixed, v), q) for v, q in random_best(g, b - taken)]
    return [(fixed, 1.0)]


def quantile(dist, q):
    acc = 0.0
    for v, p in sorted(dist):
        acc += p
        if acc >= q - 1e-12:
            return v
    return sorted(dist)[-1][0]


def _read_autotune(ap, path: str) -> dict:
    """An autotune dataset given with --autotune, or a usage error that says what was expected."""
    want = "expected an autotune dataset such as data/how_ai_compilers_work/autotune.json"
    try:
        src = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        ap.error(f"--autotune {path}: cannot read it ({e.strerror}); {want}")
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        ap.error(f"--autotune {path}: not JSON ({e}); {want}")
    if not isinstance(src, dict) or not isinstance(src.get("rows"), list):
        ap.error(f"--autotune {path}: no 'rows' list in it; {want}")
    return src


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--seeds", type=int, default=50, help="seeds of the learned-model search (default 50)")
    ap.add_argument("--autotune", default=None, help="autotune dataset to replay (default the committed one)")
    args = ap.parse_args(argv)
    if args.seeds < 5:
        ap.error("--seeds must be at least 5 (one seed says nothing about a randomized search)")

    src = data.load("how_ai_compilers_work/autotune") if args.autotune is None else _read_autotune(ap, args.autotune)
    configs = [r for r in src["rows"] if r.get("kind") == "config"]
    if len(configs) < max(BUDGETS):
        sys.exit(f"{NAME}: the autotune dataset has {len(configs)} config rows; at least {max(BUDGETS)} needed")
    os.environ.setdefault("TRITON_INTERPRET", "1")      # gemm_tuning imports triton; nothing is launched here
    gemm = measure.snippet("how_ai_compilers_work/gemm_tuning")
    space = gemm.config_space()
    key = lambda c: (c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.kwargs["BLOCK_K"], c.num_stages, c.num_warps)
    by_key = {(r["BLOCK_M"], r["BLOCK_N"], r["BLOCK_K"], r["aic_stages"], r["aic_warps"]): r for r in configs}
    missing = [key(c) for c in space if key(c) not in by_key]
    if missing:
        sys.exit(f"{NAME}: configs of gemm_tuning.config_space() missing from the autotune data: {missing[:5]}; "
                 "re-measure autotune first")
    ms = [by_key[key(c)]["ms"] if by_key[key(c)]["ms"] is not None else math.inf for c in space]
    pred = [by_key[key(c)]["aic_predicted_ms"] for c in space]
    best = min(ms)
    rows = []

    def add(route, b, dist):
        rows.append({"aic_search": route, "aic_budget": b,
                     "aic_median_ratio": quantile(dist, 0.5) / best,
                     "aic_p90_ratio": quantile(dist, 0.9) / best,
                     "aic_p_within5": sum(p for v, p in dist if v <= 1.05 * best)})

    for b in BUDGETS:
        add("aic_random", b, random_best(ms, b))
    order = sorted(range(len(space)), key=lambda i: pred[i])       # stable, like prune_configs_by
    for b in BUDGETS:
        add("aic_model_topk", b, [(min(ms[i] for i in order[:b]), 1.0)])
    for b in BUDGETS:
        add("aic_model_topk_ties", b, model_topk_random_ties(ms, pred, b))

    # the learned model, replayed: guided_search calls `measure` once per config it decides to time
    curves = []
    for seed in range(args.seeds):
        seen = []
        lookup = {key(c): t for c, t in zip(space, ms)}
        gemm.guided_search(space, lambda c: seen.append(lookup[key(c)]) or lookup[key(c)], M, N, K,
                           n_init=8, per_round=4, budget=max(BUDGETS), seed=seed)
        curves.append([min(seen[:b]) for b in BUDGETS])
    for j, b in enumerate(BUDGETS):
        add("aic_learned", b, [(c[j], 1.0 / len(curves)) for c in curves])

    ok = [i for i in range(len(space)) if math.isfinite(ms[i])]
    rho_avg = pearson(average_ranks([pred[i] for i in ok]), average_ranks([ms[i] for i in ok]))
    ties = sorted({sum(1 for j in ok if pred[j] == pred[i]) for i in ok if sum(1 for j in ok if pred[j] == pred[i]) > 1},
                  reverse=True)
    rows.append({"aic_search": "aic_spearman_avg", "aic_budget": len(ok), "aic_spearman": rho_avg,
                 "aic_largest_tie": ties[0] if ties else 1})
    for r in rows:
        r["kind"] = "search"
    top_tie = [i for i in ok if pred[i] == min(pred[j] for j in ok)]
    rows.append({"kind": "setup", "aic_seeds": args.seeds, "aic_configs": len(ok),
                 "aic_within5_count": sum(1 for t in ms if t <= 1.05 * best),
                 "aic_top_tie": len(top_tie), "aic_top_tie_has_best": any(ms[i] == best for i in top_tie)})
    print(f"{len(space)} configs, best {best:.4f} ms; Spearman (average ranks) {rho_avg:.3f}; ties up to {ties[:5]}")
    for route in ("aic_random", "aic_model_topk", "aic_model_topk_ties", "aic_learned"):
        print(route, " ".join(f"{r['aic_budget']}:{r['aic_median_ratio']:.3f}/{r['aic_p_within5']:.2f}"
                               for r in rows if r.get("aic_search") == route))
    metrics = {
        # derived from single timings per config (see the docstring): a few percent is inside noise
        "aic_median_ratio": {"unit": "x", "noise": 0.1, "better": "lower", "fmt": ".3f"},
        "aic_p90_ratio": {"unit": "x", "noise": 0.1, "better": "lower", "fmt": ".3f"},
        "aic_p_within5": {"unit": "", "noise": 0.3, "better": "higher", "fmt": ".0%"},
        "aic_spearman": {"unit": "", "noise": 0.1, "better": "higher", "fmt": ".2f"},
        "aic_largest_tie": {"unit": "configs", "noise": 0.0, "fmt": "d", "check": False},
        "aic_seeds": {"unit": "seeds", "noise": 0.0, "fmt": "d", "check": False},
        "aic_configs": {"unit": "configs", "noise": 0.0, "fmt": "d", "check": False},
        "aic_within5_count": {"unit": "configs", "noise": 0.5, "fmt": "d", "check": False},
        "aic_top_tie": {"unit": "configs", "noise": 0.0, "fmt": "d", "check": False},
    }
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])],
                  replayed={"dataset": "how_ai_compilers_work/autotune", "commit": src["provenance"].get("commit"),
                            "seeds": args.seeds})
    return data.save(ds, args.out)


if __name__ == "__main__":
    raise SystemExit(main())
