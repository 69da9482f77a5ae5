"""The page "MLIR Architecture": its IR samples regenerated, the runner's numbers against numpy, its blocks.

Every IR sample and command output the page shows (data/mlir_architecture/ir/*.txt) is written by
scripts/measure/mlir_architecture/ir_samples.py; here it is run again into a temporary folder and
each sample must equal the committed one (the per-pass timing with its numbers masked), so an upgrade
of MLIR, Triton, JAX or torch-mlir shows up as a diff. The shell blocks themselves also run in
tests/test_codeblocks.py against the same files.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import needs
import numpy as np
import pytest
from sitekit import DATA, DOCS, ROOT
from sitekit.pages import blocks

ME = "tests/test_mlir_architecture.py"
PAGES = [DOCS / lang / "mlir-architecture.md" for lang in ("en", "zh")]
IR = DATA / "mlir_architecture" / "ir"
SNIPPETS = ROOT / "snippets" / "mlir_architecture"
PRODUCER = ROOT / "scripts" / "measure" / "mlir_architecture" / "ir_samples.py"

sys.path.insert(0, str(ROOT / "scripts"))
from measure.mlir_architecture import _common as common  # noqa: E402
from measure.mlir_architecture import ir_samples  # noqa: E402


def _need_mlir():
    lacking = needs.missing(["mlir-opt"])
    if lacking:
        pytest.skip("needs " + ", ".join(lacking))


def _diff(a: str, b: str, name: str) -> str:
    return (
        f"{name} differs from a fresh run:\n"
        + "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "committed", "regenerated", n=1))[:6000]
    )


# ----------------------------------------------------------------------------- regeneration


def test_samples_regenerate(tmp_path):
    """One test (not one per sample): under xdist each worker would otherwise regenerate them all."""
    _need_mlir()
    p = subprocess.run(
        [sys.executable, str(PRODUCER), "--ir-dir", str(tmp_path), "--out", str(tmp_path / "m.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    problems = []
    for name in sorted(ir_samples.SOURCES):
        committed = (IR / f"{name}.txt").read_text(encoding="utf-8")
        fresh = (tmp_path / f"{name}.txt").read_text(encoding="utf-8")
        if name in ir_samples.VOLATILE:
            committed, fresh = ir_samples.mask_numbers(committed), ir_samples.mask_numbers(fresh)
        if committed != fresh:
            problems.append(_diff(committed, fresh, f"data/mlir_architecture/ir/{name}.txt"))
    assert not problems, "\n".join(problems)[:12000]
    rows = lambda f: json.loads(f.read_text(encoding="utf-8"))["rows"]  # noqa: E731
    assert rows(tmp_path / "m.json") == rows(DATA / "mlir_architecture" / "ir_samples.json"), "the manifest changed"


def test_every_shown_sample_is_produced():
    produced = {f"{n}.txt" for n in ir_samples.SOURCES}
    assert {p.name for p in IR.iterdir()} == produced, "data/mlir_architecture/ir holds files no script writes"
    for page in PAGES:
        shown = set(re.findall(r'data/mlir_architecture/ir/([\w.\-]+)"', page.read_text(encoding="utf-8")))
        assert shown, f"{page.name} shows no sample"
        assert shown <= produced, f"{page.name} includes samples no script writes: {shown - produced}"


# ----------------------------------------------------------------------------- what the page claims


def _dense(text: str, name: str) -> np.ndarray:
    m = re.search(rf"%{name} = arith\.constant dense<(\[.*?\])> : tensor<([\dx]+)xf32>", text)
    assert m, f"main.mlir: no dense constant %{name}"
    return np.array(json.loads(m.group(1)), dtype=np.float32)


def _printed(text: str) -> list[np.ndarray]:
    """The arrays printMemrefF32 printed, in order (one per top-level [...])."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        if depth:
            cur += ch
        if ch == "]":
            depth -= 1
            if depth == 0:
                out.append(np.array(json.loads(cur), dtype=np.float32))
                cur = ""
    return out


def test_runner_result_matches_numpy():
    """The page's `mlir-runner` output (committed, and regenerated above) is relu(x @ w) and its row sums."""
    main = (SNIPPETS / "main.mlir").read_text(encoding="utf-8")
    x, w = _dense(main, "x"), _dense(main, "w")
    relu = np.maximum(x @ w, 0)
    got = _printed((IR / "run.txt").read_text(encoding="utf-8"))
    assert len(got) == 2, got
    np.testing.assert_allclose(got[0], relu, rtol=1e-6)
    np.testing.assert_allclose(got[1], relu.sum(axis=1), rtol=1e-6)
    assert (relu == 0).any() and (relu > 0).any(), "inputs should exercise both sides of the ReLU"


def test_rewrite_pattern():
    p = subprocess.run([sys.executable, str(SNIPPETS / "rewrite.py")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr  # its __main__ runs _test(): fused once, not fused when shared


def test_bench_block_runs_and_computes():
    _need_mlir()
    lines = common.run_block("bench.sh", "time").split()
    assert len(lines) == 12 and lines[0::4] == ["untiled", "tile", "vectorize"], lines
    for i in range(0, 12, 4):
        assert float(lines[i + 1]) == 256.0 and float(lines[i + 2]) == 256.0, lines
        assert float(lines[i + 3]) > 0


def test_timing_order_in_data():
    """The page says tiling helps and vectorizing helps more; the committed timings must say so."""
    rows = {r["variant"]: r for r in json.loads((DATA / "mlir_architecture" / "matmul_cpu.json").read_text())["rows"]}
    assert set(rows) == {"mm_untiled", "mm_tiled", "mm_vectorized"}
    assert rows["mm_vectorized"]["ms"] < rows["mm_tiled"]["ms"] < rows["mm_untiled"]["ms"]


# ----------------------------------------------------------------------------- the page's blocks and bad input


def _lines(code: str) -> str:
    """The code without blank lines (the page's include of env.sh leaves one after it)."""
    return "\n".join(line for line in code.splitlines() if line.strip())


def _known_blocks() -> dict[str, tuple[str, str]]:
    known = {}
    for script in sorted(SNIPPETS.glob("*.sh")):
        if script.name == "env.sh":
            continue
        for name in common.sections(script.name):
            known[_lines(common.block(script.name, name))] = (script.name, name)
    return known


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.parent.name)
def test_shell_blocks_are_snippet_sections(page):
    """Every shell block is env.sh + one section, so the producer runs exactly what the page shows."""
    known = _known_blocks()
    shell = [b for b in blocks(page) if b.lang in ("bash", "sh") and "display" not in b.marks]
    assert len(shell) >= 15, f"{page.name}: expected the page's commands"
    for b in shell:
        assert _lines(b.code) in known, f"{b.id}: not env.sh + a section of snippets/mlir_architecture/*.sh"
        assert "mlir-opt" in b.marks.get("needs", ()) or b.marks.get("checked_by", ("",))[0] == ME, (
            f'{b.id}: mark it needs("mlir-opt") or checked_by this file'
        )


def test_tools_error_says_what_to_set():
    p = subprocess.run(
        [sys.executable, str(SNIPPETS / "tools.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MLIR_BIN": "/nonexistent/llvm-22/bin"},
    )
    assert p.returncode == 1 and "no mlir-opt there" in p.stderr, p.stderr


def test_producer_rejects_bad_arguments():
    p = subprocess.run([sys.executable, str(PRODUCER), "--jobs", "0"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and "--jobs must be at least 1" in p.stderr
    p = subprocess.run(
        [sys.executable, str(ROOT / "scripts/measure/mlir_architecture/matmul_cpu.py"), "--rounds", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and "--rounds must be at least 2" in p.stderr


def test_unknown_section_is_a_clear_error():
    with pytest.raises(KeyError, match="has no section 'nope'"):
        common.block("pipeline.sh", "nope")


def test_page_files_exist():
    for page in PAGES:
        assert page.is_file(), f"{page} missing"
    assert Path(ROOT / "requirements-mlir.txt").is_file()
