"""What the reader sees around each code block, generated at build time (issue 9).

- `annotate(markdown)` gives every fenced block data attributes (the snippet file and section it
  includes, whether it runs on its own, continues the block above or is the output of one, what
  it needs, why it is not run as shown). Done on the Markdown, where the test marks are.
- `decorate(html)` turns those attributes into a visible line above the block: the file (a
  download of the site's own copy under /snippets/), a link to it in the repository, and badges
  ("continues the block above", "needs an NVIDIA GPU", ...). tests/test_reader.py reads the
  same attributes from the built HTML, checks the visible line and runs the blocks.
- `join_cjk_lines(markdown)`: a line break inside a Chinese sentence renders as a space between two
  Chinese characters; the lines are joined at build time.
- `run_box(...)`: the "Run it yourself" box of an article, one template for every page.
- `diagram_notes(html)`: a <noscript> note above each Mermaid diagram, for readers without JavaScript.
- `breakable_paths(html)`: the paths and commands in provenance lines break after a `/`, not mid-name.
"""

from __future__ import annotations

import html
import re

from . import DOCS
from .pages import MARK, SNIPPET_LINE

FENCE_OPEN = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})(?P<info>[^`\n]*)$")
MARK_LINE = re.compile(r"^\s*<!--\s*(?P<mark>pytest\.mark\.\w+(?:\(.*\))?|pytest-codeblocks:[\w-]+)\s*-->\s*$")
RUNNABLE = {"python", "py", "bash", "sh", "shell"}
NOT_ANNOTATED = {"mermaid"}  # custom fences, rendered as diagrams
GENERATED = {"python3": "python"}  # generated listings: highlighted, never a runnable class

TEXT = {
    "cont": {"en": "continues the block above", "zh": "接上一个代码块"},
    "standalone": {"en": "runs on its own", "zh": "可单独运行"},
    "output": {"en": "output of the block above", "zh": "上一个代码块的输出"},
    "generated": {"en": "generated code, shown for reading", "zh": "生成的代码，仅供阅读"},
    "shown": {"en": "shown, not run as is: {why}", "zh": "仅作展示，不按原样单独运行：{why}"},
    "checked": {"en": "run by the site's tests in {test}", "zh": "由站点测试 {test} 运行检查"},
    "reproduce": {
        "en": "needs network access: clones the repository and installs packages",
        "zh": "需要联网：克隆仓库并安装依赖",
    },
    "download": {"en": "Download this file from the site", "zh": "从本站下载这个文件"},
    "repo": {"en": "repository", "zh": "仓库"},
    "need": {
        "gpu": {"en": "needs an NVIDIA GPU", "zh": "需要 NVIDIA GPU"},
        "nvcc": {"en": "needs nvcc (CUDA toolkit)", "zh": "需要 nvcc（CUDA 工具链）"},
        "mpirun": {"en": "needs MPI (mpirun)", "zh": "需要 MPI（mpirun）"},
        "mlir-opt": {"en": "needs mlir-opt", "zh": "需要 mlir-opt"},
        "network": {"en": "needs network access", "zh": "需要联网"},
        "oneapi-wheels": {
            "en": "needs the oneAPI wheels (pip install -r requirements-oneapi.txt)",
            "zh": "需要 oneAPI 的 wheel（pip install -r requirements-oneapi.txt）",
        },
        "openmpi": {
            "en": "needs Open MPI (apt install openmpi-bin libopenmpi-dev)",
            "zh": "需要 Open MPI（apt install openmpi-bin libopenmpi-dev）",
        },
        "intel-gpu": {"en": "needs an Intel GPU", "zh": "需要 Intel GPU"},
    },
}


# The reason of a display-only block (<!--pytest.mark.display("why")-->) is written once, in English,
# and the Chinese page carries the same mark (tests/test_parity.py): its badge shows the reason from
# here. tests/test_glossary.py fails when a Chinese page has a reason this table lacks; until then
# the badge falls back to the English reason.
SHOWN_ZH = {
    "C source, compiled and run by the block below": "C 源码，由下一个代码块编译并运行",
    "C source, compiled and run by the blocks below": "C 源码，由下面的代码块编译并运行",
    "CUDA C++, compiled and run by the block below": "CUDA C++ 源码，由下一个代码块编译并运行",
    "CUDA C++, compiled by the block below": "CUDA C++ 源码，由下一个代码块编译",
    "CUDA C++, compiled by the blocks below": "CUDA C++ 源码，由下面的代码块编译",
    "MLIR input file, compiled and timed by the blocks below": "MLIR 输入文件，由下面的代码块编译并计时",
    "MLIR input file, processed by the block below": "MLIR 输入文件，由下一个代码块处理",
    "MLIR input file, processed by the blocks below": "MLIR 输入文件，由下面的代码块处理",
    "MLIR transform script, applied by the blocks below": "MLIR 变换脚本，由下面的代码块应用",
    "Python, run under mpiexec by the block below": "Python 程序，由下一个代码块用 mpiexec 运行",
    "a multi-GB download from intel.com: syntax-checked by tests/test_oneapi_installation.py, not run": (
        "要从 intel.com 下载数 GB；由 tests/test_oneapi_installation.py 做语法检查，不运行"
    ),
    "captured on the H200 by scripts/measure/pytorch_compile_stack/_artifacts.py --device cuda; "
    "re-captured by scripts/gpu_ci.py": (
        "由 scripts/measure/pytorch_compile_stack/_artifacts.py --device cuda 在 H200 上捕获，"
        "scripts/gpu_ci.py 负责重新捕获"
    ),
    "captured with torch 2.11 on the H200 machine's CPU by scripts/measure/pytorch_compile_stack/_artifacts.py "
    "(dataset cpu_artifacts_torch211)": (
        "由 scripts/measure/pytorch_compile_stack/_artifacts.py 在 H200 机器的 CPU 上用 torch 2.11 捕获"
        "（数据集 cpu_artifacts_torch211）"
    ),
    "excerpt of the kernel listed and run in the autotuning section": "节选自自动调优一节完整列出并运行的内核",
    "installs packages into a new virtual environment; scripts/test.sh runs the same install": (
        "把软件包装进一个新的虚拟环境；scripts/test.sh 执行的是同样的安装"
    ),
    "installs packages; run it on your own machine": "会安装软件包，请在自己的机器上运行",
    "needs Nsight Compute (ncu) and a GPU; the site's CI has neither": "需要 Nsight Compute（ncu）和 GPU，本站的 CI 两者都没有",
    "needs a RHEL-family machine with root, or Spack; several GB: syntax-checked, not run": (
        "需要一台有 root 权限的 RHEL 系机器，或者 Spack，下载数 GB；只做语法检查，不运行"
    ),
    "needs a Slurm cluster with two or more nodes: syntax-checked, not run": (
        "需要至少两个节点的 Slurm 集群；只做语法检查，不运行"
    ),
    "needs a toolkit under /opt/intel/oneapi and Environment Modules: syntax-checked, not run": (
        "需要装在 /opt/intel/oneapi 下的工具包和 Environment Modules；只做语法检查，不运行"
    ),
    "needs a toolkit under /opt/intel/oneapi, which the CI machine does not have: syntax-checked, not run": (
        "需要装在 /opt/intel/oneapi 下的工具包，CI 机器上没有；只做语法检查，不运行"
    ),
    "needs an Intel GPU, its Level Zero driver and PyTorch for XPU; the CI machine has none": (
        "需要 Intel GPU、它的 Level Zero 驱动和 XPU 版 PyTorch，CI 机器上都没有"
    ),
    "needs root and apt.repos.intel.com: syntax-checked by tests/test_oneapi_installation.py, not run": (
        "需要 root 权限和 apt.repos.intel.com；由 tests/test_oneapi_installation.py 做语法检查，不运行"
    ),
    "needs root and apt.repos.intel.com; several GB: syntax-checked by tests/test_oneapi_installation.py, not run": (
        "需要 root 权限和 apt.repos.intel.com，下载数 GB；由 tests/test_oneapi_installation.py 做语法检查，不运行"
    ),
    "needs two or more machines with ssh or a batch system between them: syntax-checked, not run": (
        "需要两台以上、彼此能通过 ssh 或作业调度系统协同的机器；只做语法检查，不运行"
    ),
    "re-measures the datasets on a CUDA GPU: scripts/gpu_ci.py runs these producers and gates their data": (
        "在 CUDA GPU 上重新测量各数据集，由 scripts/gpu_ci.py 运行这些生成脚本，并为它们产出的数据把关"
    ),
    "run by env.sh in every block below; it prints the folders to put on PATH": (
        "下面每个代码块都通过 env.sh 运行它，它会打印出要加入 PATH 的目录"
    ),
    "run by the command below, on a GPU": "由下面的命令在 GPU 上运行",
    "the file the install command reads; scripts/test.sh installs it": "安装命令读取的文件，scripts/test.sh 会安装它",
    "the measurement commands: minutes each; CI regenerates only the CPU artifacts": (
        "测量命令，每条要跑几分钟；CI 只重新生成 CPU 上的产物"
    ),
}


def shown_reason(why: str, lang: str) -> str:
    """The reason of a display-only block in the page's language (English where no rendering exists)."""
    return SHOWN_ZH.get(why, why) if lang == "zh" else why


def _marks(raw: list[str]) -> dict:
    import ast

    out = {}
    for r in raw:
        if r.startswith("pytest-codeblocks:"):
            out[r.split(":", 1)[1]] = ()
            continue
        m = re.match(r"pytest\.mark\.(\w+)(?:\((.*)\))?$", r)
        out[m.group(1)] = ast.literal_eval(f"({m.group(2)},)") if m.group(2) else ()
    return out


def _attr(v: str) -> str:
    return str(v).replace('"', "'")


def block_attrs(lang: str, body: list[str], raw_marks: list[str]) -> dict:
    marks = _marks(raw_marks)
    a = {}
    inc = [SNIPPET_LINE.match(l) for l in body if l.strip()]
    if inc and all(inc):
        m = inc[0]
        a["data-src"] = m.group("path")
        if m.group("section"):
            a["data-section"] = m.group("section")
        # a block made of several includes (e.g. a shell block: env.sh, then the commands) names each
        # other file too, so the line above it offers every file whose lines the block shows
        more = []
        for m in inc[1:]:
            item = m.group("path") + (f"#{m.group('section')}" if m.group("section") else "")
            if item not in more and item != a["data-src"] + (f"#{a['data-section']}" if "data-section" in a else ""):
                more.append(item)
        if more:
            a["data-src-more"] = " ".join(more)
    if "expected-output" in marks:
        a["data-run"] = "output"
    elif lang in GENERATED:
        a["data-run"] = "generated"
    elif "cont" in marks:
        a["data-run"] = "cont"
    else:
        a["data-run"] = "standalone"
    needs = list(marks.get("needs", ())) + (["gpu"] if "gpu" in marks else [])
    if needs:
        a["data-needs"] = " ".join(dict.fromkeys(needs))
    if "display" in marks:
        a["data-shown"] = _attr(marks["display"][0] if marks["display"] else "")
    if "checked_by" in marks:
        a["data-checked-by"] = _attr(marks["checked_by"][0])
        # checked_by("tests/x.py", "output"): what the block above prints, compared by that test (its
        # numbers masked, or split across tabs), so the reader test does not compare it word for word
        if marks["checked_by"][1:] == ("output",):
            a["data-checked-output"] = "1"
        elif len(marks["checked_by"]) > 1:
            raise ValueError(f"checked_by{marks['checked_by']}: the second argument can only be 'output'")
    for k in ("tolerance", "timeout"):
        if marks.get(k):
            a[f"data-{k}"] = str(marks[k][0])
    return a


def annotate(markdown: str) -> str:
    """Add data attributes to every fenced block (brace form of pymdownx.superfences)."""
    lines = markdown.split("\n")
    out, pending, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        m = FENCE_OPEN.match(line)
        if m:
            indent, ticks, info = m.group("indent"), m.group("ticks"), m.group("info").strip()
            j = i + 1
            while j < len(lines) and not (lines[j].strip().startswith(ticks) and not lines[j].strip().strip(ticks[0])):
                j += 1
            body = lines[i + 1 : j]
            lang = info.split()[0].lstrip("{.").rstrip("}") if info else ""
            if lang and lang not in NOT_ANNOTATED and not info.startswith("{"):
                attrs = block_attrs(lang, body, pending)
                rest = info[len(info.split()[0]) :].strip()
                if lang in GENERATED:
                    lang = GENERATED[lang] + " .generated"
                extra = " ".join(f'{k}="{v}"' for k, v in attrs.items())
                brace = " ".join(f"{{ .{lang} {rest} {extra} }}".split())
                line = f"{indent}{ticks} {brace}"
            out.append(line)
            out.extend(lines[i + 1 : j + 1])
            pending, i = [], j + 1
            continue
        mm = MARK_LINE.match(line)
        if mm:
            pending.append(mm.group("mark"))
        elif line.strip():
            pending = []
        out.append(line)
        i += 1
    return "\n".join(out)


HL_DIV = re.compile(
    r'<div class="(?P<cls>language-(?P<lang>[\w+-]+) (?:generated )?highlight(?: generated)?)"(?P<attrs>[^>]*)>'
)
DATA = re.compile(r'\s(data-[\w-]+)="([^"]*)"')


PUBLISHED: set[str] = set()  # files the blocks link; the hook copies them into the site


def decorate(page_html: str, lang: str, page_url: str, repo: str | None, branch: str = "main") -> str:
    """A visible line above each annotated block: file · section (download), repository, badges."""
    prefix = "../" * page_url.count("/") if page_url else ""

    def sub(m):
        attrs = dict(DATA.findall(m.group("attrs")))
        if "data-run" not in attrs:
            return m.group(0)
        parts = []
        src = attrs.get("data-src")
        if src:
            files = [(src, attrs.get("data-section"))] + [
                (item.split("#")[0], item.split("#")[1] if "#" in item else None)
                for item in attrs.get("data-src-more", "").split()
            ]
            for k, (path, section) in enumerate(files):
                PUBLISHED.add(path)
                label = html.escape(path + (f" · {section}" if section else ""))
                if k:
                    parts.append('<span class="code-plus">+</span>')
                parts.append(
                    f'<a class="code-src" href="{prefix}{html.escape(path)}" download '
                    f'title="{TEXT["download"][lang]}">{label}</a>'
                )
            if repo:
                parts.append(
                    f'<a class="code-repo" href="{html.escape(repo)}/blob/{branch}/{html.escape(src)}">'
                    f"{TEXT['repo'][lang]}</a>"
                )
        run = attrs["data-run"]
        badges = []
        if run == "reproduce":
            badges.append(("needs", TEXT["reproduce"][lang]))
        if run in ("cont", "output", "generated"):
            badges.append((run, TEXT[run][lang]))
        elif (
            run == "standalone"
            and m.group("lang") in RUNNABLE
            and not (attrs.get("data-shown") is not None or attrs.get("data-checked-by"))
        ):  # a block that needs a tool still runs on its own
            badges.append(("standalone", TEXT["standalone"][lang]))
        for n in attrs.get("data-needs", "").split():
            badges.append(("needs", TEXT["need"].get(n, {"en": f"needs {n}", "zh": f"需要 {n}"})[lang]))
        if attrs.get("data-checked-output"):
            badges.append(("output", TEXT["output"][lang]))
        if attrs.get("data-checked-by"):
            t = attrs["data-checked-by"].split("::")[0]
            link = (
                f'<a href="{html.escape(repo)}/blob/{branch}/{html.escape(t)}"><code>{html.escape(t)}</code></a>'
                if repo
                else f"<code>{html.escape(t)}</code>"
            )
            badges.append(("checked", TEXT["checked"][lang].format(test=link)))
        elif "data-shown" in attrs and run not in ("output", "generated"):
            why = shown_reason(html.unescape(attrs["data-shown"]), lang)
            badges.append(("shown", TEXT["shown"][lang].format(why=html.escape(why))))
        opening = m.group(0)
        if run == "generated":  # highlighted as Python, but not in a runnable language class
            opening = opening.replace(f'class="language-{m.group("lang")} ', 'class="language-generated-python ', 1)
        if not parts and not badges:
            return opening
        parts += [f'<span class="code-badge code-badge--{k}">{t}</span>' for k, t in badges]
        head = '<div class="code-meta">' + "".join(parts) + "</div>"
        return head + opening

    return HL_DIV.sub(sub, page_html)


CJK = "\u2e80-\u2fff\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef"
CJK_END = re.compile(f"[{CJK}]$")
CJK_START = re.compile(f"^[{CJK}]")
NO_JOIN_AFTER = re.compile(r"^\s*(?:#|\||<|!!!|\?\?\?|===)")
BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|\d+\.\s|#|\||>|!!!|\?\?\?|===|<|`{3}|~{3}|\$\$|\\\[|\{\{)")


def join_cjk_lines(markdown: str) -> str:
    """Join a paragraph's lines where the break falls between two CJK characters.

    Outside fences only; a line that starts a new block (list item, heading, table, admonition,
    HTML, fence, math, marker) is never joined to the one before."""
    lines = markdown.split("\n")
    out, fence = [], None
    for line in lines:
        m = FENCE_OPEN.match(line)
        if fence is None and m:
            fence = m.group("ticks")
            out.append(line)
            continue
        if fence is not None:
            if line.strip().startswith(fence) and not line.strip().strip(fence[0]):
                fence = None
            out.append(line)
            continue
        prev = out[-1] if out else ""
        if (
            prev.strip()
            and CJK_END.search(prev.rstrip())
            and CJK_START.search(line.lstrip())
            and not BLOCK_START.match(line)
            and not NO_JOIN_AFTER.match(prev)
        ):
            out[-1] = prev.rstrip() + line.lstrip()
            continue
        out.append(line)
    return "\n".join(out)


PROTECTED = re.compile(
    r"<(pre|code|script|style|svg|textarea)\b.*?</\1>|<div class=\"mermaid-diagram\">.*?</div>"
    r"|<[^>]+>",
    re.S,
)
CJK_GAP = re.compile(f"(?<=[{CJK}])[ \t\r\n]+(?=[{CJK}])")


def close_cjk_gaps(page_html: str) -> str:
    """No space between two CJK characters in a Chinese page's text (a wrapped source line, or a
    space left next to bold text), also across inline tags (`。</strong> 本`). Code, diagrams,
    scripts and tags themselves are left alone."""
    pieces, out, last = [], [], 0
    for m in PROTECTED.finditer(page_html):
        pieces.append(("text", page_html[last : m.start()]))
        inline = m.group(0).startswith("<") and not m.group(1) and "mermaid-diagram" not in m.group(0)
        pieces.append(("tag" if inline else "block", m.group(0)))
        last = m.end()
    pieces.append(("text", page_html[last:]))
    # text with the inline tags removed, to see the characters on both sides of a tag
    flat = "".join(t if k == "text" else ("" if k == "tag" else "\0") for k, t in pieces)
    drop = {i for m in CJK_GAP.finditer(flat) for i in range(m.start(), m.end())}
    pos = 0
    for k, t in pieces:
        if k != "text":
            out.append(t)
            pos += 0 if k == "tag" else 1
            continue
        out.append("".join(ch for i, ch in enumerate(t) if pos + i not in drop) if drop else t)
        pos += len(t)
    return "".join(out)


RUN_TEXT = {
    "en": {
        "title": "Run it yourself",
        "intro": "Every code block on this page is a file under `snippets/` in the repository: the line above "
        "each block names the file and section, and downloads this site's copy of it. To run all "
        "of this page's blocks the way the site's tests do (build the site, then run each block "
        "as shown, from a scratch folder, with only the files the page links):",
        "after": "Without an NVIDIA GPU the test runs Triton kernels through the interpreter "
        '(`TRITON_INTERPRET=1`) and skips the blocks marked "needs an NVIDIA GPU". For a CPU-only '
        "machine, add `--extra-index-url https://download.pytorch.org/whl/cpu` to the first `pip` line. "
        "The second installs the repository's own scripts (`sitekit`), which the tests import. Where the "
        'page has blocks badged "run by the site\'s tests", the last line runs those test files, and a page '
        "that needs a toolchain (CUDA, Intel MPI) has its install line before them.",
        "norepo": "# this build has no repository URL (set SITE_REPO_URL): clone the site's repository",
    },
    "zh": {
        "title": "自己动手运行",
        "intro": "本页的每个代码块都是仓库里 `snippets/` 下的一个文件：代码块上方那一行写着文件名和片段名，"
        "点击即可从本站下载这个文件。要按站点测试的方式把本页的代码块全部跑一遍（先构建站点，再在一个临时目录里、"
        "只用页面链接的文件，按页面所示逐块运行）：",
        "after": "没有 NVIDIA GPU 时，测试会让 Triton 内核在解释器中运行（`TRITON_INTERPRET=1`），"
        "并跳过标有“需要 NVIDIA GPU”的代码块。只有 CPU 的机器，请在第一行 `pip` 命令后加上 "
        "`--extra-index-url https://download.pytorch.org/whl/cpu`。第二行 `pip` 命令安装仓库自带的脚本（`sitekit`），测试要导入它。"
        "页面上有标着“由站点测试……运行检查”的代码块时，最后一行会运行这些测试文件；需要工具链（CUDA、Intel MPI）的页面，"
        "在那之前还有一行安装命令。",
        "norepo": "# 本次构建没有仓库地址（请设置 SITE_REPO_URL）：请克隆本站的仓库",
    },
}


# The toolchains some pages' blocks need beyond requirements-test.txt (scripts/test.sh installs the same)
TOOLCHAIN_INSTALL = {
    "cuda-compilation-pipeline": ["pip install -r requirements-cuda.txt"],
    "oneapi-installation": [
        "sudo apt-get install openmpi-bin libopenmpi-dev pkg-config   # Open MPI beside Intel MPI (Debian, Ubuntu)",
        "pip install -r requirements-oneapi.txt",
    ],
}


def page_tests(slug: str) -> list[str]:
    """The test files that run or compare this page's blocks marked checked_by (the compile-and-inspect
    blocks, the IR samples): the reader test shows them but leaves them to those files."""
    page = DOCS / "en" / f"{slug}.md"
    if not page.is_file():
        return []
    marks = [m for m in MARK.finditer(page.read_text(encoding="utf-8")) if m.group("name") == "checked_by"]
    targets = {_marks([f"pytest.mark.checked_by({m.group('args')})"])["checked_by"][0] for m in marks}
    return sorted({t.split("::")[0] for t in targets if t.startswith("tests/")})


def run_commands(slug: str, repo: str | None) -> str:
    """The commands that reproduce one article; README.md shows the same lines (tests/test_reader.py).
    vendor_js.py fetches the pinned KaTeX and Mermaid the site build needs (npm)."""
    name = repo.rstrip("/").rsplit("/", 1)[-1] if repo else "REPOSITORY"
    clone = f"git clone {repo}.git && cd {name}" if repo else None
    tests = page_tests(slug)
    return "\n".join(
        ([clone] if clone else [])
        + [
            "python3 -m venv .venv && . .venv/bin/activate",
            "pip install -r requirements-test.txt",
            "pip install --no-deps -e .",
        ]
        + TOOLCHAIN_INSTALL.get(slug, [])
        + [
            "python scripts/vendor_js.py",
            f"python -m pytest -q tests/test_reader.py -k {slug}",
        ]
        + ([f"python -m pytest -q {' '.join(tests)}"] if tests else [])
    )


def run_box(slug: str, lang: str, repo: str | None) -> str:
    t = RUN_TEXT[lang]
    cmds = run_commands(slug, repo)
    if not repo:
        cmds = t["norepo"] + "\n" + cmds
    body = "\n".join("    " + l for l in cmds.split("\n"))
    return (
        f'\n??? tip run-box "{t["title"]}"\n\n    {t["intro"]}\n\n'
        f'    ``` {{ .bash data-run="reproduce" }}\n{body}\n    ```\n\n    {t["after"]}\n'
    )


SITEMAP_URL = re.compile(r'(<loc>)([^<]*)(</loc>)|(\bhref=")([^"]*)(")')


def absolute_sitemap(xml: str, base: str) -> str:
    """sitemap.xml with every <loc> and alternate href resolved against the published base URL. MkDocs
    writes them relative to site_url, which stays empty here (the site must also work from a folder),
    and the sitemap protocol requires absolute URLs."""
    from urllib.parse import urljoin

    def fix(m):
        if m.group(1):
            return m.group(1) + html.escape(urljoin(base, html.unescape(m.group(2)))) + m.group(3)
        return m.group(4) + html.escape(urljoin(base, html.unescape(m.group(5)))) + m.group(6)

    return SITEMAP_URL.sub(fix, xml)


DIAGRAM_NOTE = {
    "en": "This diagram is drawn by JavaScript, which is off in this browser. Its Mermaid source:",
    "zh": "这张图要靠 JavaScript 绘制，而当前浏览器关闭了 JavaScript。下面是它的 Mermaid 源码：",
}
DIAGRAM_DIV = '<div class="mermaid-diagram">'


def diagram_notes(page_html: str, lang: str) -> str:
    """A note above each diagram for readers without JavaScript, who see its source as code instead
    (site.css). Added to the finished page (the hook's on_post_page), after the search index took the
    page's text, so the index does not hold the note eight times."""
    note = f'<noscript><p class="diagram-noscript">{DIAGRAM_NOTE[lang]}</p></noscript>'
    return page_html.replace(DIAGRAM_DIV, note + DIAGRAM_DIV)


PROVENANCE = re.compile(r'<p class="provenance">.*?</p>', re.S)
CODE = re.compile(r"(<code>)([^<]*)(</code>)")


def _breakable(text: str) -> str:
    """Escaped code text whose line may break after a `/` (a <wbr>) or at a space, never inside a name or a
    flag (a token with a hyphen, `--budget-s`, is kept whole: the browser would break after its hyphens)."""
    out = []
    for token in re.split(r"(\s+)", text):
        if not token or token.isspace():
            out.append(token)
            continue
        parts = re.findall(r"[^/]*/|[^/]+", token)
        out.append("<wbr>".join(f'<span class="nobr">{p}</span>' if "-" in p else p for p in parts))
    return "".join(out)


def breakable_paths(page_html: str) -> str:
    """On a phone a provenance line wraps several times; its paths (`data/<article>/<dataset>.json`) and
    command may break after a slash, so no file name is split mid-word (site.css keeps the last resort of
    breaking anywhere for a name longer than the line)."""
    return PROVENANCE.sub(
        lambda m: CODE.sub(lambda c: c.group(1) + _breakable(c.group(2)) + c.group(3), m.group(0)), page_html
    )
