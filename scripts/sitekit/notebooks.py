"""Build a Jupyter notebook from a page: its prose in the page's language, its code from snippets/.

Only pages whose front matter says `notebook: true` get one. The notebook is
generated, never written by hand: cells follow the page top to bottom, Python
blocks become code cells (the same text the tests run), shell blocks become
`%%bash` cells, everything else stays Markdown.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from . import DOCS, LANGS
from .pages import FENCE, _normalize_info_strings, expand
from .render import render_page

FRONT = re.compile(r"\A---\n(.*?)\n---\n", re.S)
COMMENT = re.compile(r"^\s*<!--.*?-->\s*$", re.M)
ATTR = re.compile(r"\s*\{\s*#[^}]*\}\s*$", re.M)

NOTE = {
    "en": "*Generated from the page [{title}](../../{slug}/) and the files under `snippets/`; "
          "the site's tests run the same code. On a machine without an NVIDIA GPU, run "
          "`import os; os.environ['TRITON_INTERPRET'] = '1'` before importing Triton.*",
    "zh": "*本笔记本由页面 [{title}](../../{slug}/) 与 `snippets/` 下的文件自动生成，"
          "站点测试运行的是同一份代码。没有 NVIDIA GPU 的机器上，请在导入 Triton 之前先执行 "
          "`import os; os.environ['TRITON_INTERPRET'] = '1'`。*",
}


def wants_notebook(page: Path) -> bool:
    m = FRONT.match(page.read_text(encoding="utf-8"))
    return bool(m and re.search(r"^notebook:\s*true\s*$", m.group(1), re.M))


def _cells(text: str, lang: str, page_path: str) -> list[dict]:
    text = FRONT.sub("", text)
    text = COMMENT.sub("", text)
    text = ATTR.sub("", text)
    text = render_page(text, lang, page_path)
    text = _normalize_info_strings(text)
    cells, buf = [], []
    lines = text.split("\n")
    i = 0

    def flush():
        md = "\n".join(buf).strip()
        if md:
            cells.append({"cell_type": "markdown", "metadata": {}, "source": md})
        buf.clear()

    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            buf.append(lines[i])
            i += 1
            continue
        ticks, info = m.group("ticks"), m.group("info").strip()
        j = i + 1
        while j < len(lines) and not lines[j].lstrip().startswith(ticks):
            j += 1
        body = "\n".join(lines[i + 1:j])
        if info == "python":
            flush()
            cells.append({"cell_type": "code", "metadata": {}, "execution_count": None,
                          "outputs": [], "source": body})
        elif info in ("bash", "sh"):
            flush()
            cells.append({"cell_type": "code", "metadata": {}, "execution_count": None,
                          "outputs": [], "source": "%%bash\n" + body})
        else:
            buf.extend(lines[i:j + 1])
        i = j + 1
    flush()
    return cells


def build(page: Path, lang: str | None = None) -> dict:
    lang = lang or page.relative_to(DOCS).parts[0]
    slug = page.stem
    text = expand(page)
    title = next((l[2:].split("{")[0].strip() for l in text.split("\n") if l.startswith("# ")), slug)
    cells = [{"cell_type": "markdown", "metadata": {}, "source": f"# {title}\n\n" + NOTE[lang].format(title=title, slug=slug)}]
    body = re.sub(r"^# .*$", "", FRONT.sub("", text), count=1, flags=re.M)
    cells += _cells(body, lang, f"{lang}/{page.name}")
    for i, c in enumerate(cells):  # nbformat stores sources as lists of lines; 4.5 wants cell ids
        c["source"] = c["source"].splitlines(keepends=True)
        c["id"] = f"{slug}-{lang}-{i:03d}"
    return {"cells": cells, "metadata": {
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}


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
