"""Notebooks are generated from the pages: same code as the page, prose in the page's language."""
from __future__ import annotations

import nbformat
import pytest

from sitekit import DOCS, LANGS
from sitekit.notebooks import build, wants_notebook
from sitekit.pages import blocks

PAGES = [p for lang in LANGS for p in sorted((DOCS / lang).glob("*.md")) if wants_notebook(p)]


def _code(nb):
    return [c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(DOCS).as_posix() for p in PAGES])
def test_notebook_has_the_pages_code(page):
    nb = build(page)
    nbformat.validate(nbformat.from_dict(nb))
    py_cells = "\n".join(c for c in _code(nb) if not c.startswith("%%bash"))
    py_blocks = "\n".join(b.code for b in blocks(page) if b.lang in ("python", "py"))
    assert py_cells.split() == py_blocks.split(), "notebook code cells differ from the page's Python blocks"


@pytest.mark.parametrize("page", [p for p in PAGES if p.relative_to(DOCS).parts[0] == "zh"],
                         ids=lambda p: p.name)
def test_chinese_notebook_prose_is_chinese(page):
    md = "".join("".join(c["source"]) for c in build(page)["cells"] if c["cell_type"] == "markdown")
    assert sum("\u4e00" <= ch <= "\u9fff" for ch in md) > 200


def test_notebook_generation_from_a_page(tmp_path):
    """The generator itself, on a small page: headings and prose become Markdown, Python becomes code."""
    page = tmp_path / "demo.md"
    page.write_text("---\nnotebook: true\n---\n# Demo { #demo }\n\nSome prose.\n\n"
                    "```python\n--8<-- \"snippets/index/environment.py:check\"\n```\n\n"
                    "```bash\necho hi\n```\n", encoding="utf-8")
    nb = build(page, lang="en")
    nbformat.validate(nbformat.from_dict(nb))
    kinds = [c["cell_type"] for c in nb["cells"]]
    assert kinds == ["markdown", "markdown", "code", "code"], kinds
    code = _code(nb)
    assert "torch.cuda.is_available()" in code[0] and code[1].startswith("%%bash")
    assert "{ #demo }" not in "".join("".join(c["source"]) for c in nb["cells"])
