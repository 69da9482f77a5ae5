"""sitekit.fragile: how far a check() marker is from failing, and which ones a re-run could flip."""

import pytest
from sitekit import fragile
from sitekit.data import DataError
from sitekit.render import _judge

DS = "triton_getting_started/vector_add"
WHERE = {"kind": "target", "dtype": "fp32"}


def test_margin_of_each_operator():
    assert fragile.margin(">", 1.2, 1.0, 0.1) == pytest.approx(0.1)
    assert fragile.margin("<", 0.8, 1.0, 0.1) == pytest.approx(0.1)
    assert fragile.margin("~", 1.02, 1.0, 0.1) == pytest.approx(0.08)
    assert fragile.margin("<~", 1.05, 1.0, 0.1) == pytest.approx(0.05)
    assert fragile.margin(">~", 0.95, 1.0, 0.1) == pytest.approx(0.05)
    assert fragile.margin(">=", 1.0, 1.0, 0.1) == 0
    assert fragile.margin("<=", 1.1, 1.0, 0.1) == pytest.approx(-0.1)  # fails now: negative
    with pytest.raises(DataError, match="op must be one of"):
        fragile.margin("!=", 1.0, 1.0, 0.1)


def _page(op: str, ref: float) -> str:
    return f'Some sentence{{{{ check("{DS}", "ratio", where={WHERE!r}, op="{op}", ref={ref!r}) }}}}.\n'


def test_a_check_just_past_its_threshold_is_listed_and_a_safe_one_is_not():
    v, _, noise = _judge(DS, "ratio", WHERE, 1.0)
    assert noise > 0
    close = v / (1 + noise) / (1 + noise / 10)  # passes '>' by a tenth of the noise
    far = v / (1 + noise) / (1 + 3 * noise)  # passes by three times the noise
    found = fragile.scan_text("intro\n" + _page(">", close) + _page(">", far), "page.md")
    assert [(f.page, f.line, f.op) for f in found] == [("page.md", 2, ">")]
    assert 0 < found[0].margin < noise / 2
    assert "passes by" in str(found[0]) and DS in str(found[0])


def test_cli_lists_and_rejects_a_missing_page(capsys, tmp_path):
    page = tmp_path / "p.md"
    v, _, noise = _judge(DS, "ratio", WHERE, 1.0)
    page.write_text(_page(">", v / (1 + noise) / (1 + noise / 10)), encoding="utf-8")
    assert fragile.main(["--page", str(page)]) == 0
    assert "p.md:1:" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        fragile.main(["--page", str(tmp_path / "missing.md")])


def test_gpu_ci_report_section_lists_them(tmp_path):
    import gpu_ci

    v, _, noise = _judge(DS, "ratio", WHERE, 1.0)
    page = tmp_path / "p.md"
    page.write_text(_page(">", v / (1 + noise) / (1 + noise / 10)), encoding="utf-8")
    n, lines = gpu_ci.fragile_section([page])
    assert n == 1 and lines[0].startswith("## Checks closer to failing") and lines[2].startswith("- p.md:1:")
    page.write_text(_page(">", v / 10), encoding="utf-8")
    assert gpu_ci.fragile_section([page]) == (0, lines[:2] + ["none", ""])
