"""Notebooks are generated from the pages: same code as the page, prose in the page's language,
plain Jupyter Markdown, and they run top to bottom ("Run All") on a CPU.

There are no HTML notebook pages (issue 9): the article links its .ipynb as a download
(tests/test_build.py checks the link and the file).
"""

from __future__ import annotations

import json
import os
import re
import time

import nbformat
import pytest
from sitekit import DOCS, LANGS, ROOT
from sitekit.notebooks import build, wants_notebook
from sitekit.pages import blocks

PAGES = [p for lang in LANGS for p in sorted((DOCS / lang).glob("*.md")) if wants_notebook(p)]
MKDOCS_ONLY = [
    (re.compile(r"^\s*(!!!|\?\?\?\+?|===\+?)\s", re.M), "admonition or content tab"),
    (re.compile(r"--8<--"), "snippet include"),
    (re.compile(r"\{\{"), "data marker"),
    (re.compile(r"\{\s*[#.][\w-]"), "attribute list / heading id"),
    (re.compile(r":(?:material|octicons|fontawesome)-[\w-]+:"), "icon shortcode"),
    (re.compile(r"\]\((?![a-z]+:|/)[^)]*\.md\b"), "relative .md link"),
    (re.compile(r"\]\(#"), "in-page anchor (no ids in a notebook)"),
    (re.compile(r"\]\(\.\./"), "relative link (means nothing inside Jupyter)"),
    (re.compile(r"<!--"), "HTML comment / test mark"),
]


def _src(c):
    return c["source"] if isinstance(c["source"], str) else "".join(c["source"])


def _code(nb):
    return [_src(c) for c in nb["cells"] if c["cell_type"] == "code"]


def _ids(pages):
    return [p.relative_to(DOCS).as_posix() for p in pages]


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_notebook_has_the_pages_code(page):
    nb = build(page)
    nbformat.validate(nbformat.from_dict(nb))
    cells = _code(nb)[1:]  # [0] is the setup cell
    py_cells = "\n".join(re.sub(r"\A%%needs[^\n]*\n", "", c) for c in cells)
    py_blocks = "\n".join(
        b.code for b in blocks(page) if b.lang in ("python", "py") and not {"display", "checked_by"} & set(b.marks)
    )
    assert py_cells.split() == py_blocks.split(), "notebook code cells differ from the page's runnable Python blocks"
    # pytest-codeblocks joins a block and the blocks that continue it into one program: every cell of a
    # GPU program carries the guard
    gpu = "\n".join(
        b.code
        for b in blocks(page)
        if b.lang in ("python", "py")
        and ("gpu" in b.marks or "gpu" in b.marks.get("needs", ()))
        and not {"display", "checked_by"} & set(b.marks)
    )
    guarded = "\n".join(re.sub(r"\A%%needs[^\n]*\n", "", c) for c in cells if c.startswith("%%needs"))
    assert guarded.split() == gpu.split(), "a GPU block lost its visible %%needs guard, or a CPU block got one"


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_notebook_markdown_is_plain_jupyter(page):
    nb = build(page)
    for i, c in enumerate(nb["cells"]):
        if c["cell_type"] != "markdown":
            continue
        text = re.sub(r"```.*?```", "", _src(c), flags=re.S)  # code shown as code may contain anything
        for rx, what in MKDOCS_ONLY:
            m = rx.search(text)
            assert not m, (
                f"cell {i}: MkDocs-only syntax left ({what}): ...{text[max(0, m.start() - 60) : m.end() + 60]}..."
            )


@pytest.mark.parametrize("page", [p for p in PAGES if p.relative_to(DOCS).parts[0] == "zh"], ids=lambda p: p.name)
def test_chinese_notebook_prose_is_chinese(page):
    md = "".join("".join(c["source"]) for c in build(page)["cells"] if c["cell_type"] == "markdown")
    assert sum("\u4e00" <= ch <= "\u9fff" for ch in md) > 200


def test_notebook_generation_from_a_page(tmp_path):
    """The generator itself, on a small page: headings and prose become Markdown, Python becomes code,
    shell and shown-only blocks stay Markdown, a GPU block gets its guard, MkDocs syntax goes."""
    page = tmp_path / "demo.md"
    page.write_text(
        "---\nnotebook: true\n---\n# Demo { #demo }\n\nSome prose, see [the guide](triton-getting-started.md#install).\n\n"
        '!!! note "Careful"\n\n    Inside a note.\n\n'
        '```python\n--8<-- "snippets/index/environment.py:check"\n```\n\n'
        "<!--pytest.mark.gpu-->\n```python\nprint('gpu')\n```\n\n"
        '<!--pytest.mark.display("excerpt")-->\n```python\nprint(pid_n)\n```\n\n'
        "```bash\necho hi\n```\n",
        encoding="utf-8",
    )
    nb = build(page, lang="en")
    nbformat.validate(nbformat.from_dict(nb))
    kinds = [c["cell_type"] for c in nb["cells"]]
    assert kinds == ["markdown", "code", "markdown", "code", "code", "markdown"], kinds
    code = _code(nb)
    assert "TRITON_INTERPRET" in code[0]
    assert "torch.cuda.is_available()" in code[1] and code[2].startswith("%%needs gpu\n")
    md = "".join(_src(c) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "{ #demo }" not in md and "!!!" not in md and "**Careful**" in md and "print(pid_n)" in md
    assert "triton-getting-started/#install)" in md and ".md" not in md.replace("```", "")


# Running: nbclient, the kernel of this Python environment, TRITON_INTERPRET=1 without a GPU,
# from a scratch directory outside the repository. The Chinese notebook has the same code cells as
# the English one (test_notebook_has_the_pages_code + tests/test_parity.py): it runs only when its
# code differs.
def _run_targets():
    seen, out = {}, []
    for p in PAGES:
        key = json.dumps(_code(build(p)))
        if key in seen:
            continue
        seen[key] = p
        out.append(p)
    return out


RUN = _run_targets()


@pytest.mark.parametrize("page", RUN, ids=_ids(RUN))
def test_notebook_runs_top_to_bottom(page, tmp_path):
    nbclient = pytest.importorskip("nbclient")
    assert not str(tmp_path).startswith(str(ROOT))
    nb = nbformat.reads(json.dumps(build(page)), as_version=4)  # as a downloaded file reads
    env_before = os.environ.get("TRITON_INTERPRET")
    import needs

    if not needs.has_gpu():
        os.environ["TRITON_INTERPRET"] = "1"
    t0 = time.time()
    try:
        client = nbclient.NotebookClient(
            nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
        )
        try:
            client.execute()
        except nbclient.exceptions.CellExecutionError as e:
            cell = next(
                (
                    i
                    for i, c in enumerate(nb.cells)
                    if c.cell_type == "code" and any(o.get("output_type") == "error" for o in c.get("outputs", []))
                ),
                "?",
            )
            src = "".join(nb.cells[cell].source).split("\n")[:6] if cell != "?" else []
            pytest.fail(
                f"{page.relative_to(DOCS)}: cell {cell} failed ({time.time() - t0:.0f} s in):\n"
                + "\n".join("    " + l for l in src)
                + f"\n{str(e)[-3000:]}",
                pytrace=False,
            )
    finally:
        if env_before is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = env_before
    skipped = [
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and any("skipped: this cell needs" in o.get("text", "") for o in c.get("outputs", []))
    ]
    guarded = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "".join(c.source).startswith("%%needs")]
    if not needs.has_gpu():
        assert skipped == guarded, "a %%needs cell ran, or printed no skip message, without a GPU"
