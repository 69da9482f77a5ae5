"""Datasets: every file valid, every file produced by a registered script, drift detection works,
and a failed or invalid measurement never replaces good data."""
from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

from registry import DATASETS
from sitekit import DATA, ROOT, data, render

FILES = sorted(p for p in DATA.rglob("*.json"))


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(DATA).as_posix() for p in FILES])
def test_dataset_is_valid_and_registered(path):
    name = path.relative_to(DATA).with_suffix("").as_posix()
    obj = json.loads(path.read_text(encoding="utf-8"))
    if obj.get("schema") is None and "artifacts" in obj:
        pytest.skip("artifact manifest, checked by its article's regeneration test")
    data.load(name)
    registered = {d.name: d for d in DATASETS}
    assert name in registered, f"{path.relative_to(ROOT)} is not produced by any script in scripts/registry.py"
    script = ROOT / registered[name].script
    assert script.is_file(), f"{registered[name].script} does not exist"
    assert registered[name].script.split("/")[-1] in obj["provenance"]["command"], \
        f"{path.relative_to(ROOT)}: provenance command {obj['provenance']['command']!r} is not its registered script"
    if registered[name].needs == "gpu":
        assert obj["provenance"]["gpu"], f"{path.relative_to(ROOT)}: a GPU dataset without a GPU in its provenance"


def test_registry_scripts_have_help():
    for d in DATASETS:
        p = subprocess.run([sys.executable, d.script, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0 and "--out" in p.stdout, f"{d.script} --help must work and document --out:\n{p.stderr}"


def test_gpu_ci_budget():
    """The nightly GPU CI (datasets plus about 90 s of GPU code blocks) must fit in 10 minutes."""
    nightly = sum(d.budget_s for d in DATASETS if d.needs == "gpu" and d.tier == "nightly")
    assert nightly <= 500, f"nightly GPU datasets budget {nightly} s; with the code blocks GPU CI must stay under 10 minutes"
    assert all(d.tier in ("nightly", "weekly") for d in DATASETS)


def _sample():
    return data.new("test/sample", {"v": {"unit": "x", "noise": 0.05}}, [{"case": "a", "v": 1.0}, {"case": "b", "v": 2.0}])


def test_compare_reports_drift_beyond_noise_only():
    old = _sample()
    new = copy.deepcopy(old)
    new["rows"][0]["v"] = 1.04          # within 5 %
    assert data.compare(old, new) == []
    new["rows"][1]["v"] = 2.5           # +25 %
    moved = data.compare(old, new)
    assert len(moved) == 1 and '"case": "b"' in moved[0] and "+25.0%" in moved[0]
    del new["rows"][0]
    assert any("missing from the new measurement" in m for m in data.compare(old, new))


@pytest.mark.parametrize("mutate,message", [
    (lambda d: d.pop("provenance"), "missing key 'provenance'"),
    (lambda d: d["provenance"].pop("gpu"), "provenance lacks 'gpu'"),
    (lambda d: d["rows"].clear(), "non-empty list"),
    (lambda d: d["rows"][0].update(v=float("nan")), "finite number"),
    (lambda d: d["metrics"]["v"].pop("noise"), "needs 'unit' and 'noise'"),
])
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


def test_render_uses_page_language():
    en = render.render_page('{{ table("foundation/ceilings", cols=["case", "tbps"], where={"kind": "memory"}) }}', "en", "en/x.md")
    zh = render.render_page('{{ table("foundation/ceilings", cols=["case", "tbps"], where={"kind": "memory"}) }}', "zh", "zh/x.md")
    assert "Measured on NVIDIA H200" in en and "测量环境：NVIDIA H200" in zh
    assert "带宽" in zh and "Bandwidth" in en


def test_plot_is_inline_svg_in_current_color():
    svg = render.render_page('{{ plot("foundation/ceilings", x="shape", y="tflops", series="case", where={"kind": "matmul"}, kind="bar") }}', "en", "en/x.md")
    assert svg.count("<svg") == 1 and 'fill="currentColor"' in svg and "provenance" in svg


def test_gpu_ci_refuses_without_gpu():
    p = subprocess.run([sys.executable, "scripts/gpu_ci.py", "--check"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    import needs
    if needs.has_gpu():
        pytest.skip("this machine has a GPU; the refusal path is for CPU-only machines")
    assert p.returncode == 2 and "needs a CUDA GPU" in p.stderr


def test_unknown_dataset_is_a_clear_error():
    p = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, 'scripts'); from registry import by_name; by_name('nope')"],
                       cwd=ROOT, capture_output=True, text=True)
    assert p.returncode != 0 and "unknown dataset 'nope'" in p.stderr and "foundation/ceilings" in p.stderr


def test_save_validates_a_quick_run_without_writing_it(tmp_path, capsys):
    from sitekit import data
    ds = data.new("foundation/quick_check", {"x": {"unit": "s", "noise": 0.1}}, [{"case": "a", "x": 1.0}])
    out = tmp_path / "d.json"
    assert data.save(ds, out, quick=True) == 0 and not out.exists()
    assert "not written" in capsys.readouterr().out
    assert data.save(ds, out) == 0 and out.exists()
    with pytest.raises(data.DataError):
        data.save({**ds, "rows": []}, out, quick=True)       # a quick run is still validated
