"""The site as a reader meets it: every code block of the built HTML, run the way the page says.

tests/test_codeblocks.py runs the blocks of the Markdown sources inside the repository. This test
reads the *built* pages instead (both languages) and does what a reader who copies code does:

- a block runs on its own, or continues the block above (one program) -- the page must say which
  in the line above the block (data-run, and the visible badge "continues the block above");
- each program runs in a fresh process, from a scratch directory outside the repository, with only
  the test's virtual environment (what the page's "Run it yourself" box installs:
  requirements-test.txt) and the files the page links: every file a block links (the download of
  the site's own copy) is fetched through that link from the built site into the scratch
  directory, at the same relative path as in the repository;
- a block that is not run (needs a GPU, nvcc or MPI that this machine lacks, shown only, checked by
  another test, generated code, output) must say so in its visible line, and output or generated
  code must not carry a runnable language class;
- any other block that fails, fails the test with the page, the block's index, its first lines and
  the error.

The same program on the English and the Chinese page runs once. README.md's commands that
reproduce one article are checked against the pages' "Run it yourself" box and run here too.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urljoin, urlparse

import blockstats
import needs
import pytest
from conftest import PREBUILT_SITE_ENV
from sitekit import DOCS, LANGS, ROOT, reader

bs4 = pytest.importorskip("bs4")

RUNNABLE = {"python", "py", "bash", "sh", "shell"}
TIMEOUT = 300
_RESULTS: dict[str, tuple[str, str]] = {}  # program hash -> (outcome, detail): one run per program


def _pages():
    out = []
    for p in sorted((DOCS / "en").glob("*.md")):
        out.append(p.stem)
    return out


def _url(lang: str, slug: str) -> str:
    return ("" if lang == "en" else f"{lang}/") + ("" if slug == "index" else f"{slug}/")


@dataclass
class Block:
    page: str
    index: int
    lang: str
    code: str
    attrs: dict
    meta: str  # the visible line above the block
    links: list[str] = field(default_factory=list)

    def where(self) -> str:
        first = "\n".join("    " + l for l in self.code.strip("\n").split("\n")[:4])
        return (
            f"{self.page} block #{self.index} ({self.lang}, {self.attrs.get('data-src', 'no file')}"
            f"{' · ' + self.attrs['data-section'] if self.attrs.get('data-section') else ''}):\n{first}"
        )


def read_blocks(site: Path, url: str) -> list[Block]:
    html = (site / url / "index.html").read_text(encoding="utf-8")
    soup = bs4.BeautifulSoup(html, "html.parser")
    article = soup.select_one("article.md-content__inner") or soup
    out = []
    for i, div in enumerate(article.select("div.highlight")):
        cls = [c for c in div.get("class", []) if c.startswith("language-")]
        lang = cls[0][len("language-") :] if cls else ""
        code_el = div.select_one("pre > code") or div.select_one("code")
        code = code_el.get_text() if code_el else ""
        prev = div.find_previous_sibling()
        meta_el = prev if prev is not None and "code-meta" in (prev.get("class") or []) else None
        meta = meta_el.get_text(" ", strip=True) if meta_el else ""
        links = [a["href"] for a in meta_el.select("a.code-src[download]")] if meta_el else []
        attrs = {k: v for k, v in div.attrs.items() if k.startswith("data-")}
        out.append(Block(url or "/", i, lang, code, attrs, meta, links))
    return out


def _badge(key: str, lang: str) -> str:
    return reader.TEXT[key][lang].split("{")[0].rstrip(": ")


def visible_reason(b: Block, lang: str, lacking: list[str]) -> str | None:
    """Why the block is not run, as the page shows it; None when the page shows no reason."""
    a = b.attrs
    want = []
    if a.get("data-run") in ("output", "generated"):
        want.append(_badge(a["data-run"], lang))
    elif a.get("data-run") == "reproduce":
        want.append(_badge("reproduce", lang))
    elif "data-checked-by" in a:
        want.append(_badge("checked", lang))
    elif "data-shown" in a:
        want.append(_badge("shown", lang))
    elif lacking:
        want += [reader.TEXT["need"][n][lang] for n in lacking]
    else:
        return None
    missing = [w for w in want if w not in b.meta]
    if missing:
        return None
    return "; ".join(want)


@dataclass
class Program:
    blocks: list[Block]
    files: list[str]  # links to files the page publishes, fetched into the scratch dir
    expected: str | None = None  # the page's output block after the program

    @property
    def lang(self):
        return "python" if self.blocks[0].lang in ("python", "py") else "bash"

    @property
    def code(self):
        return "\n".join(b.code for b in self.blocks)

    def key(self):
        files = sorted(urlparse(urljoin("http://site/" + self.blocks[0].page, f)).path for f in self.files)
        return hashlib.sha256(repr((self.lang, self.code, files, self.expected, self.tolerance)).encode()).hexdigest()

    @property
    def tolerance(self):
        t = self.blocks[0].attrs.get("data-tolerance")
        return float(t) if t else None

    @property
    def timeout(self):
        return int(float(self.blocks[0].attrs.get("data-timeout") or TIMEOUT))


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def compare(expected: str, got: str, tol: float | None) -> str | None:
    """The page's output block against what the program printed (words; numbers within tol)."""
    e, g = expected.split(), got.split()
    shown = f"\n--- the page shows\n{expected}\n--- the program printed\n{got[-3000:]}"
    if tol is None:
        return None if e == g else "output differs from the page's output block" + shown
    if len(e) != len(g):
        return f"output has {len(g)} words, the page shows {len(e)}" + shown
    for a, b in zip(e, g):
        na, nb = NUMBER.fullmatch(a.strip(",;:()")), NUMBER.fullmatch(b.strip(",;:()"))
        if na and nb:
            x, y = float(na.group()), float(nb.group())
            if abs(x - y) > tol * max(abs(x), abs(y), 1e-12):
                return f"{a} vs {b} beyond relative tolerance {tol}" + shown
        elif a != b:
            return f"word {a!r} vs {b!r}" + shown
    return None


def _fetch(site: Path, page_url: str, href: str, scratch: Path) -> str:
    """Fetch a linked file from the built site into scratch/, at its path under the site root."""
    target = urlparse(urljoin("http://site/" + page_url, href)).path.lstrip("/")
    src = site / target
    assert src.is_file(), f"the page links {href}, which the built site does not have ({target})"
    dest = scratch / target
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)
    return target


def run_program(site: Path, page_url: str, prog: Program, scratch_root: Path) -> tuple[str, str]:
    key = prog.key()
    if key in _RESULTS:
        return _RESULTS[key]
    scratch = scratch_root / key[:12]
    scratch.mkdir(parents=True)
    for href in prog.files:
        _fetch(site, page_url, href, scratch)
    # PYTHONUNBUFFERED is dropped too: a reader's shell does not set it, and without it Python buffers what
    # it prints into a pipe until exit, after its traceback, which changes what `... 2>&1 | grep` shows
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_CURRENT_TEST", "PYTHONUNBUFFERED")}
    env.update(
        PYTHONDONTWRITEBYTECODE="1",
        PATH=os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
        VIRTUAL_ENV=str(Path(sys.executable).parent.parent),
    )
    if not needs.has_gpu():
        env["TRITON_INTERPRET"] = "1"  # as the page and the "Run it yourself" box tell a CPU reader
    f = scratch / ("block.py" if prog.lang == "python" else "block.sh")
    f.write_text(prog.code, encoding="utf-8")
    cmd = [sys.executable, f.name] if prog.lang == "python" else ["bash", "-euo", "pipefail", f.name]
    try:
        p = subprocess.run(cmd, cwd=scratch, env=env, capture_output=True, text=True, timeout=prog.timeout)
        res = (
            ("passed", "")
            if p.returncode == 0
            else (
                "failed",
                f"exit code {p.returncode}\n--- stdout (end)\n{p.stdout[-1500:]}\n--- stderr (end)\n{p.stderr[-3000:]}",
            )
        )
        if res[0] == "passed" and prog.expected is not None:
            problem = compare(prog.expected, p.stdout, prog.tolerance)
            if problem:
                res = ("failed", problem)
        if res[0] == "passed" and (crash := blockstats.crash_problem(p.stderr, prog.expected)):
            res = ("failed", crash)
    except subprocess.TimeoutExpired:
        res = ("failed", f"timed out after {prog.timeout} s")
    _RESULTS[key] = res
    return res


def programs(blocks: list[Block], lang: str) -> tuple[list[Program], list[str], list[str]]:
    """(programs to run, not-run blocks with their visible reason, problems).

    Every program may use every file the page links for download (the reader can fetch them all)."""
    page_files = list(dict.fromkeys(h for b in blocks for h in b.links))
    progs, notes, problems = [], [], []
    current: Program | None = None
    skip_chain = False
    for b in blocks:
        run = b.attrs.get("data-run")
        if run is None:
            if b.lang in RUNNABLE:
                problems.append(f"{b.where()}\n  a {b.lang} block the build did not annotate (is it a fence?)")
            continue
        if run in ("output", "generated"):
            if b.lang in RUNNABLE:
                problems.append(f"{b.where()}\n  {run} shown in a runnable language class (language-{b.lang})")
            elif not visible_reason(b, lang, []):
                problems.append(f"{b.where()}\n  {run}: the line above the block does not say so ({b.meta!r})")
            if run == "output" and current is not None and current.expected is None:
                current.expected = b.code
            continue
        if b.lang not in RUNNABLE:
            continue  # CUDA C++, PTX, MLIR, text: not programs (compiled by the blocks that show how)
        lacking_needs = [n for n in b.attrs.get("data-needs", "").split()]
        lacking = [n for n in lacking_needs if needs.missing([n])]
        reason = (
            visible_reason(b, lang, lacking)
            if (lacking or any(k in b.attrs for k in ("data-shown", "data-checked-by")) or run == "reproduce")
            else ""
        )
        if run == "cont":
            if current is None and not skip_chain:
                problems.append(f"{b.where()}\n  says it continues the block above, but no runnable block precedes it")
                continue
            if _badge("cont", lang) not in b.meta:
                problems.append(f"{b.where()}\n  continues the block above, but the page does not say so ({b.meta!r})")
            if skip_chain:
                notes.append(f"{b.page}#{b.index}: continues a block that is not run here")
                continue
            if reason is None:
                problems.append(f"{b.where()}\n  not runnable here and the page shows no reason ({b.meta!r})")
                continue
            current.blocks.append(b)
            continue
        # a new program
        current, skip_chain = None, False
        if reason is None:
            problems.append(
                f"{b.where()}\n  marked as not run as shown, but the line above the block shows no reason ({b.meta!r})"
            )
            skip_chain = True
            continue
        if reason:
            notes.append(f"{b.page}#{b.index}: {reason}")
            skip_chain = True
            continue
        if run == "standalone" and _badge("standalone", lang) not in b.meta:
            problems.append(f"{b.where()}\n  runs on its own, but the page does not say so ({b.meta!r})")
        current = Program([b], page_files)
        progs.append(current)
    return progs, notes, problems


@pytest.fixture(scope="module")
def site(built_site):
    site_dir, rc, log, _ = built_site
    assert rc == 0, f"site did not build:\n{log[-3000:]}"
    return site_dir


@pytest.mark.parametrize("slug", _pages())
def test_every_block_runs_as_the_page_says(site, slug, tmp_path_factory):
    scratch = tmp_path_factory.mktemp(f"reader-{slug}")
    assert not str(scratch).startswith(str(ROOT)), "the scratch directory must be outside the repository"
    failures, ran, t0 = [], 0, time.time()
    for lang in LANGS:
        url = _url(lang, slug)
        if not (site / url / "index.html").is_file():
            failures.append(f"{url}: page not built")
            continue
        blocks = read_blocks(site, url)
        for b in blocks:  # every file link resolves on the site itself (offline download)
            for href in b.links:
                target = urlparse(urljoin("http://site/" + url, href)).path.lstrip("/")
                if not (site / target).is_file():
                    failures.append(f"{b.where()}\n  links {href}, which the built site does not have")
        progs, notes, problems = programs(blocks, lang)
        failures += problems
        for n in notes:  # the end-of-run summary of code blocks (tests/conftest.py)
            blockstats.RESULTS.append(
                {
                    "id": f"built {n.split(':', 1)[0]}",
                    "outcome": "skipped" if "needs" in n or "需要" in n else "display",
                    "reason": "built page: " + n.split(": ", 1)[-1][:80],
                }
            )
        for prog in progs:
            fresh = prog.key() not in _RESULTS
            outcome, detail = run_program(site, url, prog, scratch)
            ran += 1
            blockstats.RESULTS.append(
                {
                    "id": f"built {prog.blocks[0].page}#{prog.blocks[0].index}",
                    "outcome": outcome if fresh else "display",
                    "reason": "" if fresh else "built page: same program as the other language's",
                }
            )
            if outcome != "passed":
                b = prog.blocks[0]
                cont = f" + {len(prog.blocks) - 1} block(s) continuing it" if len(prog.blocks) > 1 else ""
                failures.append(
                    f"{b.where()}\n  (program of block #{b.index}{cont}, run in a scratch dir with "
                    f"the files {prog.files or 'none'})\n  {detail}"
                )
    assert not failures, f"{len(failures)} problem(s) on {slug} ({time.time() - t0:.0f} s):\n\n" + "\n\n".join(failures)


def test_reader_test_sees_the_marks():
    """The reader test's idea of a block matches the hook's: a tiny page through annotate()/decorate()."""
    md = (
        '```python\n--8<-- "snippets/index/environment.py:check"\n```\n\n<!--pytest-codeblocks:cont-->\n\n'
        "```python\nprint(1)\n```\n\n<!--pytest.mark.gpu-->\n```sh\nnvidia-smi\n```\n\n"
        "<!--pytest-codeblocks:expected-output-->\n\n```text\n1\n```\n\n"
        '```bash\n--8<-- "snippets/cuda_compilation_pipeline/env.sh"\n'
        '--8<-- "snippets/cuda_compilation_pipeline/inspect.sh:sass"\n```\n\n'
        '<!--pytest.mark.checked_by("tests/test_reader.py", "output")-->\n```text\nmasked 0.1 s\n```\n'
    )
    import markdown

    html = markdown.markdown(
        reader.annotate(md),
        extensions=["attr_list", "pymdownx.superfences", "pymdownx.highlight"],
        extension_configs={"pymdownx.highlight": {"pygments_lang_class": True}},
    )
    html = reader.decorate(
        '<article class="md-content__inner">' + html + "</article>", "en", "x/", "https://example.org/r"
    )
    d = Path(str(pytest.importorskip("tempfile").mkdtemp())) / "x"
    d.mkdir()
    (d / "index.html").write_text(html, encoding="utf-8")
    blocks = read_blocks(d.parent, "x/")
    assert [b.attrs["data-run"] for b in blocks] == [
        "standalone",
        "cont",
        "standalone",
        "output",
        "standalone",
        "standalone",
    ]
    assert blocks[0].links == ["../snippets/index/environment.py"]
    assert "snippets/index/environment.py · check" in blocks[0].meta
    assert "needs an NVIDIA GPU" in blocks[2].meta
    # a block of two includes (a shell preamble, then the commands) offers both files, not the preamble alone
    assert blocks[4].links == [
        "../snippets/cuda_compilation_pipeline/env.sh",
        "../snippets/cuda_compilation_pipeline/inspect.sh",
    ]
    assert "snippets/cuda_compilation_pipeline/inspect.sh · sass" in blocks[4].meta
    # an output that a test compares (numbers masked, or split across tabs) says both what it is and who checks it
    assert "output of the block above" in blocks[5].meta and "run by the site's tests in" in blocks[5].meta
    assert "output of the block above" not in blocks[4].meta
    with pytest.raises(ValueError, match="can only be 'output'"):
        reader.annotate('<!--pytest.mark.checked_by("tests/test_reader.py", "outptu")-->\n```text\nx\n```\n')
    shutil.rmtree(d.parent)


README_SLUG = "triton-getting-started"


def test_readme_reproduces_one_article(tmp_path, built_site):
    """README.md's "Reproduce one article" lines are the pages' "Run it yourself" lines, and they work:
    in a fresh clone of this repository's HEAD, with this test's virtual environment standing for the
    venv + `pip install -r requirements-test.txt` lines and a copy of the vendored KaTeX/Mermaid for
    `vendor_js.py` (which fetches them from npm). When this checkout has no modified or untracked files
    (as in CI, itself a fresh clone), the clone's files are these, so its tests use the site this session
    has already built instead of building the same files a second time; otherwise the clone builds its own
    (a file the build needs but git does not track then fails here)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "## Reproduce one article" in text, "README.md has no 'Reproduce one article' section"
    section = text.split("## Reproduce one article", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1).strip()
    assert block == reader.run_commands(README_SLUG, None), (
        f"README's commands differ from the pages' 'Run it yourself' box:\n{block}\n---\n{reader.run_commands(README_SLUG, None)}"
    )
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing to clone")
    clone = tmp_path / "repo"
    # safe.directory: in CI containers the checkout belongs to another user than the test's
    c = subprocess.run(
        ["git", "-c", "safe.directory=*", "clone", "-q", "--depth", "1", f"file://{ROOT}", str(clone)],
        capture_output=True,
        text=True,
    )
    if c.returncode != 0:
        pytest.skip(f"cannot clone this checkout here: {c.stderr.strip()[-300:]}")
    vendor = ROOT / "overrides" / "assets" / "vendor"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHONPATH"))}
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    env.pop(PREBUILT_SITE_ENV, None)
    env["PYTHONPATH"] = str(clone / "scripts")  # what `pip install --no-deps -e .` gives the clone
    status = subprocess.run(
        ["git", "-c", "safe.directory=*", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True
    )
    if status.returncode == 0 and not status.stdout.strip() and built_site[1] == 0:
        env[PREBUILT_SITE_ENV] = str(built_site[0])
    t0 = time.time()
    for line in block.split("\n"):
        if line.startswith(("python3 -m venv", "pip install")):
            continue  # this test's venv is that environment
        if line.startswith("python scripts/vendor_js.py"):
            shutil.copytree(vendor, clone / "overrides" / "assets" / "vendor")
            continue
        p = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", line], cwd=clone, env=env, capture_output=True, text=True, timeout=900
        )
        assert p.returncode == 0, f"README line failed in a fresh clone: {line}\n{p.stdout[-3000:]}\n{p.stderr[-2000:]}"
        last = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else ""
        assert re.search(r"\d+ passed", last) and not re.search(r"\d+ failed", last), p.stdout[-2000:]
    print(f"README reproduce: {time.time() - t0:.0f} s ({'site reused' if PREBUILT_SITE_ENV in env else 'site built'})")


def test_a_crash_on_stderr_fails_a_block_unless_the_page_shows_it():
    seg = 'block.sh: line 8: 24524 Segmentation fault      "$@" 2>&1'
    assert blockstats.crash_lines(seg + "\nsome warning", "1. a case\nthe telling line") == [seg]
    assert blockstats.crash_lines(seg, "Segmentation fault (core dumped)\n") == []  # the page shows the crash
    tb = "Traceback (most recent call last):\n  File x\nValueError: bad"
    assert blockstats.crash_lines(tb, None) == ["Traceback (most recent call last):"]
    assert blockstats.crash_lines("UserWarning: something\n", None) == []
