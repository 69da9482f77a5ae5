#!/usr/bin/env python3
"""GPU CI: run every GPU-marked code block and re-measure every GPU dataset of the site's card (the H200); a
dataset whose META names another card (gpu) runs only with --only, on that card. The nightly tier leaves
out the code blocks marked <!--pytest.mark.weekly--> (the long ones); every other run includes them.

    python scripts/gpu_ci.py --tier nightly            # blocks + nightly datasets; replace data/ on success
    python scripts/gpu_ci.py --check --tier nightly    # report figures that drifted beyond noise; exit 1 if any
    python scripts/gpu_ci.py --check --write --tier weekly  # every GPU dataset of the site's card; write even if something drifted
    python scripts/gpu_ci.py --only foundation/ceilings --no-blocks
    python scripts/gpu_ci.py --tier nightly --plan     # print the plan and its budget, run nothing
    python scripts/gpu_ci.py --blocks-only             # the GPU code blocks alone, on any CUDA GPU (an H100 too)
    python scripts/gpu_ci.py --check --write --no-blocks --stale --fit 540
        # re-measure the GPU datasets data/stale.yml lists, as many as fit 540 s; run again for the rest

Datasets are found from paths (scripts/measure/<article>/<dataset>.py -> data/<article>/<dataset>.json;
sitekit/registry.py). Each is measured into a temporary file by its script, validated, compared with
the committed file, and only then moved over it, so a failed, aborted or invalid run never replaces
good data. The committed run becomes the new file's `history` (the last runs, small), from which the
pages compute verdicts that must hold in two runs. With --check, data/ is left as it was unless
--write is given too. Datasets that do not time the GPU (artifacts, compile logs) run beside the code
blocks; the timed ones run one at a time, alone on the GPU.

A dataset is only re-measured on the GPU model its committed data names: a run on another card is no
check of that data and no second opinion for its verdicts, so gpu_ci refuses it before measuring
anything, unless --new-gpu says to move the datasets to this card (their history is dropped).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sitekit import ROOT, data, fragile, registry
from sitekit.measure import ClockLog

# Seconds the GPU-marked code blocks take, by tier. The nightly tier runs every GPU block but those marked
# <!--pytest.mark.weekly--> (the long ones); the weekly tier, --only and --blocks-only run them all.
# Measured with `--blocks-only` from a cold Triton cache on a lent H100 on 2026-12-07 (no H200 was lent
# that session): 367 s for all 13 programs, of which the deep dive's `gpu_checks` block took 196 s, the CUDA
# pipeline's register-cap block 33 s and the compile stack's CUDA-graphs block 32 s (those three are
# weekly), the other ten 107 s. (On the H200 on 2026-12-01 the blocks of that day took 253 s.) A run that
# takes longer is named in the drift report. Untimed datasets run beside the blocks.
BLOCKS_BUDGET_S = {"nightly": 120, "weekly": 380}
BLOCKS_MARKER = {"nightly": "gpu_block and not weekly_block", "weekly": "gpu_block"}
HISTORY = 2  # previous runs kept in each dataset, for verdicts over two runs and run-to-run noise


def chosen_datasets(args) -> list[registry.Dataset]:
    if args.only and args.stale:
        raise registry.RegistryError("--only and --stale choose datasets two ways; give one")
    if args.only:
        return [registry.by_name(n) for n in args.only]
    if args.stale:  # older than their code (sitekit.stale): re-measuring them is what empties data/stale.yml
        from sitekit.stale import current

        moved = current()
        return [d for d in registry.DATASETS if d.needs == "gpu" and not d.gpu and d.name in moved]
    tiers = {"nightly": ("nightly",), "weekly": ("nightly", "weekly"), "all": ("nightly", "weekly")}[args.tier]
    # a dataset of another card (META gpu) runs only when --only names it, on that card
    return [d for d in registry.DATASETS if d.needs == "gpu" and not d.gpu and d.tier in tiers]


def stale_elsewhere() -> list[registry.Dataset]:
    """The stale GPU datasets of another card (META gpu), which --stale leaves out."""
    from sitekit.stale import current

    moved = current()
    return [d for d in registry.DATASETS if d.needs == "gpu" and d.gpu and d.name in moved]


def wrong_card(datasets, gpu: str) -> list[str]:
    """The chosen datasets that belong to another card (META gpu) than this one, one line each."""
    return [f"{d.name}: measured on an {d.gpu} only" for d in datasets if d.gpu and d.gpu not in gpu]


def fit(datasets, seconds: int, blocks: str | None) -> tuple[list, list]:
    """(kept, left): the datasets, in order, whose plan fits `seconds`; one that would overflow it is left
    for the next run and the later ones still tried (first fit). A lent machine caps one command's time:
    with --stale, the next run picks up what this one left, since a re-measured dataset is no longer stale."""
    kept, left = [], []
    for d in datasets:
        (kept if plan_seconds([*kept, d], blocks)[2] <= seconds else left).append(d)
    return kept, left


def blocks_tier(args) -> str | None:
    """Which GPU code blocks a run includes: None (--no-blocks), "nightly" (all but the weekly-marked ones)
    or "weekly" (all of them: --tier weekly/all, --only, --blocks-only)."""
    if args.no_blocks:
        return None
    return "nightly" if args.tier == "nightly" and not args.only and not args.blocks_only else "weekly"


def plan_seconds(datasets, blocks: str | None) -> tuple[int, int, int]:
    """(timed sum, untimed-beside-blocks critical path, planned wall) in seconds; blocks is the blocks'
    tier (blocks_tier) or None."""
    timed = sum(d.budget_s for d in datasets if d.timed)
    beside = max(BLOCKS_BUDGET_S[blocks] if blocks else 0, sum(d.budget_s for d in datasets if not d.timed))
    return timed, beside, timed + beside


def run_blocks(junit: Path | None, tier: str) -> int:
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "tests/test_codeblocks.py",
        "-m",
        BLOCKS_MARKER[tier],
        "-p",
        "no:cacheprovider",
        "-rA",  # one line per program, passed ones too
        "--durations=0",  # and each one's wall time: the blocks' budget (BLOCKS_BUDGET_S) is checked against these
    ]
    if junit:
        cmd += [f"--junitxml={junit}"]
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def measure(ds: registry.Dataset, tmpdir: Path) -> tuple[dict | None, str, str]:
    """Run one producer into a temporary file: (validated dataset or None, one-line status, full log)."""
    out = tmpdir / (ds.name.replace("/", "__") + ".json")
    cmd = [sys.executable, str(ROOT / ds.script), "--out", str(out)]
    print("+", " ".join(cmd[1:]), flush=True)
    t0 = time.time()
    with ClockLog() as clocks:  # nvidia-smi in the background: what the clock did while the producer ran
        proc = subprocess.run(
            cmd, cwd=ROOT, capture_output=True, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    dt = time.time() - t0
    log = f"### {ds.name} ({dt:.0f} s, rc={proc.returncode})\n{proc.stdout}\n{proc.stderr}\n"
    if proc.returncode != 0:
        last = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        return None, f"script failed (exit {proc.returncode}): {last}", log
    try:
        obj = json.loads(out.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"script exited 0 but wrote no {out.name}", log
    except json.JSONDecodeError as e:
        return None, f"script wrote invalid JSON ({e})", log
    try:
        data.validate(obj, ds.script)
    except data.DataError as e:
        return None, f"invalid dataset: {e}", log
    if obj["name"] != ds.name:
        return None, f"dataset name {obj['name']!r} does not match its producer's path ({ds.name!r})", log
    if ds.timed:  # an untimed dataset runs beside the code blocks: their load is not its own
        summary = clocks.summary()
        if summary is not None:
            obj["provenance"]["clocks"] = summary
    return obj, f"ok in {dt:.0f} s", log


class ForeignGPU(Exception):
    """A run on another GPU model than the committed data's, which store() will not write over it."""


def other_gpu(old: dict | None, new: dict) -> str | None:
    """Why `new` cannot be compared with `old` or carry its history: the two name different GPU models."""
    a, b = data.gpu_of(old), data.gpu_of(new)
    if a and b and a != b:
        return f"measured on {b}, but the committed data is from {a}"
    return None


def foreign_gpu(datasets, gpu: str, data_dir: Path | None = None) -> list[str]:
    """The chosen datasets whose committed data names a GPU model other than `gpu`, one line each."""
    lines = []
    for d in datasets:
        committed = (data_dir / f"{d.name}.json") if data_dir else data.path_of(d.name)
        try:
            was = data.gpu_of(json.loads(committed.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue  # no committed file (or an unreadable one, which store() reports): nothing to mix with
        if was and was != gpu:
            lines.append(f"{d.name}: committed data from {was}")
    return lines


def with_history(new: dict, old: dict | None) -> dict:
    """The new dataset, carrying the committed run (figures only) as its most recent history entry. Runs
    on another GPU model are not carried: they are no second opinion for this card's verdicts."""
    if old is None or other_gpu(old, new):
        return {k: v for k, v in new.items() if k != "history"}
    past = [data.summary(old)] + list(old.get("history", []))
    return {**new, "history": past[:HISTORY]}


def store(
    ds: registry.Dataset, new: dict, *, write: bool, data_dir: Path | None = None, new_gpu: bool = False
) -> list[str]:
    """Compare with the committed file; write (atomically, history carried) when asked. Returns drift.
    A run on another GPU model than the committed data's raises ForeignGPU (nothing written) unless new_gpu."""
    committed = (data_dir / f"{ds.name}.json") if data_dir else data.path_of(ds.name)
    old = None
    moved: list[str] = []
    if committed.exists():
        try:
            old = data.validate(json.loads(committed.read_text(encoding="utf-8")), str(committed))
        except (ValueError, data.DataError) as e:
            moved = [f"{ds.name}: committed file invalid ({e})"]
    if old is not None and other_gpu(old, new):
        why = other_gpu(old, new)
        if not new_gpu:
            raise ForeignGPU(f"{why}; not compared and not written (--new-gpu moves it to this card)")
        moved = [f"{ds.name}: {why}; replaced without comparison (--new-gpu), its history dropped"]
    elif old is not None:
        moved = data.compare(old, new)
    if write:
        data.write(with_history(new, old), committed)
        print(f"  wrote {committed.relative_to(ROOT) if committed.is_relative_to(ROOT) else committed}", flush=True)
    return moved


def fragile_section(pages=None) -> tuple[int, list[str]]:
    """The drift report's list of page checks that the data just written could flip on the next run
    (sitekit.fragile): (how many, Markdown lines)."""
    try:
        close = [str(f) for f in fragile.scan(pages)]
        n = len(close)
    except data.DataError as e:
        close, n = [f"could not scan the pages: {e}"], 1
    return n, [
        "## Checks closer to failing than half their figure's noise",
        "",
        *([f"- {c}" for c in close] or ["none"]),
        "",
    ]


def blocks_section(rc: int | None) -> list[str]:
    """The drift report's lines on the GPU code blocks: pytest's exit status and what it means. A run
    whose blocks could not even be collected (exit 2, e.g. pytest-codeblocks missing on the machine)
    must say so in the report, not only in the console."""
    if rc is None:
        return []
    meaning = {
        0: "every selected GPU block passed",
        1: "FAILED: some GPU block failed",
        2: "FAILED: pytest was interrupted, e.g. the blocks could not be collected (is requirements-gpu.txt installed?)",
        5: "no GPU block was selected",
    }.get(rc, "FAILED: pytest could not run the blocks")
    return ["## GPU code blocks", "", f"- pytest exit {rc}: {meaning} (test-artifacts/gpu_blocks.xml)", ""]


def budget_section(
    walls: list[tuple[str, float, float]], blocks_s: float | None = None, blocks: str = "weekly"
) -> list[str]:
    """The drift report's lines on wall time: each dataset (name, seconds, its META budget_s) and the GPU
    code blocks of the run's tier (against BLOCKS_BUDGET_S[blocks]) that took longer than planned. The plan
    (`--plan`, `--budget`, `--fit`) is only as good as these budgets, so a run says where they no longer
    hold; it fails nothing."""
    over = [f"- {name}: {s:.0f} s against its budget of {b:.0f} s (META budget_s)" for name, s, b in walls if s > b]
    if blocks_s is not None and blocks_s > BLOCKS_BUDGET_S[blocks]:
        over.append(
            f"- GPU code blocks ({blocks}): {blocks_s:.0f} s against BLOCKS_BUDGET_S[{blocks!r}] = "
            f"{BLOCKS_BUDGET_S[blocks]} s"
        )
    if not walls and blocks_s is None:
        return []
    return ["## Wall time against the plan's budgets", "", *(over or ["every part ran within its budget"]), ""]


def _wall_of(log_text: str) -> float | None:
    """The seconds measure() wrote in its log header ("### name (12 s, rc=0)")."""
    m = re.match(r"### \S+ \((\d+) s, rc=", log_text)
    return float(m.group(1)) if m else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="report drift against committed data; exit 1 on drift")
    ap.add_argument("--write", action="store_true", help="with --check, still replace data/ with the new results")
    ap.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="re-measure only this dataset (repeatable)"
    )
    ap.add_argument("--no-blocks", action="store_true", help="skip running the GPU-marked code blocks")
    ap.add_argument(
        "--blocks-only",
        action="store_true",
        help="run only the GPU-marked code blocks, no dataset: on any CUDA GPU (they check what a reader's copy "
        "runs and prints, not a measurement of the site's card)",
    )
    ap.add_argument(
        "--stale", action="store_true", help="the GPU datasets older than their code (what data/stale.yml lists)"
    )
    ap.add_argument(
        "--fit",
        type=int,
        default=None,
        metavar="S",
        help="keep only the datasets whose plan fits S seconds (first fit, in registry order); list the rest",
    )
    ap.add_argument(
        "--tier",
        choices=["nightly", "weekly", "all"],
        default="all",
        help="nightly: the datasets of tier nightly; weekly (= all): every GPU dataset of the site's card",
    )
    ap.add_argument(
        "--budget",
        type=int,
        default=None,
        metavar="S",
        help="fail before running anything if the planned wall time (registry budgets) exceeds S seconds",
    )
    ap.add_argument(
        "--new-gpu",
        action="store_true",
        help="measure datasets whose committed data is from another GPU model and replace them (history dropped)",
    )
    ap.add_argument("--plan", action="store_true", help="print the plan and its budget, run nothing")
    ap.add_argument(
        "--log", type=Path, default=ROOT / "test-artifacts" / "gpu_ci.log", help="full output of every script"
    )
    ap.add_argument("--report", type=Path, default=ROOT / "test-artifacts" / "drift.md", help="drift report (Markdown)")
    args = ap.parse_args(argv)

    if args.blocks_only and (args.only or args.stale or args.no_blocks or args.fit is not None or args.new_gpu):
        print(
            "gpu_ci: --blocks-only runs the GPU code blocks and no dataset; it takes none of --only, --stale, "
            "--fit, --no-blocks or --new-gpu",
            file=sys.stderr,
        )
        return 2
    try:
        datasets = [] if args.blocks_only else chosen_datasets(args)
    except registry.RegistryError as e:
        print(f"gpu_ci: {e}", file=sys.stderr)
        return 2
    elsewhere = stale_elsewhere() if args.stale else []
    for d in elsewhere:
        print(f"gpu_ci: left out: {d.name} is stale but measured on an {d.gpu} only (--only {d.name} on that card)")
    if args.fit is not None:
        datasets, left = fit(datasets, args.fit, blocks_tier(args))
        if left:
            print(f"gpu_ci: left for a later run (over --fit {args.fit} s): {', '.join(d.name for d in left)}")
    if not datasets and not args.blocks_only:
        none_stale = args.stale and not elsewhere
        print("gpu_ci: no dataset chosen" + (" (none is stale)" if none_stale else ""), flush=True)
        return 0
    blocks = blocks_tier(args)
    timed, beside, wall = plan_seconds(datasets, blocks)
    print(
        f"gpu_ci: {len(datasets)} datasets{' (GPU code blocks only)' if args.blocks_only else ''}; planned {wall} s = {timed} s timed one at a time + {beside} s of "
        f"code blocks{f' ({blocks} tier)' if blocks else ''} and untimed datasets side by side",
        flush=True,
    )
    if args.budget is not None and wall > args.budget:
        print(
            f"gpu_ci: the plan needs {wall} s, over the budget of {args.budget} s: move datasets to the weekly "
            f"tier or lower their work (budgets are each producer's META)",
            file=sys.stderr,
        )
        return 2
    if args.plan:
        for d in datasets:
            print(f"  {d.name:50s} {d.budget_s:5d} s  {'untimed' if not d.timed else 'timed'}")
        return 0

    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False")
    except (ImportError, RuntimeError) as e:
        print(f"gpu_ci: needs a CUDA GPU and torch with CUDA ({e})", file=sys.stderr)
        return 2
    gpu = torch.cuda.get_device_name()
    wrong = wrong_card(datasets, gpu)
    if wrong:
        print(f"gpu_ci: this GPU is {gpu}:\n  " + "\n  ".join(wrong), file=sys.stderr)
        return 2
    foreign = foreign_gpu(datasets, gpu)
    if foreign and not args.new_gpu:
        print(
            f"gpu_ci: this GPU is {gpu}; {len(foreign)} chosen dataset(s) were measured on another model, and a run "
            f"here would be no check of them:\n  " + "\n  ".join(foreign) + "\nrun on that GPU, choose other "
            "datasets (--only), or pass --new-gpu to move them to this card (their history is dropped)",
            file=sys.stderr,
        )
        return 2
    try:
        from measure.cuda_compilation_pipeline import _pipeline

        t = _pipeline.toolchain()
        print(f"gpu_ci: CUDA toolchain: nvcc {t.release} ({t.version}) from {t.source}", flush=True)
    except _pipeline.ToolchainError as e:
        print(f"gpu_ci: {e}", file=sys.stderr)
        return 2

    t_start = time.time()
    write = not args.check or args.write
    args.log.parent.mkdir(parents=True, exist_ok=True)
    drift, failed, status, blocks_rc, blocks_s, walls = [], [], 0, None, None, []
    untimed = [d for d in datasets if not d.timed]
    timed_ds = [d for d in datasets if d.timed]
    with tempfile.TemporaryDirectory() as t, open(args.log, "w") as log, ThreadPoolExecutor(max_workers=2) as pool:
        tmp = Path(t)
        side = [pool.submit(measure, d, tmp) for d in untimed]  # beside the blocks: they time nothing
        if not args.no_blocks:
            t_blocks = time.time()
            rc = blocks_rc = run_blocks(ROOT / "test-artifacts" / "gpu_blocks.xml", blocks)
            blocks_s = time.time() - t_blocks
            print(f"gpu_ci: GPU code blocks done in {blocks_s:.0f} s (pytest exit {rc})", flush=True)
            if rc not in (0, 5):
                print(f"gpu_ci: GPU code blocks failed (pytest exit {rc})", flush=True)
                status = 1

        def settle(d, result):
            # each dataset is stored as soon as it is measured: a run stopped later keeps what it finished
            new, msg, text = result
            if _wall_of(text) is not None:
                walls.append((d.name, _wall_of(text), d.budget_s))
            log.write(text)
            log.flush()
            print(f"  {d.name}: {msg}", flush=True)
            if new is None:
                failed.append(f"{d.name}: {msg}")
                return
            try:
                drift.extend(store(d, new, write=write, new_gpu=args.new_gpu))
            except ForeignGPU as e:
                failed.append(f"{d.name}: {e}")

        for d, f in zip(untimed, side):
            settle(d, f.result())
        for d in timed_ds:
            settle(d, measure(d, tmp))
    elapsed = time.time() - t_start
    lines = [
        f"# GPU CI drift report ({args.tier}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC, {elapsed:.0f} s)",
        "",
        *blocks_section(blocks_rc),
    ]
    if failed:
        print("\nFAILED measurements (committed data left untouched):\n  " + "\n  ".join(failed))
        lines += ["## Failed (committed data untouched)", "", *[f"- {f}" for f in failed], ""]
        status = 1
    lines += ["## Drift beyond each figure's noise", "", *([f"- {m}" for m in drift] or ["none"]), ""]
    over = budget_section(walls, blocks_s, blocks or "weekly")
    lines += over
    if any(line.startswith("- ") for line in over):
        print("\nover budget (the plan undercounts them):\n  " + "\n  ".join(x[2:] for x in over if x.startswith("- ")))
    if write:
        close, section = fragile_section()
        lines += section
        if close:
            print(f"\n{close} page check(s) close to failing on the next run (listed in the report)")
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text("\n".join(lines), encoding="utf-8")
    if drift:
        print(f"\nDRIFT beyond noise ({len(drift)}):\n  " + "\n  ".join(drift))
        if args.check:
            status = 1
    else:
        print("\nno figure moved beyond its noise")
    print(
        f"gpu_ci: {elapsed:.0f} s end to end; report in {args.report.relative_to(ROOT) if args.report.is_relative_to(ROOT) else args.report}"
    )
    return status


if __name__ == "__main__":
    raise SystemExit(main())
