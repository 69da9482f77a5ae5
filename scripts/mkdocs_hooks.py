"""MkDocs hook: data-driven tables and plots, notebooks, offline assets, per-language search.

Loaded through `hooks:` in mkdocs.yml. Hooks run after the plugins listed in
mkdocs.yml unless an event priority says otherwise; the priorities below are
chosen against mkdocs-static-i18n, which runs its own events at -100.
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.plugins import event_priority
from sitekit import (  # noqa: E402
    ROOT,  # noqa: E402
    glossary_links,
    notebooks,
    reader,
    render,
)
from sitekit.data import DataError  # noqa: E402

log = logging.getLogger("mkdocs.hooks.site")

VENDORED = [
    "overrides/assets/vendor/katex/katex.min.js",
    "overrides/assets/vendor/katex/katex.min.css",
    "overrides/assets/vendor/mermaid/mermaid.esm.min.mjs",
    "overrides/assets/vendor/katex/auto-render.min.js",
]

BUTTONS = {
    "en": ("Download this page as a Jupyter notebook",),
    "zh": ("下载本页的 Jupyter 笔记本",),
}


def on_config(config, **kwargs):
    missing = [p for p in VENDORED if not (ROOT / p).is_file()]
    if missing:
        raise PluginError(
            f"vendored JavaScript missing: {', '.join(missing)}. "
            "Run `python scripts/vendor_js.py` (fetches pinned KaTeX and Mermaid "
            "from the npm registry) before building."
        )
    if not config.get("repo_url"):
        config["repo_url"] = _git_remote()
    if not config.get("repo_url"):
        # no repository to edit in (a checkout without a remote, SITE_REPO_URL unset): no "edit this
        # page" link rather than a relative edit_uri that MkDocs rejects in strict mode
        config["edit_uri"] = ""
    return config


def _git_remote() -> str | None:
    """The repository's URL for a local build without SITE_REPO_URL: `git remote get-url origin`
    as an https URL, or None (then the site links each snippet's own copy only)."""
    import subprocess

    try:
        url = subprocess.run(
            ["git", "remote", "get-url", "origin"], cwd=ROOT, capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.match(r"^(?:git@([^:]+):|https?://(?:[^@/]+@)?([^/]+)/)(.+?)(?:\.git)?/?$", url)
    return f"https://{m.group(1) or m.group(2)}/{m.group(3)}" if m else None


def _branch(config) -> str:
    m = re.match(r"^(?:edit|blob)/([^/]+)/", config.get("edit_uri") or "")
    return m.group(1) if m else "main"


@event_priority(100)
def on_pre_build(config, **kwargs):
    render.begin_build()  # labels and rendered markers are remembered until on_post_build (render._BUILD)
    try:
        notebooks.generate_all()
    except DataError as e:
        raise PluginError(str(e)) from None


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

    items = [
        i
        for i in nav.items
        if not (isinstance(i, Page) and "/notebooks/" in "/" + i.file.src_uri)
        and not (getattr(i, "title", "") or "").lower() == "notebooks"
    ]
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
    if lang == "zh":
        markdown = reader.join_cjk_lines(markdown)
    slug = Path(page.file.src_uri).stem
    top = ""
    if page.meta.get("notebook"):
        # the .ipynb is a download (no HTML notebook page): it runs top to bottom, see
        # tests/test_notebooks.py
        top += (
            f"\n[:material-download: {BUTTONS[lang][0]}](notebooks/{slug}.ipynb)"
            f'{{ .md-button .md-button--primary download="{slug}.{lang}.ipynb" }}\n'
        )
    from sitekit.articles import ARTICLES

    if slug in {s for s, _, _ in ARTICLES} and "```" in markdown:
        top += reader.run_box(slug, lang, config.get("repo_url"))
    if top:
        markdown = re.sub(r"^(# .*)$", lambda m: m.group(1) + "\n" + top, markdown, count=1, flags=re.M)
    return reader.annotate(markdown)


CONFIG_SCRIPT = re.compile(r'(<script id="__config" type="application/json">)(.*?)(</script>)', re.S)


ALT_LINK = re.compile(r'\s*<link rel="alternate" href="[^"]*" hreflang="[a-z]+">')
LANG_LINK = re.compile(r'(<a href=")(/[^"]*)(" hreflang="[a-z]+")')


def relative_lang_links(output: str, page_url: str) -> str:
    """The language menu of the two home pages links "/" and "/zh/" (i18n's root links); made relative,
    as on every other page, so that the site works under any path prefix and from a folder."""
    import posixpath

    def sub(m):  # every target is a language's folder ("/", "/zh/", "/zh/glossary/"): keep the trailing "/"
        rel = posixpath.relpath(m.group(2).strip("/") or ".", page_url.rstrip("/") or ".")
        return m.group(1) + ("./" if rel == "." else rel + "/") + m.group(3)

    return LANG_LINK.sub(sub, output)


def on_post_page(output: str, page, config, **kwargs):
    """Fixes and additions in the rendered HTML.

    - Material treats `<link rel="alternate" hreflang>` as each language's root: it fetches
      <href>/sitemap.xml (a 404 on every page, since i18n points these at the same page in the
      other language) and, on a click in the language menu, maps the page through that sitemap,
      which needs absolute URLs (no site_url here), so the reader landed on the other language's
      home page. Without these tags the menu's own links, which i18n points at the same page in
      the other language, are followed as they are. The hreflang pairs stay in sitemap.xml.
    - Chinese pages use the Chinese search index (site/zh/search/), see on_post_build, and every page
      runs Material's search worker inside the site's shim (search_worker).
    - A <noscript> note above each diagram and break points in provenance paths (sitekit.reader).
    """
    lang = _lang(page)
    output = ALT_LINK.sub("", output)
    output = relative_lang_links(output, page.url)
    output = reader.decorate(output, lang, page.url, config.get("repo_url"), _branch(config))
    output = reader.diagram_notes(output, lang)
    output = reader.breakable_paths(output)
    if lang == "zh":
        output = reader.close_cjk_gaps(output)
    from sitekit.articles import ARTICLES

    slug = Path(page.file.src_uri).stem
    if slug in {s for s, _, _ in ARTICLES}:  # after the CJK gaps are closed: a link splits the text around it
        glossary_url = "zh/glossary/" if lang == "zh" else "glossary/"
        output, _ = glossary_links.link_first_uses(output, lang, slug, page.url, glossary_url)

    def sub(m):
        cfg = json.loads(m.group(2))
        if lang == "zh":
            # trailing slash: Material resolves "search/search_index.json" and result locations against it
            cfg["base"] = (cfg["base"].rstrip("/") + "/zh/") if cfg["base"] not in ("", ".") else "zh/"
        cfg["search"] = search_worker(cfg.get("search") or "")
        return m.group(1) + json.dumps(cfg, ensure_ascii=False) + m.group(3)

    return CONFIG_SCRIPT.sub(sub, output, count=1)


MATERIAL_WORKER = re.compile(r"^(?P<dir>.*/)(?P<name>search\.[0-9a-f]+\.min\.js)$")


def search_worker(url: str) -> str:
    """Material's search worker, run inside overrides/assets/javascripts/workers/site-search.js, which
    segments Chinese queries and fills the empty ?h= of result links (see that file). Material's own
    file is unchanged; the shim loads it by the name given here."""
    m = MATERIAL_WORKER.match(url)
    if not m:
        raise PluginError(f"Material's search worker is not where the hook expects it: {url!r}")
    return f"{m.group('dir')}site-search.js?material={m.group('name')}"


PRE_BLOCK = re.compile(r"<pre\b.*?</pre>", re.S)


def on_build_error(error, **kwargs):
    render.end_build()


@event_priority(-200)
def on_post_build(config, **kwargs):
    """mkdocs-static-i18n stacks every language's entries into one index at site/search/.
    Split it: English entries stay there, Chinese entries go to site/zh/search/, which is where Chinese pages now look (on_post_page)."""
    render.end_build()
    root = Path(config.site_dir)
    # the published build (SITE_URL set) gets a sitemap with absolute URLs, as the protocol requires
    base = (config.extra or {}).get("published_at") or ""
    sitemap = root / "sitemap.xml"
    if re.match(r"https?://", base) and sitemap.is_file():
        import gzip

        text = reader.absolute_sitemap(sitemap.read_text(encoding="utf-8"), base.rstrip("/") + "/")
        sitemap.write_text(text, encoding="utf-8")
        with gzip.GzipFile(root / "sitemap.xml.gz", "wb", mtime=0) as f:
            f.write(text.encode("utf-8"))
    # every code block links its file: publish snippets/ with the site (downloadable offline)
    import shutil

    shutil.copytree(
        ROOT / "snippets", root / "snippets", dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )
    for rel in sorted(reader.PUBLISHED):  # other files a block shows (IR samples under data/)
        if (ROOT / rel).is_file() and not (root / rel).exists():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, root / rel)
    index = root / "search" / "search_index.json"
    if not index.exists():
        return
    data = json.loads(index.read_text(encoding="utf-8"))
    zh = [d for d in data["docs"] if d["location"].startswith("zh/")]
    if not zh:
        return
    en = [d for d in data["docs"] if not d["location"].startswith("zh/")]
    for d in zh:  # Chinese pages' base is the /zh/ root: locations are relative to it
        d["location"] = d["location"][len("zh/") :]

    # Notebook pages (none since issue 9; kept as a guard) repeat their article (and some got the same
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
        path.write_text(json.dumps({**data, "docs": docs}, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")
