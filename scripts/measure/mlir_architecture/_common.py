"""What the producers of the page "MLIR Architecture" share: running a page block as the page shows it.

A shell block on the page is snippets/mlir_architecture/env.sh followed by one section of a .sh file
(`# --8<-- [start:name]` ... `[end:name]`); `block()` rebuilds exactly that text and `run_block()`
runs it with bash from the repository root, as tests/test_codeblocks.py does.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from sitekit import ROOT

SNIPPETS = ROOT / "snippets" / "mlir_architecture"
IR = ROOT / "data" / "mlir_architecture" / "ir"
SECTION = re.compile(r"^# --8<-- \[start:(?P<name>[\w-]+)\]\n(?P<body>.*?)^# --8<-- \[end:(?P=name)\]\n", re.M | re.S)


class BlockError(RuntimeError):
    """A page block failed; the message has its command and stderr."""


def sections(script: str) -> dict[str, str]:
    """{section name: text} of snippets/mlir_architecture/<script>."""
    text = (SNIPPETS / script).read_text(encoding="utf-8")
    return {m.group("name"): m.group("body") for m in SECTION.finditer(text)}


def block(script: str, section: str) -> str:
    """The page's block: env.sh, then the section."""
    secs = sections(script)
    if section not in secs:
        raise KeyError(f"{script} has no section {section!r}; it has {sorted(secs)}")
    return (SNIPPETS / "env.sh").read_text(encoding="utf-8") + secs[section]


def run_block(script: str, section: str, timeout: int = 300) -> str:
    """stdout of the block, run as tests/test_codeblocks.py runs it (bash -euo pipefail, cwd = repo root)."""
    code = block(script, section)
    p = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if p.returncode != 0:
        raise BlockError(f"{script}:{section} exited {p.returncode}\n{code}\n--- stderr\n{p.stderr[-3000:]}")
    return p.stdout


def run_python(snippet: str, timeout: int = 300, env: dict | None = None) -> tuple[str, str]:
    """(stdout, stderr) of `python snippets/mlir_architecture/<snippet>` from the repository root."""
    p = subprocess.run([sys.executable, str(SNIPPETS / snippet)], cwd=ROOT, capture_output=True, text=True,
                       timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
    if p.returncode != 0:
        raise BlockError(f"{snippet} exited {p.returncode}\n--- stderr\n{p.stderr[-3000:]}")
    return p.stdout, p.stderr


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
