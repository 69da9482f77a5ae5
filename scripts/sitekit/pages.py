"""Read pages the way the build does: expand snippet includes, then cut out code blocks.

The include expansion uses pymdownx.snippets' own preprocessor with the settings
from mkdocs.yml, and the block extraction uses pytest-codeblocks' parser, so the
tests see exactly the code a reader sees on the rendered page.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import markdown
import yaml

from . import DOCS, LANGS, ROOT

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^`\n]*)$", re.M)
SNIPPET_LINE = re.compile(r"""^\s*-{1,}8<-{1,}\s+["']?(?P<path>[^"':\s]+)(?::(?P<section>[^"'\s]+))?["']?\s*$""", re.M)
ANCHOR = re.compile(r"\{\s*#(?P<id>[A-Za-z0-9_\-]+)[^}]*\}\s*$", re.M)
MARK = re.compile(r"<!--\s*pytest\.mark\.(?P<name>\w+)(?:\((?P<args>.*)\))?\s*-->")


@lru_cache(maxsize=1)
def mkdocs_config() -> dict:
    class Loader(yaml.SafeLoader):
        pass

    # mkdocs.yml names Python callables with !!python/name tags; the tests only need the values
    Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: suffix)
    Loader.add_constructor("!ENV", lambda loader, node: None)  # repo_url: !ENV [...] (set at build time)
    with open(ROOT / "mkdocs.yml", encoding="utf-8") as f:
        return yaml.load(f, Loader=Loader)


def snippet_settings() -> dict:
    for ext in mkdocs_config()["markdown_extensions"]:
        if isinstance(ext, dict) and "pymdownx.snippets" in ext:
            return dict(ext["pymdownx.snippets"])
    raise RuntimeError("mkdocs.yml does not configure pymdownx.snippets")


def pages(lang: str) -> list[Path]:
    return sorted((DOCS / lang).rglob("*.md"))


def page_pairs() -> list[tuple[str, Path, Path]]:
    out = []
    for p in pages("en"):
        rel = p.relative_to(DOCS / "en").as_posix()
        out.append((rel, p, DOCS / "zh" / rel))
    return out


def expand(path: Path) -> str:
    """The page's Markdown with every --8<-- include replaced by the file or section it names."""
    settings = snippet_settings()
    settings["base_path"] = [str(ROOT / b) for b in settings.get("base_path", ["."])]
    md = markdown.Markdown(extensions=["pymdownx.snippets"], extension_configs={"pymdownx.snippets": settings})
    lines = path.read_text(encoding="utf-8").split("\n")
    return "\n".join(md.preprocessors["snippet"].run(lines))


def includes(path: Path) -> list[str]:
    """The snippet files and sections a page includes, in order."""
    text = path.read_text(encoding="utf-8")
    return [
        m.group("path") + (":" + m.group("section") if m.group("section") else "") for m in SNIPPET_LINE.finditer(text)
    ]


def anchors(path: Path) -> list[str]:
    """Explicit heading anchors ({ #id }) of a page, in order."""
    text = path.read_text(encoding="utf-8")
    return [
        m.group("id") for m in ANCHOR.finditer(text) if text[: m.start()].rsplit("\n", 1)[-1].lstrip().startswith("#")
    ]


@dataclass
class Block:
    page: str  # docs-relative page path, e.g. "en/index.md"
    index: int  # position among the page's blocks
    lineno: int  # line in the expanded page
    lang: str  # info-string language, e.g. "python"
    code: str
    marks: dict = field(default_factory=dict)
    expected_output: str | None = None

    @property
    def id(self) -> str:
        return f"{self.page}#{self.index}:{self.lang}@L{self.lineno}"


def _normalize_info_strings(text: str) -> str:
    # pytest-codeblocks only treats an info string of exactly `python`/`sh`/`bash` as code;
    # `python title="x"` would be skipped silently. Keep only the language word so that
    # every block is seen, titled or not.
    def sub(m):
        info = m.group("info").strip()
        word = info.split()[0] if info else ""
        word = word.lstrip("{.").rstrip("}")
        return f"{m.group('indent')}{m.group('ticks')}{word}"

    return FENCE.sub(sub, text)


def _parse_marks(raw: list[str]) -> dict:
    marks = {}
    for r in raw:
        m = re.match(r"pytest\.mark\.(\w+)(?:\((.*)\))?$", r.strip())
        if not m:
            raise ValueError(f"malformed block mark: {r!r}")
        name, args = m.group(1), m.group(2)
        if args:
            import ast

            val = ast.literal_eval(f"({args},)")
        else:
            val = ()
        marks[name] = val
    return marks


def _check_no_leaking_marks(text: str, where: str) -> None:
    # pytest-codeblocks keeps marks that precede a `cont` block for the *next* block.
    lines = [l.strip() for l in text.split("\n") if l.strip()]
    for i, l in enumerate(lines):
        if "pytest-codeblocks:cont" in l and i > 0 and MARK.match(lines[i - 1]):
            raise ValueError(
                f"{where}: a pytest.mark comment stands before a cont block; "
                "put it on the first block of the program instead"
            )


def blocks(path: Path) -> list[Block]:
    from pytest_codeblocks import extract_from_buffer

    rel = path.relative_to(DOCS).as_posix()
    text = _normalize_info_strings(expand(path))
    _check_no_leaking_marks(text, rel)
    out = []
    for i, b in enumerate(extract_from_buffer(io.StringIO(text), max_num_lines=100000)):
        out.append(
            Block(
                page=rel,
                index=i,
                lineno=b.lineno,
                lang=(b.syntax or "").strip(),
                code=b.code,
                marks=_parse_marks(b.marks),
                expected_output=b.expected_output,
            )
        )
    return out


def all_blocks() -> list[Block]:
    return [b for lang in LANGS for p in pages(lang) for b in blocks(p)]
