"""The strict build: zero warnings, broken links and anchors fail, data problems name the file."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from sitekit import LANGS, ROOT
from sitekit.articles import ARTICLES, ORDER


def test_strict_build_has_no_warnings(built_site):
    site, rc, log, seconds = built_site
    warnings = [l for l in log.splitlines() if l.startswith(("WARNING", "ERROR"))]
    assert rc == 0 and not warnings, f"mkdocs build --strict failed (rc={rc}):\n" + "\n".join(
        warnings or log.splitlines()[-30:]
    )
    print(f"\nfull site built in {seconds:.1f} s (budget: 30 s on the 2-core CI machine)")


def test_every_page_is_built_in_both_languages(built_site):
    site = built_site[0]
    for lang in LANGS:
        prefix = site if lang == "en" else site / lang
        for page in (ROOT / "docs" / lang).glob("*.md"):
            out = prefix / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
            assert out.is_file(), f"{page.relative_to(ROOT)} was not built to {out.relative_to(site)}"


def test_every_page_is_a_known_article():
    known = set(ORDER)
    for lang in LANGS:
        for page in (ROOT / "docs" / lang).glob("*.md"):
            assert page.stem in known, f"{page} is not listed in scripts/sitekit/articles.py"


def test_search_index_is_split_by_language(built_site):
    site = built_site[0]
    en = json.loads((site / "search" / "search_index.json").read_text())
    zh = json.loads((site / "zh" / "search" / "search_index.json").read_text())
    assert en["docs"] and zh["docs"]
    han = re.compile(r"[\u4e00-\u9fff]")
    assert not any(d["location"].startswith("zh/") for d in en["docs"])
    # the Chinese index is segmented by jieba: words separated by zero-width spaces
    assert any("\u200b" in d["text"] for d in zh["docs"])
    assert "\\u200b" in zh["config"]["separator"] or "\u200b" in zh["config"]["separator"]
    for index in (en, zh):
        locations = [d["location"] for d in index["docs"]]
        assert len(locations) == len(set(locations)), "duplicate locations break Material's search worker"
        assert not any(l.startswith("notebooks/") for l in locations), "notebook pages duplicate their articles"
    zh_titles = [d for d in zh["docs"] if han.search(d["title"] + d["text"])]
    assert len(zh_titles) >= len(zh["docs"]) * 0.8, "the Chinese index holds non-Chinese pages"


def test_english_prose_has_no_doubled_words(built_site):
    """What the reader sees, after data markers are rendered: no "the the", no "a an" (a sentence that ended a
    line with "on a" and began the next with a rendered "an NVIDIA H200"). Code is left out."""
    import html as html_mod

    site = built_site[0]
    found = []
    for page in sorted(site.glob("*/index.html")):
        text = page.read_text(encoding="utf-8")
        for para in re.findall(r"<(?:p|li|td|figcaption)>(.*?)</(?:p|li|td|figcaption)>", text, flags=re.S):
            n = iter(range(10**6))  # each code span its own word: "convert `x` to `y`" is not "to to"
            s = re.sub(r"<(script|style|pre|code)[^>]*>.*?</\1>", lambda _: f" code{next(n)} ", para, flags=re.S)
            s = " ".join(html_mod.unescape(re.sub(r"<[^>]+>", " ", s)).split())
            for m in re.finditer(r"\b([A-Za-z]+) \1\b|\b(?:a|an) (?:a|an|the)\b", s, flags=re.I):
                found.append(f"{page.parent.name}: ...{s[max(0, m.start() - 50) : m.end() + 30]}...")
    assert not found, "doubled words in the built English pages:\n" + "\n".join(found)


def test_no_third_party_urls_in_built_html(built_site):
    """Scripts, styles, fonts and images all come from the site itself."""
    site = built_site[0]
    bad = re.compile(r"""(?:src|href)\s*=\s*["'](?:https?:)?//(?!127\.0\.0\.1|localhost)""")
    offenders = []
    dynamic = re.compile(
        r"""import\(\s*["'](?:https?:)?//|\.src\s*=\s*["'](?:https?:)?//|fetch\(\s*["'](?:https?:)?//"""
    )
    for html in site.rglob("*.html"):
        text = html.read_text(encoding="utf-8")
        for m in dynamic.finditer(text):
            offenders.append(f"{html.relative_to(site)}: script loads {text[m.start() : m.start() + 120]}")
        for m in re.finditer(r"<(?:script|link|img|iframe|source)\b[^>]*>", text):
            if bad.search(m.group(0)) and 'rel="alternate"' not in m.group(0) and 'rel="canonical"' not in m.group(0):
                offenders.append(f"{html.relative_to(site)}: {m.group(0)[:160]}")
    for css in site.rglob("*.css"):
        for m in re.finditer(
            r"url\(\s*['\"]?(?:https?:)?//[^)]*\)|@import\s+url\(['\"]?https?:",
            css.read_text(encoding="utf-8", errors="replace"),
        ):
            offenders.append(f"{css.relative_to(site)}: {m.group(0)[:160]}")
    assert not offenders, "third-party requests:\n" + "\n".join(offenders[:20])


def _build_with_pages(tmp_path, en: str, zh: str):
    """Build a throw-away site with this project's config, hook and theme, but other pages."""
    docs = tmp_path / "docs"
    for lang, text in (("en", en), ("zh", zh)):
        (docs / lang).mkdir(parents=True)
        (docs / lang / "index.md").write_text(text, encoding="utf-8")
    cfg = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    cfg = cfg.replace("docs_dir: docs", f"docs_dir: {docs}")
    cfg = cfg.replace("custom_dir: overrides", f"custom_dir: {ROOT / 'overrides'}")
    cfg = cfg.replace("- scripts/mkdocs_hooks.py", f"- {ROOT / 'scripts' / 'mkdocs_hooks.py'}")
    for watched in ("data", "snippets"):  # mkdocs serve's extra watched folders: the config checks they exist
        assert f"\n  - {watched}\n" in cfg, f"mkdocs.yml no longer watches {watched}: update this helper"
        cfg = cfg.replace(f"\n  - {watched}\n", f"\n  - {ROOT / watched}\n")
    (tmp_path / "mkdocs.yml").write_text(cfg, encoding="utf-8")
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(tmp_path / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )


def test_missing_dataset_fails_the_build_naming_the_file(tmp_path):
    page = '# T { #t }\n\n{{ table("no_such/dataset", cols=["x"]) }}\n'
    p = _build_with_pages(tmp_path, page, page)
    assert p.returncode != 0
    assert "data/no_such/dataset.json" in p.stdout + p.stderr


def test_missing_snippet_fails_the_build(tmp_path):
    page = '# T { #t }\n\n```python\n--8<-- "snippets/no_such_file.py"\n```\n'
    p = _build_with_pages(tmp_path, page, page)
    assert p.returncode != 0
    assert "no_such_file.py" in p.stdout + p.stderr


def test_broken_anchor_fails_the_build(tmp_path):
    page = "# T { #t }\n\n[x](#no-such-anchor)\n"
    p = _build_with_pages(tmp_path, page, page)
    assert p.returncode != 0
    assert "no-such-anchor" in p.stdout + p.stderr


def test_articles_list_matches_the_chapter():
    assert len(ARTICLES) == 8
    assert ORDER[0] == "index" and ORDER[-1] == "glossary"


def test_notebooks_are_downloads_not_pages(built_site):
    """Each notebook is published as an .ipynb download next to its language's pages; there is no
    HTML notebook page (issue 9: they showed raw MkDocs syntax, dead links and a dead TOC). That
    the notebooks run is tests/test_notebooks.py."""
    from sitekit.notebooks import wants_notebook

    nb_pages = [(lang, p.stem) for lang in LANGS for p in (ROOT / "docs" / lang).glob("*.md") if wants_notebook(p)]
    site = built_site[0]
    for lang, slug in nb_pages:
        d = site / ("" if lang == "en" else lang) / "notebooks"
        assert (d / f"{slug}.ipynb").is_file(), f"{lang}/{slug}: .ipynb not published for download"
        assert not (d / slug / "index.html").exists(), f"{lang}/{slug}: an HTML notebook page is back"
        page = (site / ("" if lang == "en" else lang) / slug / "index.html").read_text(encoding="utf-8")
        assert f'href="../notebooks/{slug}.ipynb"' in page, f"{lang}/{slug}: the page does not link its notebook"


def test_published_sitemap_has_absolute_urls():
    """The Pages build (SITE_URL set) resolves the sitemap's <loc> and alternate links against the published
    URL; MkDocs writes them relative to the empty site_url."""
    from sitekit import reader

    xml = (
        '<url><loc>./</loc><xhtml:link rel="alternate" hreflang="en" href=""/>'
        '<xhtml:link rel="alternate" hreflang="zh" href="zh/"/></url>'
        "<url><loc>cuda-compilation-pipeline/</loc></url>"
    )
    out = reader.absolute_sitemap(xml, "https://example.github.io/ai-compiler/")
    assert "<loc>https://example.github.io/ai-compiler/</loc>" in out
    assert 'hreflang="en" href="https://example.github.io/ai-compiler/"' in out
    assert 'hreflang="zh" href="https://example.github.io/ai-compiler/zh/"' in out
    assert "<loc>https://example.github.io/ai-compiler/cuda-compilation-pipeline/</loc>" in out


SITE_NAME = {"en": "09. AI Compiler", "zh": "09. AI 编译器"}


@pytest.mark.parametrize("lang", LANGS)
def test_sidebar_names_the_chapter_once(built_site, lang):
    """The sidebar's title is the site name; the landing page's own entry under it is "Chapter overview",
    not the site name a second time (browser walk), and still links the landing page."""
    from bs4 import BeautifulSoup

    site = built_site[0]
    for page in ("", "glossary/"):
        path = site / ("" if lang == "en" else lang) / page / "index.html"
        nav = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").select_one("nav.md-nav--primary")
        said = [s for s in nav.stripped_strings if s == SITE_NAME[lang]]
        assert len(said) == 1, f"{lang}/{page}: the sidebar says {SITE_NAME[lang]!r} {len(said)} times"
        home = [
            a
            for a in nav.select("a.md-nav__link")
            if a.get_text(strip=True) == ("Chapter overview", "本章概览")[lang == "zh"]
        ]
        assert home and home[0]["href"].rstrip("/") in (".", ".."), (
            f"{lang}/{page}: no sidebar entry for the landing page"
        )


def test_search_runs_materials_worker_inside_the_sites_shim(built_site):
    """Every page's search worker is the shim (Chinese queries cut into the index's words, no empty ?h=),
    and the shim names Material's worker file as the build has it."""
    site = built_site[0]
    for page in ("index.html", "zh/index.html", "zh/glossary/index.html"):
        text = (site / page).read_text(encoding="utf-8")
        cfg = json.loads(re.search(r'<script id="__config" type="application/json">(.*?)</script>', text, re.S)[1])
        worker = (site / page).parent / cfg["search"].split("?")[0]
        assert worker.resolve().name == "site-search.js" and worker.is_file(), cfg["search"]
        material = re.fullmatch(r"[^?]*\?material=(search\.[0-9a-f]+\.min\.js)", cfg["search"])
        assert material and (worker.parent / material[1]).is_file(), f"{page}: {cfg['search']}"


def test_diagrams_have_a_note_for_readers_without_javascript(built_site):
    """Each diagram has a <noscript> note in the page's language (site.css shows the source as code then);
    the note is added after the search index took the page's text, so search does not find it."""
    from sitekit import reader

    site = built_site[0]
    for lang in LANGS:
        for md in sorted((ROOT / "docs" / lang).glob("*.md")):
            n = md.read_text(encoding="utf-8").count("```mermaid")
            if not n:
                continue
            out = site / ("" if lang == "en" else lang) / ("" if md.stem == "index" else md.stem) / "index.html"
            text = out.read_text(encoding="utf-8")
            note = f'<noscript><p class="diagram-noscript">{reader.DIAGRAM_NOTE[lang]}</p></noscript>'
            assert text.count(note + '<div class="mermaid-diagram">') == n, f"{lang}/{md.stem}: notes missing"
        index = site / ("" if lang == "en" else lang) / "search" / "search_index.json"
        assert reader.DIAGRAM_NOTE[lang][:12] not in index.read_text(encoding="utf-8")


def test_reading_map_links_every_article(built_site):
    """Each article's box in the landing page's reading map links to that article in the same language."""
    site = built_site[0]
    for lang in LANGS:
        md = (ROOT / "docs" / lang / "index.md").read_text(encoding="utf-8")
        diagram = re.search(r"```mermaid\n(.*?)```", md, re.S)[1]
        hrefs = re.findall(r'^\s*click \w+ href "([^"]+)"', diagram, re.M)
        assert sorted(hrefs) == sorted(f"{slug}/" for slug, _, _ in ARTICLES), hrefs
        for h in hrefs:
            assert (site / ("" if lang == "en" else lang) / h / "index.html").is_file(), f"{lang}: {h} is not a page"


def test_provenance_paths_break_after_a_slash():
    """In a provenance line a path or command may wrap after each `/`; a flag with hyphens stays whole."""
    from sitekit import reader

    line = (
        '<p class="provenance">x · <code>python scripts/measure/a_b/c.py --budget-s 150</code> · '
        "data: <code>data/a_b/c.json</code></p>"
    )
    out = reader.breakable_paths(line)
    assert '<code>python scripts/<wbr>measure/<wbr>a_b/<wbr>c.py <span class="nobr">--budget-s</span> 150</code>' in out
    assert "<code>data/<wbr>a_b/<wbr>c.json</code>" in out
    assert reader.breakable_paths("<p>data/a_b/c.json</p>") == "<p>data/a_b/c.json</p>"


def test_plot_tooltips_name_axes_not_columns(built_site):
    """A plotted point's tooltip gives the series and each axis's title with its value, in the page's
    language; a raw dataset column ("aic_budget=24", "num_warps=4") was what a reader saw before."""
    site = built_site[0]
    raw = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)*=[-0-9.]")
    seen = 0
    for lang in LANGS:
        for page in sorted((site if lang == "en" else site / lang).glob("*/index.html")):
            if lang == "en" and page.parent.name in LANGS:
                continue
            for tip in re.findall(r"<circle[^>]*><title>([^<]*)</title>", page.read_text(encoding="utf-8")):
                seen += 1
                assert not raw.search(tip), f"{page}: tooltip {tip!r} shows a raw column name"
                assert ("：" in tip) == (lang == "zh"), f"{page}: tooltip {tip!r} is not punctuated for {lang}"
    assert seen > 100, f"only {seen} plotted points found: did the plots or the tooltip markup change?"


def test_language_links_are_relative_on_every_page():
    """The language menu links "/" and "/zh/" on the two home pages as i18n renders them; the hook makes
    them relative like every other page's, so the site also works under a path prefix or from a folder."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import mkdocs_hooks

    menu = '<a href="/" hreflang="en">English</a> <a href="/zh/" hreflang="zh">中文</a>'
    assert mkdocs_hooks.relative_lang_links(menu, "") == menu.replace('"/"', '"./"').replace('"/zh/"', '"zh/"')
    assert mkdocs_hooks.relative_lang_links(menu, "zh/") == menu.replace('"/"', '"../"').replace('"/zh/"', '"./"')
    deep = '<a href="/triton-deep-dive/" hreflang="en">'
    assert (
        mkdocs_hooks.relative_lang_links(deep, "zh/triton-deep-dive/")
        == '<a href="../../triton-deep-dive/" hreflang="en">'
    )
