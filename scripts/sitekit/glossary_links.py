"""Link the first use of each glossary term on an article page to its row in the glossary.

The built HTML of an article is scanned in document order; the first time a term of
data/glossary/terms.yml appears in running text, that occurrence becomes a link to the term's row
(glossary/#g-...) with the definition as its tooltip. Later uses stay plain, as in a printed book.

Running text is text inside the article body that is not code, a heading, a link, math, a diagram, a
table header, a provenance line or a control. The words that name a term, by default: in English the
term without its parenthesis, plus the abbreviation inside it ("intermediate representation", "IR");
in Chinese the term, the word before its parenthesis ("中间表示（IR）", "中间表示"), the renderings
listed under `also`, and the English names (a Chinese page glosses terms in English: 占用率
（occupancy）). A term may replace them (`link_en`, `link_zh`; an empty list turns linking off) where a
word has an everyday sense on the pages too (English "layout", Chinese 下降 "a drop"), or name the
articles it is linked on (`link_on`) or not (`link_off`) where a page uses the word for something else
(the oneAPI page's MPI "token" and "launcher"). At one place the longest name wins (持久化内核 over
内核), and in Chinese a name must start and end where jieba's segmentation puts a word boundary, so
that 分块 is not found inside 那部分块 ("that part" + "block").
"""

from __future__ import annotations

import html
import posixpath
import re
from functools import lru_cache

import yaml

from . import DATA
from .render import glossary_id

# elements whose text is not running prose: nothing inside them is linked
SKIP_TAGS = {
    "a", "code", "pre", "kbd", "samp", "script", "style", "svg", "math", "button", "label", "select", "option",
    "textarea", "title", "th", "h1", "h2", "h3", "h4", "h5", "h6", "summary", "sup", "nav", "figcaption",
}  # fmt: skip
# skipped elements that cannot hold another of their kind: the scan jumps to their end tag
OPAQUE = {"pre", "script", "style", "textarea", "title"}
SKIP_CLASSES = ("arithmatex", "mermaid-diagram", "provenance", "run-box", "admonition-title", "md-source-file")
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
TAG = re.compile(r"<!--.*?-->|<(/?)([a-zA-Z][\w-]*)([^>]*)>", re.S)
CLASS = re.compile(r"""\bclass\s*=\s*["']([^"']*)["']""")
LATIN_EDGE = re.compile(r"^[A-Za-z0-9]|[A-Za-z0-9]$")
HAN = re.compile(r"[\u4e00-\u9fff]")


def _english_names(term: str) -> list[str]:
    m = re.fullmatch(r"(.+?) \((.+)\)", term)
    if not m:
        return [term]
    names = [m.group(1)]
    if re.fullmatch(r"[A-Z][A-Za-z]*[A-Z]", m.group(2)):  # an abbreviation: IR, SM, TMA, SoA
        names.append(m.group(2))
    return names


def _default_names(t: dict, lang: str) -> list[str]:
    if lang == "en":
        return _english_names(t["en"])
    names = [t["zh"], *t.get("also", [])]
    if "（" in t["zh"]:
        names.append(t["zh"].split("（")[0].strip())
    return names + _english_names(t["en"])


@lru_cache(maxsize=1)
def terms() -> tuple[dict, ...]:
    raw = yaml.safe_load((DATA / "glossary" / "terms.yml").read_text(encoding="utf-8"))
    out = []
    for t in raw:
        entry = {"id": glossary_id(t["en"]), "def_en": t["def_en"], "def_zh": t["def_zh"]}
        entry["on"], entry["off"] = set(t.get("link_on", [])), set(t.get("link_off", []))
        for lang in ("en", "zh"):
            names = t.get(f"link_{lang}")
            entry[lang] = list(names) if names is not None else _default_names(t, lang)
        out.append(entry)
    return tuple(out)


def terms_for(slug: str) -> list[dict]:
    return [t for t in terms() if (not t["on"] or slug in t["on"]) and slug not in t["off"]]


@lru_cache(maxsize=64)
def _matcher(lang: str, slug: str) -> tuple[re.Pattern | None, dict]:
    """One regex for every name of every term linked on this page (longest first), and each name's term."""
    owner, parts = {}, []
    for t in terms_for(slug):
        for name in t[lang]:
            owner.setdefault(name.lower(), t)
    for name in sorted(owner, key=len, reverse=True):
        body = re.escape(name).replace(r"\ ", r"\s+")  # a wrapped source line leaves a newline between words
        if not HAN.search(name) and not name.isupper() and name == name.lower():
            body += r"(?:e?s)?"  # kernels, passes
        # word edges where a name starts or ends with a Latin letter or digit (Chinese: jieba, below)
        lead = r"(?<![A-Za-z0-9_-])" if LATIN_EDGE.search(name[:1]) else ""
        tail = r"(?![A-Za-z0-9_-])" if LATIN_EDGE.search(name[-1:]) else ""
        # lower-case names match a capital first letter too (a sentence's first word); abbreviations exactly
        parts.append(f"{lead}{'(?i:' if name == name.lower() else '(?:'}{body}){tail}")
    return (re.compile("|".join(parts)) if parts else None), owner


def _word_edges(text: str) -> set[int]:
    import jieba

    jieba.setLogLevel(60)  # no "Building prefix dict" lines in the build log
    return {i for _, start, end in jieba.tokenize(text) for i in (start, end)}


def _plain(definition: str) -> str:
    return re.sub(r"`([^`]*)`", r"\1", definition)


def link_first_uses(page_html: str, lang: str, slug: str, page_url: str, glossary_url: str) -> tuple[str, list[str]]:
    """(the page with each term's first use in running text linked, the ids of the terms linked, in order)."""
    start = page_html.find('<article class="md-content__inner')
    end = page_html.find("</article>", start)
    pattern, owner = _matcher(lang, slug)
    if start < 0 or end < 0 or pattern is None:
        return page_html, []
    href = posixpath.relpath(glossary_url.rstrip("/"), page_url.rstrip("/") or ".") + "/"
    linked: list[str] = []

    def link(text: str) -> str:
        # entities (&amp;) are ASCII runs to jieba: they move no boundary between Chinese words
        edges = _word_edges(text) if lang == "zh" and HAN.search(text) else set()

        def sub(m):
            word = re.sub(r"\s+", " ", m.group(0)).lower()
            # the name itself, or the name a plural extends (kernels, passes)
            t = next((owner[n] for n in (word, word[:-1], word[:-2]) if n in owner), None)
            if t is None or t["id"] in linked:
                return m.group(0)
            if HAN.search(m.group(0)) and (m.start() not in edges or m.end() not in edges):
                return m.group(0)  # inside a longer word, or across two
            linked.append(t["id"])
            tip = html.escape(_plain(t[f"def_{lang}"]), quote=True)
            return f'<a class="glossary-term" href="{href}#{t["id"]}" title="{tip}">{m.group(0)}</a>'

        return pattern.sub(sub, text)

    out = [page_html[:start]]
    stack: list[bool] = []  # for each open element: does it (or an ancestor) hide its text from linking?
    pos = start
    while (m := TAG.search(page_html, pos, end)) is not None:
        text = page_html[pos : m.start()]
        out.append(link(text) if text.strip() and not (stack and stack[-1]) else text)
        out.append(m.group(0))
        pos = m.end()
        if m.group(0).startswith("<!--"):
            continue
        closing, name, attrs = m.group(1), m.group(2).lower(), m.group(3)
        if not closing and name in OPAQUE:
            # nothing inside is linked and it holds no element of its own kind: copy it whole (the highlighted
            # code blocks are four fifths of a page's tags)
            close = page_html.find(f"</{name}>", pos, end)
            if close >= 0:
                out.append(page_html[pos : close + len(name) + 3])
                pos = close + len(name) + 3
                continue
        if name in VOID or attrs.rstrip().endswith("/"):
            continue
        if closing:
            if stack:
                stack.pop()
            continue
        classes = CLASS.search(attrs)
        hidden = name in SKIP_TAGS or bool(classes and any(c in classes.group(1).split() for c in SKIP_CLASSES))
        stack.append(hidden or bool(stack and stack[-1]))
    text = page_html[pos:end]
    out.append(link(text) if text.strip() and not (stack and stack[-1]) else text)
    out.append(page_html[end:])
    return "".join(out), linked
