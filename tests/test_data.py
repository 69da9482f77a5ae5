"""Datasets: every file valid, exactly one producer per dataset (name = path), data no older than its
code (source hashes, or listed in data/stale.yml), drift detection and verdicts over two runs work,
the nightly GPU CI plan fits its budget, and a failed or invalid measurement never replaces good data."""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from sitekit import DATA, ROOT, data, registry, render
from sitekit.registry import DATASETS

FILES = sorted(p for p in DATA.rglob("*.json"))
DATASET_FILES = sorted(p for p in DATA.glob("*/*.json"))


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(DATA).as_posix() for p in FILES])
def test_dataset_is_valid_and_registered(path):
    name = path.relative_to(DATA).with_suffix("").as_posix()
    obj = json.loads(path.read_text(encoding="utf-8"))
    if obj.get("schema") is None and "artifacts" in obj:
        pytest.skip("artifact manifest, checked by its article's regeneration test")
    data.load(name)
    registered = {d.name: d for d in DATASETS}
    assert name in registered, f"{path.relative_to(ROOT)} has no producer scripts/measure/{name}.py"
    if registered[name].needs == "gpu":
        assert obj["provenance"]["gpu"], f"{path.relative_to(ROOT)}: a GPU dataset without a GPU in its provenance"


# `python <script> --help` for every producer, each in its own process, without paying torch's import
# (about a second on the CI machine) once per script: one interpreter imports torch, then forks a child per
# script that runs it as `python <script>` would (__main__, argv, the script's folder first on sys.path)
# and reports its exit status and output through a pipe. A module the script imports is the child's own.
_HELP_RUNNER = r"""
import contextlib, io, json, os, runpy, sys
import torch  # noqa: F401  (every producer imports it; the children inherit it)
for script in sys.argv[1:]:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        out, rc = io.StringIO(), 0
        sys.argv, sys.path[0] = [script, "--help"], os.path.dirname(os.path.abspath(script))
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                runpy.run_path(script, run_name="__main__")
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException as e:
            rc = 1
            out.write(f"{type(e).__name__}: {e}")
        with os.fdopen(w, "w") as f:
            f.write(json.dumps({"rc": rc, "out": out.getvalue()}))
        os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        got = f.read()
    _, status = os.waitpid(pid, 0)
    print(json.dumps({"script": script, "status": status, **(json.loads(got) if got else {"rc": -1, "out": ""})}))
"""


def test_registry_scripts_have_help():
    scripts = [d.script for d in DATASETS]
    p = subprocess.run(
        [sys.executable, "-c", _HELP_RUNNER, *scripts], cwd=ROOT, capture_output=True, text=True, timeout=600
    )
    assert p.returncode == 0, p.stderr[-3000:]
    results = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert [r["script"] for r in results] == scripts, p.stdout[-3000:]
    for r in results:
        assert r["status"] == 0 and r["rc"] == 0 and "--out" in r["out"], (
            f"{r['script']} --help must work and document --out:\n{r['out'][-3000:]}"
        )


def test_every_dataset_has_exactly_one_producer_and_every_producer_one_dataset():
    files = {p.relative_to(DATA).with_suffix("").as_posix() for p in DATASET_FILES}
    producers = [d.name for d in DATASETS]
    assert len(producers) == len(set(producers))
    assert not files - set(producers), (
        f"datasets without a producer scripts/measure/<name>.py: {sorted(files - set(producers))}"
    )
    assert not set(producers) - files, f"producers whose dataset is not committed: {sorted(set(producers) - files)}"
    strays = sorted(
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "scripts").glob("*.py")
        if p.name not in ("gpu_ci.py", "mkdocs_hooks.py", "uv_env.py", "vendor_js.py")
    )
    assert not strays, f"article scripts belong under scripts/measure/<article>/: {strays}"


def test_every_dataset_names_its_producer_path():
    for d in DATASETS:
        obj = json.loads(data.path_of(d.name).read_text(encoding="utf-8"))
        assert obj["name"] == d.name, f"data/{d.name}.json says name {obj['name']!r}"


def _stale_list() -> dict:
    p = DATA / "stale.yml"
    return (yaml.safe_load(p.read_text(encoding="utf-8")) or {}) if p.exists() else {}


def _moved_sources(obj: dict) -> list[str]:
    from sitekit.stale import moved_sources

    return moved_sources(obj)


@pytest.mark.parametrize("d", DATASETS, ids=[d.name for d in DATASETS])
def test_data_is_not_older_than_its_code(d):
    """A dataset's recorded source hashes (producer, helpers, the snippets it imported) must match the
    files now, or the dataset must be listed in data/stale.yml (shown on the page); never both."""
    obj = json.loads(data.path_of(d.name).read_text(encoding="utf-8"))
    moved = _moved_sources(obj)
    listed = d.name in _stale_list()
    if moved and not listed:
        pytest.fail(
            f"data/{d.name}.json is older than its code ({', '.join(moved)} changed): re-measure with "
            f"{d.script}, or list it in data/stale.yml with the reason (the page then says so)"
        )
    if listed and not moved:
        pytest.fail(f"data/stale.yml lists {d.name}, but its sources match: remove the entry")
    if obj.get("sources"):
        assert d.script in obj["sources"], f"data/{d.name}.json: its producer {d.script} is not among its sources"


def _git_blobs(specs: list[str]) -> dict[str, bytes | None]:
    """The contents of many "<commit>:<path>" objects through one `git cat-file --batch` (None: absent)."""
    proc = subprocess.run(
        ["git", "cat-file", "--batch"],
        cwd=ROOT,
        input="".join(s + "\n" for s in specs).encode(),
        capture_output=True,
        check=True,
    )
    out, pos, blobs = proc.stdout, 0, {}
    for spec in specs:
        eol = out.index(b"\n", pos)
        header = out[pos:eol].split()
        pos = eol + 1
        if header[-1] == b"missing" or len(header) != 3:
            blobs[spec] = None
            continue
        size = int(header[2])
        blobs[spec] = out[pos : pos + size]
        pos += size + 1
    return blobs


def test_provenance_commit_holds_the_code_that_was_measured():
    """The commit a dataset names (and each run its history keeps) must be one whose files hash to the
    sources recorded with the figures. A GPU machine receives a copy of the working tree with a stale
    .git, so a producer run there without GIT_COMMIT names an older commit than the code it measured
    (this happened once, and was corrected by hand). "+dirty" and unrecorded runs cannot be checked."""
    from sitekit.measure import source_hash

    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the commits cannot be read")
    shallow = subprocess.run(
        ["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    runs = []  # (dataset, which run, commit, {path: hash} or a digest of them, the paths)
    for d in DATASETS:
        obj = json.loads(data.path_of(d.name).read_text(encoding="utf-8"))
        src = obj.get("sources")
        if not isinstance(src, dict) or not src:
            continue
        runs.append((d.name, "this run", obj["provenance"].get("commit", ""), src, sorted(src)))
        for i, h in enumerate(obj.get("history") or []):
            if isinstance(h.get("sources"), str):
                runs.append((d.name, f"history[{i}]", h.get("commit", ""), h["sources"], sorted(src)))
    runs = [r for r in runs if r[2] and r[2] != "unknown" and "+" not in r[2]]
    blobs = _git_blobs(sorted({f"{c}:{p}" for _, _, c, _, paths in runs for p in paths}))
    wrong, checked, unknown_commits = [], 0, set()
    for name, which, commit, recorded, paths in runs:
        got = {p: blobs[f"{commit}:{p}"] for p in paths}
        if all(v is None for v in got.values()):
            unknown_commits.add(commit)
            continue
        hashes = {p: source_hash(v, p) for p, v in got.items() if v is not None}
        if isinstance(recorded, dict):
            bad = sorted(p for p in paths if hashes.get(p) != recorded[p])
            if bad:
                wrong.append(
                    f"data/{name}.json ({which}) names {commit}, whose {', '.join(bad)} differ from the "
                    "code it recorded"
                )
        elif len(hashes) == len(paths):  # a digest of the sources: comparable while the set of files is the same
            if data.sources_digest({"sources": hashes}) != recorded:
                wrong.append(f"data/{name}.json ({which}) names {commit}, whose sources do not match its digest")
        else:
            continue
        checked += 1
    if unknown_commits and shallow != "true":
        wrong.append(f"commits named in provenance but not in this repository: {sorted(unknown_commits)}")
    assert not wrong, "\n".join(wrong) + (
        "\n(set GIT_COMMIT to the commit whose tree is measured when the producer runs on a copied tree)"
    )
    if shallow == "true":  # a shallow clone holds few of the measured commits, if any
        if not checked:
            pytest.skip("a shallow clone holds none of the measured commits")
        return
    assert checked >= 40, f"only {checked} runs could be checked: the test no longer covers the datasets"


def test_stale_entries_name_datasets_in_both_languages():
    for name, why in _stale_list().items():
        assert name in {d.name for d in DATASETS}, f"data/stale.yml: unknown dataset {name!r}"
        assert isinstance(why, dict) and why.get("en") and why.get("zh"), (
            f"data/stale.yml: {name} needs en and zh reasons"
        )


def test_stale_dataset_is_marked_on_the_page():
    line = render.provenance_line(data.load(DATASETS[0].name), "en")
    if DATASETS[0].name in _stale_list():
        assert "stale" in line
    assert f"scripts/measure/{DATASETS[0].name}.py" in line


def test_readme_states_the_weekly_plan_gpu_ci_makes():
    """README's weekly-tier figure is the plan gpu_ci.py makes from the producers' budgets (it once said
    2,379 s while the plan had grown to 2,862 s)."""
    import re

    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_ci

    weekly = gpu_ci.chosen_datasets(argparse.Namespace(only=None, stale=False, tier="weekly"))
    assert weekly == [d for d in DATASETS if d.needs == "gpu" and not d.gpu and d.tier in ("nightly", "weekly")]
    wall = gpu_ci.plan_seconds(weekly, blocks="weekly")[2]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"The weekly tier \(every GPU dataset of the H200\) plans ([\d,]+) s \((\d+) minutes", readme)
    assert m, "README.md no longer states the weekly plan"
    assert int(m.group(1).replace(",", "")) == wall, f"README says {m.group(1)} s, gpu_ci.py plans {wall} s"
    assert int(m.group(2)) == round(wall / 60), f"README says {m.group(2)} minutes for {wall} s"


def _gpu_ci_cli(*args: str) -> subprocess.CompletedProcess:
    """scripts/gpu_ci.py run as a user runs it, from the repository root."""
    return subprocess.run(
        [sys.executable, "scripts/gpu_ci.py", *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )


def test_gpu_ci_nightly_plan_fits_eight_minutes():
    """The nightly GPU CI (code blocks beside the untimed datasets, then the timed ones alone) must fit
    in 8 minutes on the H200, by the registry's budgets; gpu_ci.py --budget enforces it at run time."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_ci

    nightly = gpu_ci.chosen_datasets(argparse.Namespace(only=None, stale=False, tier="nightly"))
    timed, beside, wall = gpu_ci.plan_seconds(nightly, blocks="nightly")
    assert wall <= 480, f"nightly plan {wall} s (timed {timed} s + {beside} s side by side) exceeds 480 s"
    p = _gpu_ci_cli("--tier", "nightly", "--budget", "10")
    assert p.returncode == 2 and "over the budget of 10 s" in p.stderr
    p = _gpu_ci_cli("--tier", "nightly", "--plan")
    assert f"+ {gpu_ci.BLOCKS_BUDGET_S['nightly']} s of code blocks (nightly tier)" in p.stdout, p.stdout


def test_gpu_ci_nightly_blocks_leave_out_the_weekly_marked_ones():
    """The nightly tier runs the GPU blocks but the ones marked weekly (pytest -m on the marks that
    tests/test_codeblocks.py gives each block); every other run, all of them. A weekly mark on a block the
    CPU CI runs would choose nothing, so test_codeblocks refuses it."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_ci
    from sitekit.pages import all_blocks

    assert gpu_ci.BLOCKS_MARKER == {"nightly": "gpu_block and not weekly_block", "weekly": "gpu_block"}
    ns = argparse.Namespace
    assert gpu_ci.blocks_tier(ns(no_blocks=False, tier="nightly", only=None, blocks_only=False)) == "nightly"
    assert gpu_ci.blocks_tier(ns(no_blocks=False, tier="nightly", only=["a/b"], blocks_only=False)) == "weekly"
    assert gpu_ci.blocks_tier(ns(no_blocks=False, tier="all", only=None, blocks_only=False)) == "weekly"
    assert gpu_ci.blocks_tier(ns(no_blocks=True, tier="nightly", only=None, blocks_only=False)) is None
    weekly = [b for b in all_blocks() if "weekly" in b.marks]
    # the three that BLOCKS_BUDGET_S's comment names, on both languages' pages
    assert sorted(b.id.split("#")[0] for b in weekly) == sorted(
        f"{lang}/{page}.md"
        for lang in ("en", "zh")
        for page in ("cuda-compilation-pipeline", "pytorch-compile-stack", "triton-deep-dive")
    )
    assert all("gpu" in b.marks or "gpu" in b.marks.get("needs", ()) for b in weekly)
    assert gpu_ci.BLOCKS_BUDGET_S["nightly"] < gpu_ci.BLOCKS_BUDGET_S["weekly"]


def test_gpu_ci_stale_chooses_what_stale_yml_lists_and_fit_splits_it_across_runs():
    """--stale re-measures exactly the GPU datasets older than their code; --fit keeps what fits one lent
    command (first fit, registry order) and names the rest, which the next --stale run picks up."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_ci
    from sitekit.stale import current

    now = current()
    stale_gpu = [d.name for d in DATASETS if d.needs == "gpu" and not d.gpu and d.name in now]
    p = _gpu_ci_cli("--stale", "--no-blocks", "--plan")
    assert p.returncode == 0, p.stderr
    listed = [line.split()[0] for line in p.stdout.splitlines() if line.startswith("  ")]
    assert listed == stale_gpu
    by = {d.name: d for d in DATASETS}
    ds = [by["how_ai_compilers_work/dram_check"], by["triton_deep_dive/cavity"], by["how_ai_compilers_work/fusion"]]
    kept, left = gpu_ci.fit(ds, by["how_ai_compilers_work/dram_check"].budget_s + 5, blocks=None)
    assert [d.name for d in left] == ["triton_deep_dive/cavity", "how_ai_compilers_work/fusion"]  # 10 s, 15 s over
    assert gpu_ci.plan_seconds(kept, blocks=None)[2] <= by["how_ai_compilers_work/dram_check"].budget_s + 5
    kept, left = gpu_ci.fit(ds, 10, blocks=None)
    assert [d.name for d in kept] == ["triton_deep_dive/cavity"]  # too big ones skipped, a later small one kept
    p = _gpu_ci_cli("--stale", "--only", "foundation/ceilings", "--plan")
    assert p.returncode == 2 and "give one" in p.stderr


def test_every_target_names_the_figure_it_judges():
    """A met* metric declares `of` (the figure) so that a table cell can say when that figure is within its
    noise of the target (render.near_target); the target is the metric's `target` or the row's target* column."""
    import re

    for f in sorted((ROOT / "scripts" / "measure").rglob("*.py")):
        for m in re.finditer(r'"(met[_a-z]*)": \{([^}]*)\}', f.read_text(encoding="utf-8")):
            assert '"of"' in m.group(2), f"{f.relative_to(ROOT)}: metric {m.group(1)} has no 'of'"


def test_registry_refuses_bad_meta(tmp_path, monkeypatch):
    bad = tmp_path / "x.py"
    for text, msg in [
        ("print(1)\n", "no module-level META"),
        ("META = {'needs': 'tpu'}\n", "needs must be one of"),
        ("META = {'tier': 'hourly'}\n", "tier must be one of"),
        ("META = {'budget_s': -1}\n", "budget_s"),
        ("META = dict(a=1)\n", "plain dict literal"),
        ("META = {'quick_varies': 'n'}\n", "quick_varies must be a list"),
        ("META = {'size': 1}\n", "takes only the keys"),
    ]:
        bad.write_text(text)
        monkeypatch.setattr(registry, "ROOT", tmp_path)
        with pytest.raises(registry.RegistryError, match=msg):
            registry._meta(bad)


def _sample():
    return data.new(
        "test/sample", {"v": {"unit": "x", "noise": 0.05}}, [{"case": "a", "v": 1.0}, {"case": "b", "v": 2.0}]
    )


def test_compare_reports_drift_beyond_noise_only():
    old = _sample()
    new = copy.deepcopy(old)
    new["rows"][0]["v"] = 1.04  # within 5 %
    assert data.compare(old, new) == []
    new["rows"][1]["v"] = 2.5  # +25 %
    moved = data.compare(old, new)
    assert len(moved) == 1 and '"case": "b"' in moved[0] and "+25.0%" in moved[0]
    del new["rows"][0]
    assert any("missing from the new measurement" in m for m in data.compare(old, new))


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda d: d.pop("provenance"), "missing key 'provenance'"),
        (lambda d: d["provenance"].pop("gpu"), "provenance lacks 'gpu'"),
        (lambda d: d["rows"].clear(), "non-empty list"),
        (lambda d: d["rows"][0].update(v=float("nan")), "finite number"),
        (lambda d: d["metrics"]["v"].pop("noise"), "needs 'unit' and 'noise'"),
    ],
)
def test_invalid_dataset_is_rejected_and_good_file_kept(tmp_path, mutate, message):
    good = _sample()
    out = tmp_path / "sample.json"
    data.write(good, out)
    before = out.read_bytes()
    bad = copy.deepcopy(good)
    mutate(bad)
    with pytest.raises(data.DataError, match=message):
        data.write(bad, out)
    assert out.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["sample.json"], "a temporary file was left behind"


def test_render_errors_name_the_file():
    with pytest.raises(data.DataError, match=r"data/nope/none\.json"):
        render.render_page('{{ table("nope/none", cols=["a"]) }}', "en", "en/x.md")
    with pytest.raises(data.DataError, match="column 'nope'"):
        render.render_page('{{ table("foundation/ceilings", cols=["nope"]) }}', "en", "en/x.md")


def test_a_setting_a_kernel_lacks_shows_a_dash_not_the_recorded_zero():
    """table(na=...): the fused softmax has no loop, so its num_stages and unroll cells read "—", not the 0
    the producer records; an na clause that names a hidden column or matches no row is an error."""
    call = (
        '{{ table("triton_kernel_practice/tuning", cols=["kernel", "num_stages", "unroll", "tbps"], '
        'where={"table": "softmax_online"}%s) }}'
    )
    plain = render.render_page(call % "", "en", "en/x.md")
    dashed = render.render_page(
        call % ', na={"num_stages": {"kernel": "fused"}, "unroll": {"kernel": "fused"}}', "en", "en/x.md"
    )
    fused = [ln for ln in dashed.splitlines() if ln.startswith("| fused")]
    assert len(fused) == 1 and fused[0].split(" | ")[1:3] == ["—", "—"], fused
    assert [ln for ln in plain.splitlines() if ln.startswith("| fused")][0].split(" | ")[1:3] == ["0", "0"]
    online = [ln for ln in dashed.splitlines() if ln.startswith("| online")]
    assert online and not any("—" in ln for ln in online)
    with pytest.raises(data.DataError, match="does not show"):
        render.render_page(call % ', na={"regs": {"kernel": "fused"}}', "en", "en/x.md")
    with pytest.raises(data.DataError, match="matches no row"):
        render.render_page(call % ', na={"unroll": {"kernel": "nope"}}', "en", "en/x.md")


def test_render_uses_page_language():
    en = render.render_page(
        '{{ table("foundation/ceilings", cols=["case", "tbps"], where={"kind": "memory"}) }}', "en", "en/x.md"
    )
    zh = render.render_page(
        '{{ table("foundation/ceilings", cols=["case", "tbps"], where={"kind": "memory"}) }}', "zh", "zh/x.md"
    )
    assert "Measured on NVIDIA H200" in en and "测量环境：NVIDIA H200" in zh
    assert "带宽" in zh and "Bandwidth" in en


def test_plot_is_inline_svg_in_current_color():
    svg = render.render_page(
        '{{ plot("foundation/ceilings", x="shape", y="tflops", series="case", where={"kind": "matmul"}, kind="bar") }}',
        "en",
        "en/x.md",
    )
    assert svg.count("<svg") == 1 and 'fill="currentColor"' in svg and "provenance" in svg


def test_a_plot_axis_title_is_never_a_raw_column_name():
    """ylabel="frac_copy" once put the column's name on a decode plot's axis; the column's title is what a
    reader should see, and leaving ylabel out gives it."""
    page = '{{ plot("foundation/ceilings", x="shape", y="tflops", series="case", where={"kind": "matmul"}, kind="bar", ylabel="tflops") }}'
    with pytest.raises(data.DataError, match="ylabel='tflops' is a column name"):
        render.render_page(page, "en", "en/x.md")


def test_gpu_ci_refuses_without_gpu():
    p = subprocess.run(
        [sys.executable, "scripts/gpu_ci.py", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    import needs

    if needs.has_gpu():
        pytest.skip("this machine has a GPU; the refusal path is for CPU-only machines")
    assert p.returncode == 2 and "needs a CUDA GPU" in p.stderr


def test_unknown_dataset_is_a_clear_error():
    p = subprocess.run(
        [sys.executable, "-c", "from sitekit.registry import by_name; by_name('nope')"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode != 0 and "unknown dataset 'nope'" in p.stderr and "foundation/ceilings" in p.stderr


def test_save_writes_a_quick_run_only_to_an_explicit_path_outside_data(tmp_path, capsys):
    from sitekit import data

    argv = ["scripts/measure/foundation/quick_check.py", "--quick"]
    ds = data.new("foundation/quick_check", {"x": {"unit": "s", "noise": 0.1}}, [{"case": "a", "x": 1.0}], argv=argv)
    assert data.save(ds, None, quick=True) == 0 and not data.path_of(ds["name"]).exists()
    assert "not written" in capsys.readouterr().out
    out = tmp_path / "d.json"
    assert data.save(ds, out, quick=True) == 0 and out.exists()  # tests/test_cases.py compares its cases
    with pytest.raises(data.DataError):
        data.save({**ds, "rows": []}, tmp_path / "e.json", quick=True)  # a quick run is still validated
    assert not (tmp_path / "e.json").exists()
    # never where the site reads committed data: neither through save() nor through write(), which
    # producers that ignore --quick call directly
    for target in (None, data.path_of(ds["name"]), data.DATA / "elsewhere.json"):
        with pytest.raises(SystemExit, match="a --quick run is not written under data/"):
            data.write(ds, target)
    with pytest.raises(SystemExit, match="give --out a path outside data/"):
        data.save(ds, data.path_of("foundation/ceilings"), quick=True)
    assert not data.path_of(ds["name"]).exists() and not (data.DATA / "elsewhere.json").exists()


def _gpu_ci():
    sys.path.insert(0, str(ROOT / "scripts"))
    import gpu_ci

    return gpu_ci


@pytest.mark.parametrize(
    "body, message",
    [
        ("raise SystemExit('boom: no GPU here')", "script failed (exit 1): boom: no GPU here"),
        ("open(sys.argv[sys.argv.index('--out') + 1], 'w').write('{not json')", "invalid JSON"),
        ("open(sys.argv[sys.argv.index('--out') + 1], 'w').write('{\"schema\": 1}')", "invalid dataset"),
        ("pass", "wrote no"),
    ],
)
def test_gpu_ci_failed_or_invalid_measurement_leaves_data_untouched(tmp_path, body, message):
    """A producer that crashes, writes invalid JSON, an invalid dataset or nothing ends with a one-line
    reason, and the committed file is not touched."""
    gpu_ci = _gpu_ci()
    script = tmp_path / "producer.py"
    script.write_text(f"import sys\n{body}\n")
    ds = registry.Dataset(name="art/ds", script=str(script), needs="gpu")
    new, msg, _log = gpu_ci.measure(ds, tmp_path)
    assert new is None and message in msg and "\n" not in msg


def test_gpu_ci_writes_with_history_and_reports_flipped_targets(tmp_path):
    gpu_ci = _gpu_ci()
    metrics = {"ratio": {"unit": "×", "noise": 0.05}, "met": {"unit": "bool", "noise": 0, "of": "ratio", "target": 1.0}}
    old = data.new("art/ds", metrics, [{"case": "a", "ratio": 1.2, "ratio_spread": 0.02, "met": True}])
    old["sources"] = {"scripts/measure/art/ds.py": "0" * 64}  # both runs measured the same code
    (tmp_path / "art").mkdir()
    data.write(old, tmp_path / "art" / "ds.json")
    new = data.new("art/ds", metrics, [{"case": "a", "ratio": 0.5, "ratio_spread": 0.02, "met": False}])
    new["sources"] = dict(old["sources"])
    d = registry.Dataset(name="art/ds", script="x.py")
    moved = gpu_ci.store(d, new, write=True, data_dir=tmp_path)
    assert any("target flipped" in m for m in moved) and any("ratio" in m and "measured noise" in m for m in moved)
    written = json.loads((tmp_path / "art" / "ds.json").read_text())
    assert written["history"][0]["rows"][0]["ratio"] == 1.2 and written["rows"][0]["ratio"] == 0.5
    # the page reads a target that was met in one run and not in the other as unstable, with both figures
    cell = render.target_cell(written, written["rows"][0], "met", "en")
    assert "unstable" in cell and "0.5" in cell and "1.2" in cell
    assert "不稳定" in render.target_cell(written, written["rows"][0], "met", "zh")
    # with one run only, the table says so once, under the table
    assert "unstable" not in render.target_cell(old, old["rows"][0], "met", "en")
    # a previous run of other code is no second opinion: the verdict stands on this run
    other = {**written, "sources": {"scripts/measure/art/ds.py": "1" * 64}}
    assert "unstable" not in render.target_cell(other, other["rows"][0], "met", "en")


def _on(ds: dict, gpu: str | None) -> dict:
    ds["provenance"]["gpu"] = gpu
    return ds


def test_gpu_ci_will_not_write_a_run_from_another_gpu_over_committed_data(tmp_path):
    """The device pool may lend an H100 where the data is from an H200: that run is no check of the data
    and no second opinion for its verdicts. store() refuses it and leaves the file as it was; --new-gpu
    moves the dataset to the new card and drops the other card's history."""
    gpu_ci = _gpu_ci()
    metrics = {"ratio": {"unit": "×", "noise": 0.05}}
    old = _on(data.new("art/ds", metrics, [{"case": "a", "ratio": 1.2}]), "NVIDIA H200")
    old["sources"] = {"scripts/measure/art/ds.py": "0" * 64}
    old["history"] = [data.summary(old)]
    (tmp_path / "art").mkdir()
    data.write(old, tmp_path / "art" / "ds.json")
    before = (tmp_path / "art" / "ds.json").read_bytes()
    new = _on(data.new("art/ds", metrics, [{"case": "a", "ratio": 1.0}]), "NVIDIA H100 80GB HBM3")
    new["sources"] = dict(old["sources"])
    d = registry.Dataset(name="art/ds", script="x.py")
    with pytest.raises(
        gpu_ci.ForeignGPU, match="measured on NVIDIA H100 80GB HBM3, but the committed data is from NVIDIA H200"
    ):
        gpu_ci.store(d, new, write=True, data_dir=tmp_path)
    assert (tmp_path / "art" / "ds.json").read_bytes() == before
    # chosen before anything is measured: the datasets whose committed data names another card
    assert gpu_ci.foreign_gpu([d], "NVIDIA H100 80GB HBM3", data_dir=tmp_path) == [
        "art/ds: committed data from NVIDIA H200"
    ]
    assert gpu_ci.foreign_gpu([d], "NVIDIA H200", data_dir=tmp_path) == []
    # the same card: compared and written as usual, the committed run carried as history with its card
    same = _on(data.new("art/ds", metrics, [{"case": "a", "ratio": 1.21}]), "NVIDIA H200")
    same["sources"] = dict(old["sources"])
    assert gpu_ci.store(d, same, write=True, data_dir=tmp_path) == []
    kept = json.loads((tmp_path / "art" / "ds.json").read_text())
    assert kept["history"][0]["gpu"] == "NVIDIA H200" and kept["history"][0]["rows"][0]["ratio"] == 1.2
    # --new-gpu: replaced without comparison, and no H200 run left to read as this card's second opinion
    moved = gpu_ci.store(d, new, write=True, data_dir=tmp_path, new_gpu=True)
    assert len(moved) == 1 and "replaced without comparison" in moved[0]
    written = json.loads((tmp_path / "art" / "ds.json").read_text())
    assert written["provenance"]["gpu"] == "NVIDIA H100 80GB HBM3" and "history" not in written


def test_gpu_ci_stops_before_measuring_on_another_gpu(tmp_path, monkeypatch, capsys):
    """On an H100, a run of datasets measured on the H200 ends at once with exit 2, naming them; no
    producer runs and data/ is not touched."""
    gpu_ci = _gpu_ci()
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(gpu_ci, "measure", lambda *a: pytest.fail("a producer ran on the wrong GPU"))
    name = "foundation/ceilings"
    assert json.loads(data.path_of(name).read_text())["provenance"]["gpu"] == "NVIDIA H200"
    before = data.path_of(name).read_bytes()
    args = ["--only", name, "--no-blocks", "--check", "--log", str(tmp_path / "l"), "--report", str(tmp_path / "r")]
    assert gpu_ci.main(args) == 2
    err = capsys.readouterr().err
    assert "this GPU is NVIDIA H100 80GB HBM3" in err and f"{name}: committed data from NVIDIA H200" in err
    assert "--new-gpu" in err and data.path_of(name).read_bytes() == before


def test_a_dataset_of_another_card_runs_only_when_named_and_only_on_that_card(monkeypatch, capsys, tmp_path):
    """META gpu pins a GPU dataset to another card than the site's (the deep dive's H100 forward): the tiers
    and --stale leave it out, so the H200 plans stay as they were; --only runs it, and on any other card
    gpu_ci stops before measuring. A META gpu on a CPU dataset, or one that is no string, is refused."""
    gpu_ci = _gpu_ci()  # the pinned datasets: the deep dive's H100 forward and Kernel Practice's weight reads
    pinned = [d for d in DATASETS if d.gpu]
    assert [d.name for d in pinned] == ["triton_deep_dive/attention_h100", "triton_kernel_practice/weight_read_h100"]
    assert {d.gpu for d in pinned} == {"H100"}
    for tier in ("nightly", "weekly"):
        chosen = gpu_ci.chosen_datasets(argparse.Namespace(only=None, stale=False, tier=tier))
        assert chosen and not set(pinned) & set(chosen)
    assert not set(pinned) & set(gpu_ci.chosen_datasets(argparse.Namespace(only=None, stale=True, tier="nightly")))
    only = gpu_ci.chosen_datasets(argparse.Namespace(only=[pinned[0].name], stale=False, tier="nightly"))
    assert only == pinned[:1]
    assert gpu_ci.wrong_card(only, "NVIDIA H100 80GB HBM3") == []
    assert gpu_ci.wrong_card(only, "NVIDIA H200") == ["triton_deep_dive/attention_h100: measured on an H100 only"]
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    monkeypatch.setattr(gpu_ci, "measure", lambda *a: pytest.fail("a producer ran on the wrong card"))
    args = ["--only", pinned[0].name, "--no-blocks", "--log", str(tmp_path / "l"), "--report", str(tmp_path / "r")]
    assert gpu_ci.main(args) == 2
    assert "measured on an H100 only" in capsys.readouterr().err
    for bad in ('{"needs": "cpu", "gpu": "H100"}', '{"needs": "gpu", "gpu": 100}'):
        p = tmp_path / "p.py"
        p.write_text(f"META = {bad}\n")
        monkeypatch.setattr(registry, "ROOT", tmp_path)
        with pytest.raises(registry.RegistryError, match="META gpu must be"):
            registry._meta(p)


def test_a_run_on_another_gpu_is_no_second_opinion():
    """previous_row, which the two-run verdicts and the run-to-run noise read, skips history entries that
    record another GPU model; entries written before the field existed still count."""
    metrics = {"ratio": {"unit": "×", "noise": 0.05}}
    ds = _on(data.new("art/ds", metrics, [{"case": "a", "ratio": 1.0}]), "NVIDIA H200")
    ds["sources"] = {"scripts/measure/art/ds.py": "0" * 64}
    entry = {
        "date": "2026-12-01",
        "commit": "abc",
        "sources": data.sources_digest(ds),
        "rows": [{"case": "a", "ratio": 1.3}],
    }
    row = ds["rows"][0]
    for gpu, counts in ((None, True), ("NVIDIA H200", True), ("NVIDIA H100 80GB HBM3", False)):
        ds["history"] = [{**entry, **({"gpu": gpu} if gpu else {})}]
        assert (data.previous_row(ds, row) is not None) is counts, gpu


def test_value_of_a_target_reads_two_runs_like_a_table_cell(tmp_path, monkeypatch):
    """The targets tables render a target with value(): it must say "unstable" where the runs disagree,
    as a table cell does, not this run's verdict alone."""
    metrics = {"ratio": {"unit": "×", "noise": 0.05}, "met": {"unit": "bool", "noise": 0, "of": "ratio", "target": 1.0}}
    ds = data.new("art/ds", metrics, [{"case": "a", "ratio": 0.5, "met": False}])
    ds["sources"] = {"scripts/measure/art/ds.py": "0" * 64}
    ds["history"] = [
        {
            "date": "2026-12-01",
            "commit": "abc",
            "sources": data.sources_digest(ds),  # a run of the same code
            "rows": [{"case": "a", "ratio": 1.2, "met": True}],
        }
    ]
    monkeypatch.setattr(render, "load", lambda name: ds)
    cell = render.value("art/ds", "met", lang="en", case="a")
    assert cell == render.target_cell(ds, ds["rows"][0], "met", "en") and "unstable" in cell
    assert render.value("art/ds", "ratio", lang="en", case="a") == "0.5"  # other figures as before


def test_figure_noise_comes_from_measured_spread():
    metrics = {"t": {"unit": "ms", "noise": 0.5}}
    ds = data.new("art/ds", metrics, [{"case": "a", "t": 1.0, "t_spread": 0.03}, {"case": "b", "t": 1.0}])
    assert data.figure_noise(ds, ds["rows"][0], "t") == (0.06, "measured")
    assert data.figure_noise(ds, ds["rows"][1], "t") == (0.5, "declared")
    # a spread column is not a parameter: the same case matches across runs
    assert data.case_key(ds["rows"][0], metrics) == '{"case": "a"}'


def test_a_derived_figure_is_no_better_known_than_the_timing_it_comes_from(monkeypatch):
    """A ratio with no spread of its own (varlen's speed-up of SDPA on jagged tensors: 1.55x, its time
    113 % apart between rounds) takes twice the row's recorded timing spread as its noise when that is
    wider than the declared band; exact figures (declared noise 0) stay exact."""
    metrics = {
        "ms": {"unit": "ms", "noise": 0.1},
        "speedup": {"unit": "×", "noise": 0.07},
        "n": {"unit": "", "noise": 0},
    }
    rows = [{"case": "a", "ms": 1.0, "ms_spread": 0.5, "speedup": 1.55, "n": 3}, {"case": "b", "speedup": 1.55, "n": 3}]
    ds = data.new("art/ds", metrics, rows)
    assert data.figure_noise(ds, ds["rows"][0], "speedup") == (1.0, "measured")
    assert data.figure_noise(ds, ds["rows"][0], "n") == (0, "declared")
    assert data.figure_noise(ds, ds["rows"][1], "speedup") == (0.07, "declared")
    ds["rows"][0]["ms_spread"] = 0.01  # a narrow spread never narrows the declared band
    assert data.figure_noise(ds, ds["rows"][0], "speedup") == (0.07, "declared")
    ds["rows"][1]["spread"] = 0.087  # a bare `spread` (Kernel Practice's GEMM rows): the row's time over rounds
    assert data.figure_noise(ds, ds["rows"][1], "speedup") == (0.174, "measured")
    del ds["rows"][1]["spread"]
    ds["rows"][0]["ms_spread"] = 0.5
    monkeypatch.setattr(render, "load", lambda name: ds)
    assert render.verdict("art/ds", "speedup", {"case": "a"}, lang="en") == "no measurable difference"
    assert render.verdict("art/ds", "speedup", {"case": "b"}, lang="en") == "faster"


def test_noise_renders_the_band_a_verdict_uses(monkeypatch):
    metrics = {"ms": {"unit": "ms", "noise": 0.1}, "ratio": {"unit": "×", "noise": 0.07}}
    ds = data.new("art/ds", metrics, [{"case": "a", "ratio": 1.39, "ms_spread": 0.05}, {"case": "b", "ratio": 1.39}])
    monkeypatch.setattr(render, "load", lambda name: ds)
    assert render.noise("art/ds", "ratio", lang="en", case="a") == "±10.0 %"  # twice the row's timing spread
    assert render.noise("art/ds", "ratio", lang="zh", case="b") == "±7.0%"  # the declared band
    assert render.MARKER.search('{{ noise("art/ds", "ratio", case="a") }}')  # a data marker, kept in parity


@pytest.mark.parametrize(
    "ratio, met, target_col, near",
    [
        (1.03, True, None, True),
        (1.2, True, None, False),
        (0.97, False, None, True),
        (0.5, False, None, False),
        (0.92, True, 0.9, True),
        (1.1, True, 0.9, False),
    ],
)
def test_a_target_met_or_missed_within_noise_says_so(ratio, met, target_col, near):
    """met / not met is this run's verdict; when the figure is within its noise of the target, a re-run may
    flip it, and the cell says so (the target: the metric's `target`, or the row's target_* column)."""
    metrics = {
        "ratio_x": {"unit": "×", "noise": 0.05},
        "met_x": {"unit": "bool", "noise": 0, "of": "ratio_x", **({} if target_col else {"target": 1.0})},
    }
    row = {"case": "a", "ratio_x": ratio, "met_x": met, **({"target_x": target_col} if target_col else {})}
    ds = data.new("art/ds", metrics, [row])
    for lang, words in (("en", "within noise of the target"), ("zh", "与目标之差在噪声之内")):
        cell = render.target_cell(ds, ds["rows"][0], "met_x", lang)
        assert (words in cell) is near, cell
        assert ("✓" in cell) is met
        band = {"en": "(noise ±5 %)", "zh": "（噪声 ±5%）"}[lang]  # the band's width, so a reader can weigh the gap
        assert (band in cell) is near, cell


def test_a_ratio_is_no_better_known_than_the_time_it_divides_by():
    """ratio_cudnn of our row divides by the sdpa_cudnn row of the same case: that row's round spread (9 %)
    widens the ratio's noise to 18 %, though our own rounds spread by 0.7 % (the deep dive called 1.003
    against 0.9 'above it beyond noise' with cuDNN's rounds 13 % apart). A row of another case, or a
    metric that is no ratio, is no reference."""
    metrics = {"tflops": {"unit": "TFLOP/s", "noise": 0.07}, "ratio_cudnn": {"unit": "×", "noise": 0.07}}
    rows = [
        {"impl": "gluon", "kernel": "fa3", "N": 4096, "tflops": 600.0, "tflops_spread": 0.007, "ratio_cudnn": 1.0},
        {"impl": "sdpa_cudnn", "N": 4096, "tflops": 600.0, "tflops_spread": 0.09},
        {"impl": "sdpa_cudnn", "N": 16384, "tflops": 600.0, "tflops_spread": 0.5},
    ]
    ds = data.new("art/ds", metrics, rows)
    ours = ds["rows"][0]
    assert data.reference_row(ds, ours, "ratio_cudnn") is ds["rows"][1]
    assert data.reference_row(ds, ours, "tflops") is None
    assert data.figure_noise(ds, ours, "ratio_cudnn") == (pytest.approx(0.18), "measured")
    ds["rows"][1]["tflops_spread"] = 0.01  # a steady reference: the declared 7 % stands
    assert data.figure_noise(ds, ours, "ratio_cudnn") == (0.07, "declared")


def test_two_ratios_over_the_same_time_leave_that_time_out_of_their_comparison():
    """Two kernels of one case, each divided by the same cuDNN time: comparing the ratios compares the two
    kernels' times, so cuDNN's round spread (30 %) cancels and the pair's noise is their own (2 x 4 %).
    Against a cell of another case the two references differ, and both spreads count."""
    metrics = {"tflops": {"unit": "TFLOP/s", "noise": 0.07}, "ratio_cudnn": {"unit": "×", "noise": 0.07}}
    rows = [
        {"impl": "gluon", "N": 4096, "tflops": 600.0, "tflops_spread": 0.04, "ratio_cudnn": 1.0},
        {"impl": "triton", "N": 4096, "tflops": 500.0, "tflops_spread": 0.01, "ratio_cudnn": 0.83},
        {"impl": "sdpa_cudnn", "N": 4096, "tflops": 600.0, "tflops_spread": 0.3},
        {"impl": "triton", "N": 16384, "tflops": 500.0, "tflops_spread": 0.01, "ratio_cudnn": 0.83},
        {"impl": "sdpa_cudnn", "N": 16384, "tflops": 600.0, "tflops_spread": 0.02},
    ]
    ds = data.new("art/ds", metrics, rows)
    gluon, triton_, _, other_case, _ = ds["rows"]
    assert data.figure_noise(ds, gluon, "ratio_cudnn", other=triton_) == (pytest.approx(0.08), "measured")
    assert data.figure_noise(ds, gluon, "ratio_cudnn", other=other_case) == (pytest.approx(0.6), "measured")
    assert data.figure_noise(ds, gluon, "ratio_cudnn") == (pytest.approx(0.6), "measured")


def test_the_drift_gate_counts_each_runs_reference_time():
    """A new run's ratio to cuDNN against the committed one: the two runs divide by different cuDNN times, so
    neither cancels, and the new run's cuDNN spread (30 %) counts as the committed run's does. A 20 % move
    is then within noise; with steady cuDNN rounds in both runs it is drift."""
    metrics = {"tflops": {"unit": "TFLOP/s", "noise": 0.07}, "ratio_cudnn": {"unit": "×", "noise": 0.07}}

    def run(ratio, cudnn_spread):  # ours steady at 600 TFLOP/s; cuDNN's time sets the ratio
        return data.new(
            "art/ds",
            metrics,
            [
                {"impl": "gluon", "N": 4096, "tflops": 600.0, "tflops_spread": 0.01, "ratio_cudnn": ratio},
                {"impl": "sdpa_cudnn", "N": 4096, "tflops": 600.0 / ratio, "tflops_spread": cudnn_spread},
            ],
        )

    assert data.compare(run(1.0, 0.01), run(1.2, 0.3)) == []
    drift = data.compare(run(1.0, 0.01), run(1.2, 0.01))
    assert any("ratio_cudnn" in d for d in drift), drift


def test_an_unstable_cell_shows_its_two_figures_apart(monkeypatch):
    """met in one run, not met in the other: the cell shows both figures, with one more decimal when the
    metric's format prints them alike (0.799 and 0.802 against 0.8 showed "0.80, 0.80")."""
    metrics = {
        "ratio_x": {"unit": "×", "noise": 0.07, "fmt": ".2f"},
        "met_x": {"unit": "bool", "noise": 0, "of": "ratio_x", "target": 0.8},
    }
    ds = data.new("art/ds", metrics, [{"case": "a", "ratio_x": 0.799, "met_x": False}])
    monkeypatch.setattr(render, "previous_row", lambda ds, row: {"case": "a", "ratio_x": 0.802, "met_x": True})
    cell = render.target_cell(ds, ds["rows"][0], "met_x", "en")
    assert "this run 0.799, previous run 0.802" in cell, cell


@pytest.mark.parametrize(
    "v, word, edge",
    [(1.079, "faster", False), (1.0796, "faster", True), (1.0720, "same", True), (1.05, "same", False)],
)
def test_a_verdict_at_the_edge_of_its_noise_says_so(monkeypatch, v, word, edge):
    """A figure within a tenth of the band of the band's edge (+7.96 % against 7.91 %, the deep dive's Gluon
    backward) gets its word and ", only just": a re-run may well give the other word."""
    monkeypatch.setattr(render, "_judge", lambda *a: (v, 1.0, 0.0791 if v != 1.079 else 0.0600))
    out = render.verdict("art/ds", "x", lang="en")
    assert out == render._t(word, "en") + (", only just" if edge else ""), out


def test_a_verdict_on_a_figure_noisier_than_itself_is_unsettled():
    """A ratio whose row's timing spread is 53 % (so 106 % noise) is 1.01 against a target of 1.0: the cell
    says the verdict is unsettled and by how much, not a bare "met" (fp8_gemm's 4096^3 per-tensor row
    showed a clean ✓); a declared noise of 100 % or more (an order of magnitude) adds no note."""
    metrics = {
        "ratio_x": {"unit": "×", "noise": 0.05},
        "met_x": {"unit": "bool", "noise": 0, "of": "ratio_x", "target": 1.0},
    }
    ds = data.new("art/ds", metrics, [{"case": "a", "ratio_x": 1.01, "met_x": True, "ms_spread": 0.53}])
    for lang, words in (("en", "unsettled: its noise is 106 %"), ("zh", "未定：噪声达 106%")):
        cell = render.target_cell(ds, ds["rows"][0], "met_x", lang)
        assert words in cell and "✓" in cell, cell
    metrics["ratio_x"]["noise"] = 2.0  # declared, not measured
    ds = data.new("art/ds", metrics, [{"case": "a", "ratio_x": 1.01, "met_x": True}])
    assert render.target_cell(ds, ds["rows"][0], "met_x", "en") == '<span class="ok">✓ met</span>'


def test_run_to_run_change_is_not_noise_when_the_run_chose_another_setting(monkeypatch):
    """A row whose settings the producer picks each run (META chosen) is matched across runs without them;
    when the two runs picked different settings, the change between them is the setting's, not noise, and
    must not widen the noise of every verdict on the row (vector_add's fp16 target: 71 % after a run whose
    sweep chose a 256-element block)."""
    metrics = {"x": {"unit": "GB/s", "noise": 0.05}}
    ds = data.new("art/ds", metrics, [{"kind": "target", "block": 512, "x": 100.0, "x_spread": 0.01}])
    ds["sources"] = {"scripts/measure/art/ds.py": "0" * 64}
    ds["history"] = [
        {
            "date": "d",
            "commit": "c",
            "sources": data.sources_digest(ds),
            "rows": [{"kind": "target", "block": 256, "x": 60.0, "x_spread": 0.01}],
        }
    ]
    monkeypatch.setattr(data, "chosen_of", lambda name: {"target": {"block"}})
    assert data.previous_row(ds, ds["rows"][0]) is not None  # still the same case across runs
    assert data.figure_noise(ds, ds["rows"][0], "x") == (0.02, "measured")
    ds["history"][0]["rows"][0]["block"] = 512  # the same setting: its change counts
    assert data.figure_noise(ds, ds["rows"][0], "x")[0] > 0.6


def test_declared_noise_widens_by_the_change_between_runs(monkeypatch):
    """No spread recorded: the declared noise, unless the same code's previous run differs by more;
    a comparison with another row also counts that row's own spread."""
    metrics = {"x": {"unit": "×", "noise": 0.1}}
    rows = [{"case": "a", "x": 1.0}, {"case": "b", "x": 1.0, "x_spread": 0.2}, {"case": "c", "x": 1.3}]
    ds = data.new("art/ds", metrics, rows)
    ds["sources"] = {"scripts/measure/art/ds.py": "0" * 64}
    ds["history"] = [
        {"date": "d", "commit": "c", "sources": data.sources_digest(ds), "rows": [{"case": "a", "x": 0.5}]}
    ]
    assert data.figure_noise(ds, ds["rows"][0], "x") == (1.0, "measured")  # 0.5 -> 1.0 between runs
    ds["history"][0]["rows"][0]["x"] = 0.97
    assert data.figure_noise(ds, ds["rows"][0], "x") == (0.1, "declared")
    monkeypatch.setattr(render, "load", lambda name: ds)
    # 1.3 against 1.0 is beyond the declared 10 %, not beyond twice the reference row's 20 % spread
    assert render.verdict("art/ds", "x", {"case": "c"}, ref=1.0, lang="en") == "faster"
    assert render.verdict("art/ds", "x", {"case": "c"}, ref={"case": "b"}, lang="en") == "no measurable difference"


def test_check_and_verdict_markers_follow_the_data(monkeypatch):
    ds = data.new(
        "art/ds",
        {"x": {"unit": "×", "noise": 0.05}},
        [{"case": "fast", "x": 1.3}, {"case": "same", "x": 1.02}, {"case": "slow", "x": 0.8}],
    )
    monkeypatch.setattr(render, "load", lambda name: ds)
    assert render.check("art/ds", "x", {"case": "fast"}, ">", 1.0, lang="en") == ""
    assert render.check("art/ds", "x", {"case": "same"}, "~", 1.0, lang="en") == ""
    with pytest.raises(data.DataError, match="no longer satisfies"):
        render.check("art/ds", "x", {"case": "same"}, ">", 1.0, lang="en")
    assert render.check("art/ds", "x", {"case": "fast"}, ">", {"case": "slow"}, lang="en") == ""
    # factor scales the reference row: 1.3 is above 1.5 x 0.8 = 1.2 plus 5 % noise; 1.6 x 0.8 = 1.28 plus noise is not
    assert render.check("art/ds", "x", {"case": "fast"}, ">", {"case": "slow"}, factor=1.5, lang="en") == ""
    with pytest.raises(data.DataError, match="no longer satisfies '> 1.28'"):
        render.check("art/ds", "x", {"case": "fast"}, ">", {"case": "slow"}, factor=1.6, lang="en")
    with pytest.raises(data.DataError, match="factor must be a positive number"):
        render.check("art/ds", "x", {"case": "fast"}, ">", {"case": "slow"}, factor=0, lang="en")
    assert [render.verdict("art/ds", "x", {"case": c}, lang="en") for c in ("fast", "same", "slow")] == [
        "faster",
        "slower",
        "no measurable difference",
    ][0:1] + ["no measurable difference", "slower"]
    assert render.verdict("art/ds", "x", {"case": "fast"}, lang="zh") == "更快"


def test_verdicts_say_once_what_several_cells_share(monkeypatch):
    """verdicts(): one sentence for cells that agree ("both are faster"), the cells one by one, each after its
    subject and in order, where they do not; per-cell references; its phrases are label keys, so the marker
    is the same on both pages; a marker in a page renders it."""
    ds = data.new(
        "art/ds",
        {"x": {"unit": "×", "noise": 0.05}},
        [{"case": c, "x": x} for c, x in (("fast", 1.3), ("fast2", 1.4), ("same", 1.02), ("base", 1.0))],
    )
    words = {
        "both": {"en": "both are", "zh": "两者都"},
        "first": {"en": "the first is", "zh": "前者"},
        "second": {"en": "the second", "zh": "后者"},
        "cells": {"en": "{} in both cells", "zh": "两格都{}"},
        "order": {"en": "in order:", "zh": "依次为"},
    }
    monkeypatch.setattr(render, "load", lambda name: ds)
    monkeypatch.setattr(render, "labels", lambda: words)
    two = [{"case": "fast"}, {"case": "fast2"}]
    mixed = [{"case": "fast"}, {"case": "same"}]
    kw = dict(together="both", subjects=["first", "second"])
    assert render.verdicts("art/ds", "x", two, **kw, lang="en") == "both are faster"
    assert render.verdicts("art/ds", "x", two, **kw, lang="zh") == "两者都更快"
    got = render.verdicts("art/ds", "x", mixed, **kw, lang="en")
    assert got == "the first is faster; the second no measurable difference", got
    assert render.verdicts("art/ds", "x", mixed, **kw, lang="zh") == "前者更快；后者没有可测的差别"
    assert render.verdicts("art/ds", "x", two, together="cells", lang="en") == "faster in both cells"
    assert render.verdicts("art/ds", "x", two, together="cells", lang="zh") == "两格都更快"
    # one reference per cell: 1.3 against 1.0, and 1.4 against 1.3 (beyond the 5 % noise) or against itself
    refs = [{"case": "base"}, {"case": "fast"}]
    assert render.verdicts("art/ds", "x", two, refs=refs, together="both", each="order", lang="en") == "both are faster"
    refs = [{"case": "base"}, {"case": "fast2"}]
    got = render.verdicts("art/ds", "x", two, refs=refs, together="both", each="order", lang="en")
    assert got == "in order: faster; no measurable difference", got
    with pytest.raises(data.DataError, match="one subject per cell"):
        render.verdicts("art/ds", "x", two, together="both", subjects=["first"], lang="en")
    with pytest.raises(data.DataError, match="one reference per cell"):
        render.verdicts("art/ds", "x", two, together="both", refs=[1.0], lang="en")
    with pytest.raises(data.DataError, match="no label 'both are'"):  # a phrase, not a label key
        render.verdicts("art/ds", "x", two, together="both are", lang="en")
    page = 'x {{ verdicts("art/ds", "x", [{"case": "fast"}, {"case": "fast2"}], together="both") }} y'
    assert render.MARKER.sub(lambda m: render.render_marker(m.group("call"), "zh"), page) == "x 两者都更快 y"


def test_a_build_remembers_labels_and_markers_only_while_data_is_unchanged(tmp_path, monkeypatch):
    """During a site build render.labels() and render.render_marker() remember what they returned (the MkDocs
    hook's begin_build / end_build). An edit under data/ must show in the next build (`mkdocs serve`), and
    outside a build (tests, producers) every call reads the files again."""
    import time

    labels = tmp_path / "labels.yml"
    monkeypatch.setattr(render, "DATA", tmp_path)
    monkeypatch.setattr(render, "_BUILD", {"on": False, "stamp": None, "memo": {}})

    def edit(word):
        time.sleep(0.01)  # a new modification time, even on a file system with coarse ones
        labels.write_text(f"x: {{en: {word}}}\n", encoding="utf-8")

    edit("one")
    assert render.label("x", "en") == "one"
    edit("two")
    assert render.label("x", "en") == "two"  # no build: read again
    render.begin_build()
    try:
        assert render.label("x", "en") == "two"
        edit("three")
        assert render.label("x", "en") == "two"  # the build in progress keeps what it read
    finally:
        render.end_build()
    assert render.label("x", "en") == "three"  # after the build: read again
    render.begin_build()  # the next build (mkdocs serve after an edit) sees the edit
    try:
        assert render.label("x", "en") == "three"
    finally:
        render.end_build()
    # rendered markers: remembered within a build, forgotten when data/ changes
    calls = []
    monkeypatch.setitem(render.FUNCS, "span", lambda *a, lang, **k: calls.append(a) or f"<{len(calls)}>")
    render.begin_build()
    try:
        assert render.render_marker('span("a/b")', "en") == render.render_marker('span("a/b")', "en") == "<1>"
        assert render.render_marker('span("a/b")', "zh") == "<2>"
    finally:
        render.end_build()
    assert render.render_marker('span("a/b")', "en") == "<3>"
    render.begin_build()  # data/ unchanged since the build before: its markers still hold
    try:
        assert render.render_marker('span("a/b")', "en") == "<1>"
        edit("four")
    finally:
        render.end_build()
    render.begin_build()
    try:
        assert render.render_marker('span("a/b")', "en") == "<4>"
    finally:
        render.end_build()


def test_a_dataset_scoped_label_overrides_the_shared_one_for_cells_and_titles(monkeypatch):
    """labels.yml keys "<dataset>.<name>" win over the shared "<name>" in that dataset only, for a column
    title and for a cell value; other datasets keep the shared label."""
    rows = [{"impl": "cublas", "step": 1, "x": 1.0}]
    ours, other = (
        data.new("art/ours", {"x": {"unit": "s", "noise": 0.05}}, rows),
        data.new("art/other", {"x": {"unit": "s", "noise": 0.05}}, rows),
    )
    table = {
        "cublas": {"en": "cuBLAS (shared)"},
        "art/ours.cublas": {"en": "cuBLAS (ours)"},
        "step": {"en": "Step (shared)"},
        "art/ours.step": {"en": "Step (ours)"},
        "art/ours.part=step": {"en": "Step, as a part (ours)"},
    }
    monkeypatch.setattr(render, "labels", lambda: table)
    assert render.fmt_value(ours, "impl", "cublas", "en") == "cuBLAS (ours)"
    # "<dataset>.<column>=<value>": a value that is also a column's name, labelled apart from the title
    assert render.fmt_value(ours, "part", "step", "en") == "Step, as a part (ours)"
    assert render.fmt_value(ours, "impl", "step", "en") == "Step (ours)"
    assert render.fmt_value(other, "part", "step", "en") == "Step (shared)"
    assert render.fmt_value(other, "impl", "cublas", "en") == "cuBLAS (shared)"
    assert render.column_title(ours, "step", "en") == "Step (ours)"
    assert render.column_title(other, "step", "en") == "Step (shared)"


def test_a_rewritten_dataset_does_not_make_the_commit_dirty(tmp_path, monkeypatch):
    """Producers run one after another rewrite data/ as they go: that must not mark the next dataset's
    commit "+dirty" (its code is HEAD's), while a changed code file must."""
    import subprocess

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "d.json").write_text("{}")
    (tmp_path / "code.py").write_text("x = 1\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    monkeypatch.delenv("GIT_COMMIT", raising=False)
    monkeypatch.setattr(data, "ROOT", tmp_path)
    (tmp_path / "data" / "d.json").write_text('{"new": 1}')
    assert not data._git_commit().endswith("+dirty")
    (tmp_path / "code.py").write_text("x = 2\n")
    assert data._git_commit().endswith("+dirty")


def test_a_relative_spread_reads_as_a_percentage():
    """A round-to-round spread recorded as a fraction reads as a percentage whatever decimal format its
    dataset declared (0.44 was shown bare); a spread already formatted as a percentage is left alone."""
    ds = data.new(
        "art/ds",
        {"ms_spread": {"unit": "relative", "noise": 1.0, "fmt": ".2f"}, "x_spread": {"unit": "fraction", "fmt": ".1%"}},
        [{"ms_spread": 0.4365, "x_spread": 0.5}],
    )
    assert render.fmt_value(ds, "ms_spread", 0.4365, "en") == "43.6 %"
    assert render.fmt_value(ds, "ms_spread", 0.4365, "zh") == "43.6%"  # no space before % in Chinese text
    assert render.fmt_value(ds, "x_spread", 0.5, "en") == "50.0%"


def test_a_series_keeps_its_colour_across_plots_of_one_dataset():
    """Two plots of one dataset that show different subsets of its series give a series value the same
    colour in both; a plot whose values would collide on the palette falls back to its own order."""
    rows = [{"impl": i, "x": 1, "y": 1.0} for i in ("a", "b", "c")]
    ds = data.new("art/ds", {"y": {"unit": "s", "noise": 0.05}}, rows)
    both, later = render.series_colors(ds, "impl", ["a", "c"]), render.series_colors(ds, "impl", ["c"])
    assert both["c"] == later["c"] == render.PALETTE[2] and both["a"] == render.PALETTE[0]
    many = data.new("art/ds", {"y": {"unit": "s", "noise": 0.05}}, [{"impl": i, "y": 1.0} for i in range(20)])
    n = len(render.PALETTE)
    assert render.series_colors(many, "impl", [0, n]) == {0: render.PALETTE[0], n: render.PALETTE[1]}


def test_span_marker_renders_the_range_of_the_matching_rows(monkeypatch):
    ds = data.new(
        "art/ds",
        {"x": {"unit": "s", "noise": 0.05, "fmt": ".1f"}},
        [
            {"case": "a", "kind": "t", "x": 2.04},
            {"case": "b", "kind": "t", "x": 7.41},
            {"case": "c", "kind": "u", "x": 99.0},
        ],
    )
    monkeypatch.setattr(render, "load", lambda name: ds)
    assert render.render_marker('span("art/ds", "x", kind="t")', "en") == "2.0–7.4"
    assert render.render_page('{{ span("art/ds", "x", kind="t") }} s', "en", "p.md").strip() == "2.0–7.4 s"
    with pytest.raises(data.DataError, match="at least two rows"):
        render.span("art/ds", "x", kind="u", lang="en")
    ds["rows"][1]["x"] = 2.01  # both ends print as 2.0: one figure, not "2.0–2.0"
    assert render.span("art/ds", "x", kind="t", lang="en") == "2.0"


def test_difference_marker_renders_one_row_less_another(monkeypatch):
    """difference() renders a derived figure from two rows, in the metric's format; each side must select
    exactly one row with a number."""
    ds = data.new(
        "art/ds",
        {"us": {"unit": "µs", "noise": 0.1, "fmt": ".1f"}},
        [{"case": "a", "state": "dirty", "us": 19.23}, {"case": "a", "state": "clean", "us": 15.14}],
    )
    monkeypatch.setattr(render, "load", lambda name: ds)
    src = 'difference("art/ds", "us", {"case": "a", "state": "dirty"}, {"case": "a", "state": "clean"})'
    assert render.render_marker(src, "en") == "4.1"
    assert render.render_page("adds {{ " + src + " }} µs", "en", "p.md").strip() == "adds 4.1 µs"
    for name in render.FUNCS:  # a marker function the page pattern does not know would be left as text
        assert render.MARKER.fullmatch("{{ %s(1) }}" % name), name
    with pytest.raises(data.DataError, match="unknown data marker"):
        render.render_page('{{ diff("art/ds", "us") }}', "en", "p.md")
    assert (
        render.render_marker(src.replace('"dirty"}, {', '"clean"}, {').replace('"clean"})', '"dirty"})'), "en")
        == "-4.1"
    )
    with pytest.raises(data.DataError, match="exactly one row, 2 match"):
        render.difference("art/ds", "us", {"case": "a"}, {"state": "clean"}, lang="en")
    with pytest.raises(data.DataError, match="no row matches"):
        render.difference("art/ds", "us", {"case": "a", "state": "dirty"}, {"case": "b"}, lang="en")


def test_span_over_two_runs_takes_the_run_before_of_the_same_code(monkeypatch):
    """span(..., runs=2) ranges over the matching rows of this run and of the run before it; a history
    without that run (or of other code) is an error, not a silently narrower range."""
    metrics = {"x": {"unit": "s", "noise": 0.05, "fmt": ".1f"}}
    rows = [{"case": "a", "x": 2.0}, {"case": "b", "x": 3.0}]
    ds = data.new("art/ds", metrics, rows)
    ds["sources"] = {"scripts/measure/art/ds.py": "0" * 64}
    before = [{"case": "a", "x": 1.5}, {"case": "b", "x": 3.5}]
    ds["history"] = [{"date": "d", "commit": "c", "sources": data.sources_digest(ds), "rows": before}]
    monkeypatch.setattr(render, "load", lambda name: ds)
    assert render.span("art/ds", "x", lang="en") == "2.0–3.0"
    assert render.span("art/ds", "x", lang="en", runs=2) == "1.5–3.5"
    ds["history"][0]["sources"] = "older code"  # a run of other code is no second run
    with pytest.raises(data.DataError, match="run before"):
        render.span("art/ds", "x", lang="en", runs=2)


def test_check_runs_fails_once_a_run_of_the_same_code_is_added(monkeypatch):
    """check_runs(ds, n): nothing while the dataset holds n runs of its current code (a run of other code,
    or on another card, does not count); an error naming both counts once it holds another number."""
    metrics = {"x": {"unit": "s", "noise": 0.05, "fmt": ".1f"}}
    ds = data.new("art/ds", metrics, [{"case": "a", "x": 2.0}])
    ds["sources"] = {"scripts/measure/art/ds.py": "0" * 64}
    ds["provenance"]["gpu"] = "NVIDIA H200"
    ds["history"] = [{"date": "d", "commit": "c", "sources": "older code", "rows": [{"case": "a", "x": 1.5}]}]
    monkeypatch.setattr(render, "load", lambda name: ds)
    assert render.render_page('one run so far.{{ check_runs("art/ds", 1) }}', "en", "p.md").strip() == "one run so far."
    other_card = {"date": "e", "commit": "d", "sources": data.sources_digest(ds), "gpu": "NVIDIA H100 80GB HBM3"}
    ds["history"].insert(0, {**other_card, "rows": [{"case": "a", "x": 1.9}]})
    assert render.check_runs("art/ds", 1, lang="en") == ""  # the same code on another card is no second run
    ds["history"].insert(0, {"date": "f", "commit": "e", "sources": data.sources_digest(ds), "rows": []})
    with pytest.raises(data.DataError, match=r"now holds 2 run\(s\) of its current code, where .* says 1"):
        render.check_runs("art/ds", 1, lang="en")
    assert render.check_runs("art/ds", 2, lang="zh") == ""
    with pytest.raises(data.DataError, match="whole number of runs"):
        render.check_runs("art/ds", 0, lang="en")


def test_check_stale_follows_the_stale_list(monkeypatch):
    """check_stale(ds, True) holds while data/stale.yml lists the dataset and fails once it is re-measured
    (and the reverse for False)."""
    ds = data.new("art/ds", {"x": {"unit": "s", "noise": 0.05}}, [{"case": "a", "x": 2.0}])
    monkeypatch.setattr(render, "load", lambda name: ds)
    listed = {"art/ds": {"en": "the kernel changed", "zh": "内核改了"}}
    monkeypatch.setattr(render, "stale", lambda: listed)
    assert render.render_page('older, marked stale{{ check_stale("art/ds", True) }}.', "en", "p.md").strip() == (
        "older, marked stale."
    )
    with pytest.raises(data.DataError, match="is listed in data/stale.yml"):
        render.check_stale("art/ds", False, lang="en")
    listed.clear()
    assert render.check_stale("art/ds", False, lang="zh") == ""
    with pytest.raises(data.DataError, match="no longer stale"):
        render.check_stale("art/ds", True, lang="en")
    with pytest.raises(data.DataError, match="True or False"):
        render.check_stale("art/ds", 1, lang="en")


def test_previous_rows_take_a_host_side_only_run_only_when_listed():
    """previous_rows: the run before of the same code when there is one; otherwise the run before only if
    its sources digest is one the caller lists as host-side only; never a run of other code silently."""
    metrics = {"x": {"unit": "s", "noise": 0.05, "fmt": ".1f"}}
    ds = data.new("art/ds", metrics, [{"case": "a", "x": 2.0}, {"case": "b", "x": 3.0}])
    ds["sources"] = {"scripts/measure/art/ds.py": "0" * 64}
    ds["history"] = [{"date": "d", "commit": "c", "sources": "older", "rows": [{"case": "a", "x": 1.5}]}]
    assert data.previous_rows(ds, ds["rows"]) == [None, None]
    assert data.previous_rows(ds, ds["rows"], ("other",)) == [None, None]
    assert data.previous_rows(ds, ds["rows"], ("older",)) == [{"case": "a", "x": 1.5}, None]
    same = {"date": "e", "commit": "d", "sources": data.sources_digest(ds), "rows": [{"case": "b", "x": 3.5}]}
    ds["history"].insert(0, same)  # a run of the same code comes first, listed or not
    assert data.previous_rows(ds, ds["rows"], ("older",)) == [None, {"case": "b", "x": 3.5}]


def test_chosen_columns_are_not_part_of_the_case(monkeypatch):
    """A column that records what the run picked (META chosen, per row kind) is left out of the case key:
    a re-run that picks another block size measures the same case, and its history still matches."""
    metrics = {"gbps": {"unit": "GB/s", "noise": 0.05}}
    old = data.new(
        "art/ds",
        metrics,
        [
            {"kind": "target", "block_size": 512, "gbps": 100.0},
            {"kind": "grid", "block_size": 512, "gbps": 90.0},
            {"kind": "grid", "block_size": 1024, "gbps": 95.0},
        ],
    )
    old["sources"] = {"scripts/measure/art/ds.py": "0" * 64}  # history counts only runs of the same code
    new = {**old, "rows": [{"kind": "target", "block_size": 1024, "gbps": 101.0}, *old["rows"][1:]]}
    monkeypatch.setattr(data, "chosen_of", lambda name: {"target": {"block_size"}})
    assert data.compare(old, new) == []
    assert data.previous_row({**new, "history": [data.summary(old)]}, new["rows"][0])["block_size"] == 512
    monkeypatch.setattr(data, "chosen_of", lambda name: {})
    assert any("new case" in p for p in data.compare(old, new))  # without META chosen it is another case
    assert data.chosen_of("nope/nothing") == {}


def test_vector_add_declares_its_chosen_configuration():
    from sitekit import registry

    # the target rows carry the sweep's pick; the ragged rows run the wrapper's fixed default
    assert dict(registry.by_name("triton_getting_started/vector_add").chosen) == {
        "target": ("block_size", "num_warps"),
    }


def test_gpu_ci_report_says_whether_the_gpu_blocks_ran():
    """A nightly run on a machine without pytest-codeblocks wrote its data while its blocks had not even
    been collected (pytest exit 2), and only the console said so: the report now carries the blocks'
    exit status, and a failure reads as one."""
    gpu_ci = _gpu_ci()
    assert gpu_ci.blocks_section(None) == []
    ok = "\n".join(gpu_ci.blocks_section(0))
    assert "## GPU code blocks" in ok and "pytest exit 0" in ok and "FAILED" not in ok
    for rc in (1, 2, 3, 4):
        assert "FAILED" in "\n".join(gpu_ci.blocks_section(rc)), rc
    assert "collected" in "\n".join(gpu_ci.blocks_section(2))


def test_gpu_ci_report_names_what_ran_over_its_budget():
    """The plan is only as good as the budgets: a dataset (from measure()'s log header) or the GPU code
    blocks that took longer than planned are named in the report; within budget, one line says so."""
    gpu_ci = _gpu_ci()
    assert gpu_ci._wall_of("### triton_deep_dive/attention (131 s, rc=0)\nout") == 131.0
    assert gpu_ci._wall_of("no header") is None
    assert gpu_ci.budget_section([]) == []
    ok = "\n".join(gpu_ci.budget_section([("a/b", 30.0, 34.0)], blocks_s=100.0, blocks="nightly"))
    assert "every part ran within its budget" in ok
    over = "\n".join(gpu_ci.budget_section([("a/b", 40.0, 34.0), ("c/d", 5.0, 10.0)], blocks_s=300.0))
    assert "a/b: 40 s against its budget of 34 s" in over and "c/d" not in over
    assert "GPU code blocks" not in over  # 300 s is within the weekly blocks' budget
    over = "\n".join(gpu_ci.budget_section([], blocks_s=300.0, blocks="nightly"))
    budget = gpu_ci.BLOCKS_BUDGET_S["nightly"]
    assert f"GPU code blocks (nightly): 300 s against BLOCKS_BUDGET_S['nightly'] = {budget} s" in over


def test_gpu_ci_blocks_only_plans_the_blocks_and_no_dataset():
    """--blocks-only: the GPU code blocks on any CUDA GPU (no dataset, so no card check); it refuses the
    options that choose datasets, in one line."""
    p = _gpu_ci_cli("--blocks-only", "--plan")
    assert p.returncode == 0 and "0 datasets (GPU code blocks only)" in p.stdout, p.stdout + p.stderr
    assert f"+ {_gpu_ci().BLOCKS_BUDGET_S['weekly']} s of code blocks (weekly tier)" in p.stdout
    for extra in (["--stale"], ["--only", "triton_deep_dive/attention"], ["--no-blocks"], ["--fit", "100"]):
        p = _gpu_ci_cli("--blocks-only", *extra, "--plan")
        assert p.returncode == 2 and "--blocks-only runs the GPU code blocks and no dataset" in p.stderr, extra
        assert len(p.stderr.strip().splitlines()) == 1


def test_gpu_ci_unknown_dataset_is_one_clear_line():
    p = _gpu_ci_cli("--only", "nope/nothing", "--plan")
    assert p.returncode != 0 and "unknown dataset 'nope/nothing'" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_source_hash_ignores_the_meta_dict_comments_and_blank_lines_but_not_code():
    """A dataset stays current when a producer's budget is re-estimated or a comment in a kernel the page
    shows is corrected; any change to what runs, a docstring's text included, makes it stale."""
    from sitekit.measure import source_hash

    body = (
        b'"""doc\n\n  with a blank line"""\nMETA = {"needs": "gpu", "budget_s": 20}   # 19 s\n\n'
        b"x = 1  # one\ns = '# not a comment'\nf = f\"{x:>4}#\"\n"
    )
    same = [
        body.replace(b'"budget_s": 20', b'"budget_s": 30'),
        body.replace(b"# 19 s", b"# 29 s"),
        body.replace(b"x = 1  # one", b"# a comment on its own line\n\n\nx = 1    # one, said twice  "),
        body.replace(b"x = 1  # one", b"x = 1"),
    ]
    for other in same:
        assert source_hash(other, "p.py") == source_hash(body, "p.py"), other
    changed = [
        body.replace(b"x = 1", b"x = 2"),
        body.replace(b"# not a comment", b"# not a remark"),  # inside a string
        body.replace(b'#"', b'# "'),  # inside an f-string
        body.replace(b"doc\n\n  with", b"doc\n  with"),  # a docstring's blank line is its text
        body.replace(b"x = 1", b"if 1:\n    x = 1"),
    ]
    for other in changed:
        assert source_hash(other, "p.py") != source_hash(body, "p.py"), other
    c = b"// one\nint main() { return 0; }\n"  # not Python: every byte counts
    assert source_hash(c, "dgemm.c") != source_hash(c.replace(b"one", b"two"), "dgemm.c")
    assert source_hash(body) != source_hash(body.replace(b"# 19 s", b"# 29 s"))  # no path: the bytes as they are
    broken = b"x = (1,\n"  # does not tokenize: hashed as it is, without an error
    assert source_hash(broken, "p.py") != source_hash(broken + b"# c\n", "p.py")


_LABEL_FILES = sorted([DATA / "labels.yml", *DATA.glob("*/labels.yml")])


@pytest.mark.parametrize("path", _LABEL_FILES, ids=[p.relative_to(DATA).as_posix() for p in _LABEL_FILES])
def test_labels_are_en_zh_strings(path):
    """Every labels file of the site: an unquoted comma in a YAML flow mapping splits a label into two
    keys ({en: Compile, cold cache (s)} gives en='Compile' plus a key 'cold cache (s)')."""
    labels = yaml.safe_load(path.read_text(encoding="utf-8"))
    bad = {
        k: v
        for k, v in labels.items()
        if not (isinstance(v, dict) and set(v) == {"en", "zh"} and all(isinstance(s, str) and s for s in v.values()))
    }
    assert not bad, f'{path.relative_to(DATA.parent)}: entries must be {{en: "...", zh: "..."}} (quote commas): {bad}'


def test_provenance_shows_seven_character_commits():
    """Datasets record 7- or 12-character hashes; the provenance line shows git's 7-character form."""
    assert render.short_commit("0de058c") == "0de058c"
    assert render.short_commit("a762dcdba9fc") == "a762dcd"
    assert render.short_commit("f4f544f+dirty") == "f4f544f+dirty"
    assert render.short_commit("unknown") == "unknown"


def test_clock_samples_are_parsed_and_idle_ones_left_out():
    """nvidia-smi's lines become samples; the summary covers busy samples only and counts the
    software-power-cap reason (0x4) and the slowdown reasons apart."""
    from sitekit.measure import busy, clock_summary, parse_clock_sample

    lines = [
        "345, 82.44, 43, 0x0000000000000001",  # idle: left out
        "1980, 289.32, 47, 0x0000000000000000",
        "1620, 185.89, 53, 0x0000000000000004",
        "1440, 438.24, 61, 0x0000000000000004",
        "1470, 441.84, 63, 0x0000000000000024",  # power cap and SW thermal slowdown
        "[N/A], [N/A], 40, 0x0",  # not a sample
        "clocks.current.sm [MHz], power.draw [W], temperature.gpu, clocks_event_reasons.active",
    ]
    samples = [s for s in map(parse_clock_sample, lines) if s is not None]
    assert len(samples) == 5 and samples[1] == {"sm_mhz": 1980.0, "power_w": 289.32, "temp_c": 47.0, "reasons": 0}
    # with utilization (the current query): a sample with no kernel in nvidia-smi's last period is not
    # busy, even without the idle reason (the host compiling, the clock on its way down)
    now = [parse_clock_sample(x) for x in ("345, 90.1, 44, 0x0000000000000000, 0", "1830, 650.0, 60, 0x4, 100")]
    assert now[0]["util_pct"] == 0.0 and now[1]["util_pct"] == 100.0
    # a driver that answers "[N/A]" for utilization: the sample stays, judged by the idle reason alone
    na = parse_clock_sample("1830, 650.0, 60, 0x4, [N/A]")
    assert na == {"sm_mhz": 1830.0, "power_w": 650.0, "temp_c": 60.0, "reasons": 4} and busy(na)
    assert parse_clock_sample("[N/A], 650.0, 60, 0x4, 100") is None
    assert clock_summary(now)["sm_mhz"] == [1830.0] * 3 and clock_summary(now[:1]) is None
    c = clock_summary(samples)
    assert c["samples"] == 4 and c["sm_mhz"] == [1440.0, 1620.0, 1980.0] and c["temp_c_max"] == 63.0
    assert c["power_capped"] == 0.75 and c["slowdown"] == 0.25 and c["power_w"] == [438.2, 441.8]
    assert clock_summary(samples[:1]) is None  # only idle samples: nothing to say


def test_clock_log_windows_pick_the_samples_of_each_version():
    from sitekit.measure import ClockLog

    log = ClockLog()
    mk = lambda mhz: {"sm_mhz": mhz, "power_w": 400.0, "temp_c": 60.0, "reasons": 4}  # noqa: E731
    log.samples = [(1.0, mk(1980.0)), (2.0, mk(1500.0)), (3.0, mk(1400.0)), (4.0, mk(1900.0))]
    assert log.windows([(1.5, 2.5), (2.9, 3.1)])["sm_mhz"] == [1400.0, 1500.0, 1500.0]
    assert log.summary(3.5, None)["sm_mhz"] == [1900.0] * 3 and log.windows([(5, 6)]) is None


def test_rounds_rotate_which_version_is_timed_first(monkeypatch):
    """bench_each_round starts round r with version r: the version timed right after a settle() (or any
    other warm-up with its own clock state) changes from round to round, and spans cover every timing."""
    from sitekit import measure

    order = []
    monkeypatch.setattr(measure, "bench", lambda fn, **kw: fn())
    fns = {name: (lambda name=name: order.append(name) or float(len(order))) for name in "abc"}
    spans = {}
    times = measure.bench_each_round(fns, rounds=4, spans=spans)
    assert order == [*"abc", *"bca", *"cab", *"abc"]
    assert times == {"a": [1.0, 6.0, 8.0, 10.0], "b": [2.0, 4.0, 9.0, 11.0], "c": [3.0, 5.0, 7.0, 12.0]}
    assert {k: len(v) for k, v in spans.items()} == {"a": 4, "b": 4, "c": 4}


def test_clock_log_without_nvidia_smi_records_nothing(monkeypatch):
    """On a machine without nvidia-smi (CI) the log starts, records nothing and says why."""
    from sitekit.measure import ClockLog

    monkeypatch.setenv("PATH", "/nonexistent")
    with ClockLog() as log:
        pass
    assert log.samples == [] and log.summary() is None and "nvidia-smi" in log.error


def _clocks(**over) -> dict:
    """A ClockLog summary as gpu_ci records it (sitekit.measure.clock_summary), with fields overridden."""
    base = {"samples": 3, "sm_mhz": [1500.0, 1600.0, 1700.0], "power_w": [400.0, 450.0], "temp_c_max": 60.0}
    return {**base, "power_capped": 1.0, "slowdown": 0.0, **over}


def test_provenance_line_reports_the_clock_and_bad_clocks_are_refused():
    ds = data.new("art/ds", {"x": {"unit": "s", "noise": 0.1}}, [{"case": "a", "x": 1.0}])
    assert "SM clock" not in render.provenance_line(ds, "en")
    ds["provenance"]["clocks"] = _clocks(sm_mhz=[1440.0, 1620.0, 1980.0], power_w=[438.2, 560.0], power_capped=0.55)
    data.validate(ds, "x")
    en, zh = render.provenance_line(ds, "en"), render.provenance_line(ds, "zh")
    assert "SM clock while busy: median 1,620 MHz, highest 1,980" in en and "438 W" in en and "55 %" in en
    assert "SM 时钟中位数 1620 MHz，最高 1980 MHz" in zh and "55%" in zh
    assert "1,440" not in en and "1440" not in zh  # the lowest busy sample is not shown (see clocks_text)
    for bad in ({"sm_mhz": [1980, 1440, 1620]}, {"power_w": [1.0]}, {"power_capped": 1.5}):
        broken = copy.deepcopy(ds)
        broken["provenance"]["clocks"].update(bad)
        with pytest.raises(data.DataError, match="clocks"):
            data.validate(broken, "x")


def test_provenance_line_shows_the_load_a_cpu_producer_read():
    """A CPU producer that waits for a quiet machine records the 1-minute load it read before each round;
    the provenance line prints their range (not a word such as "idle" that the figures cannot back)."""
    ds = data.new("art/ds", {"x": {"unit": "s", "noise": 0.1}}, [{"case": "a", "x": 1.0}])
    assert "1-minute load" not in render.provenance_line(ds, "en")
    ds["loadavg_1min"] = [1.27, 1.17, 1.17]
    assert "1-minute load read before each round: 1.17–1.27" in render.provenance_line(ds, "en")
    assert "每轮开始前读到的 1 分钟负载：1.17–1.27" in render.provenance_line(ds, "zh")
    ds["loadavg_1min"] = [0.5, 0.5]
    assert render.provenance_line(ds, "en").endswith("1-minute load read before each round: 0.50</p>")


def test_gpu_ci_records_the_clock_of_a_timed_producer_only(tmp_path, monkeypatch):
    """gpu_ci samples nvidia-smi while a producer runs and adds the summary to a timed dataset's
    provenance (an untimed one runs beside the code blocks, whose load is not its own)."""
    gpu_ci = _gpu_ci()
    fake = _clocks()

    class FakeLog:
        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def summary(self):
            return fake

    monkeypatch.setattr(gpu_ci, "ClockLog", FakeLog)
    script = tmp_path / "producer.py"
    script.write_text(
        "import sys\nsys.path.insert(0, %r)\nfrom sitekit import data\n"
        "ds = data.new('art/ds', {'x': {'unit': 's', 'noise': 0.1}}, [{'case': 'a', 'x': 1.0}])\n"
        "data.write(ds, sys.argv[sys.argv.index('--out') + 1])\n" % str(ROOT / "scripts")
    )
    for timed in (True, False):
        ds = registry.Dataset(name="art/ds", script=str(script), needs="gpu", timed=timed)
        new, msg, _log = gpu_ci.measure(ds, tmp_path)
        assert new is not None, msg
        assert (new["provenance"].get("clocks") == fake) is timed


def test_a_ratio_that_rounds_to_one_keeps_a_third_decimal():
    """0.9964 shown as "1.00" next to "not met" (target >= 1.0x) reads as a contradiction: it shows 0.996."""
    ds = {"metrics": {"ratio": {"fmt": ".2f"}}}
    assert render.fmt_value(ds, "ratio", 0.9964, "en") == "0.996"
    assert render.fmt_value(ds, "ratio", 1.0041, "en") == "1.004"
    assert render.fmt_value(ds, "ratio", 1.0, "en") == "1.00"
    assert render.fmt_value(ds, "ratio", 1.0003, "en") == "1.00"
    assert render.fmt_value(ds, "ratio", 1.2049, "en") == "1.20"


def test_a_non_zero_figure_that_rounds_to_zero_keeps_two_digits():
    """0.28 s of compiling shown as "0" reads as free: it shows 0.28; a real zero stays "0"."""
    ds = {"metrics": {"s": {"fmt": ".0f"}, "x": {"fmt": ".1f"}}}
    assert render.fmt_value(ds, "s", 0.2812, "en") == "0.28"
    assert render.fmt_value(ds, "s", 0.0, "en") == "0"
    assert render.fmt_value(ds, "s", 0.94, "en") == "1"
    assert render.fmt_value(ds, "x", 0.0004, "en") == "0.0004"
    assert render.fmt_value(ds, "x", -0.02, "en") == "-0.02"


def test_provenance_names_the_cpu_model_when_measured_on_is_unset(monkeypatch):
    """CPU timings on the 2-core VM depend on which CPU it landed on (AMD EPYC one day, Intel Xeon the next):
    without MEASURED_ON the machine is the model name from /proc/cpuinfo, the architecture and the count."""
    import platform

    monkeypatch.delenv("MEASURED_ON", raising=False)
    prov = data.collect_provenance(["scripts/measure/x.py"])
    assert prov["machine"].endswith(f", {os.cpu_count()} CPUs")
    assert prov["machine"].startswith(data.cpu_model()) and platform.machine() in data.cpu_model()
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file() and "model name" in cpuinfo.read_text():
        model = next(ln for ln in cpuinfo.read_text().splitlines() if ln.startswith("model name"))
        assert data.cpu_model().startswith(model.split(":", 1)[1].strip())
    monkeypatch.setenv("MEASURED_ON", "NVIDIA H200 machine")
    assert data.collect_provenance(["scripts/measure/x.py"])["machine"] == "NVIDIA H200 machine"


def test_uv_gets_the_package_sources_pip_is_configured_with(tmp_path):
    """scripts/test.sh installs with uv, which reads none of pip's configuration: scripts/uv_env.py maps it.
    A PIP_* variable wins over pip.conf, as in pip; a missing local index or path is left out (uv would stop
    where pip only warns); pip's choice among all indexes is kept."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("uv_env", ROOT / "scripts" / "uv_env.py")
    uv_env = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(uv_env)
    wheels, cons = tmp_path / "wheels", tmp_path / "constraints.txt"
    wheels.mkdir()
    cons.write_text("torch<=2.14.1\n")
    listing = "\n".join(
        [
            f":env:.find-links='{wheels}'",
            "global.find-links='/nowhere/wheels'",
            f"global.constraint='{cons}'",
            f"global.extra-index-url='file://{tmp_path} file:///nowhere/simple https://mirror.example/simple'",
            "global.index-url='https://pypi.example/simple'",
            "global.timeout='60'",
        ]
    )
    settings = uv_env.pip_settings(listing)
    assert settings["find-links"] == str(wheels)  # the variable, not the file
    assert "timeout" not in settings
    out = uv_env.uv_exports(settings)
    assert out == {
        "UV_INDEX_STRATEGY": "unsafe-best-match",
        "UV_DEFAULT_INDEX": "https://pypi.example/simple",
        "UV_INDEX": f"file://{tmp_path} https://mirror.example/simple",
        "UV_FIND_LINKS": str(wheels),
        "UV_CONSTRAINT": str(cons),
    }
    assert uv_env.uv_exports({}) == {"UV_INDEX_STRATEGY": "unsafe-best-match"}
    with pytest.raises(SystemExit, match="does not exist"):  # test.sh then installs with pip
        uv_env.uv_exports({"index-url": f"file://{tmp_path}/missing/simple"})


def test_uv_env_reads_what_pip_itself_prints(tmp_path):
    """The same, end to end, through pip's own `pip config list`: a pip.conf value written over several
    lines (pip prints it as one string literal with newlines in it), a PIP_* variable over the file, a
    boolean, and a trusted host. Nothing else on this machine is read: PIP_* variables and the global and
    user files are left out."""
    wheels, other = tmp_path / "wheels", tmp_path / "more-wheels"
    wheels.mkdir()
    other.mkdir()
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\n"
        f"find-links =\n    {wheels}\n    {other}\n    /nowhere/wheels\n"
        "extra-index-url = https://a.example/simple\n    https://b.example/simple\n"
        "trusted-host = a.example\n"
        "no-index = yes\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=str(conf), HOME=str(tmp_path), XDG_CONFIG_DIRS=str(tmp_path / "none"))
    run = lambda extra: subprocess.run(  # noqa: E731
        [sys.executable, str(ROOT / "scripts" / "uv_env.py")], env={**env, **extra}, capture_output=True, text=True
    )
    out = run({})
    assert out.returncode == 0, out.stderr
    got = dict(line.removeprefix("export ").split("=", 1) for line in out.stdout.splitlines())
    assert got["UV_FIND_LINKS"] == f"{wheels},{other}"
    assert got["UV_INDEX"] == "'https://a.example/simple https://b.example/simple'"
    assert got["UV_INSECURE_HOST"] == "a.example" and got["UV_NO_INDEX"] == "1"
    out = run({"PIP_FIND_LINKS": str(other)})  # the variable wins over the file, as in pip
    assert f"UV_FIND_LINKS={other}\n" in out.stdout
