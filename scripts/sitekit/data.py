"""Datasets: measured results under data/, each a JSON file with provenance.

A dataset is written by one script, on one machine, in one run. Its shape:

    {
      "schema": 1,
      "name": "foundation/ceilings",          # path under data/ without .json
      "provenance": {...},                    # see collect_provenance()
      "metrics": {                            # every measured quantity
        "tbps": {"unit": "TB/s", "noise": 0.05, "better": "higher", "fmt": ".2f"}
      },
      "rows": [                               # one record per measured case
        {"case": "copy", "bytes": 4294967296, "tbps": 4.27}
      ]
    }

A row's keys that are not metrics are parameters: they identify the case, and
`--check` matches rows between the committed and the new dataset by them.
`noise` is the relative change of a metric beyond which `--check` reports drift.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from . import DATA, ROOT

SCHEMA = 1
PROVENANCE_KEYS = ("machine", "gpu", "driver", "cuda", "torch", "triton", "python", "date", "commit", "command")


class DataError(ValueError):
    """A dataset file is missing or does not have the shape the site expects."""


def path_of(name: str) -> Path:
    return DATA / f"{name}.json"


def _git_commit() -> str:
    # An explicit GIT_COMMIT wins: a copied working tree (a GPU machine that receives the files but
    # not the history) can carry a stale .git whose HEAD is not the code being measured.
    if os.environ.get("GIT_COMMIT"):
        return os.environ["GIT_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        # data/ holds outputs, not code: a producer run after another one (which rewrote its dataset)
        # still measures HEAD's code, so changes there do not make the commit "+dirty"
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)data"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
        return out + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model() -> str:
    """The CPU's model name ("Intel(R) Xeon(R) Processor", "AMD EPYC 7763 64-Core Processor") from
    /proc/cpuinfo, with the architecture; the architecture alone where there is no /proc/cpuinfo."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()} ({platform.machine()})"
    except OSError:
        pass
    return platform.machine()


def collect_provenance(argv: list[str] | None = None) -> dict:
    """Describe the machine and software that produced a dataset."""
    argv = list(sys.argv if argv is None else argv)
    if "--out" in argv:  # where the file went is not part of how it was measured
        i = argv.index("--out")
        del argv[i : i + 2]
    prov = {
        # MEASURED_ON names the machine in words (e.g. "NVIDIA H200 machine"); without it, the CPU model
        # and count: CPU timings on a 2-core VM depend on which CPU the VM landed on that day
        "machine": os.environ.get("MEASURED_ON", f"{cpu_model()}, {os.cpu_count()} CPUs"),
        "gpu": None,
        "driver": None,
        "cuda": None,
        "torch": None,
        "triton": None,
        "python": platform.python_version(),
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d"),
        "commit": _git_commit(),
        "command": "python " + " ".join(shlex.quote(a) for a in [os.path.relpath(argv[0], ROOT), *argv[1:]]),
    }
    # torch and Triton only when the producer imported them: a benchmark of MPI or BLAS that never loads
    # them would otherwise carry their versions on its provenance line as if they were part of the run
    if "torch" in sys.modules:
        import torch

        prov["torch"] = torch.__version__
        if torch.cuda.is_available():
            prov["gpu"] = torch.cuda.get_device_name()
            prov["cuda"] = torch.version.cuda
    if "triton" in sys.modules:
        import triton

        prov["triton"] = triton.__version__
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if out.returncode == 0:
            prov["driver"] = out.stdout.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    return prov


def validate(obj: object, where: str) -> dict:
    """Check a dataset's shape; raise DataError naming the file and the problem."""

    def fail(msg: str):
        raise DataError(f"{where}: {msg}")

    if not isinstance(obj, dict):
        fail("top level must be a JSON object")
    if obj.get("schema") != SCHEMA:
        fail(f"'schema' must be {SCHEMA}, found {obj.get('schema')!r}")
    for key in ("name", "provenance", "metrics", "rows"):
        if key not in obj:
            fail(f"missing key '{key}'")
    prov = obj["provenance"]
    if not isinstance(prov, dict):
        fail("'provenance' must be an object")
    for key in PROVENANCE_KEYS:
        if key not in prov:
            fail(f"provenance lacks '{key}'")
    clocks = prov.get("clocks")  # gpu_ci's nvidia-smi summary (sitekit.measure.clock_summary), when present
    if clocks is not None:
        sm, pw, cap = (
            clocks.get(k) if isinstance(clocks, dict) else None for k in ("sm_mhz", "power_w", "power_capped")
        )
        if not (
            isinstance(sm, list)
            and len(sm) == 3
            and all(isinstance(x, (int, float)) for x in sm)
            and sm[0] <= sm[1] <= sm[2]
        ):
            fail(f"provenance 'clocks': 'sm_mhz' must be [min, median, max] in MHz, got {sm!r}")
        if not (isinstance(pw, list) and len(pw) == 2 and all(isinstance(x, (int, float)) for x in pw)):
            fail(f"provenance 'clocks': 'power_w' must be [median, max] in W, got {pw!r}")
        if not (isinstance(cap, (int, float)) and 0 <= cap <= 1):
            fail(f"provenance 'clocks': 'power_capped' must be a fraction in [0, 1], got {cap!r}")
    metrics = obj["metrics"]
    if not isinstance(metrics, dict) or not metrics:
        fail("'metrics' must be a non-empty object")
    for m, meta in metrics.items():
        if not isinstance(meta, dict) or "unit" not in meta or "noise" not in meta:
            fail(f"metric '{m}' needs 'unit' and 'noise'")
        if not (isinstance(meta["noise"], (int, float)) and meta["noise"] >= 0):
            fail(f"metric '{m}': 'noise' must be a non-negative number")
    rows = obj["rows"]
    if not isinstance(rows, list) or not rows:
        fail("'rows' must be a non-empty list")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            fail(f"row {i} is not an object")
        present = [m for m in metrics if m in row]
        if not present:
            fail(f"row {i} has none of the metrics {sorted(metrics)}")
        for m in present:
            v = row[m]
            if v is not None and not (isinstance(v, (int, float)) and math.isfinite(v)):
                fail(f"row {i}: metric '{m}' is {v!r}, expected a finite number or null")
    return obj


_cache: dict[str, tuple[float, dict]] = {}


def load(name: str) -> dict:
    """Load and validate data/<name>.json (cached by modification time)."""
    p = path_of(name)
    if not p.is_file():
        raise DataError(
            f"{p.relative_to(ROOT)}: dataset file not found (its producer is scripts/measure/<article>/<dataset>.py)"
        )
    mtime = p.stat().st_mtime
    hit = _cache.get(name)
    if hit and hit[0] == mtime:
        return hit[1]
    try:
        obj = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise DataError(f"{p.relative_to(ROOT)}: not valid JSON ({e})") from None
    validate(obj, str(p.relative_to(ROOT)))
    if obj["name"] != name:
        raise DataError(f"{p.relative_to(ROOT)}: 'name' is {obj['name']!r}, expected {name!r}")
    _cache[name] = (mtime, obj)
    return obj


SPREAD = "_spread"  # row key `<metric>_spread`: that figure's relative round-to-round spread in this run


def params_of(row: dict, metrics: dict, chosen: dict | None = None) -> dict:
    """The row's parameters: its non-metric keys, without spreads and without the columns that record
    what the run chose for rows of its kind (`chosen`, from the producer's META; see chosen_of)."""
    skip = set((chosen or {}).get(row.get("kind"), ()))
    return {k: v for k, v in row.items() if k not in metrics and not k.endswith(SPREAD) and k not in skip}


def case_key(row: dict, metrics: dict, chosen: dict | None = None) -> str:
    return json.dumps(params_of(row, metrics, chosen), sort_keys=True)


def chosen_of(name: str) -> dict:
    """{row kind: columns} a producer declares as the run's own choices (META chosen); {} if none."""
    from .registry import DATASETS

    ds = next((d for d in DATASETS if d.name == name), None)
    return {k: set(v) for k, v in ds.chosen} if ds else {}


def sources_digest(ds: dict) -> str | None:
    """One hash of all the sources a dataset was measured with (None for data that recorded none)."""
    if not ds.get("sources"):
        return None
    import hashlib

    return hashlib.sha256(json.dumps(ds["sources"], sort_keys=True).encode()).hexdigest()[:16]


def summary(ds: dict) -> dict:
    """One past run of a dataset, kept small: when, which commit and code, and its checked figures per case."""
    checked = [m for m, meta in ds["metrics"].items() if meta.get("check") is not False]
    rows = []
    for r in ds["rows"]:
        figs = {m: r[m] for m in checked if r.get(m) is not None}
        figs.update({m + SPREAD: r[m + SPREAD] for m in checked if r.get(m + SPREAD) is not None})
        if figs:
            rows.append({**params_of(r, ds["metrics"]), **figs})
    p = ds["provenance"]
    entry = {"date": p.get("date"), "commit": p.get("commit"), "sources": sources_digest(ds), "rows": rows}
    if p.get("gpu"):
        entry["gpu"] = p["gpu"]
    return entry


def gpu_of(ds: dict | None) -> str | None:
    """The GPU model a dataset (or one of its history entries) was measured on; None if not recorded."""
    ds = ds or {}
    return (ds.get("provenance") or ds).get("gpu") or None


def same_code_history(ds: dict) -> list[dict]:
    """The history entries measured with this run's code (same sources digest) on the same GPU model, where
    the entry records one, newest first: the runs a verdict over two runs may take as a second opinion."""
    digest = sources_digest(ds)
    gpu = gpu_of(ds)
    return [
        h
        for h in ds.get("history") or []
        if digest is not None and h.get("sources") == digest and not (gpu and gpu_of(h) and gpu_of(h) != gpu)
    ]


def previous_row(ds: dict, row: dict, back: int = 0) -> dict | None:
    """The same case in the run `back` entries into the dataset's history (0 = the run before this one),
    counting only runs of the same code (same sources digest) on the same GPU model, where the entry
    records one: a run of older code, or on another card, is no second opinion."""
    hist = same_code_history(ds)
    if back >= len(hist):
        return None
    chosen = chosen_of(ds["name"])
    key = case_key(row, ds["metrics"], chosen)
    return next((r for r in hist[back]["rows"] if case_key(r, ds["metrics"], chosen) == key), None)


def previous_rows(ds: dict, rows: list[dict], host_side_only: tuple[str, ...] = ()) -> list[dict | None]:
    """previous_row for each of `rows`; or, where the history holds no run of this code but the run before
    was of code that differs from this run's only on the host side (its sources digest is listed in
    `host_side_only` by the test that calls this, with the reason: an argument check, a producer's added
    rows; no kernel changed), the same cases in that run. For the tests that hold a page's run-to-run
    sentences to two runs; span(runs=2) and the drift gate take runs of the same code only."""
    prev = [previous_row(ds, r) for r in rows]
    hist = ds.get("history") or []
    if not any(p is not None for p in prev) and hist and hist[0].get("sources") in host_side_only:
        chosen = chosen_of(ds["name"])
        before = {case_key(r, ds["metrics"], chosen): r for r in hist[0]["rows"]}
        prev = [before.get(case_key(r, ds["metrics"], chosen)) for r in rows]
    return prev


def reference_row(ds: dict, row: dict, metric: str) -> dict | None:
    """The row a ratio `ratio_<x>` divides by: the one row of the same run whose `impl` is `<x>` or ends in
    `_<x>` (ratio_cudnn: impl "sdpa_cudnn", ratio_cublas: "cublas") and whose other parameters all equal
    this row's (a parameter the reference row lacks, such as a kernel name, is not compared). None when
    the metric is no such ratio or no single row matches."""
    if not metric.startswith("ratio_") or metric.endswith(SPREAD) or "impl" not in row:
        return None
    x = metric[len("ratio_") :]
    for suffix in ("_graph", "_best", "_fast"):  # ratio_cublas_graph divides by the same row's graph time
        x = x.removesuffix(suffix)
    mine = params_of(row, ds["metrics"])
    found = [
        r
        for r in ds["rows"]
        if r is not row
        and isinstance(r.get("impl"), str)
        and (r["impl"] == x or r["impl"].endswith("_" + x))
        and all(mine.get(k) == v for k, v in params_of(r, ds["metrics"]).items() if k != "impl")
    ]
    return found[0] if len(found) == 1 else None


def figure_noise(
    ds: dict, row: dict, metric: str, other: dict | None = None, _refs: bool = True, other_ds: dict | None = None
) -> tuple[float, str]:
    """The relative change one figure may show without meaning anything, and where that bound comes from.

    Measured, per figure: twice the largest round-to-round spread recorded for it (this run, the other
    run compared with), and the change between the last two runs in the history, unless the two runs
    chose different settings for the row (META `chosen`). A dataset that records no spread for the
    figure falls back to its metric's declared `noise`. A ratio to another row of the run (reference_row:
    ours against cuDNN's) is no better known than either time it divides, so that row's recorded spreads
    count too, unless the row compared with divides by the same row. other_ds: the dataset `other` belongs to,
    when not `ds` (the drift gate compares a new run's row with the committed one: each run's reference row
    counts, and none cancels)."""
    meta = ds["metrics"][metric]
    ref = reference_row(ds, row, metric) if _refs else None
    if ref is not None:
        other_ref = reference_row(other_ds or ds, other, metric) if other is not None else None
        if other_ref is ref:
            # two ratios over the same time (ours and the Gluon kernel, each against this cell's cuDNN):
            # it cancels in their comparison, which compares the two times alone
            return figure_noise(ds, row, metric, other, _refs=False)
        rows = [r for r in (row, other, ref, other_ref) if r is not None]
        derived = [
            2 * x
            for r in rows
            for k, x in r.items()
            if (k.endswith(SPREAD) or k == "spread") and isinstance(x, (int, float)) and not isinstance(x, bool)
        ]
        base, source = figure_noise(ds, row, metric, other, _refs=False)
        bound = max([base] + derived)
        return bound, source if bound <= base else "measured"
    spreads = [r.get(metric + SPREAD) for r in (row, other) if r is not None]
    spreads = [x for x in spreads if isinstance(x, (int, float))]
    prev = previous_row(ds, row)
    picked = chosen_of(ds["name"]).get(row.get("kind"), set())
    if prev is not None and any(prev.get(c) != row.get(c) for c in picked):
        prev = None  # the run chose another configuration for this row: its change is not noise
    runs = []
    if prev is not None and isinstance(prev.get(metric), (int, float)) and isinstance(row.get(metric), (int, float)):
        a, b = prev[metric], row[metric]
        if not isinstance(a, bool) and a:
            runs.append(abs(b - a) / abs(a))
    if not spreads:
        # No spread recorded for this figure: the declared noise, widened by a larger change between runs
        # and, for a figure derived from the row's timing (a ratio, a bandwidth), by twice the spread of
        # every timing the row (and the row compared with) recorded: `<metric>_spread`, or a bare `spread`
        # (the row's time over rounds). A speed-up whose own time moved by 100 % between rounds is not
        # known to 7 %. Exact figures (declared noise 0) stay exact.
        derived = []
        if meta["noise"]:
            derived = [
                2 * x
                for r in (row, other)
                if r is not None
                for k, x in r.items()
                if (k.endswith(SPREAD) or k == "spread") and isinstance(x, (int, float)) and not isinstance(x, bool)
            ]
        bound = max([float(meta["noise"])] + runs + derived)
        return bound, "declared" if bound <= meta["noise"] else "measured"
    return max([2 * x for x in spreads] + runs + [0.01]), "measured"


def name_of(script: str | Path) -> str:
    """The dataset a producer writes: scripts/measure/<article>/<dataset>.py -> "<article>/<dataset>"."""
    p = Path(script).resolve()
    if p.parent.parent != ROOT / "scripts" / "measure" or p.name.startswith("_"):
        raise DataError(f"{script}: a producer lives at scripts/measure/<article>/<dataset>.py")
    return f"{p.parent.name}/{p.stem}"


def arg_parser(doc: str, name: str) -> argparse.ArgumentParser:
    """The command line every producer of data/<name>.json starts from: its docstring as --help,
    --out PATH (default data/<name>.json) and --quick (a smoke run: small sizes, validated, and
    written only to an explicit --out outside data/). Scripts add their own options to it."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None, help=f"output path (default data/{name}.json)")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, for a smoke test: validated; written only to an explicit --out outside data/",
    )
    return ap


QUICK_ARGS = ("--quick", "--smoke")  # the producers' smoke-run switches: such a run is never committed data


def command_options(dataset: dict) -> list[str]:
    """The options (`--name`, without any `=value`) of the command line in a dataset's provenance."""
    try:
        args = shlex.split((dataset.get("provenance") or {}).get("command") or "")
    except ValueError:
        return []
    return [a.split("=", 1)[0] for a in args[2:] if a.startswith("--")]


def options_given(dataset: dict, options, exact=()) -> list[str]:
    """Which of `options` the dataset's command line gave, spelled out or abbreviated as argparse
    allows (a prefix of four or more characters). Names in `exact` are options of their own, never
    read as an abbreviation (e.g. --mode, not --modes)."""
    found = []
    for name in command_options(dataset):
        for o in options:
            if name == o or (name not in exact and len(name) >= 4 and o.startswith(name)):
                found.append(o)
    return found


def is_quick(dataset: dict) -> bool:
    """Whether the dataset comes from a smoke run (--quick or --smoke in its provenance command)."""
    return bool(options_given(dataset, QUICK_ARGS))


def _refuse_under_data(name: str, out: Path) -> None:
    """A smoke run's dataset has small sizes (and may have fewer cases): it must never land where the
    site reads committed data. Exits with one line."""
    if out.resolve().is_relative_to(DATA.resolve()):
        where = os.path.relpath(out.resolve(), ROOT)
        sys.exit(f"{name}: a --quick run is not written under data/ ({where}); give --out a path outside data/")


def save(dataset: dict, out: Path | str | None = None, *, quick: bool = False) -> int:
    """The last step of a measurement script: write the dataset and say where. A --quick smoke run is
    validated and written only to an explicit `out` outside data/ (tests compare its cases with the
    committed dataset's); without one it is not written. Returns 0, the script's exit status."""
    if quick:
        validate(dataset, "quick run")
        if out is None:
            print("quick run: valid, not written (give --out PATH outside data/ to keep it)")
            return 0
        _refuse_under_data(dataset["name"], Path(out))
        print("quick run: valid, wrote", write(dataset, out))
    else:
        print("wrote", write(dataset, out))
    return 0


def write(dataset: dict, out: Path | str | None = None) -> Path:
    """Validate, then write atomically: a failed run never leaves a half file. A smoke run (--quick
    in its provenance command, also from producers that ignore the switch) is refused under data/."""
    out = Path(out) if out else path_of(dataset["name"])
    validate(dataset, str(out))
    if is_quick(dataset):
        _refuse_under_data(dataset["name"], out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(dataset, f, indent=1, ensure_ascii=False)
            f.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp makes it private; data files are ordinary repository files
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return out


def new(name: str, metrics: dict, rows: list[dict], argv: list[str] | None = None, **extra) -> dict:
    """A dataset with its provenance and `sources`: the content hash of every module this process
    loaded from snippets/ or scripts/measure/ (the producer, its helpers, the page's snippets), so a
    CPU test can tell when the code has moved on from the data (tests/test_data.py)."""
    from .measure import sources

    ds = {
        "schema": SCHEMA,
        "name": name,
        "provenance": collect_provenance(argv),
        "sources": sources(),
        "metrics": metrics,
        "rows": rows,
    }
    ds.update(extra)
    return ds


def compare(old: dict, new_: dict) -> list[str]:
    """Figures of `new_` that moved beyond their noise (figure_noise) against `old`; a target (a boolean
    metric) that flips is always reported."""
    problems = []
    metrics = old["metrics"]
    chosen = chosen_of(new_["name"])
    index = {case_key(r, metrics, chosen): r for r in old["rows"]}
    for row in new_["rows"]:
        key = case_key(row, new_["metrics"], chosen)
        ref = index.get(key)
        if ref is None:
            problems.append(f"{new_['name']}: new case {key} not in committed data")
            continue
        for m, meta in metrics.items():
            a, b = ref.get(m), row.get(m)
            if a is None or b is None or meta.get("check") is False:
                continue
            if isinstance(a, bool) or isinstance(b, bool):
                if bool(a) != bool(b):
                    problems.append(f"{new_['name']}: {key} {m}: target flipped {a} -> {b}")
                continue
            noise, source = figure_noise(old, ref, m, row, other_ds=new_)
            rel = abs(b - a) / max(abs(a), 1e-30)
            if rel > noise:
                problems.append(
                    f"{new_['name']}: {key} {m}: {a:g} -> {b:g} {meta['unit']} "
                    f"({rel:+.1%} > {source} noise {noise:.1%})"
                )
    seen = {case_key(r, new_["metrics"], chosen) for r in new_["rows"]}
    for key in index:
        if key not in seen:
            problems.append(f"{old['name']}: case {key} missing from the new measurement")
    return problems
