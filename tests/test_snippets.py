"""Every snippet file is a program a reader can run on its own: `python snippets/<topic>/<name>.py`.

Files whose whole text a page already runs as one program are covered by the code-block
test and not run twice. A file that needs a GPU says so in a comment line `# needs: gpu`.
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


@pytest.fixture(scope="module")
def page_programs():
    return {_norm(b.code) for b in all_blocks() if b.lang in ("python", "py")}


@pytest.mark.parametrize("path", FILES, ids=[p.relative_to(ROOT).as_posix() for p in FILES])
def test_snippet_runs_standalone(path, page_programs):
    text = path.read_text(encoding="utf-8")
    if _norm(text) in page_programs:
        pytest.skip("the same program runs as a page's code block")
    m = re.search(r"^#\s*needs:\s*(.+)$", text, re.M)
    lacking = needs.missing([n.strip() for n in m.group(1).split(",")]) if m else []
    if lacking:
        pytest.skip("needs " + ", ".join(lacking))
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not needs.has_gpu():
        env["TRITON_INTERPRET"] = "1"
    p = subprocess.run([sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{path.relative_to(ROOT)} failed:\n{p.stdout[-3000:]}\n{p.stderr[-5000:]}"
