"""One Chinese term per concept, site-wide, and no English sentence left on a Chinese page.

data/glossary/terms.yml holds, for each concept, the term every Chinese page uses (`zh`), the
variants that were decided against (`avoid`), and optionally the glossed form a page must give
at least once when it uses the term (`first_use`). The prose of every docs/zh page and every
Chinese label (data/labels.yml, data/*/labels.yml) is checked against it. Code blocks, inline
code, HTML comments, data markers and link targets are not prose and are left out.
"""

from __future__ import annotations

import re

import pytest
import yaml
from sitekit import DATA, DOCS

TERMS = yaml.safe_load((DATA / "glossary" / "terms.yml").read_text(encoding="utf-8"))
ZH_PAGES = sorted((DOCS / "zh").glob("*.md"))
HAN = re.compile(r"[\u4e00-\u9fff]")


def prose(text: str) -> str:
    """The page's prose, line for line (removed parts become blanks, so line numbers hold)."""
    blank = lambda m: "\n" * m.group(0).count("\n")
    text = re.sub(r"^([ \t]*)(`{3,}).*?^[ \t]*\2[ \t]*$", blank, text, flags=re.M | re.S)  # fenced code
    text = re.sub(r"<!--.*?-->", blank, text, flags=re.S)  # marks, comments
    text = re.sub(r"\{\{.*?\}\}", "", text)  # data markers
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code
    text = re.sub(r"\]\([^)\s]*\)", "]", text)  # link targets
    text = re.sub(r"https?://\S+", "", text)
    return text


def zh_labels() -> list[tuple[str, str]]:
    out = []
    for path in sorted([DATA / "labels.yml", *DATA.glob("*/labels.yml")]):
        if not path.exists():
            continue
        for key, v in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            if isinstance(v, dict) and isinstance(v.get("zh"), str):
                out.append((f"{path.relative_to(DATA.parent)}:{key}", v["zh"]))
    return out


def avoided_uses(text: str, term: dict) -> list[str]:
    """Avoided variants in `text` that are not part of the chosen term (软件流水 inside 软件流水线)."""
    # a variant other sources use may be named as such: 图断点（graph break，亦作“图中断”）
    keep = [term["zh"], *term.get("allow", []), *(f"亦作“{a}”" for a in term.get("also", []))]
    masked = text
    for k in sorted(keep, key=len, reverse=True):
        masked = masked.replace(k, "\0" * len(k))
    return [a for a in term.get("avoid", []) if a in masked]


def test_terms_file_is_well_formed():
    for t in TERMS:
        for a in t.get("avoid", []):
            assert isinstance(a, str) and a and a != t["zh"], f"glossary {t['en']!r}: bad avoid entry {a!r}"
        if "first_use" in t:
            assert t["zh"] in t["first_use"], f"glossary {t['en']!r}: first_use must contain the term {t['zh']!r}"
        for a in t.get("also", []):
            assert isinstance(a, str) and a and a != t["zh"], f"glossary {t['en']!r}: bad also entry {a!r}"
    avoided = {a: t["en"] for t in TERMS for a in t.get("avoid", [])}
    for t in TERMS:
        assert t["zh"] not in avoided, (
            f"glossary: {t['zh']!r} is {t['en']!r}'s term but avoided for {avoided[t['zh']]!r}"
        )


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.name)
def test_zh_page_uses_the_glossary_terms(page):
    text = prose(page.read_text(encoding="utf-8"))
    if page.name == "glossary.md":  # the glossary names rejected variants, in quotes
        text = QUOTED.sub("", text)
    problems = []
    for n, line in enumerate(text.splitlines(), 1):
        for t in TERMS:
            for a in avoided_uses(line, t):
                problems.append(f"{page.name}:{n}: {a!r} for {t['en']!r}; the glossary's term is {t['zh']!r}")
    if page.name != "glossary.md":
        for t in TERMS:
            if "first_use" in t and t["zh"] in text and t["first_use"] not in text:
                problems.append(f"{page.name}: uses {t['zh']!r} but never introduces it as {t['first_use']!r}")
    assert not problems, "\n".join(problems)


def test_zh_labels_use_the_glossary_terms():
    problems = [
        f"{where}: {a!r} for {t['en']!r}; the glossary's term is {t['zh']!r}"
        for where, label in zh_labels()
        for t in TERMS
        for a in avoided_uses(label, t)
    ]
    assert not problems, "\n".join(problems)


# An English sentence: six or more Latin words in a row (a name or an API call is shorter, and code
# is not prose). Admonition titles and table cells count too. Quoted text (an error message as the
# reader will see it, “…”) and titles of cited works in italics (*…*) stay in the original.
QUOTED = re.compile(r"“[^”\n]*”|\"[^\"\n]*\"|(?<![*\w])\*[^*\n]+\*(?![*\w])")
ENGLISH_RUN = re.compile(r"(?:\b[A-Za-z][A-Za-z'’-]*[,:;]?\s+){5,}[A-Za-z][A-Za-z'’-]*")


@pytest.mark.parametrize("page", ZH_PAGES, ids=lambda p: p.name)
def test_no_english_sentence_on_a_zh_page(page):
    text = prose(page.read_text(encoding="utf-8"))
    hits = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in ENGLISH_RUN.finditer(QUOTED.sub("", line)):
            hits.append(f"{page.name}:{n}: {m.group(0)!r}")
    assert not hits, "English left on a Chinese page:\n" + "\n".join(hits)


def test_zh_badges_give_the_reason_in_chinese():
    """A display-only block's reason is written in English in the mark both pages share; the Chinese
    page's badge shows it from sitekit.reader.SHOWN_ZH, which must know every reason in use."""
    from sitekit import reader
    from sitekit.pages import blocks

    used = {b.marks["display"][0] for page in ZH_PAGES for b in blocks(page) if b.marks.get("display")}
    missing = sorted(used - set(reader.SHOWN_ZH))
    assert not missing, "reasons with no Chinese rendering in sitekit/reader.py SHOWN_ZH:\n" + "\n".join(missing)
    unused = sorted(set(reader.SHOWN_ZH) - used)
    assert not unused, "SHOWN_ZH renders reasons no page uses any more:\n" + "\n".join(unused)
    english = [zh for zh in reader.SHOWN_ZH.values() if not HAN.search(zh) or ENGLISH_RUN.search(zh)]
    assert not english, f"SHOWN_ZH renderings that are not Chinese: {english}"
    assert reader.shown_reason(sorted(used)[0], "zh") == reader.SHOWN_ZH[sorted(used)[0]]


def test_every_term_has_one_anchor_the_same_in_both_languages():
    """glossary/#g-<term> links to one row, in English and in Chinese alike."""
    from sitekit import render

    ids = {lang: re.findall(r'<span id="(g-[a-z0-9-]+)"></span>', render.glossary(lang=lang)) for lang in ("en", "zh")}
    assert len(ids["en"]) == len(TERMS) == len(set(ids["en"])), "one anchor per term, none shared"
    assert ids["en"] == ids["zh"], "the two languages' rows must carry the same anchors, in the same order"
    assert render.glossary_id("SSA (static single assignment)") == "g-ssa-static-single-assignment"


def test_glossary_lists_the_renderings_of_other_sources():
    """A reader who learned 图中断 or 保护条件 elsewhere finds it beside the term these pages use, in both
    languages' glossary, and the zh pages name it where they introduce the term."""
    from sitekit.render import glossary

    zh_pages = "".join(p.read_text(encoding="utf-8") for p in (DOCS / "zh").glob("*.md"))
    shown = [t for t in TERMS if t.get("also")]
    assert shown, "no term lists another rendering: the reviewers' attested terms (图中断, 保护条件) are gone"
    for t in shown:
        for lang in ("zh", "en"):
            row = next(r for r in glossary(lang=lang).splitlines() if f"**{t[lang]}**" in r)
            for a in t["also"]:
                assert f"“{a}”" in row, f"glossary ({lang}): {t['en']!r} does not list {a!r}"
        for a in t["also"]:
            assert f"亦作“{a}”" in zh_pages, f"no zh page introduces {t['zh']!r} with 亦作“{a}”"


# ---------------------------------------------------------------- first uses linked to the glossary


def _article(body: str) -> str:
    return f'<html><body><nav>kernel</nav><article class="md-content__inner md-typeset">{body}</article></body></html>'


def test_first_use_of_a_term_links_to_its_row_once():
    from sitekit.glossary_links import link_first_uses

    page = _article(
        "<h2>Kernels</h2><p>A <code>kernel</code> here; <a href='x'>kernel</a>; then Kernels run, and a kernel again.</p>"
    )
    out, linked = link_first_uses(page, "en", "triton-kernel-practice", "triton-kernel-practice/", "glossary/")
    assert linked[0] == "g-kernel" and linked.count("g-kernel") == 1
    # not in the heading, the code, the link or the site navigation: the first word of running text, capitalised
    assert '<a class="glossary-term" href="../glossary/#g-kernel" title="A function that runs on the GPU' in out
    assert ">Kernels</a> run, and a kernel again." in out
    assert "<h2>Kernels</h2>" in out and "<code>kernel</code>" in out and "<nav>kernel</nav>" in out


def test_running_text_only_and_longest_name_first():
    from sitekit.glossary_links import link_first_uses

    page = _article(
        '<p class="provenance">shared memory</p><div class="arithmatex">\\(warp\\)</div>'
        '<details class="tip run-box"><p>shared memory</p></details>'
        "<p>a persistent kernel, then a warp group and a warp, and shared\nmemory</p>"
    )
    out, linked = link_first_uses(page, "en", "triton-kernel-practice", "triton-kernel-practice/", "glossary/")
    assert linked == ["g-persistent-kernel", "g-warp-group", "g-warp", "g-shared-memory"]
    assert ">shared\nmemory</a>" in out  # a name wrapped over two source lines
    assert '<p class="provenance">shared memory</p>' in out and "<p>shared memory</p></details>" in out


def test_chinese_names_start_and_end_at_word_boundaries():
    """分块 (tiling) inside 那部分块 ("that part" + "block") is no use of the term; the 亦作 rendering of warp
    specialization is the term itself, not 特化 (specialization); English glosses count as the term."""
    from sitekit.glossary_links import link_first_uses

    page = _article("<p>本线程负责的那部分块。warp 专门化（亦作“warp 特化”）把数据搬进共享内存，再做分块。</p>")
    out, linked = link_first_uses(page, "zh", "triton-deep-dive", "zh/triton-deep-dive/", "zh/glossary/")
    assert linked == ["g-warp-specialization", "g-shared-memory", "g-tiling"]
    assert "那部分块" in out and 'href="../glossary/#g-tiling"' in out and ">分块</a>。" in out


def test_terms_are_linked_only_on_the_articles_they_name():
    """The oneAPI page's "launcher" is MPI's Hydra, not Triton's; layout is never linked (its everyday sense,
    nn.Linear layout, comes first on most pages); MLIR's "operation" only on the MLIR page."""
    from sitekit.glossary_links import link_first_uses

    page = _article("<p>the launcher, a layout, an operation</p>")
    _, linked = link_first_uses(page, "en", "oneapi-installation", "oneapi-installation/", "glossary/")
    assert linked == []
    _, linked = link_first_uses(page, "en", "triton-kernel-practice", "triton-kernel-practice/", "glossary/")
    assert linked == ["g-launcher"]
    _, linked = link_first_uses(page, "en", "mlir-architecture", "mlir-architecture/", "glossary/")
    assert linked == ["g-launcher", "g-operation-mlir"]


def test_link_keys_name_real_articles():
    from sitekit.articles import ARTICLES

    slugs = {s for s, _, _ in ARTICLES}
    for t in TERMS:
        for key in ("link_on", "link_off"):
            assert set(t.get(key, [])) <= slugs, f"glossary {t['en']!r}: {key} names an unknown article"
        for key in ("link_en", "link_zh"):
            assert isinstance(t.get(key, []), list), f"glossary {t['en']!r}: {key} must be a list"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_built_articles_link_first_uses_to_glossary_rows_that_exist(built_site, lang):
    """Every article links its first uses of glossary terms, each term once, to a row the glossary page has;
    no such link sits in a heading, code or another link (read with regexes: the pages are up to 2 MB)."""
    from sitekit.articles import ARTICLES

    site = built_site[0] / ("" if lang == "en" else lang)
    rows = set(re.findall(r'<span id="(g-[^"]+)"></span>', (site / "glossary" / "index.html").read_text("utf-8")))
    link = re.compile(r'<a class="glossary-term" href="([^"#]*)#(g-[^"]+)" title="([^"]*)">')
    for slug, _, _ in ARTICLES:
        page = (site / slug / "index.html").read_text("utf-8")
        links = link.findall(page)
        ids = [i for _, i, _ in links]
        # the oneAPI page shares few terms with the compiler articles: MPI ranks, pinning, SYCL
        assert len(ids) >= (6 if slug == "oneapi-installation" else 20), f"{lang}/{slug}: {len(ids)} terms linked"
        assert len(set(ids)) == len(ids), f"{lang}/{slug}: a term linked twice"
        assert set(ids) <= rows, f"{lang}/{slug}: no glossary row for {sorted(set(ids) - rows)}"
        assert all(href == "../glossary/" and title for href, _, title in links), f"{lang}/{slug}"
        for m in re.finditer(r"<(h[1-6]|code|pre)\b.*?</\1>", page, re.S):
            assert 'class="glossary-term"' not in m.group(0), f"{lang}/{slug}: a glossary link inside <{m[1]}>"
        for m in re.finditer(r"<a (?![^>]*glossary-term)[^>]*>(.*?)</a>", page, re.S):
            assert 'class="glossary-term"' not in m.group(1), f"{lang}/{slug}: a glossary link inside a link"
