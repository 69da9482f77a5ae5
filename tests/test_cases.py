"""The cases of a committed dataset are the cases its producer makes now.

tests/test_data.py checks that the *code* a dataset was measured with has not changed (source hashes).
This file checks its *case set*: the set of `data.case_key(row, metrics)` over the rows of
data/<name>.json (every row key that is not a metric: the parameters of the case, and descriptive
columns such as a compiler's verdict) against a fresh run of scripts/measure/<name>.py, written to a
temporary `--out`. The run is the producer's `--quick` mode; a quick run shrinks sizes, and the
parameters it shrinks are left out of both sets: the producer's META["quick_varies"], or, for a
producer that may not be edited now (its hash is in the data), QUICK_VARIES below.

Which producers are run here, on the 2-core CPU machine (about 25 s in all):
- RUNS: CPU producers (META needs "cpu") whose run takes about 10 s or less.
- COVERED: CPU producers whose full run is already compared row for row (so case for case) with the
  committed file by another test; running them again would only add time.
- Datasets listed in data/stale.yml are skipped: their producer has moved on on purpose and the page
  says so; re-measuring them brings them back here.
- NOT_RUN: CPU producers that cannot be checked here, with the reason.
- GPU producers (META needs "gpu") cannot run here at all: this machine has no CUDA device. Their case
  sets are compared when they are re-measured on the GPU: `scripts/gpu_ci.py --check` reports every
  case that is new or missing against the committed file (data.compare).

test_no_dataset_comes_from_a_partial_run checks that no committed dataset was written by a run that
leaves cases out (--quick, --only, ...), whatever machine it needs.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time

import pytest
import yaml
from sitekit import DATA, ROOT, data
from sitekit.registry import DATASETS, MEASURE

# dataset -> the producer's arguments here (besides --out), with its wall time on the 2-core machine
RUNS = {
    "mlir_architecture/matmul_cpu": ["--quick"],  # ~4 s: one round, doubled; same three variants at n = 512
    "oneapi_installation/dgemm": ["--quick"],  # ~5 s: n = 128 only (QUICK_VARIES)
    "oneapi_installation/mpi_bench": ["--quick"],  # ~3 s: messages up to 1 KiB (QUICK_VARIES)
    "pytorch_compile_stack/call_overhead": ["--quick"],  # ~7 s: fewer calls and rounds, same variants
    "triton_deep_dive/cavity_field": ["--quick"],  # ~3 s: a 32 x 32 grid, averaged onto the same 32 x 32 cells
    # ~40 s in full: its --quick compiles the attention kernels for head dim 64 without mask only, which
    # no parameter list can reduce to the committed cases
    "triton_deep_dive/resources": [],
}

# Parameters a producer's --quick run shrinks, for producers whose META cannot be edited now (their
# hash is in the data; the META line itself is not hashed, so move an entry into the producer's META
# as "quick_varies" the next time it is edited).
QUICK_VARIES = {
    "oneapi_installation/dgemm": ("matrix_n",),
    "oneapi_installation/mpi_bench": ("bytes",),
}

# dataset -> (the test that regenerates it in full and compares its rows, a string that test file must
# contain: the producer it runs)
COVERED = {
    "cuda_compilation_pipeline/gencode": (
        "tests/test_cuda_compilation_pipeline.py::test_gencode_dataset_regenerates",
        "scripts/measure/cuda_compilation_pipeline/gencode.py",
    ),
    "cuda_compilation_pipeline/resources": (
        "tests/test_cuda_compilation_pipeline.py::test_resources_dataset_regenerates",
        "scripts/measure/cuda_compilation_pipeline/resources.py",
    ),
    "how_ai_compilers_work/search_budget": (
        "tests/test_how_ai_compilers_work.py::test_search_budget_replay_and_claims",
        "scripts/measure/how_ai_compilers_work/search_budget.py",
    ),
    "mlir_architecture/ir_samples": (  # its quick run alone takes ~13 s
        "tests/test_mlir_architecture.py::test_samples_regenerate",
        '"ir_samples.py"',
    ),
    "oneapi_installation/packages": (
        "tests/test_oneapi_installation.py::test_packages_dataset_regenerates",
        '"packages.py"',
    ),
    "pytorch_compile_stack/cpu_artifacts": (  # no --quick: it captures every artifact or none
        "tests/test_pytorch_compile_stack.py::test_cpu_artifact_manifest_matches",
        "scripts/measure/pytorch_compile_stack/_artifacts.py",
    ),
    "triton_getting_started/ptx": (  # no --quick: four compiles, ~5 s
        "tests/test_triton_getting_started_ptx.py::test_ptx_table_matches",
        '"ptx.py"',
    ),
    "triton_deep_dive/lbm_3d": (  # the full run, ~9 s
        "tests/test_triton_deep_dive.py::test_3d_validation_regenerates_within_its_noise",
        "scripts/measure/triton_deep_dive/lbm_3d.py",
    ),
    "triton_kernel_practice/resources": (  # ignores --quick; the full run takes ~20 s
        "tests/test_triton_kernel_practice.py::test_resources_dataset_regenerates",
        "scripts/measure/triton_kernel_practice/resources.py",
    ),
}

# CPU producers that cannot be checked here, and why (none at present beyond the stale ones)
NOT_RUN: dict[str, str] = {
    "pytorch_compile_stack/cpu_production": "a quick run takes about 100 s on the 2-core machine (it compiles the "
    "same studies at a smaller depth), too slow for this suite; the page's check() markers hold its figures",
    "pytorch_compile_stack/cpu_workloads": "its kernel rows are keyed by Inductor's generated kernel names, which "
    "change with the input sizes, so a quick run cannot reproduce the case set; a full run takes about 110 s",
}


def _stale() -> set[str]:
    p = DATA / "stale.yml"
    return set((yaml.safe_load(p.read_text(encoding="utf-8")) or {}) if p.exists() else {})


CPU = {d.name: d for d in DATASETS if d.needs == "cpu"}


def _varies(name: str) -> tuple[str, ...]:
    return tuple(CPU[name].quick_varies) or QUICK_VARIES.get(name, ())


def case_set(ds: dict, leave_out: tuple[str, ...] = ()) -> set[str]:
    """The dataset's cases: each row's parameters (data.params_of), without those in `leave_out`."""
    out = set()
    for r in ds["rows"]:
        p = {k: v for k, v in data.params_of(r, ds["metrics"]).items() if k not in leave_out}
        out.add(json.dumps(p, sort_keys=True))
    return out


def test_every_cpu_producer_is_checked_or_says_why():
    stale = _stale()
    places = {"RUNS": set(RUNS), "COVERED": set(COVERED), "NOT_RUN": set(NOT_RUN)}
    for where, names in places.items():
        unknown = sorted(names - set(CPU))
        assert not unknown, f"tests/test_cases.py {where} names no CPU dataset: {unknown}"
    listed = [n for names in places.values() for n in names]
    twice = sorted({n for n in listed if listed.count(n) > 1})
    assert not twice, f"tests/test_cases.py lists these in more than one place: {twice}"
    missing = sorted(set(CPU) - set(listed) - stale)
    assert not missing, (
        f"CPU datasets whose case set nothing checks: {missing}; add each to RUNS in tests/test_cases.py "
        "(a run of about 10 s or less), to COVERED (another test compares its rows) or to NOT_RUN with the reason"
    )
    both = sorted(n for n in QUICK_VARIES if CPU[n].quick_varies)
    assert not both, f"quick_varies declared in META and in tests/test_cases.py QUICK_VARIES: {both}"


@pytest.mark.parametrize("name", sorted(COVERED))
def test_covering_test_exists(name):
    where, needle = COVERED[name]
    path, func = where.split("::")
    text = (ROOT / path).read_text(encoding="utf-8")
    assert f"def {func}(" in text, f"tests/test_cases.py: {name} is said to be checked by {where}, which is gone"
    assert needle in text, f"tests/test_cases.py: {where} no longer runs {needle}"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_quick_varies_names_parameters(name):
    """A name in quick_varies that is no parameter of the rows is a typo, and leaves the parameter meant in."""
    committed = data.load(name)
    params = {k for r in committed["rows"] for k in data.params_of(r, committed["metrics"])}
    unknown = sorted(set(_varies(name)) - params)
    assert not unknown, (
        f"quick_varies of {name} names no parameter of its rows: {unknown} (parameters: {sorted(params)})"
    )


@pytest.mark.parametrize("name", sorted(RUNS))
def test_producer_makes_the_committed_cases(name, tmp_path):
    if name in _stale():
        pytest.skip(f"{name} is listed in data/stale.yml: its producer has moved on on purpose")
    d = CPU[name]
    out = tmp_path / "quick.json"
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, d.script, *RUNS[name], "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"},
    )
    wall = time.perf_counter() - t0
    assert p.returncode == 0, f"{d.script} {' '.join(RUNS[name])} failed:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    assert out.is_file(), f"{d.script} {' '.join(RUNS[name])} --out {out} wrote nothing:\n{p.stdout[-1000:]}"
    fresh = json.loads(out.read_text(encoding="utf-8"))
    committed = data.load(name)
    leave_out = _varies(name)
    assert set(fresh["metrics"]) == set(committed["metrics"]), (
        f"data/{name}.json: metrics {sorted(committed['metrics'])}, the producer now {sorted(fresh['metrics'])}"
    )
    now, then = case_set(fresh, leave_out), case_set(committed, leave_out)
    if now != then:
        left = f" (without {', '.join(leave_out)})" if leave_out else ""
        lines = [f"data/{name}.json has other cases{left} than {d.script} {' '.join(RUNS[name])} makes now:"]
        lines += [f"  missing from the run: {k}" for k in sorted(then - now)]
        lines += [f"  not in the committed file: {k}" for k in sorted(now - then)]
        lines.append(
            f"re-measure with python {d.script}, or list it in data/stale.yml with the reason; if only the sizes of "
            "the quick run differ, name those parameters in the producer's META quick_varies"
        )
        pytest.fail("\n".join(lines))
    if not RUNS[name]:  # a run in full makes the committed rows themselves: every figure within its noise too
        problems = data.compare(committed, fresh)
        assert not problems, f"data/{name}.json differs from what {d.script} makes now:\n" + "\n".join(problems)
    # a --quick run should take about 10 s; one run in full (no arguments) about its META budget_s. Twice
    # that is the limit: a 2-core machine under load stretches a run, a producer that grew does not fit
    if RUNS[name]:
        assert wall < 60, f"{d.script} took {wall:.0f} s here: move it out of RUNS (the budget is about 10 s)"
    else:
        assert wall < 2 * d.budget_s, f"{d.script} took {wall:.0f} s here, its META budget_s is {d.budget_s}"


# ------------------------------------------------------------------------ partial runs

# Options after which a run does not make the producer's whole case set. An option that no producer
# accepts any more stays listed when a committed dataset's command still carries it.
CASE_ARGS = {
    "--quick": "small sizes, for a smoke test (data.arg_parser)",
    "--smoke": "how_ai_compilers_work: tiny sizes on a CPU",
    "--only": "a subset of the workloads or artifacts",
    "--modes": "cpu_workloads: a subset of the compile modes",
    "--sizes": "dgemm: other matrix sizes than the page's",
    "--max-bytes": "mpi_bench: another largest message",
    "--no-logs": "_artifacts: the Dynamo log captures left out",
    "--no-compile": "lbm_speed: the torch.compile cases left out",
    "--budget-s": "the former pytorch_compile_stack_gpu.py: cases past a wall-clock budget skipped",
}
# Options that do not change which cases a run makes (how, where or how often it measures them)
NEUTRAL_ARGS = {
    "--out": "where the dataset goes (not recorded)",
    "--propose": "inference_sweep: prints linear.py's tables from a sweep file, measures and writes nothing",
    "--rounds": "timing rounds",
    "--allow-busy": "oneAPI timings: measure although the machine is busy (the load is recorded either way)",
    "--jobs": "parallel builds",
    "--procs": "processes per timed case",
    "--workers": "parallel compiles",
    "--seeds": "seeds of a randomized search (recorded as a figure)",
    "--autotune": "search_budget: the autotune dataset replayed",
    "--from": "cuda resources: parse a saved output of the same block",
    "--arch": "h200: the GPU's architecture, read from the GPU without it",
    "--device": "_artifacts and gpu_workloads: fixed by the dataset (gpu_workloads --device cpu needs --quick)",
    "--name": "_artifacts: the dataset name",
    "--out-name": "_artifacts: the dataset a producer writes",
    "--ir-dir": "where artifact files go",
    "--out-dir": "where artifact files go",
    "--ptx-out": "where the PTX excerpt goes",
    "--keep-going": "_artifacts: a failing capture recorded instead of stopping",
    "--split-committed": "gpu_autotune: a one-off documented repair of committed rows",
    "--workload": "_case.py: one case in a child process, not a dataset's command",
    "--mode": "_case.py",
    "--size": "_case.py",
    "--phase": "_case.py",
    "--case": "dram_bytes, dram_check: one case in the process ncu profiles, not a dataset's command",
}

# committed datasets that come from a partial run, known and shown on the page (data/stale.yml)
KNOWN_PARTIAL: dict[str, str] = {}


def _options_of_measure_scripts() -> set[str]:
    """Every --option an argparse parser under scripts/measure/ (or data.arg_parser) declares, and the
    ones a producer reads from its argv by hand."""
    found = {"--out", "--quick"}
    for path in sorted(MEASURE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                found |= {a.value for a in node.args if isinstance(a, ast.Constant) and str(a.value).startswith("--")}
            elif isinstance(node, ast.Compare) and any(  # "--device" in argv, args == ["--split-committed"]
                isinstance(x, ast.Name) and "arg" in x.id for x in [node.left, *node.comparators]
            ):
                for c in ast.walk(node):
                    if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.startswith("--"):
                        found.add(c.value)
    return found


def test_every_producer_option_is_classified():
    options = _options_of_measure_scripts()
    unclassified = sorted(options - set(CASE_ARGS) - set(NEUTRAL_ARGS))
    assert not unclassified, (
        f"producer options not classified in tests/test_cases.py: {unclassified}; add each to CASE_ARGS (the run "
        "then leaves cases out or changes them) or to NEUTRAL_ARGS"
    )
    assert not set(CASE_ARGS) & set(NEUTRAL_ARGS)


@pytest.mark.parametrize("d", DATASETS, ids=[d.name for d in DATASETS])
def test_no_dataset_comes_from_a_partial_run(d):
    """A dataset written by a run that leaves cases out (--quick, --only, ...) must not be committed."""
    committed = json.loads(data.path_of(d.name).read_text(encoding="utf-8"))
    given = data.options_given(committed, CASE_ARGS, exact=NEUTRAL_ARGS)
    if d.name in KNOWN_PARTIAL:
        assert given, f"tests/test_cases.py KNOWN_PARTIAL lists {d.name}, whose command is now whole: remove it"
        assert d.name in _stale(), f"{d.name} comes from a partial run: it must stay listed in data/stale.yml"
        return
    assert not given, (
        f"data/{d.name}.json was written by a partial run ({committed['provenance']['command']}: "
        f"{', '.join(f'{o}: {CASE_ARGS[o]}' for o in given)}); re-measure it with the producer's whole case set"
    )


def test_partial_command_detection():
    ds = {"provenance": {"command": "python scripts/measure/a/b.py --rounds 3 --only=mlp"}}
    assert data.options_given(ds, CASE_ARGS, exact=NEUTRAL_ARGS) == ["--only"]
    assert data.options_given({"provenance": {"command": "python x.py --quic"}}, CASE_ARGS) == ["--quick"]
    assert data.options_given({"provenance": {"command": "python x.py --mode cold"}}, CASE_ARGS, NEUTRAL_ARGS) == []
    assert data.is_quick({"provenance": {"command": "python x.py --smoke"}})
    assert not data.is_quick({"provenance": {"command": "python x.py --rounds 7"}})


def test_cpu_datasets_with_targets_are_regenerated_in_full():
    """A CPU dataset's table says that the suite runs its producer again and fails on drift or a flipped target
    (sitekit.render, "one_run_cpu"): that holds only for the producers a COVERED test regenerates in full."""
    for name, ds in CPU.items():
        committed = DATA / f"{name}.json"
        if not committed.is_file():
            continue
        metrics = json.loads(committed.read_text(encoding="utf-8"))["metrics"]
        if any(m.get("unit") == "bool" for m in metrics.values()):
            assert name in COVERED, (
                f"{name}: a CPU dataset with targets must be regenerated in full by a test (COVERED)"
            )
