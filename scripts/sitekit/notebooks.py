"""Build a Jupyter notebook from a page: its prose in the page's language, its code from snippets/.

Only pages whose front matter says `notebook: true` get one. The notebook is generated, never
written by hand, and it runs top to bottom ("Run All") on a machine without a GPU
(tests/test_notebooks.py runs every one with nbclient):

- the first code cell sets Triton's interpreter up when there is no NVIDIA GPU and defines the
  `%%needs` cell magic: a cell that needs a GPU (or nvcc, MPI) starts with `%%needs gpu` and, where
  that is missing, prints that it was skipped and why, instead of failing;
- Python blocks the page runs become code cells (the same text the tests run); blocks the page
  only shows (excerpts, generated code, output, installs, shell commands that need the repository)
  stay Markdown, as fenced code;
- the Markdown is plain Jupyter Markdown: admonitions and content tabs become a bold title over
  their text, heading ids and attribute lists go, icon shortcodes go, links to other pages and to
  this page's sections point at the published site.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from . import DOCS, LANGS
from .pages import FENCE, _normalize_info_strings, expand
from .render import render_page

FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
MARK = re.compile(r"^\s*<!--\s*(pytest\.mark\.\w+(?:\(.*\))?|pytest-codeblocks:[\w-]+)\s*-->\s*$")
COMMENT = re.compile(r"^\s*<!--.*?-->\s*$", re.M)
ATTR = re.compile(r"^(#{1,6}[ \t].*?)[ \t]*\{[ \t]*#[^}\n]*\}[ \t]*$", re.M)  # a heading's { #id }
ATTR_LIST = re.compile(r"(?<=\))\{\s*[.#:][^}]*\}|(?<=\])\{\s*[.#:][^}]*\}")
ICON = re.compile(r":(?:material|octicons|fontawesome|simple)-[\w-]+:\s?")
BLOCK = re.compile(
    r'^(?P<indent>[ \t]*)(?P<kind>!!!|\?\?\?\+?|===\+?)\s*(?P<type>[\w-]*)\s*(?:"(?P<title>[^"]*)")?\s*$'
)
MD_LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")

NOTE = {
    "en": "*Generated from the page [{title}]({url}) and the files under `snippets/` of the site's "
    "repository; the site's tests run this notebook top to bottom on a CPU. Without an NVIDIA GPU, "
    "the first code cell switches Triton to its interpreter, and cells marked `%%needs gpu` are "
    "skipped with a message.*",
    "zh": "*本笔记本由页面 [{title}]({url}) 与仓库中 `snippets/` 下的文件自动生成，站点测试会在 CPU 上从头到尾运行它。"
    "没有 NVIDIA GPU 时，第一个代码单元会让 Triton 改用解释器运行，标有 `%%needs gpu` 的单元会被跳过并给出提示。*",
}
SHOWN = {"en": "*Shown, not run in this notebook:*", "zh": "*仅作展示，本笔记本不运行：*"}
SHELL = {
    "en": '*Shell commands, run in a clone of the repository (see the page\'s "Run it yourself" box):*',
    "zh": "*Shell 命令，需要在仓库的克隆中运行（见页面上的“自己动手运行”）：*",
}

SETUP = '''\
# Setup: run this cell first.
# Without an NVIDIA GPU, Triton runs kernels in its interpreter (set before triton is imported).
import os, shutil
if shutil.which("nvidia-smi") is None:
    os.environ.setdefault("TRITON_INTERPRET", "1")

from IPython.core.magic import register_cell_magic

@register_cell_magic
def needs(line, cell):
    """%%needs gpu|nvcc|mpirun: run the cell only where that is available; say so otherwise."""
    missing = []
    for need in line.split():
        if need == "gpu":
            import torch
            ok = torch.cuda.is_available()
        else:
            ok = shutil.which({"mpi": "mpirun"}.get(need, need)) is not None
        if not ok:
            missing.append(need)
    if missing:
        print("skipped: this cell needs " + ", ".join(missing) + ", which this machine does not have")
        return
    get_ipython().run_cell(cell)
'''


def wants_notebook(page: Path) -> bool:
    m = FRONT.match(page.read_text(encoding="utf-8"))
    return bool(m and re.search(r"^notebook:\s*true\s*$", m.group(1), re.M))


def site_base() -> str:
    """The published site's URL, for links out of a notebook: SITE_URL, or the GitHub Pages URL of
    SITE_REPO_URL (https://github.com/o/r -> https://o.github.io/r/), or "/" (site-relative)."""
    url = os.environ.get("SITE_URL")
    if url:
        return url.rstrip("/") + "/"
    m = re.match(r"^https://github\.com/([^/]+)/([^/]+?)/?$", os.environ.get("SITE_REPO_URL", ""))
    return f"https://{m.group(1).lower()}.github.io/{m.group(2)}/" if m else "/"


def page_url(lang: str, slug: str, anchor: str = "") -> str:
    path = ("" if lang == "en" else f"{lang}/") + ("" if slug == "index" else f"{slug}/")
    return site_base() + path + (f"#{anchor}" if anchor else "")


def plain_markdown(text: str, lang: str, slug: str) -> str:
    """MkDocs-only syntax to plain Jupyter Markdown."""
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        m = BLOCK.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent = m.group("indent")
        title = m.group("title") or (m.group("type") or "").capitalize()
        out.append(f"{indent}**{title}**" if title else "")
        out.append("")
        i += 1
        inner = indent + "    "
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(inner)):
            out.append(indent + lines[i][len(inner) :] if lines[i].strip() else "")
            i += 1
    text = "\n".join(out)
    if any(BLOCK.match(l) for l in text.split("\n")):
        return plain_markdown(text, lang, slug)  # nested blocks, now one level up

    def link(m):
        t = m.group("target")
        if re.match(r"^[a-z]+:", t):
            return m.group(0)
        if t.startswith("#"):
            return f"]({page_url(lang, slug, t[1:])})"
        mm = re.match(r"^(?:\./)?([\w-]+)\.md(?:#([\w-]+))?$", t)
        if mm:
            return f"]({page_url(lang, mm.group(1), mm.group(2) or '')})"
        return m.group(0)

    text = MD_LINK.sub(link, text)
    text = ATTR_LIST.sub("", text)
    text = ICON.sub("", text)
    return text


def _marks(raw: list[str]) -> dict:
    from .reader import _marks as parse

    return parse(raw)


def _cells(text: str, lang: str, slug: str) -> list[dict]:
    text = FRONT.sub("", text)
    text = ATTR.sub(r"\1", text)
    text = render_page(text, lang, f"{lang}/{slug}.md")
    text = plain_markdown(text, lang, slug)
    text = _normalize_info_strings(text)
    cells, buf, pending = [], [], []
    program_needs: list[str] = []  # a block that continues another one needs what its first block needs
    lines = text.split("\n")
    i = 0

    def flush():
        md = COMMENT.sub("", "\n".join(buf)).strip()
        md = re.sub(r"\n{3,}", "\n\n", md)
        if md:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": md})
        buf.clear()

    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            mm = MARK.match(lines[i])
            if mm:
                pending.append(mm.group(1))
            elif lines[i].strip():
                pending = []
            buf.append(lines[i])
            i += 1
            continue
        ticks, info = m.group("ticks"), m.group("info").strip()
        j = i + 1
        while j < len(lines) and not lines[j].lstrip().startswith(ticks):
            j += 1
        body = "\n".join(l[len(m.group("indent")) :] for l in lines[i + 1 : j])
        marks = _marks(pending)
        pending = []
        shown = "display" in marks or "checked_by" in marks or "expected-output" in marks
        if (
            info in ("python", "py")
            and not shown
            and "cont" in marks
            and cells
            and cells[-1]["cell_type"] == "code"
            and body[:1] in (" ", "\t")
        ):
            # continues a class or function body (a method of the class above): a cell cannot start
            # indented, so it joins the cell above; the prose between them follows that cell
            cells[-1]["source"] += "\n" + body
        elif info in ("python", "py") and not shown:
            flush()
            needs = list(marks.get("needs", ())) + (["gpu"] if "gpu" in marks else [])
            if "cont" in marks:
                needs = program_needs + [n for n in needs if n not in program_needs]
            program_needs = needs
            src = (f"%%needs {' '.join(dict.fromkeys(needs))}\n" if needs else "") + body
            cells.append({"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": src})
        elif info in ("python", "py", "bash", "sh"):
            buf.extend(
                ["", SHOWN[lang] if info in ("python", "py") else SHELL[lang], "", f"```{info}", body, "```", ""]
            )
        else:
            buf.extend([f"```{info}", body, "```"])
        i = j + 1
    flush()
    return cells


def build(page: Path, lang: str | None = None) -> dict:
    lang = lang or page.relative_to(DOCS).parts[0]
    slug = page.stem
    text = expand(page)
    title = next((l[2:].split("{")[0].strip() for l in text.split("\n") if l.startswith("# ")), slug)
    cells = [
        {
            "cell_type": "markdown",
            "metadata": {},
            "source": f"# {title}\n\n" + NOTE[lang].format(title=title, url=page_url(lang, slug)),
        },
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": SETUP},
    ]
    body = re.sub(r"^# .*$", "", FRONT.sub("", text), count=1, flags=re.M)
    cells += _cells(body, lang, slug)
    for i, c in enumerate(cells):  # nbformat stores sources as lists of lines; 4.5 wants cell ids
        c["source"] = c["source"].splitlines(keepends=True)
        c["id"] = f"{slug}-{lang}-{i:03d}"
    return {
        "cells": cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def target(page: Path) -> Path:
    lang = page.relative_to(DOCS).parts[0]
    return DOCS / lang / "notebooks" / f"{page.stem}.ipynb"


def generate_all() -> list[Path]:
    """Write every page's notebook if its content changed (so `mkdocs serve` does not loop)."""
    written = []
    for lang in LANGS:
        for page in sorted((DOCS / lang).glob("*.md")):
            if not wants_notebook(page):
                continue
            out = target(page)
            content = json.dumps(build(page), indent=1, ensure_ascii=False) + "\n"
            if not out.exists() or out.read_text(encoding="utf-8") != content:
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text(content, encoding="utf-8")
            written.append(out)
    return written
