"""MkDocs hook: data-driven tables and plots, notebooks, offline assets, per-language search.

Loaded through `hooks:` in mkdocs.yml. Hooks run after the plugins listed in
mkdocs.yml unless an event priority says otherwise; the priorities below are
chosen against mkdocs-static-i18n, which runs its own events at -100.
"""
from __future__ import annotations

import json
import logging
import os
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from mkdocs.structure.files import Files

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sitekit import ROOT  # noqa: E402
from sitekit.data import DataError  # noqa: E402
from sitekit import notebooks, render  # noqa: E402

log = logging.getLogger("mkdocs.hooks.site")

VENDORED = ["overrides/assets/vendor/katex/katex.min.js",
            "overrides/assets/vendor/katex/katex.min.css",
            "overrides/assets/vendor/mermaid/mermaid.esm.min.mjs",
            "overrides/assets/vendor/katex/auto-render.min.js"]

BUTTONS = {
    "en": ("Download this page as a notebook", "View the notebook"),
    "zh": ("下载本页的 Jupyter 笔记本", "在线查看笔记本"),
}


def on_config(config, **kwargs):
    missing = [p for p in VENDORED if not (ROOT / p).is_file()]
    if missing:
        raise PluginError(f"vendored JavaScript missing: {', '.join(missing)}. "
                          "Run `python scripts/vendor_js.py` (fetches pinned KaTeX and Mermaid "
                          "from the npm registry) before building.")
    _tame_jupyter_cache(config)
    return config


def _tame_jupyter_cache(config):
    """mkdocs-jupyter deletes every cache entry not used by *this* build in on_post_build.
    mkdocs-static-i18n runs one build per language, so each build deleted the other
    language's entries and every build re-converted every notebook. Keep the entries:
    the cache is keyed by the notebook's content, so a stale entry is never used, only
    left behind in the git-ignored .cache/ (delete it at will)."""
    plugin = config.plugins.get("mkdocs-jupyter")
    if plugin is None or getattr(plugin, "_site_tamed", False):
        return
    original_pre_build = plugin.on_pre_build

    def on_pre_build(config):
        keep = getattr(plugin, "_used_cache_paths", set())
        original_pre_build(config)
        plugin._used_cache_paths |= keep

    def on_post_build(config):
        return None

    # MkDocs collected the plugin's bound event methods when it loaded the plugin: replace them
    # in its event table (assigning to the instance alone would change nothing).
    for event, replacement in (("pre_build", on_pre_build), ("post_build", on_post_build)):
        handlers = config.plugins.events[event]
        for i, h in enumerate(handlers):
            if getattr(h, "__self__", None) is plugin:
                handlers[i] = replacement
    plugin._site_tamed = True


@event_priority(100)
def on_pre_build(config, **kwargs):
    try:
        notebooks.generate_all()
    except DataError as e:
        raise PluginError(str(e)) from None


@event_priority(-200)
def on_files(files: Files, config, **kwargs):
    """mkdocs-static-i18n rebuilds the file list after mkdocs-jupyter wrapped the notebooks,
    which turns them back into static files (copied as raw JSON, never rendered).
    Wrap them again, after i18n, with mkdocs-jupyter's own logic."""
    plugin = config.plugins.get("mkdocs-jupyter")
    if plugin is None:
        return files
    from mkdocs_jupyter.plugin import NotebookFile
    # Replace in place: i18n's Files subclass maps nav paths to language folders.
    for f in list(files):
        if not isinstance(f, NotebookFile) and plugin.should_include(f):
            files.remove(f)
            nb = NotebookFile(f, **config)
            # NotebookFile derives its URL from the source path (en/notebooks/x.ipynb); use the
            # destination i18n chose instead (notebooks/x.ipynb for the default language).
            dest = f.dest_uri
            base = dest[: -len(".ipynb")] if dest.endswith(".ipynb") else dest.rsplit("/", 1)[0]
            nb.dest_path = f"{base}/index.html"
            nb.abs_dest_path = os.path.normpath(os.path.join(config.site_dir, nb.dest_path))
            nb.url = f"{base}/"
            files.append(nb)
    return files


@event_priority(-200)
def on_nav(nav, config, files, **kwargs):
    """Reading order from sitekit.articles; notebook pages stay out of the menu."""
    from mkdocs.structure.pages import Page
    from sitekit.articles import ORDER

    def rank(item):
        if isinstance(item, Page):
            stem = Path(item.file.src_uri).stem
            return ORDER.index(stem) if stem in ORDER else len(ORDER)
        return len(ORDER) + 1

    items = [i for i in nav.items
             if not (isinstance(i, Page) and "/notebooks/" in "/" + i.file.src_uri)
             and not (getattr(i, "title", "") or "").lower() == "notebooks"]
    unknown = [i.file.src_uri for i in items if isinstance(i, Page) and rank(i) == len(ORDER)]
    if unknown:
        raise PluginError(f"pages not listed in scripts/sitekit/articles.py: {unknown}")
    nav.items = sorted(items, key=rank)
    pages = [i for i in nav.items if isinstance(i, Page)]
    for a, b in zip(pages, pages[1:]):
        a.next_page, b.previous_page = b, a
    if pages:
        pages[0].previous_page = None
        pages[-1].next_page = None
    nav.pages = pages + [p for p in nav.pages if p not in pages]
    return nav


def _lang(page) -> str:
    src = page.file.src_uri
    return "zh" if src.startswith("zh/") or getattr(page.file, "locale", None) == "zh" else "en"


def on_page_markdown(markdown: str, page, config, files, **kwargs):
    lang = _lang(page)
    try:
        markdown = render.render_page(markdown, lang, page.file.src_uri)
    except DataError as e:
        raise PluginError(str(e)) from None
    if page.meta.get("notebook"):
        slug = Path(page.file.src_uri).stem
        dl, view = BUTTONS[lang]
        buttons = (f'\n<div class="notebook-buttons" markdown>\n'
                   f'<a class="md-button md-button--primary" href="../notebooks/{slug}/{slug}.ipynb" '
                   f'download="{slug}.{lang}.ipynb">:material-download: {dl}</a>\n'
                   f'[:material-notebook: {view}](notebooks/{slug}.ipynb){{ .md-button }}\n</div>\n')
        markdown = re.sub(r"^(# .*)$", lambda m: m.group(1) + "\n" + buttons, markdown, count=1, flags=re.M)
    return markdown


NB_MERMAID_LOADER = re.compile(r'<script type="module">(?:(?!</script>).)*?mermaid(?:(?!</script>).)*?</script>', re.S)


NB_MERMAID_BLOCK = re.compile(r'<div class="jp-Mermaid"><pre class="mermaid">(.*?)</pre>\s*</div>', re.S)


def _offline_notebook(html: str) -> str:
    """nbconvert's template imports Mermaid from cdnjs and points MathJax at an empty URL.
    Drop both: site.js renders the diagrams with the vendored Mermaid and the math with
    the vendored KaTeX, as on every other page."""
    html = NB_MERMAID_LOADER.sub("", html)
    html = html.replace('<script src=""> </script>', "")
    # nbconvert leaves the diagram's <br/> line breaks as real elements; keep them as text
    # so that Mermaid, which reads the element's text, still sees them
    html = NB_MERMAID_BLOCK.sub(
        lambda m: '<div class="mermaid-diagram">' + re.sub(r"<br\s*/?>", "&lt;br/&gt;", m.group(1)) + "</div>", html)
    return html


CONFIG_SCRIPT = re.compile(r'(<script id="__config" type="application/json">)(.*?)(</script>)', re.S)


ALT_LINK = re.compile(r'\s*<link rel="alternate" href="[^"]*" hreflang="[a-z]+">')


def on_post_page(output: str, page, config, **kwargs):
    """Two fixes in the rendered HTML.

    - Material treats `<link rel="alternate" hreflang>` as each language's root: it fetches
      <href>/sitemap.xml (a 404 on every page, since i18n points these at the same page in the
      other language) and, on a click in the language menu, maps the page through that sitemap,
      which needs absolute URLs (no site_url here), so the reader landed on the other language's
      home page. Without these tags the menu's own links, which i18n points at the same page in
      the other language, are followed as they are. The hreflang pairs stay in sitemap.xml.
    - Chinese pages use the Chinese search index (site/zh/search/), see on_post_build.
    """
    output = ALT_LINK.sub("", output)
    if page.file.src_uri.endswith(".ipynb"):
        output = _offline_notebook(output)
    if _lang(page) != "zh":
        return output

    def sub(m):
        cfg = json.loads(m.group(2))
        # trailing slash: Material resolves "search/search_index.json" and result locations against it
        cfg["base"] = (cfg["base"].rstrip("/") + "/zh/") if cfg["base"] not in ("", ".") else "zh/"
        return m.group(1) + json.dumps(cfg, ensure_ascii=False) + m.group(3)
    return CONFIG_SCRIPT.sub(sub, output, count=1)


PRE_BLOCK = re.compile(r"<pre\b.*?</pre>", re.S)


@event_priority(-200)
def on_post_build(config, **kwargs):
    """mkdocs-static-i18n stacks every language's entries into one index at site/search/.
    Split it: English entries stay there, Chinese entries go to site/zh/search/, which is where Chinese pages now look (on_post_page)."""
    root = Path(config.site_dir)
    index = root / "search" / "search_index.json"
    if not index.exists():
        return
    data = json.loads(index.read_text(encoding="utf-8"))
    zh = [d for d in data["docs"] if d["location"].startswith("zh/")]
    if not zh:
        return
    en = [d for d in data["docs"] if not d["location"].startswith("zh/")]
    for d in zh:   # Chinese pages' base is the /zh/ root: locations are relative to it
        d["location"] = d["location"][len("zh/"):]
    # Notebook pages repeat their article (and mkdocs-jupyter gives some sections the same
    # location twice, which breaks Material's search worker): search finds the articles.
    def keep(docs):
        seen, out = set(), []
        for d in docs:
            if d["location"].startswith("notebooks/") or d["location"] in seen:
                continue
            seen.add(d["location"])
            out.append(d)
        return out
    en, zh = keep(en), keep(zh)
    for d in en + zh:
        # Code listings are half the index and every page downloads the index: search the prose
        # and inline code (`tl.dot`, `num_warps`), not the listings themselves.
        d["text"] = re.sub(r"\s+", " ", PRE_BLOCK.sub(" ", d["text"])).strip()
    for path, docs in ((index, en), (root / "zh" / "search" / "search_index.json", zh)):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**data, "docs": docs}, separators=(",", ":"), ensure_ascii=False),
                        encoding="utf-8")
