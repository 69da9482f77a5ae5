"""Shared machinery of the site: datasets, rendering, page parsing, notebooks.

Everything that both the MkDocs hook and the tests need lives here, so that the
build and the tests read pages and data the same way.
"""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
DATA = ROOT / "data"
SNIPPETS = ROOT / "snippets"
LANGS = ("en", "zh")
