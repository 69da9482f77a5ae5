"""English and Chinese pages mirror each other: same files, anchors, code, data, in the same order."""

from __future__ import annotations

import re

import pytest
from sitekit import DOCS, LANGS
from sitekit.pages import FENCE, anchors, blocks, includes, page_pairs
from sitekit.render import MARKER

PAIRS = page_pairs()
IDS = [p[0] for p in PAIRS]
HAN = re.compile(r"[\u4e00-\u9fff]")
HEADING = re.compile(r"^(#{1,6}) (.*)$", re.M)
# fenced blocks that may hold text written on the page itself
INLINE_OK = {"mermaid"}


def _files(lang):
    return sorted(
        p.relative_to(DOCS / lang).as_posix()
        for p in (DOCS / lang).rglob("*")
        if p.is_file() and "notebooks" not in p.parts
    )


def test_same_page_tree():
    en, zh = _files("en"), _files("zh")
    assert en == zh, f"only in en: {sorted(set(en) - set(zh))}; only in zh: {sorted(set(zh) - set(en))}"


def _strip_code(text: str) -> str:
    return re.sub(r"^(`{3,}).*?^\1\s*$", "", text, flags=re.M | re.S)


@pytest.mark.parametrize("rel,en,zh", PAIRS, ids=IDS)
def test_same_anchors(rel, en, zh):
    assert anchors(en) == anchors(zh), f"{rel}: heading anchors differ"


@pytest.mark.parametrize("rel,en,zh", PAIRS, ids=IDS)
def test_every_heading_has_an_explicit_anchor(rel, en, zh):
    for page in (en, zh):
        for level, title in HEADING.findall(_strip_code(page.read_text(encoding="utf-8"))):
            assert re.search(r"\{\s*#[A-Za-z0-9_\-]+", title), (
                f"{page.relative_to(DOCS)}: heading '{level} {title}' has no {{ #anchor }} (the default slug drops Chinese)"
            )


@pytest.mark.parametrize("rel,en,zh", PAIRS, ids=IDS)
def test_same_snippets_in_same_order(rel, en, zh):
    assert includes(en) == includes(zh), f"{rel}: included snippets differ"


@pytest.mark.parametrize("rel,en,zh", PAIRS, ids=IDS)
def test_same_data_markers_in_same_order(rel, en, zh):
    def calls(p):
        return [re.sub(r"\s+", "", m.group("call")) for m in MARKER.finditer(p.read_text(encoding="utf-8"))]

    assert calls(en) == calls(zh), f"{rel}: data markers (datasets, views) differ"


@pytest.mark.parametrize("rel,en,zh", PAIRS, ids=IDS)
def test_same_code_blocks(rel, en, zh):
    be, bz = blocks(en), blocks(zh)
    assert [(b.lang, b.code, b.marks, b.expected_output) for b in be if b.lang != "mermaid"] == [
        (b.lang, b.code, b.marks, b.expected_output) for b in bz if b.lang != "mermaid"
    ], f"{rel}: the two languages show different code"
    assert sum(b.lang == "mermaid" for b in be) == sum(b.lang == "mermaid" for b in bz), f"{rel}: diagram count differs"


@pytest.mark.parametrize("lang", LANGS)
def test_code_is_included_not_typed(lang):
    """Every code block is an include of snippets/ or data/; only diagrams and expected outputs are written inline."""
    problems = []
    for page in sorted((DOCS / lang).glob("*.md")):
        text = page.read_text(encoding="utf-8")
        lines = text.split("\n")
        i = 0
        while i < len(lines):
            m = FENCE.match(lines[i])
            if not m:
                i += 1
                continue
            ticks, info = m.group("ticks"), (m.group("info").strip().split() or [""])[0]
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(ticks):
                j += 1
            body = [l for l in lines[i + 1 : j] if l.strip()]
            prev = next((l.strip() for l in reversed(lines[:i]) if l.strip()), "")
            is_output = "expected-output" in prev
            # an include of a project file (snippets/, data/, or a file like requirements-cuda.txt that
            # a page shows as it is): the text lives in exactly one place
            is_include = body and all(re.match(r"""^\s*-{1,}8<-{1,}\s+["']?[\w./-]+""", l) for l in body)
            if not (is_include or info in INLINE_OK or is_output):
                problems.append(
                    f"{page.relative_to(DOCS)}:{i + 1}: ```{info} block is typed on the page; "
                    "include it from snippets/ or data/"
                )
            i = j + 1
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("rel,en,zh", PAIRS, ids=IDS)
def test_chinese_page_is_written_in_chinese(rel, en, zh):
    prose = _strip_code(zh.read_text(encoding="utf-8"))
    prose = re.sub(r"`[^`]*`|\{\{.*?\}\}|<[^>]+>|\(.*?\.md[^)]*\)", "", prose)
    letters = re.findall(r"[A-Za-z]+", prose)
    han = len(HAN.findall(prose))
    assert han > 0.6 * len(letters), (
        f"{rel}: the Chinese page reads mostly as English ({han} Han chars, {len(letters)} Latin words)"
    )


def test_glossary_is_one_term_per_concept():
    import yaml
    from sitekit import DATA

    terms = yaml.safe_load((DATA / "glossary" / "terms.yml").read_text(encoding="utf-8"))
    for key in ("en", "zh"):
        seen = [t[key].lower() for t in terms]
        dup = {s for s in seen if seen.count(s) > 1}
        assert not dup, f"glossary: {key} term used for two concepts: {dup}"
    for t in terms:
        assert all(t.get(k) for k in ("en", "zh", "def_en", "def_zh")), t
        assert HAN.search(t["def_zh"]), f"glossary: the Chinese definition of {t['en']!r} is not Chinese"
