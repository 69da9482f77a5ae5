"""The built site in headless Chromium (Debian's /usr/bin/chromium driven by Playwright; no browser download).

Every page of both languages: loads without console errors, makes no request beyond the
local server, stays under the page-weight budget, renders its math and diagrams, and has copy
buttons on its code. The language switcher keeps the reader on the same page; search in
Chinese finds Chinese pages only; the notebook download works. With AI_COMPILER_TESTS_SCREENSHOTS=1, a
full-page PNG of each page goes to test-artifacts/screenshots/ (git-ignored) for a person to look at;
CI does not take them (they took about a minute of one worker and no test reads them).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from sitekit import DOCS, LANGS, ROOT

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-quic",
    "--disable-sync",
]
PAGE_BUDGET = 1.5 * 1024 * 1024
CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef"
CJK_GAP = f"[{CJK}] +[{CJK}]"
# MkDocs syntax that must never reach the reader as text (issue 9)
RAW_SYNTAX = [
    (r":(?:material|octicons|fontawesome|simple)-[\w-]+:", "an icon shortcode"),
    (r"(?m)^\s*!!!|\?\?\? ", "an admonition marker"),
    (r"(?m)^\s*=== ", "a tab marker"),
    (r"--8<--", "a snippet include"),
    (r"\{\{|\{%", "a template marker"),
    (r"\{ ?#[\w-]", "a heading id"),
    (r"(?m)^\s*(?:flowchart|graph) (?:LR|RL|TB|TD|BT)\b", "raw Mermaid source"),
]
# the page's visible prose: code, math and drawn diagrams left out
PROSE_TEXT = """() => {
  const a = (document.querySelector('article') || document.body).cloneNode(true);
  a.querySelectorAll('script, style, .md-clipboard').forEach(e => e.remove());
  // code, math and drawn diagrams stand as one placeholder word, so the text around them stays as it is
  a.querySelectorAll('pre, code, .katex, .arithmatex, svg').forEach(e => e.replaceWith('\u2039x\u203a'));
  document.body.appendChild(a); a.style.position = 'absolute'; a.style.left = '-99999px';
  const t = a.innerText; a.remove(); return t;
}"""
# every code block that includes a file shows that file's link, visibly, and runnable blocks a badge
CODE_LINES = """() => {
  const out = [];
  document.querySelectorAll('article div.highlight[data-run]').forEach((d, i) => {
    const meta = d.previousElementSibling;
    const says = d.dataset.src || d.dataset.needs || d.dataset.shown !== undefined || d.dataset.checkedBy
      || ['cont', 'output', 'generated', 'reproduce'].includes(d.dataset.run);
    if (!says) return;     // a plain block that includes nothing and needs nothing
    // shown whenever the block is (a block in a closed tab or a collapsed note is hidden with its line)
    const ok = meta && meta.classList.contains('code-meta') && (d.offsetHeight === 0 || meta.offsetHeight > 0);
    if (!ok) { out.push(i + ': no visible line above the block'); return; }
    if (d.dataset.src && !meta.querySelector('a.code-src[download]')) out.push(i + ': no download link for ' + d.dataset.src);
    if (d.dataset.run === 'cont' && !meta.querySelector('.code-badge--cont')) out.push(i + ': continues, not shown');
    if (d.dataset.needs && !meta.querySelector('.code-badge--needs')) out.push(i + ': needs ' + d.dataset.needs + ', not shown');
  });
  return out;
}"""
# every diagram or plot box that scrolls sideways marks the side with more to see (site.js's data-more, which
# site.css fades): at the start "right", scrolled to the end "left"; a box that fits has no mark
SCROLL_CUES = """() => {
  const bad = [];
  document.querySelectorAll('.mermaid-diagram[data-processed], .plot-scroll').forEach((el, i) => {
    const wide = el.scrollWidth > el.clientWidth + 1, start = el.dataset.more || 'none';
    if (!wide) { if (start !== 'none') bad.push(i + ': fits, marked ' + start); return; }
    el.scrollLeft = el.scrollWidth; el.dispatchEvent(new Event('scroll'));
    const end = el.dataset.more || 'none';
    el.scrollLeft = 0; el.dispatchEvent(new Event('scroll'));
    if (start !== 'right' || end !== 'left') bad.push(i + ': marked ' + start + ' at the start, ' + end + ' at the end');
  });
  return bad;
}"""
# the smallest tick or legend text of each plot (superscript exponents aside), in CSS px on screen
PLOT_FONT = """() => [...document.querySelectorAll('.data-figure svg')].map(svg => {
  const vb = svg.viewBox.baseVal, scale = svg.getBoundingClientRect().width / (vb && vb.width || 1);
  const sizes = [...svg.querySelectorAll('text')].map(e => parseFloat(getComputedStyle(e).fontSize) * scale);
  return sizes.length ? Math.min(...sizes) : 99;
})"""
# the smallest label of each drawn diagram, in CSS px on screen
DIAGRAM_FONT = """() => [...document.querySelectorAll('.mermaid-diagram svg')].map(svg => {
  const vb = svg.viewBox.baseVal, scale = svg.getBoundingClientRect().width / (vb && vb.width || 1);
  const sizes = [...svg.querySelectorAll('text, foreignObject span, foreignObject p, foreignObject div')]
    .filter(e => (e.textContent || '').trim())
    .map(e => parseFloat(getComputedStyle(e).fontSize) * scale);
  return sizes.length ? Math.min(...sizes) : 99;
})"""
SHOTS = ROOT / "test-artifacts" / "screenshots"
SHOTS_ENV = "AI_COMPILER_TESTS_SCREENSHOTS"  # set to 1 to keep a PNG of every page

pytestmark = pytest.mark.browser

if not Path(CHROMIUM).exists() or shutil.which("chromium") is None and not Path(CHROMIUM).exists():
    pytest.skip(
        f"needs Chromium at {CHROMIUM} (Debian package chromium; scripts/test.sh installs it)", allow_module_level=True
    )
playwright = pytest.importorskip("playwright.sync_api")


class _Server(http.server.SimpleHTTPRequestHandler):
    """A static server like the ones the site is published on: text is sent gzip-compressed
    when the browser accepts it, so the test counts the bytes a reader actually downloads."""

    TEXT = (".html", ".js", ".mjs", ".css", ".json", ".svg", ".xml", ".ipynb", ".txt")

    def log_message(self, *args):
        pass

    def send_head(self):
        path = self.translate_path(self.path)
        if not os.path.exists(path) and not os.path.exists(path.rstrip("/")):
            # like GitHub Pages: a missing path gets the site's 404.html with status 404
            with open(os.path.join(self.directory, "404.html"), "rb") as f:
                body = f.read()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            import io

            return io.BytesIO(body)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        if (
            "gzip" not in self.headers.get("Accept-Encoding", "")
            or not path.endswith(self.TEXT)
            or not os.path.isfile(path)
        ):
            return super().send_head()
        if os.path.isdir(self.translate_path(self.path)) and not self.path.split("?")[0].endswith("/"):
            return super().send_head()  # let the base class redirect /dir to /dir/
        import gzip
        import io

        with open(path, "rb") as f:
            body = gzip.compress(f.read(), compresslevel=6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


class _Httpd(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        # the browser closing a connection mid-transfer (it navigated on, or had what it needed) is not an
        # error of the site; anything else still prints its traceback
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


@pytest.fixture(scope="module")
def server(built_site):
    site, rc, log, _ = built_site
    assert rc == 0, f"site did not build:\n{log[-3000:]}"
    httpd = _Httpd(("127.0.0.1", 0), functools.partial(_Server, directory=str(site)))
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _urls():
    out = []
    for lang in LANGS:
        for page in sorted((DOCS / lang).glob("*.md")):
            path = "" if page.stem == "index" else f"{page.stem}/"
            out.append((lang, page.stem, ("" if lang == "en" else "zh/") + path))
    return out


FIGURE_LIBS = ("mermaid", "katex")  # overrides/assets/site.js loads them from assets/vendor/ when a page has figures


class Visit:
    """Open one page in a fresh context, recording console errors, requests and bytes."""

    def __init__(self, browser, base, figures=True):
        """figures=False: the site's own diagram and math libraries are not fetched (a test of links and
        menus does not need them, and Mermaid drawing every diagram of a page in the background took most
        of such a test's time on 2 cores). Their console errors are then expected, so self.errors is not
        for such a visit."""
        self.base = base
        self.ctx = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        self.errors, self.external, self.responses = [], [], []
        host = urlparse(base).netloc

        def on_request(route):
            url = route.request.url
            if urlparse(url).netloc != host and not url.startswith(("data:", "blob:")):
                self.external.append(url)
                return route.abort()
            if not figures and any(f"/vendor/{lib}/" in url for lib in FIGURE_LIBS):
                return route.abort()
            return route.continue_()

        self.ctx.route("**/*", on_request)
        self.page = self.ctx.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        self.page.on("response", lambda r: self.responses.append(r))

    def transferred(self) -> tuple[int, int]:
        """(bytes on the wire, bytes after decompression) of every response so far."""
        wire = raw = 0
        for r in self.responses:
            try:
                wire += r.request.sizes()["responseBodySize"]
                raw += len(r.body())
            except Exception:
                pass
        return wire, raw

    def open(self, path, wait_until="networkidle"):
        self.page.goto(f"{self.base}/{path}", wait_until=wait_until)
        return self.page

    def close(self):
        self.ctx.close()


@pytest.mark.parametrize("lang,slug,path", _urls(), ids=[f"{l}/{s}" for l, s, _ in _urls()])
def test_page_loads_clean_and_renders(browser, server, lang, slug, path, tmp_path):
    """The page loads without console errors or third-party requests, under its weight budget, with its
    diagrams, math and copy buttons rendered; then, where the page has a notebook, its download button
    gives a notebook, and the language menu lands on the same page in the other language (on the same
    visit: tests of their own loaded these pages again, 37 s and 51 s of one worker in CI)."""
    v = Visit(browser, server)
    try:
        page = v.open(path)
        if page.locator(".mermaid-diagram").count():
            page.wait_for_selector("body[data-diagrams=rendered]", timeout=20000)
            assert page.locator(".mermaid-diagram svg").count() == page.locator(".mermaid-diagram").count(), (
                "a diagram did not render"
            )
        if page.locator(".arithmatex").count():
            page.wait_for_selector("body[data-math=rendered]", timeout=20000)
            assert page.locator(".arithmatex .katex").count() == page.locator(".arithmatex").count(), (
                "math did not render"
            )
        code = page.locator(".md-typeset pre > code")
        if code.count():
            code.first.scroll_into_view_if_needed()  # Material adds the button once a block is visible
            page.wait_for_selector('.md-typeset button[data-md-type="copy"]', state="attached", timeout=5000)
            page.evaluate("window.scrollTo(0, 0)")
        html_lang = page.locator("html").get_attribute("lang")
        assert html_lang.startswith(lang), f"<html lang={html_lang}> on a {lang} page"
        text = page.evaluate(PROSE_TEXT)
        for raw, what in RAW_SYNTAX:
            hit = re.search(raw, text)
            assert not hit, f"{what} in the visible text: ...{text[max(0, hit.start() - 60) : hit.end() + 60]}..."
        if lang == "zh":
            gaps = [text[max(0, m.start() - 10) : m.end() + 10] for m in re.finditer(CJK_GAP, text)]
            assert not gaps, f"{len(gaps)} space(s) between two CJK characters, e.g. {gaps[:5]}"
            font = page.evaluate(
                "getComputedStyle(document.querySelector('.md-typeset p') || document.body).fontFamily"
            )
            assert "Noto Sans CJK SC" in font and "PingFang SC" in font, f"CJK font stack not applied: {font}"
        small = _small_figure_text(page, 11)
        assert not small, f"diagram or plot text below 11 px at 1280 px width: {small}"
        problems = page.evaluate(CODE_LINES)
        assert not problems, f"code blocks without their visible file/badge line: {problems[:5]}"
        # the build always has a repository URL (CI's, or conftest's stand-in)
        assert page.locator('a.md-content__button[rel="edit"]').count() == 1, "no 'edit this page' link"
        if os.environ.get(SHOTS_ENV):  # a full-page PNG takes up to 11 s a page on 2 cores: for a person, on request
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / f"{lang}-{slug}.png"), full_page=True)
        page.wait_for_timeout(300)
        assert not v.errors, f"console errors: {v.errors}"
        assert not v.external, f"requests left the local server: {v.external}"
        wire, raw = v.transferred()
        assert wire < PAGE_BUDGET, (
            f"{wire / 2**20:.2f} MiB transferred ({raw / 2**20:.2f} MiB uncompressed), budget 1.5 MiB"
        )
        if (lang, slug) in _notebook_pages():  # after the weight: the download is not part of the page
            with page.expect_download() as dl:
                page.locator("a.md-button[download]").click()
            nb_path = tmp_path / "nb.ipynb"
            dl.value.save_as(nb_path)
            nb = json.loads(nb_path.read_text(encoding="utf-8"))
            assert nb["nbformat"] == 4 and any(c["cell_type"] == "code" for c in nb["cells"]), "not a notebook"
            assert not v.external, v.external
        else:
            assert not page.locator("a.md-button[download]").count(), "a download button on a page without a notebook"
        # last, as it leaves the page: the language menu lands on the same page in the other language (where
        # the click lands is checked here; the landing page's rendering is this test's other case)
        other = "zh" if lang == "en" else "en"
        link = page.locator(f'.md-select__link[hreflang="{other}"]').first
        page.goto(page.url.rsplit("#", 1)[0]) if not link.get_attribute("href") else None
        page.locator(".md-header__option .md-select").first.hover()
        want = ("" if other == "en" else "zh/") + ("" if slug == "index" else f"{slug}/")
        link.click()
        try:
            page.wait_for_url(f"{server}/{want}", wait_until="commit", timeout=10000)
        except playwright.TimeoutError:
            pass
        assert page.url == f"{server}/{want}", f"switching {lang}->{other} on {slug} landed on {page.url}"
    finally:
        v.close()


@pytest.mark.parametrize(
    "lang,other,slug,section",
    [("en", "zh", "triton-getting-started", "vector-add"), ("zh", "en", "cuda-compilation-pipeline", "gencode")],
)
def test_language_switcher_keeps_the_section(browser, server, lang, other, slug, section):
    """Switching language halfway down a page lands on the same section of the other copy (the copies share
    their heading ids), not at its top."""
    v = Visit(browser, server)
    try:
        # drawn diagrams and typeset math change the page's height, so scroll only once they are in
        page = v.open(("" if lang == "en" else "zh/") + f"{slug}/", wait_until="networkidle")
        if page.locator(".mermaid-diagram").count():
            page.wait_for_selector("body[data-diagrams=rendered]", timeout=20000)
        # the section's heading just under the sticky header, where a reader who scrolled to it sees it;
        # scrolled again until it stays there (typeset math and drawn diagrams above it change its place)
        gap = None
        for _ in range(10):
            page.evaluate(
                f"window.scrollTo(0, window.scrollY + document.getElementById('{section}').getBoundingClientRect().top"
                " - document.querySelector('.md-header').getBoundingClientRect().bottom)"
            )
            page.wait_for_timeout(300)
            gap = page.evaluate(
                f"document.getElementById('{section}').getBoundingClientRect().top"
                " - document.querySelector('.md-header').getBoundingClientRect().bottom"
            )
            if abs(gap) < 2:
                break
        assert gap is not None and abs(gap) < 2, f"#{section} would not stay under the header ({gap:.0f} px off)"
        page.locator(".md-header__option .md-select").first.hover()
        # a DOM click: Playwright's own click() scrolls the page a little to "reveal" the link in the sticky
        # header first, which moves the reader to the next heading before the menu reads the position
        page.locator(f'.md-select__link[hreflang="{other}"]').first.evaluate("a => a.click()")
        want = f"{server}/" + ("" if other == "en" else "zh/") + f"{slug}/#{section}"
        try:
            page.wait_for_url(want, wait_until="domcontentloaded", timeout=10000)
        except playwright.TimeoutError:
            pass
        assert page.url == want, f"switching {lang}->{other} at #{section} of {slug} landed on {page.url}"
        top = page.evaluate(f"document.getElementById('{section}').getBoundingClientRect().top")
        assert 0 <= top < 200, f"{want} opened with the section's heading at {top:.0f} px, not at the top"
        assert not v.external
    finally:
        v.close()


def _search(v, lang: str, query: str):
    """Type a query into the search box of the landing page in `lang`: (the page, the result links)."""
    page = v.open("" if lang == "en" else "zh/")
    page.locator("label.md-search__icon, .md-search__input").first.click()
    box = page.locator("input.md-search__input")
    box.fill(query)
    box.press("End")  # fill() fires no keyup; Material searches on keyup
    page.wait_for_selector(".md-search-result__item", timeout=15000)
    return page, page.locator(".md-search-result__link").evaluate_all("els => els.map(e => e.href)")


@pytest.mark.parametrize("lang,query", [("zh", "算子融合"), ("en", "fusion")])
def test_search_stays_in_the_pages_language(browser, server, lang, query):
    v = Visit(browser, server)
    try:
        page, hrefs = _search(v, lang, query)
        assert hrefs, f"no results for {query!r}"
        for h in hrefs:
            under_zh = urlparse(h).path.startswith("/zh/")
            assert under_zh == (lang == "zh"), f"{lang} search for {query!r} returned {h}"
        if lang == "zh":
            titles = page.locator(".md-search-result__article h1, .md-search-result__article h2").all_inner_texts()
            assert any(any("\u4e00" <= ch <= "\u9fff" for ch in t) for t in titles), titles
            shown = page.locator(".md-search-result").inner_text()
            assert "\u200b" not in shown, f"the index's word breaks (U+200B) reach the results: {shown[:200]!r}"
        assert not v.external and not v.errors, (v.external, v.errors)
    finally:
        v.close()


def _notebook_pages():
    from sitekit.notebooks import wants_notebook

    return [(lang, p.stem) for lang in LANGS for p in sorted((DOCS / lang).glob("*.md")) if wants_notebook(p)]


def _diagram_pages():
    return [
        (lang, slug, path)
        for lang, slug, path in _urls()
        if "```mermaid" in (DOCS / lang / f"{slug}.md").read_text(encoding="utf-8")
    ]


def _figure_pages():
    return [
        (lang, slug, path)
        for lang, slug, path in _urls()
        if any(m in (DOCS / lang / f"{slug}.md").read_text(encoding="utf-8") for m in ("```mermaid", "{{ plot("))
    ]


PROVENANCE = re.compile(r"\{\{\s*(table|plot|provenance)\(")


def _phone_pages():
    """The pages with a diagram, a plot or a provenance line: what the phone-width test looks at."""
    figures = set(_figure_pages())
    return [u for u in _urls() if u in figures or PROVENANCE.search((DOCS / u[0] / f"{u[1]}.md").read_text("utf-8"))]


def _small_figure_text(page, least: float) -> list[str]:
    out = [f"diagram {i}: {px:.1f} px" for i, px in enumerate(page.evaluate(DIAGRAM_FONT)) if px < least]
    return out + [f"plot {i}: {px:.1f} px" for i, px in enumerate(page.evaluate(PLOT_FONT)) if px < least - 0.05]


PHONE_WIDTH, PHONE_LEAST = 390, 9  # 1280 px (11 px): test_page_loads_clean_and_renders


@pytest.fixture(scope="module")
def phone_page(browser):
    """One phone-sized tab per worker, reused page after page (a new context per page cost more than
    the split saved)."""
    ctx = browser.new_context(viewport={"width": PHONE_WIDTH, "height": 900})
    yield ctx.new_page()
    ctx.close()


# One test per page, not one that visits them all: the two pytest workers share the pages (a single
# test visiting every figure page took 37 s of one worker's time). The provenance lines are checked on
# the same visit (a test of their own loaded the same 18 pages again: 36 s of one worker in CI).
@pytest.mark.parametrize("lang,slug,path", _phone_pages(), ids=[f"{l}/{s}" for l, s, _ in _phone_pages()])
def test_diagram_text_is_readable_on_a_phone(phone_page, server, lang, slug, path):
    """At 390 px: Mermaid labels and plot text at least 9 px (11 px on a desktop: a wide diagram or plot
    scrolls sideways in its box instead of shrinking), and a provenance line's paths and commands wrap
    after a `/` or at a space, never inside a file name or a flag (`softmax_launch.p` / `y`, `--bud` /
    `get-s`)."""
    width, least, page = PHONE_WIDTH, PHONE_LEAST, phone_page
    page.goto(f"{server}/{path}", wait_until="networkidle")
    if page.locator(".mermaid-diagram").count():
        page.wait_for_selector("body[data-diagrams=rendered]", timeout=20000)
    small = _small_figure_text(page, least)
    cues = page.evaluate(SCROLL_CUES)
    assert not cues, f"{lang}/{slug} at {width} px: a box that scrolls sideways without its faded edge: {cues}"
    overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    assert overflow <= 1, f"{lang}/{slug}: the page scrolls sideways at {width} px ({overflow} px)"
    assert not small, f"{lang}/{slug}: diagram text below {least} px at {width} px width: {small}"
    breaks = page.evaluate(CODE_BREAKS)
    bad = [f"{text!r} breaks at {at!r}" for text, at in breaks if not re.match(r"[/\s]|.\s", at)]
    assert not bad, f"{lang}/{slug}: provenance code wraps inside a name at {width} px: " + "; ".join(bad[:10])
    # a shown provenance code longer than a phone's line must wrap: without a break the check above saw nothing
    if page.evaluate(LONG_PROVENANCE):
        assert breaks, f"{lang}/{slug}: no provenance code wrapped at {width} px, though some is longer than a line"


def test_no_raw_diagram_source_before_mermaid_loads(browser, server):
    """On a slow link Mermaid arrives late: until it has drawn a diagram, its source stays hidden."""
    lang, slug, path = _diagram_pages()[0]
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        ctx.route("**/mermaid/**", lambda route: route.abort())  # Mermaid never arrives
        page = ctx.new_page()
        page.goto(f"{server}/{path}", wait_until="networkidle")
        visible = page.evaluate("""() => [...document.querySelectorAll('.mermaid-diagram')]
            .filter(d => !d.querySelector('svg') && getComputedStyle(d).visibility !== 'hidden').length""")
        assert visible == 0, f"{visible} diagram(s) show raw Mermaid source before Mermaid has drawn them"
    finally:
        ctx.close()


@pytest.mark.parametrize("lang,missing", [("en", "no-such-page/"), ("zh", "zh/no-such-page/")])
def test_404_page_in_the_readers_language(browser, server, lang, missing):
    v = Visit(browser, server)
    failed = []
    v.page.on("response", lambda r: failed.append(r.url) if r.status >= 400 and not r.url.endswith(missing) else None)
    try:
        page = v.open(missing)
        assert page.locator("html").get_attribute("lang") == lang
        heading = page.locator("h1:visible").inner_text()
        assert heading == ("Page not found" if lang == "en" else "页面不存在"), heading
        hrefs = page.locator("a:visible").evaluate_all("els => els.map(e => e.href)")
        assert hrefs
        for h in hrefs:
            r = page.request.get(h)
            assert r.status == 200, f"404 page links {h}: {r.status}"
        assert not failed, f"the 404 page made failing requests: {failed}"
        # the browser logs the page's own 404 status; any other message is a problem
        errors = [e for e in v.errors if "status of 404" not in e]
        assert not errors and not v.external, (errors, v.external)
    finally:
        v.close()


@pytest.mark.parametrize("path", ["glossary/", "zh/glossary/"])
def test_glossary_fits_a_phone_and_its_anchors_land(browser, server, path):
    """At 390 px the glossary's rows stack (site.css) instead of scrolling the definitions sideways, and a
    term's anchor (glossary/#g-guard) scrolls to that term."""
    ctx = browser.new_context(viewport={"width": 390, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(f"{server}/{path}#g-guard", wait_until="domcontentloaded")
        table = page.locator(".md-typeset table").first
        wide, box = table.evaluate("t => [t.scrollWidth, (t.closest('.md-typeset__scrollwrap') || t).clientWidth]")
        assert wide <= box, f"{path}: the glossary table is {wide} px wide in a {box} px box at 390 px"
        assert page.locator("#g-guard").count() == 1
        top = page.evaluate("document.getElementById('g-guard').getBoundingClientRect().top")
        assert 0 <= top < 900, f"{path}#g-guard did not scroll to the term (top {top})"
    finally:
        ctx.close()


def _rendered(page):
    if page.locator(".mermaid-diagram").count():
        page.wait_for_selector("body[data-diagrams=rendered]", timeout=20000)


@pytest.mark.parametrize("path", ["how-ai-compilers-work/", "zh/how-ai-compilers-work/"])
def test_palette_switch_redraws_diagrams_in_place(browser, server, path):
    """Switching light/dark redraws every diagram (site.js); the page must not jump while it does: the box
    keeps its drawing until the new one replaces it (it used to fall back to its source for a moment)."""
    v = Visit(browser, server)
    try:
        page = v.open(path)
        _rendered(page)
        page.evaluate("""() => {
            const d = document.querySelector('.mermaid-diagram');
            window.__old = d.querySelector('svg');
            window.scrollTo(0, d.getBoundingClientRect().top + scrollY - 80);
            window.__moves = [];
            (function sample() {
                window.__moves.push([scrollY, d.getBoundingClientRect().bottom]);
                if (!window.__done) requestAnimationFrame(sample);
            })();
        }""")
        page.locator("form[data-md-component=palette] label:visible").first.click()
        page.wait_for_function(
            "document.querySelector('.mermaid-diagram svg') !== window.__old"
            " && document.body.dataset.diagrams === 'rendered'",
            timeout=20000,
        )
        page.wait_for_timeout(300)
        moves = page.evaluate("window.__done = true, window.__moves")
        ys, bottoms = {round(y) for y, _ in moves}, [b for _, b in moves]
        assert len(ys) == 1 and max(bottoms) - min(bottoms) <= 1, (
            f"{path}: the page moved during the redraw: scrollY {sorted(ys)}, "
            f"diagram bottom {min(bottoms):.0f}..{max(bottoms):.0f} px"
        )
        assert page.evaluate("document.body.dataset.mdColorScheme") == "slate"
        assert not v.errors and not v.external, (v.errors, v.external)
    finally:
        v.close()


@pytest.mark.parametrize("lang,query,words", [("en", "autotune", ["autotune"]), ("zh", "算子融合", ["算子", "融合"])])
def test_search_results_highlight_every_word_of_the_query(browser, server, lang, query, words):
    """Every result link carries the query's words in ?h= (a page matched only in its sections got an empty
    ?h=), and a Chinese query is searched and highlighted as all its words (Material's own segmenter
    dropped the last word of a run: 算子融合 was searched and highlighted as 算子)."""
    from urllib.parse import parse_qs

    v = Visit(browser, server)
    try:
        page, hrefs = _search(v, lang, query)
        highlights = [parse_qs(urlparse(h).query).get("h", [""])[0].split() for h in hrefs]
        empty = [h for h, hl in zip(hrefs, highlights) if not hl]
        assert not empty, f"{query!r}: result links with an empty ?h=: {empty[:3]}"
        assert any(sorted(hl) == sorted(words) for hl in highlights), f"{query!r}: ?h= values {highlights[:5]}"
        marked = set(page.locator(".md-search-result mark").all_inner_texts())
        assert set(words) <= marked, f"{query!r}: the results mark {sorted(marked)}"
        page.locator(".md-search-result__link").first.click()
        page.wait_for_selector("mark[data-md-highlight]", timeout=10000)
        on_page = set(page.locator("mark[data-md-highlight]").all_inner_texts())
        assert set(words) <= {w.lower() for w in on_page}, f"{query!r}: the page highlights {sorted(on_page)}"
        assert not v.errors and not v.external, (v.errors, v.external)
    finally:
        v.close()


def test_diagrams_without_javascript_show_their_source(browser, server):
    """With JavaScript off no diagram is drawn: the reader gets a note in the page's language and the
    diagram's Mermaid source as code, not an empty box."""
    from sitekit import reader

    ctx = browser.new_context(viewport={"width": 1280, "height": 900}, java_script_enabled=False)
    try:
        page = ctx.new_page()
        for lang, slug, path in _diagram_pages():
            page.goto(f"{server}/{path}", wait_until="load")
            boxes = page.locator(".mermaid-diagram")
            notes = page.locator(".diagram-noscript")
            assert notes.count() == boxes.count() > 0, f"{lang}/{slug}: {notes.count()} notes, {boxes.count()} diagrams"
            for i in range(boxes.count()):
                box, note = boxes.nth(i), notes.nth(i)
                assert note.is_visible() and note.inner_text() == reader.DIAGRAM_NOTE[lang], f"{lang}/{slug} #{i}"
                style = box.evaluate("e => [getComputedStyle(e).visibility, getComputedStyle(e).fontFamily]")
                assert style[0] == "visible" and "monospace" in style[1], f"{lang}/{slug} #{i}: {style}"
                assert re.match(r"(%%\{.*\}%%\s*)?(flowchart|graph) ", box.inner_text().strip()), (
                    f"{lang}/{slug} #{i}: the source is not shown as written"
                )
    finally:
        ctx.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_reading_map_boxes_link_to_their_articles(browser, server, lang):
    """On the landing page each article's box in the reading map is a link to that article, in the same
    language (Mermaid `click … href`; site.js keeps securityLevel "strict")."""
    from sitekit.articles import ARTICLES

    prefix = "/" if lang == "en" else "/zh/"
    v = Visit(browser, server)
    try:
        page = v.open(prefix.lstrip("/"))
        _rendered(page)
        links = page.locator("#reading-map ~ .mermaid-diagram svg a")
        paths = links.evaluate_all(
            "els => els.map(a => new URL(a.getAttribute('href') || a.getAttribute('xlink:href'), location.href).pathname)"
        )
        assert sorted(paths) == sorted(f"{prefix}{slug}/" for slug, _, _ in ARTICLES), paths
        links.nth(paths.index(f"{prefix}cuda-compilation-pipeline/")).click()
        page.wait_for_url(f"{server}{prefix}cuda-compilation-pipeline/", timeout=10000)
        assert not v.errors and not v.external, (v.errors, v.external)
    finally:
        v.close()


@pytest.mark.parametrize(
    "lang,label,close",
    [("en", "View full size", "Close"), ("zh", "查看大图", "关闭")],
)
def test_wide_diagram_opens_full_size_from_the_keyboard(browser, server, lang, label, close):
    """A diagram shown smaller than its natural size has a "View full size" button (in the page's language)
    that opens it at natural size in an overlay; Escape closes it and gives the focus back."""
    v = Visit(browser, server)
    try:
        page = v.open(("" if lang == "en" else "zh/") + "how-ai-compilers-work/")
        _rendered(page)
        assert page.locator(".diagram-zoom:visible").count(), "no 'View full size' button under a wide diagram"
        button = page.locator(".diagram-zoom:visible").first
        assert button.inner_text() == label
        natural = button.evaluate(
            "b => b.parentElement.previousElementSibling.querySelector('svg').viewBox.baseVal.width"
        )
        button.focus()
        page.keyboard.press("Enter")
        dialog = page.locator("dialog.diagram-dialog[open]")
        dialog.wait_for(timeout=5000)
        width = dialog.locator("svg").evaluate("s => s.getBoundingClientRect().width")
        assert abs(width - natural) <= 1, f"shown {width:.0f} px wide, natural width {natural:.0f} px"
        assert page.evaluate("document.activeElement.textContent") == close
        page.keyboard.press("Escape")
        page.wait_for_selector("dialog.diagram-dialog[open]", state="detached", timeout=5000)
        assert page.evaluate("document.activeElement.classList.contains('diagram-zoom')")
        assert not v.errors and not v.external, (v.errors, v.external)
    finally:
        v.close()


# each line break inside a provenance line's code: [the code's text, the characters before and after it]
LONG_PROVENANCE = """() => [...document.querySelectorAll('.provenance code')]
  .filter(c => c.getClientRects().length && c.textContent.length > 60).length"""
CODE_BREAKS = """() => {
  const out = [];
  document.querySelectorAll('.provenance code').forEach(code => {
    let top = null, prev = '';
    const it = document.createNodeIterator(code, NodeFilter.SHOW_TEXT);
    for (let n = it.nextNode(); n; n = it.nextNode()) {
      for (let i = 0; i < n.data.length; i++) {
        const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
        const rect = r.getClientRects()[0];
        if (rect && rect.width) {
          if (top !== null && rect.top > top + 2) out.push([code.textContent, prev + n.data[i]]);
          top = rect.top;
        }
        prev = n.data[i];
      }
    }
  });
  return out;
}"""


@pytest.mark.parametrize("path", ["cuda-compilation-pipeline/", "zh/cuda-compilation-pipeline/"])
def test_sass_diagram_is_monospace_one_instruction_a_line(browser, server, path):
    """The SASS control-flow graph shows assembly as assembly: a monospace font, one instruction per line
    (at Mermaid's default width its proportional labels wrapped inside instructions)."""
    v = Visit(browser, server)
    try:
        page = v.open(path)
        _rendered(page)
        lines = page.evaluate("""() => {
            const d = [...document.querySelectorAll('.mermaid-diagram')].find(d => d.dataset.source.includes('ISETP'));
            return [...d.querySelectorAll('.nodeLabel')].flatMap(label => {
                const out = [], it = document.createNodeIterator(label, NodeFilter.SHOW_TEXT);
                for (let n = it.nextNode(); n; n = it.nextNode()) {
                    if (!n.data.trim()) continue;
                    const r = document.createRange(); r.selectNodeContents(n);
                    out.push([n.data, r.getClientRects().length, getComputedStyle(n.parentElement).fontFamily]);
                }
                return out;
            });
        }""")
        assert len(lines) > 10, lines
        wrapped = [t for t, rects, _ in lines if rects != 1]
        assert not wrapped, f"{path}: instructions wrapped: {wrapped[:5]}"
        fonts = {f for _, _, f in lines}
        assert all("monospace" in f for f in fonts), f"{path}: {fonts}"
    finally:
        v.close()
