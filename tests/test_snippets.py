"""Every snippet file is a program a reader can run on its own: `python snippets/<topic>/<name>.py`.

Files whose whole text a page already runs as one program, and files that a page's shell block runs
as they are (the block's one command is `python snippets/<topic>/<name>.py`, with no arguments and no
mark that keeps it from running here), are covered by the reader test and not run twice. A file that
needs a GPU says so in a comment line `# needs: gpu`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import needs
import pytest
from sitekit import ROOT, SNIPPETS
from sitekit.pages import all_blocks

FILES = sorted(SNIPPETS.rglob("*.py"))
SECTION = re.compile(r"^\s*#\s*-{1,}8<-{1,}\s*\[(start|end):[^\]]*\]\s*$", re.M)


def _norm(code: str) -> str:
    return " ".join(SECTION.sub("", code).split())


RUNS_FILE = re.compile(r"^python3? (snippets/[\w/]+\.py)$")


def _file_run_by(code: str) -> str | None:
    """The snippet a shell block runs as it is: its one command, comments and blank lines aside."""
    lines = [l.split("#", 1)[0].strip() for l in code.splitlines()]
    lines = [l for l in lines if l]
    m = RUNS_FILE.match(lines[0]) if len(lines) == 1 else None
    return m.group(1) if m else None


@pytest.fixture(scope="module")
def page_programs():
    blocks = all_blocks()
    texts = {_norm(b.code) for b in blocks if b.lang in ("python", "py")}
    files = {
        f: b.id for b in blocks if b.lang in ("bash", "sh") and not b.marks and (f := _file_run_by(b.code)) is not None
    }
    return texts, files


def test_a_shell_block_that_runs_a_snippet_as_is_is_recognised():
    assert _file_run_by("python snippets/a/b.py        # about 5 s\n") == "snippets/a/b.py"
    assert _file_run_by("# a comment\npython3 snippets/a/b.py\n") == "snippets/a/b.py"
    assert _file_run_by("python snippets/a/b.py --n 32\n") is None  # other arguments: another program
    assert _file_run_by("python snippets/a/b.py\npython snippets/a/c.py\n") is None
    assert _file_run_by("TRITON_INTERPRET=1 python snippets/a/b.py\n") is None


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(ROOT).as_posix() for p in FILES])
def test_snippet_runs_standalone(path, page_programs):
    text = path.read_text(encoding="utf-8")
    texts, files = page_programs
    if _norm(text) in texts:
        pytest.skip("the same program runs as a page's code block")
    rel = path.relative_to(ROOT).as_posix()
    if rel in files:
        pytest.skip(f"a page's shell block runs it as it is ({files[rel]}): tests/test_reader.py runs that block")
    m = re.search(r"^#\s*needs:\s*(.+)$", text, re.M)
    lacking = needs.missing([n.strip() for n in m.group(1).split(",")]) if m else []
    if lacking:
        pytest.skip("needs " + ", ".join(lacking))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not needs.has_gpu():
        env["TRITON_INTERPRET"] = "1"
    p = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{path.relative_to(ROOT)} failed:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"


def test_triton_standard_functions_are_interpreted_ones_in_every_worker():
    """tests/conftest.py imports triton.language with the interpreter on before collection, so that no test
    module that happens to import Triton first (without TRITON_INTERPRET) leaves its worker with compiled
    standard functions, which raise inside every interpreted kernel after it."""
    pytest.importorskip("triton")
    import triton.language.standard as standard
    from triton.runtime.interpreter import InterpretedFunction

    assert isinstance(standard.zeros, InterpretedFunction), type(standard.zeros)
