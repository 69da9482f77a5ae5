"""Run every code block of every page, in both languages, as the reader sees it.

Blocks come from sitekit.pages.blocks(): includes expanded by pymdownx.snippets'
own preprocessor, blocks cut out by pytest-codeblocks' parser. Each runnable block
is written to a file and run in a subprocess (`@triton.jit` needs real source
files). Without a CUDA GPU, Triton blocks run through the interpreter
(TRITON_INTERPRET=1); blocks marked `gpu` are skipped with that reason.

Marks, as HTML comments before a block (pytest-codeblocks syntax):
  <!--pytest.mark.gpu-->                     needs a CUDA GPU
  <!--pytest.mark.weekly-->                  a long GPU block: the GPU CI's weekly tier runs it, not the nightly
  <!--pytest.mark.needs("nvcc", "mpirun")--> needs tools (tests/needs.py)
  <!--pytest.mark.display("why")-->          shown, not run here (the reason is counted)
  <!--pytest.mark.checked_by("tests/x.py")--> run or compiled by that test file
  <!--pytest.mark.checked_by("tests/x.py", "output")--> the block above's output, compared by that test file
  <!--pytest.mark.tolerance(0.05)-->         relative tolerance for numbers in expected output
  <!--pytest.mark.timeout(600)-->            seconds (default 300)
  <!--pytest-codeblocks:cont-->              continues the previous block (one program)
  <!--pytest-codeblocks:expected-output-->   the next block is the previous block's stdout
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import blockstats
import needs
import pytest
from sitekit import ROOT
from sitekit.pages import all_blocks

RUNNABLE = {"python", "py", "bash", "sh"}
# Languages that are not programs: a diagram is rendered (and checked) by the browser test.
NOT_PROGRAMS = {"mermaid": "Mermaid diagram (rendered and checked by tests/test_browser.py)"}
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")

BLOCKS = all_blocks()


def _key(b) -> str:
    return hashlib.sha256(repr((b.lang, b.code, sorted(b.marks.items()), b.expected_output)).encode()).hexdigest()


# The Chinese page shows the same programs as the English one (tests/test_parity.py checks it):
# each distinct program runs once, under its first page; its copies point there.
FIRST: dict[str, str] = {}
for _b in BLOCKS:
    FIRST.setdefault(_key(_b), _b.id)


def _param(b):
    gpu = "gpu" in b.marks or "gpu" in b.marks.get("needs", ())
    if "weekly" in b.marks and not gpu:
        raise ValueError(f"{b.id}: the weekly mark chooses a GPU CI tier; this block is not GPU-marked")
    marks = [pytest.mark.gpu_block] if gpu else []
    if "weekly" in b.marks:
        marks.append(pytest.mark.weekly_block)
    return pytest.param(b, id=b.id, marks=marks)


def _compare(expected: str, got: str, tol: float | None) -> str | None:
    e, g = expected.split(), got.split()
    if tol is None:
        return None if e == g else f"output differs:\n--- expected\n{expected}\n--- got\n{got}"
    if len(e) != len(g):
        return f"output has {len(g)} words, expected {len(e)}:\n--- expected\n{expected}\n--- got\n{got}"
    for a, b in zip(e, g):
        na, nb = NUMBER.fullmatch(a.strip(",;:()")), NUMBER.fullmatch(b.strip(",;:()"))
        if na and nb:
            x, y = float(na.group()), float(nb.group())
            if abs(x - y) > tol * max(abs(x), abs(y), 1e-12):
                return f"{a} vs {b} beyond relative tolerance {tol}"
        elif a != b:
            return f"word {a!r} vs {b!r}:\n--- expected\n{expected}\n--- got\n{got}"
    return None


def _run(b, env) -> tuple[str, str]:
    timeout = b.marks.get("timeout", (300,))[0]
    with tempfile.TemporaryDirectory() as t:
        if b.lang in ("python", "py"):
            f = Path(t) / "block.py"
            cmd = [sys.executable, str(f)]
        else:
            f = Path(t) / "block.sh"
            cmd = ["bash", "-euo", "pipefail", str(f)]
        f.write_text(b.code, encoding="utf-8")
        try:
            p = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return "failed", f"timed out after {timeout} s"
    if p.returncode != 0:
        return "failed", f"exit code {p.returncode}\n--- stdout\n{p.stdout[-4000:]}\n--- stderr\n{p.stderr[-6000:]}"
    if b.expected_output is not None:
        tol = b.marks.get("tolerance", (None,))[0]
        problem = _compare(b.expected_output, p.stdout, tol)
        if problem:
            return "failed", problem
    crash = blockstats.crash_problem(p.stderr, b.expected_output)
    if crash:
        return "failed", crash
    return "passed", ""


def _reader_runs_it(request) -> bool:
    """tests/test_reader.py, in this session, runs the same CPU programs from the built pages (in a
    scratch directory, with only the files the page links): on a machine without a GPU the block
    runs there, once, instead of twice. Run this file alone and it runs every block itself."""
    return not needs.has_gpu() and any(
        i.nodeid.split("::")[0].endswith("test_reader.py") and "test_every_block" in i.nodeid
        for i in request.session.items
    )


@pytest.mark.parametrize("block", [_param(b) for b in BLOCKS])
def test_block(block, request):
    rec = {"id": block.id, "outcome": None, "reason": ""}
    blockstats.RESULTS.append(rec)
    lang = block.lang
    if "display" in block.marks or "checked_by" in block.marks:
        if "checked_by" in block.marks:
            target = block.marks["checked_by"][0]
            assert (ROOT / target.split("::")[0]).is_file(), f"checked_by names a missing file: {target}"
            reason = f"checked by {target}"
        else:
            reason = f"display-only: {block.marks['display'][0]}" if block.marks["display"] else ""
            assert reason, f"{block.id}: display() needs a reason"
        rec.update(outcome="display", reason=reason)
        pytest.skip(reason)
    if lang in NOT_PROGRAMS:
        rec.update(outcome="display", reason=NOT_PROGRAMS[lang])
        pytest.skip(NOT_PROGRAMS[lang])
    if lang not in RUNNABLE:
        rec.update(outcome="failed", reason=f"unhandled language {lang!r}")
        pytest.fail(
            f"{block.id}: a {lang or 'plain'} block is neither run nor marked: add "
            f'<!--pytest.mark.display("why")--> or <!--pytest.mark.checked_by("tests/...")-->'
        )

    first = FIRST[_key(block)]
    if first != block.id and lang in RUNNABLE:
        rec.update(outcome="display", reason="same program as a block of the English page, which runs it")
        pytest.skip(f"same program as {first}, which runs it")

    wanted = list(block.marks.get("needs", ())) + (["gpu"] if "gpu" in block.marks else [])
    lacking = needs.missing(wanted)
    if lacking:
        reason = "needs " + ", ".join(lacking)
        rec.update(outcome="skipped", reason=reason)
        pytest.skip(reason)

    if _reader_runs_it(request):
        rec.update(outcome="display", reason="run from the built page by tests/test_reader.py")
        pytest.skip("run from the built page by tests/test_reader.py (same program, same checks)")

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not needs.has_gpu():
        env["TRITON_INTERPRET"] = "1"  # Triton kernels run on the CPU through the interpreter
    outcome, detail = _run(block, env)
    rec["outcome"] = outcome
    if outcome == "failed":
        rec["reason"] = detail.splitlines()[0] if detail else ""
        pytest.fail(f"{block.id} (page line {block.lineno}):\n{detail}", pytrace=False)
