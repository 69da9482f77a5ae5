"""Render datasets into a page: tables, SVG plots, inline values, provenance.

Pages hold one-line markers that the MkDocs hook replaces at build time:

    {{ table("foundation/ceilings", cols=["case", "tbps"], where={"kind": "memory"}) }}
    {{ plot("triton/vector_add", x="n", y="gbps", series="impl", logx=2) }}
    {{ value("foundation/ceilings", "tbps", case="copy") }}
    {{ provenance("foundation/ceilings") }}

Arguments are Python literals. Labels for column names and categorical values
come from data/labels.yml in the page's language; a missing label falls back to
the raw key, and a missing dataset, column or row fails the build.
"""

from __future__ import annotations

import ast
import html
import math
import re
from functools import lru_cache

import yaml

from . import DATA
from .data import DataError, figure_noise, load, previous_row, same_code_history

MARKER = re.compile(
    r"\{\{\s*(?P<call>(?:table|plot|value|span|difference|noise|provenance|article_cards|glossary|check_runs|check_stale|check|verdicts|verdict)\(.*?\))\s*\}\}"
)

UNKNOWN_MARKER = re.compile(r"\{\{\s*[A-Za-z_]\w*\(")  # what is left of a marker after MARKER.sub

PALETTE = ["#e8710a", "#1a73e8", "#0f9d58", "#d01884", "#9334e6", "#12b5cb", "#b06000", "#5f6368"]


@lru_cache(maxsize=4)
def _labels_cached(stamp: tuple) -> dict:
    merged: dict = {}
    for path, _ in stamp:
        for k, v in (yaml.safe_load(open(path, encoding="utf-8")) or {}).items():
            if k in merged and merged[k] != v:
                raise DataError(f"{path}: label '{k}' already defined differently in another labels.yml")
            merged[k] = v
    return merged


def labels() -> dict:
    """data/labels.yml plus every data/<topic>/labels.yml (one per article, to keep edits apart)."""
    if _BUILD["on"] and "labels" in _BUILD["memo"]:
        return _BUILD["memo"]["labels"]
    files = [DATA / "labels.yml", *sorted(DATA.glob("*/labels.yml"))]
    table = _labels_cached(tuple((str(p), p.stat().st_mtime) for p in files if p.exists()))
    if _BUILD["on"]:
        _BUILD["memo"]["labels"] = table
    return table


# While the site builds, data/ does not change, and a marker renders the same on its page and in the page's
# notebook (sitekit.notebooks renders every page's markers too; mkdocs-static-i18n runs the build once per
# language): labels() and render_marker() then remember what they returned. Checking the label files on every
# call (a glob and nine stats, about 68,000 calls in one build) and rendering each marker two or four times
# took 12 s and 3 s of a 39 s build on the 2-core CI machine. The MkDocs hook calls begin_build() at the start
# of each build and end_build() at its end; outside a build (the tests, the producers) nothing is remembered.
_BUILD: dict = {"on": False, "stamp": None, "memo": {}}


def _data_stamp() -> tuple:
    """Every file under data/ with its size and modification time: what the remembered output depends on."""
    out = []
    for p in sorted(DATA.rglob("*")):
        if p.is_file():
            st = p.stat()
            out.append((str(p), st.st_size, st.st_mtime_ns))
    return tuple(out)


def begin_build() -> None:
    """From now until end_build(), remember labels and rendered markers. What was remembered by the build
    before is kept only if no file under data/ has changed since (`mkdocs serve` rebuilds after an edit)."""
    stamp = _data_stamp()
    if stamp != _BUILD["stamp"]:
        _BUILD.update(stamp=stamp, memo={})
    _BUILD["on"] = True


def end_build() -> None:
    _BUILD["on"] = False


def label(key, lang: str) -> str:
    entry = labels().get(key) if isinstance(key, str) else None
    if isinstance(entry, dict):
        return entry.get(lang) or entry.get("en") or str(key)
    return str(key)


TEXT = {
    "measured_on": {"en": "Measured on ", "zh": "测量环境："},
    "cpu": {"en": "CPU", "zh": "CPU"},
    "driver": {"en": "driver", "zh": "驱动"},
    "commit": {"en": "commit", "zh": "提交"},
    "data": {"en": "data: ", "zh": "数据："},
    "yes": {"en": "met", "zh": "达标"},
    "no": {"en": "not met", "zh": "未达标"},
    "true": {"en": "yes", "zh": "是"},
    "one_run": {
        "en": "targets judged on this run alone: the next GPU CI run confirms each or marks it unstable",
        "zh": "达标与否目前只依据本次运行：下一次 GPU CI 运行会确认，或标为不稳定",
    },
    "one_run_cpu": {
        "en": "targets judged on this run: a CPU dataset, whose producer the test suite runs again on every CI run, "
        "failing if a figure drifts beyond its noise or a target flips",
        "zh": "达标与否依据本次运行：这是 CPU 数据集，每次 CI 测试都会重跑生成脚本，数值超出噪声或达标结论翻转即失败",
    },
    "unstable": {"en": "unstable", "zh": "不稳定"},
    "near": {"en": "within noise of the target", "zh": "与目标之差在噪声之内"},
    "unsettled": {"en": "unsettled: its noise is {pct} %", "zh": "未定：噪声达 {pct}%"},
    "near_edge": {"en": "just outside the noise of the target", "zh": "与目标之差略超出噪声"},
    "edge": {"en": ", only just", "zh": "，但贴近噪声边界"},
    "noise_band": {"en": " (noise ±{pct} %)", "zh": "（噪声 ±{pct}%）"},
    "replayed": {
        "en": "replays the timings of <code>data/{dataset}.json</code> (commit <code>{commit}</code>)",
        "zh": "重放 <code>data/{dataset}.json</code> 中的计时（提交 <code>{commit}</code>）",
    },
    "this_run": {"en": "this run", "zh": "本次"},
    "last_run": {"en": "previous run", "zh": "上次"},
    "runs_n": {
        "en": "cases measured over {n} runs of the producer (finished cases kept between runs, same code and GPU)",
        "zh": "各用例分 {n} 次运行测得（同一代码、同一 GPU，已完成的用例在两次运行之间保留）",
    },
    "clocks": {
        "en": "SM clock while busy: median {med} MHz, highest {hi}; power {pw} W (median); software power cap "
        "holding the clock in {cap} % of samples",
        "zh": "GPU 忙碌时 SM 时钟中位数 {med} MHz，最高 {hi} MHz；功耗中位数 {pw} W；软件功耗上限压低时钟的采样占 {cap}%",
    },
    "loads": {
        "en": "1-minute load read before each round: {loads}",
        "zh": "每轮开始前读到的 1 分钟负载：{loads}",
    },
    "stale": {"en": "stale: the code changed after this was measured", "zh": "数据已过期：测量之后代码已改动"},
    "faster": {"en": "faster", "zh": "更快"},
    "slower": {"en": "slower", "zh": "更慢"},
    "same": {"en": "no measurable difference", "zh": "没有可测的差别"},
    "above": {"en": "above it beyond noise", "zh": "高于目标，超出噪声"},
    "below": {"en": "below it beyond noise", "zh": "低于目标，超出噪声"},
    "within": {"en": "within noise of it", "zh": "与目标之差在噪声之内"},
    "false": {"en": "no", "zh": "否"},
}


def _t(key: str, lang: str) -> str:
    return TEXT[key][lang]


def percent(fraction: float, lang: str) -> str:
    """A fraction as a percentage with one decimal: "6.2 %" in English, "6.2%" in Chinese text."""
    return f"{100 * fraction:.1f}{'%' if lang == 'zh' else ' %'}"


def fmt_value(ds: dict, col: str, v, lang: str) -> str:
    if v is None:
        return "—"
    if isinstance(v, bool):
        # columns named met* are targets (met / not met); any other boolean is a plain yes / no
        words = ("yes", "no") if col.startswith("met") else ("true", "false")
        cls, mark = ("ok", "✓") if v else ("bad", "✗")
        return f'<span class="{cls}">{mark} {_t(words[0] if v else words[1], lang)}</span>'

    meta = ds["metrics"].get(col) or ds.get("params", {}).get(col) or {}
    fmt = meta.get("fmt")
    relative = meta.get("unit") in ("relative", "fraction") and "%" not in (fmt or "")
    if col.endswith("_spread") and (not fmt or relative) and isinstance(v, (int, float)):
        return percent(v, lang)  # round-to-round spread, (slowest - fastest) / fastest
    if isinstance(v, (int, float)):
        if fmt == "pow2" and isinstance(v, int) and v > 0 and v & (v - 1) == 0:
            return f"2<sup>{v.bit_length() - 1}</sup>"
        if fmt and fmt != "pow2":
            out = format(v, fmt)
            # a ratio that rounds to 1.00 sits on the most common target (>= 1.0x): 0.9964 shown as "1.00"
            # beside "not met" reads as a contradiction, so such a value keeps its third decimal
            if fmt == ".2f" and out == "1.00" and abs(v - 1.0) >= 5e-4:
                out = format(v, ".3f")
            # a cost that rounds to nothing is not nothing: 0.28 s compiling one config shown as "0"
            # beside "1" for three reads as free, so a non-zero figure that rounds to zero keeps two digits
            elif v and re.fullmatch(r"-?0(\.0*)?", out):
                out = format(v, ".2g")
            return out
        if isinstance(v, int):
            return f"{v:,}"
        return f"{v:.3g}"
    # a label keyed "<dataset>.<value>" overrides the shared one where a value names something else in
    # one dataset ("cublas" is torch.matmul in the GEMM tables, F.linear in the inference ones), and one
    # keyed "<dataset>.<column>=<value>" overrides both, where a value is also a column's name there
    table = labels()
    text = label(next((k for k in (f"{ds.get('name')}.{col}={v}", f"{ds.get('name')}.{v}") if k in table), v), lang)
    # "4096^3" in a dataset reads 4096³ on the page (also inside SVG text, where <sup> does not exist)
    return re.sub(r"\^(\d+)", lambda m: m.group(1).translate(SUPERSCRIPT), html.escape(text))


SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def column_title(ds: dict, col: str, lang: str) -> str:
    # a label keyed "<dataset>.<column>" overrides the shared one where a column name means something
    # else in one dataset (the "step" of attention_steps is a version of a kernel, not a training step)
    scoped = f"{ds['name']}.{col}"
    title = label(scoped if scoped in labels() else col, lang)
    unit = ds["metrics"].get(col, {}).get("unit")
    if unit and unit not in title and title == col:
        title = f"{col} ({unit})"
    return title


def plain_value(ds: dict, col: str, v, lang: str) -> str:
    """A value as plain text (a tooltip holds no markup): the column's format, without the 2^n form."""
    meta = ds["metrics"].get(col) or ds.get("params", {}).get(col) or {}
    fmt = meta.get("fmt")
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return re.sub(r"<[^>]+>", "", fmt_value(ds, col, v, lang))
    if fmt and fmt != "pow2":
        return html.escape(format(v, fmt))
    return f"{v:,}" if isinstance(v, int) else f"{v:.4g}"


def point_title(ds: dict, series, group, x: tuple, a, y: tuple, b, lang: str) -> str:
    """A plotted point's tooltip in the page's language: the series, then each axis's title and value
    ("random search · Configs measured (budget): 24 · ..."), never a raw column name ("aic_budget=24").
    x and y are (column, axis title or None): the axis's title where the plot sets one."""
    parts = [re.sub(r"<[^>]+>", "", fmt_value(ds, series, group, lang))] if series else []
    colon = "：" if lang == "zh" else ": "
    for (col, title), v in ((x, a), (y, b)):
        parts.append(f"{html.escape(title or column_title(ds, col, lang))}{colon}{plain_value(ds, col, v, lang)}")
    return " · ".join(parts)


def _matches(row: dict, where: dict) -> bool:
    """A list value matches any of its items: where={"kernel": ["cublas", "tma_persistent"]}."""
    return all(row.get(k) in v if isinstance(v, list) else row.get(k) == v for k, v in where.items())


def select(ds: dict, where: dict | None) -> list[dict]:
    rows = ds["rows"]
    if where:
        rows = [r for r in rows if _matches(r, where)]
    if not rows:
        raise DataError(f"data/{ds['name']}.json: no row matches {where}")
    return rows


def target_cell(ds: dict, row: dict, col: str, lang: str) -> str:
    """A target (boolean `met_*`) judged over two runs: met / not met when this run and the previous
    one agree, "unstable" with both figures when they do not, and a note when only one run exists."""
    cur = row.get(col)
    if not isinstance(cur, bool):
        return fmt_value(ds, col, cur, lang)
    meta = ds["metrics"].get(col, {})
    prev_row = previous_row(ds, row)
    prev = prev_row.get(col) if prev_row else None
    cell = fmt_value(ds, col, cur, lang)
    if prev is None or bool(prev) == cur:
        return cell + near_target(ds, row, col, lang)
    of = meta.get("of")
    figs = ""
    if of and of in row and prev_row.get(of) is not None:
        colon, comma = ("：", "，") if lang == "zh" else (": ", ", ")
        a, b = fmt_value(ds, of, row[of], lang), fmt_value(ds, of, prev_row[of], lang)
        fmt = ds["metrics"].get(of, {}).get("fmt") or ""
        if a == b and row[of] != prev_row[of] and re.fullmatch(r"\.\d+f", fmt):
            # two runs that differ on either side of a target but print alike (0.799, 0.802 -> "0.80, 0.80"):
            # one more decimal, so the cell shows why the verdicts differ
            more = f".{int(fmt[1:-1]) + 1}f"
            a, b = format(row[of], more), format(prev_row[of], more)
        figs = f"{colon}{_t('this_run', lang)} {a}{comma}{_t('last_run', lang)} {b}"
    return f'<span class="bad">~ {_t("unstable", lang)}{figs}</span>'


EDGE = 1.1  # a figure within 10 % of the noise band's edge is called "at the edge": a re-run may cross it


def near_target(ds: dict, row: dict, col: str, lang: str) -> str:
    """ " · within noise of the target" after a met / not met whose figure is within its noise (figure_noise)
    of the target: the verdict could flip on a re-run, so the cell says so. The target is the metric's
    declared `target`, or the row's `target_*` column of the same suffix (met_cudnn: target_cudnn).

    A measured noise of 100 % or more (a timing that moved by its own size between rounds or runs) makes
    any verdict a coin toss: the cell says "unsettled" and how large the noise is. A declared noise that
    large is an error bound's order of magnitude, not a timing, and adds nothing."""
    of = ds["metrics"].get(col, {}).get("of")
    t = ds["metrics"].get(col, {}).get("target", row.get("target" + col[len("met") :]))
    v = row.get(of) if of else None
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (v, t)) or not t:
        return ""
    noise, source = figure_noise(ds, row, of)
    sep = "，" if lang == "zh" else " · "
    if noise >= 1:
        if source != "measured":
            return ""
        return f'<span class="near">{sep}{_t("unsettled", lang).format(pct=f"{noise * 100:.0f}")}</span>'
    if abs(v - t) > EDGE * noise * abs(t):
        return ""
    band = _t("noise_band", lang).format(pct=f"{noise * 100:.0f}")  # how wide: a 30 % miss "within noise" needs it
    word = _t("near" if abs(v - t) <= noise * abs(t) else "near_edge", lang)
    return f'<span class="near">{sep}{word}{band}</span>'


@lru_cache(maxsize=4)
def _stale_cached(stamp: tuple) -> dict:
    path = DATA / "stale.yml"
    return (yaml.safe_load(path.read_text(encoding="utf-8")) or {}) if stamp else {}


def stale() -> dict:
    """data/stale.yml: {dataset: {en: why, zh: why}} for datasets whose code moved on since they were measured."""
    path = DATA / "stale.yml"
    return _stale_cached((path.stat().st_mtime,) if path.exists() else ())


def producer_command(ds: dict) -> str:
    """The command that produces the dataset, naming the producer at its current path."""
    parts = ds["provenance"]["command"].split(" ")
    args = [a for a in parts[2:]] if len(parts) > 1 and parts[1].endswith(".py") else parts[1:]
    return " ".join(["python", f"scripts/measure/{ds['name']}.py", *args])


TOOLCHAIN_ZH = {"PyPI wheels": "PyPI wheel", "system nvcc": "系统 nvcc"}


def toolchain_text(tool: str, lang: str) -> str:
    """A recorded toolchain ("nvcc V13.0.88 (PyPI wheels)") with its parenthesis in the page's language."""
    m = re.fullmatch(r"(.*?) \((.*)\)", tool)
    if lang != "zh" or not m:
        return tool
    inner = m.group(2)
    for en, zh in TOOLCHAIN_ZH.items():
        inner = inner.replace(en, zh)
    return f"{m.group(1)}（{inner}）"


def libraries(ds: dict) -> dict:
    """{library: version} a producer recorded for what it measured (key "libraries"); the first dgemm runs
    recorded oneMKL's version as "mkl" and NumPy's BLAS as "numpy_blas", read here the same way."""
    if ds.get("libraries"):
        return dict(ds["libraries"])
    legacy = {}
    if ds.get("mkl"):
        legacy["oneMKL"] = ds["mkl"]
    if ds.get("numpy_blas"):  # e.g. "scipy-openblas 0.3.30"
        name, _, version = str(ds["numpy_blas"]).partition(" ")
        legacy[name] = version
    return legacy


def provenance_line(ds: dict, lang: str) -> str:
    p = ds["provenance"]
    # a CPU machine's description may have a translation in labels.yml, keyed by the recorded text
    lp, rp = ("（", "）") if lang == "zh" else (" (", ")")
    hw = p.get("gpu") or f"{_t('cpu', lang)}{lp}{label(p.get('machine'), lang)}{rp}"
    parts = [f"{_t('measured_on', lang)}{html.escape(hw)}"]
    if p.get("driver"):
        parts.append(f"{_t('driver', lang)} {p['driver']}")
    if p.get("cuda"):
        parts.append(f"CUDA {p['cuda']}")
    tool = ds.get("toolchain") or p.get("toolchain")  # e.g. the nvcc that built the CUDA page's binaries
    if tool:
        parts.append(html.escape(toolchain_text(str(tool), lang)))
    for lib, version in libraries(ds).items():  # the libraries a CPU benchmark compares (MPI, BLAS)
        parts.append(html.escape(f"{lib} {version}"))
    for k, name in (("torch", "torch"), ("triton", "Triton"), ("python", "Python")):
        if p.get(k):
            parts.append(f"{name} {p[k]}")
    parts.append(p["date"])
    parts.append(f"{_t('commit', lang)} <code>{html.escape(short_commit(p['commit']))}</code>")
    parts.append(f"<code>{html.escape(producer_command(ds))}</code>")
    parts.append(f"{_t('data', lang)}<code>data/{ds['name']}.json</code>")
    rep = ds.get("replayed")  # a CPU analysis of another dataset's GPU timings: whose, and from which run
    if isinstance(rep, dict) and rep.get("dataset"):
        parts.append(
            _t("replayed", lang).format(
                dataset=html.escape(rep["dataset"]), commit=html.escape(short_commit(str(rep.get("commit", "?"))))
            )
        )
    if (ds.get("runs") or 1) > 1:
        parts.append(_t("runs_n", lang).format(n=int(ds["runs"])))
    if p.get("clocks"):
        parts.append(clocks_text(p["clocks"], lang))
    loads = ds.get("loadavg_1min")  # a CPU producer that waits for a quiet machine records what it read
    if loads:
        lo, hi = min(loads), max(loads)
        parts.append(_t("loads", lang).format(loads=f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}"))
    why = stale().get(ds["name"])
    if why:
        reason = why.get(lang) or why.get("en") if isinstance(why, dict) else str(why)
        # the note already says the code changed; the reason's own "changed since:" lead-in would repeat it
        reason = re.sub(r"^(changed since:\s*|此后有改动：)", "", reason)
        parts.append(f'<span class="stale">⚠ {_t("stale", lang)}{lp}{html.escape(reason)}{rp}</span>')
    return '<p class="provenance">' + " · ".join(parts) + "</p>"


def clocks_text(c: dict, lang: str) -> str:
    """The provenance line's account of the GPU clock during the run (gpu_ci's ClockLog summary). The
    lowest busy sample is recorded but not shown: samples taken while the host prepares the next case
    (a reference, a compile) can catch the clock on its way down to the 345 MHz idle clock before the
    driver flags the GPU idle, so the minimum says little about the timed work."""
    med, hi = (f"{int(round(x)):,}" if lang == "en" else str(int(round(x))) for x in c["sm_mhz"][1:])
    return _t("clocks", lang).format(med=med, hi=hi, pw=f"{c['power_w'][0]:.0f}", cap=f"{100 * c['power_capped']:.0f}")


def short_commit(commit: str) -> str:
    """A recorded commit as the pages show it: git's 7-character abbreviation (some datasets record 12),
    keeping a "+dirty" mark; anything that is not a hex hash is shown as recorded."""
    m = re.fullmatch(r"([0-9a-f]{7})[0-9a-f]*(\+dirty)?", str(commit))
    return m.group(1) + (m.group(2) or "") if m else str(commit)


def table(
    name: str,
    cols: list[str],
    where: dict | None = None,
    *,
    lang: str,
    sort: str | None = None,
    na: dict[str, dict] | None = None,
) -> str:
    """A Markdown table of the rows `where` selects. `na` maps a column to a where-clause: in the rows
    that match it the column does not apply (a setting a kernel does not have), and the cell shows "—"
    whatever the producer recorded there."""
    ds = load(name)
    rows = select(ds, where)
    for c in cols:
        if not any(c in r for r in rows):
            raise DataError(f"data/{name}.json: column '{c}' not in the selected rows")
    na = na or {}
    for c, cond in na.items():
        if c not in cols:
            raise DataError(f"data/{name}.json: na names column '{c}', which the table does not show")
        if not any(_matches(r, cond) for r in rows):
            raise DataError(f"data/{name}.json: na for '{c}' matches no row of the table: {cond}")

    def cell(r: dict, c: str) -> str:
        if c in na and _matches(r, na[c]):
            return "—"
        return target_cell(ds, r, c, lang) if c.startswith("met") else fmt_value(ds, c, r.get(c), lang)

    if sort:
        rows = sorted(rows, key=lambda r: (r.get(sort) is None, r.get(sort)))
    head = "| " + " | ".join(column_title(ds, c, lang) for c in cols) + " |"
    align = (
        "| "
        + " | ".join(
            "---:"
            if c in ds["metrics"]
            or c.endswith("_spread")
            or all(isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows)
            else "---"
            for c in cols
        )
        + " |"
    )
    body = ["| " + " | ".join(cell(r, c) for c in cols) + " |" for r in rows]
    prov = provenance_line(ds, lang)
    targets = [c for c in cols if c.startswith("met") and any(isinstance(r.get(c), bool) for r in rows)]
    if targets and not any(previous_row(ds, r) for r in rows):
        once = "one_run" if ds["provenance"].get("gpu") else "one_run_cpu"  # a CPU dataset: GPU CI never runs it
        prov = prov.replace("</p>", f' · <span class="runs">{_t(once, lang)}</span></p>')
    return "\n".join([head, align, *body, "", prov])


def value(name: str, metric: str, *, lang: str, **where) -> str:
    ds = load(name)
    rows = select(ds, where)
    if len(rows) != 1:
        raise DataError(f"data/{name}.json: value() needs exactly one row, {len(rows)} match {where}")
    if metric not in rows[0]:
        raise DataError(f"data/{name}.json: row {where} has no '{metric}'")
    if metric.startswith("met") and isinstance(rows[0][metric], bool):
        return target_cell(ds, rows[0], metric, lang)  # a target, judged over two runs as in tables
    return fmt_value(ds, metric, rows[0][metric], lang)


def noise(name: str, metric: str, *, lang: str, **where) -> str:
    """The noise band a verdict on this figure uses (data.figure_noise), as "±6.2 %": what a reader needs
    to see why 1.39x may be beyond noise of a target in one cell and within it in the next."""
    ds, row, _ = _one_row(name, metric, where)
    band, _ = figure_noise(ds, row, metric)
    return "±" + percent(band, lang)


def span(name: str, metric: str, *, lang: str, runs: int = 1, **where) -> str:
    """The range "lo–hi" of a metric over the rows that match: a range in prose, rendered from the data (one
    figure where both ends print the same).
    runs=2: over the same rows in this run and in the run before it (same code; see previous_row), which
    must be in the history."""
    ds = load(name)
    rows = select(ds, where)
    if runs not in (1, 2):
        raise DataError(f"data/{name}.json: span() takes runs=1 (this run) or runs=2 (and the one before), got {runs}")
    if runs == 2:
        prev = [previous_row(ds, r) for r in rows]
        if any(p is None for p in prev):
            raise DataError(
                f"data/{name}.json: span(runs=2) needs the run before this one, of the same code, for every row of "
                f"{where}; measure the dataset once more (gpu_ci keeps the committed run in the history)"
            )
        rows = rows + prev
    vals = [r[metric] for r in rows if isinstance(r.get(metric), (int, float))]
    if len(vals) < 2:
        raise DataError(f"data/{name}.json: span() needs at least two rows with '{metric}', {len(vals)} match {where}")
    lo, hi = fmt_value(ds, metric, min(vals), lang), fmt_value(ds, metric, max(vals), lang)
    return lo if lo == hi else f"{lo}–{hi}"  # "0.69", not "0.69–0.69", where the rows agree to the shown digits


def difference(name: str, metric: str, where: dict, minus: dict, *, lang: str) -> str:
    """One row's figure less another's, formatted as the metric is ("the flush adds 4.1 µs"): a derived
    figure rendered from the data rather than worked out by hand. It states a quantity, not a comparison;
    a sentence that compares it with something else needs its own check."""
    ds, _, a = _one_row(name, metric, where)
    _, _, b = _one_row(name, metric, minus)
    return fmt_value(ds, metric, a - b, lang)


def provenance(name: str, *, lang: str) -> str:
    return provenance_line(load(name), lang)


# ----------------------------------------------------------------------------- SVG plots


def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw), default=raw)
    start = math.floor(lo / step) * step
    ticks, t = [], start
    while t <= hi + 1e-9 * step:
        if t >= lo - 1e-9 * step:
            ticks.append(round(t, 10) + 0.0)  # + 0.0: a tick at -0.0 prints as 0
        t += step
    return ticks


def _tick_label(v: float, log_base: int | None) -> str:
    if log_base == 2 and v > 0 and float(v).is_integer() and int(v) & (int(v) - 1) == 0:
        return f"2<tspan dy='-6' font-size='10'>{int(math.log2(v))}</tspan>"
    if abs(v) >= 1e6 or (0 < abs(v) < 1e-2):
        m, e = f"{v:.1e}".split("e")
        return f"{float(m):g}×10<tspan dy='-6' font-size='10'>{int(e)}</tspan>"
    return f"{v:,.0f}" if float(v).is_integer() else f"{v:g}"


def series_colors(ds: dict, series: str | None, groups: list) -> dict:
    """A colour per series value that is the same in every plot of one dataset (the value's place among
    the dataset's series values, in order of first appearance), so that a colour keeps its meaning from
    one plot to the next; per-plot order where the dataset has more values than the palette has colours
    and two of this plot's values would share one."""
    seen = list(dict.fromkeys(r.get(series) for r in ds["rows"] if series and series in r))
    if series and all(g in seen for g in groups):
        stable = {g: PALETTE[seen.index(g) % len(PALETTE)] for g in groups}
        if len(set(stable.values())) == len(groups):
            return stable
    return {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}


def plot(
    name: str,
    x: str,
    y: str,
    series: str | None = None,
    where: dict | None = None,
    *,
    lang: str,
    logx: int | None = None,
    logy: int | None = None,
    kind: str = "line",
    ylabel: str | None = None,
    xlabel: str | None = None,
    hline: float | None = None,
    hline_label: str | None = None,
) -> str:
    """A line plot (x numeric) or grouped bars (x categorical), as inline SVG using currentColor."""
    ds = load(name)
    rows = [r for r in select(ds, where) if r.get(y) is not None and x in r]
    if not rows:
        raise DataError(f"data/{name}.json: no rows with both '{x}' and '{y}'")
    for axis, given in (("xlabel", xlabel), ("ylabel", ylabel)):
        if given in ds["metrics"] or any(given in r for r in rows):  # a reader would see "frac_copy"
            raise DataError(f"plot(): {axis}={given!r} is a column name; leave {axis} out to get the column's title")
    groups: dict = {}
    for r in rows:
        groups.setdefault(r.get(series) if series else y, []).append(r)
    names = [fmt_value(ds, series, g, lang) if series else column_title(ds, y, lang) for g in groups]
    legend = names + ([label(hline_label, lang)] if hline is not None and hline_label else [])
    widest = max(sum(2 if ord(ch) > 0x2E80 else 1 for ch in re.sub(r"<[^>]+>", "", n)) for n in legend)
    W, H, L, T, B = 680, 360, 64, 16, 48
    R = max(120, 40 + 7 * widest)  # legend column wide enough for the longest series name
    pw, ph = W - L - R, H - T - B
    ys = [r[y] for r in rows] + ([hline] if hline is not None else [])
    if logy:
        ylo, yhi = min(ys) / 1.3, max(ys) * 1.3
        fy = lambda v: T + ph - (math.log(v) - math.log(ylo)) / (math.log(yhi) - math.log(ylo)) * ph
        yticks = [logy**k for k in range(math.ceil(math.log(ylo, logy)), math.floor(math.log(yhi, logy)) + 1)]
    else:
        # from 0, or below it when the data go negative (a velocity profile); unchanged for data >= 0
        ylo, yhi = min(0.0, min(ys) * 1.08), max(0.0, max(ys)) * 1.08
        fy = lambda v: T + ph - (v - ylo) / (yhi - ylo) * ph
        yticks = _nice_ticks(ylo, yhi)
    out = [
        f'<svg class="data-plot" viewBox="0 0 {W} {H}" role="img" xmlns="http://www.w3.org/2000/svg" '
        f'font-family="inherit" font-size="12" fill="currentColor">'
    ]
    # an axis title given by the page: a labels.yml key (its text in the page's language) or literal text
    xlabel, ylabel = (label(t, lang) if t else None for t in (xlabel, ylabel))
    ytitle = ylabel or column_title(ds, y, lang)
    out.append(f"<title>{html.escape(ytitle)}</title>")
    for t in yticks:
        yy = fy(t)
        out.append(
            f'<line x1="{L}" x2="{L + pw}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="currentColor" stroke-opacity=".15"/>'
        )
        out.append(
            f'<text x="{L - 6}" y="{yy + 4:.1f}" text-anchor="end">{_tick_label(t, logy if logy == 2 else None)}</text>'
        )
    numeric_x = kind == "line"
    if numeric_x:
        xs = sorted({r[x] for r in rows})
        if logx:
            xlo, xhi = math.log(min(xs)), math.log(max(xs))
            fx = lambda v: L + (math.log(v) - xlo) / max(xhi - xlo, 1e-9) * pw
            xticks = [v for v in xs] if len(xs) <= 14 else xs[:: max(1, len(xs) // 10)]
            if logx == 2:  # one kind of label on a power-of-two axis: 2^13, 2^15, not 12,288 between them
                xticks = [v for v in xticks if float(v).is_integer() and int(v) & (int(v) - 1) == 0] or xticks
        else:
            xlo, xhi = min(xs), max(xs)
            fx = lambda v: L + (v - xlo) / max(xhi - xlo, 1e-9) * pw
            xticks = _nice_ticks(xlo, xhi)
        for t in xticks:
            out.append(
                f'<text x="{fx(t):.1f}" y="{T + ph + 18}" text-anchor="middle">{_tick_label(t, logx if logx == 2 else None)}</text>'
            )
    else:
        cats = list(dict.fromkeys(r[x] for r in rows))
        ng = len(groups)
        slot = pw / len(cats)
        bw = slot * 0.8 / ng
        for i, c in enumerate(cats):
            out.append(
                f'<text x="{L + slot * (i + 0.5):.1f}" y="{T + ph + 18}" text-anchor="middle">{fmt_value(ds, x, c, lang)}</text>'
            )
    out.append(f'<line x1="{L}" x2="{L + pw}" y1="{T + ph}" y2="{T + ph}" stroke="currentColor" stroke-opacity=".6"/>')
    out.append(f'<line x1="{L}" x2="{L}" y1="{T}" y2="{T + ph}" stroke="currentColor" stroke-opacity=".6"/>')
    if not logy and ylo < 0:  # the zero line, where the axis does not start at 0
        out.append(
            f'<line x1="{L}" x2="{L + pw}" y1="{fy(0):.1f}" y2="{fy(0):.1f}" stroke="currentColor" stroke-opacity=".6"/>'
        )
    colors = series_colors(ds, series, list(groups))
    for gi, (g, grs) in enumerate(groups.items()):
        color = colors[g]
        if numeric_x:
            pts = sorted((r[x], r[y]) for r in grs)
            path = " ".join(f"{'M' if i == 0 else 'L'}{fx(a):.1f},{fy(b):.1f}" for i, (a, b) in enumerate(pts))
            out.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
            for a, b in pts:
                tip = point_title(ds, series, g, (x, xlabel), a, (y, ytitle), b, lang)
                out.append(
                    f'<circle cx="{fx(a):.1f}" cy="{fy(b):.1f}" r="3" fill="{color}"><title>{tip}</title></circle>'
                )
        else:
            for r in grs:
                i = cats.index(r[x])
                x0 = L + slot * i + slot * 0.1 + gi * bw
                y0 = fy(r[y])
                out.append(
                    f'<rect x="{x0:.1f}" y="{y0:.1f}" width="{bw:.1f}" height="{T + ph - y0:.1f}" fill="{color}"><title>{r[y]:.4g}</title></rect>'
                )
        ly = T + 14 + gi * 18
        out.append(f'<rect x="{L + pw + 12}" y="{ly - 9}" width="12" height="12" fill="{color}"/>')
        gname = fmt_value(ds, series, g, lang) if series else column_title(ds, y, lang)
        out.append(f'<text x="{L + pw + 30}" y="{ly + 1}">{gname}</text>')
    out.append(
        f'<text x="{L + pw / 2:.1f}" y="{H - 8}" text-anchor="middle">{html.escape(xlabel or column_title(ds, x, lang))}</text>'
    )
    out.append(
        f'<text transform="translate(14,{T + ph / 2:.1f}) rotate(-90)" text-anchor="middle">{html.escape(ytitle)}</text>'
    )
    if hline is not None:  # drawn over the data; its label is the legend's last entry
        yy = fy(hline)
        out.append(
            f'<line x1="{L}" x2="{L + pw}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="currentColor" stroke-dasharray="6 4"/>'
        )
        if hline_label:
            ly = T + 14 + len(groups) * 18
            out.append(
                f'<line x1="{L + pw + 12}" x2="{L + pw + 24}" y1="{ly - 3}" y2="{ly - 3}" stroke="currentColor" '
                f'stroke-dasharray="3 2"/>'
            )
            out.append(f'<text x="{L + pw + 30}" y="{ly + 1}">{html.escape(label(hline_label, lang))}</text>')
    out.append("</svg>")
    return (
        '<figure class="data-figure"><div class="plot-scroll">'
        + "".join(out)
        + "</div><figcaption>"
        + provenance_line(ds, lang)
        + "</figcaption></figure>"
    )


def article_cards(*, lang: str) -> str:
    from .articles import cards

    return cards(lang)


def glossary(*, lang: str) -> str:
    """The chapter's terms from data/glossary/terms.yml, in the page's language."""
    path = DATA / "glossary" / "terms.yml"
    terms = yaml.safe_load(path.read_text(encoding="utf-8"))
    for i, t in enumerate(terms):
        missing = {"en", "zh", "def_en", "def_zh"} - set(t)
        if missing:
            raise DataError(f"data/glossary/terms.yml: entry {i} lacks {sorted(missing)}")
    terms = sorted(terms, key=lambda t: t["en"].lower())
    ids = [glossary_id(t["en"]) for t in terms]
    if len(set(ids)) != len(ids):
        raise DataError(
            f"data/glossary/terms.yml: two terms share an anchor: {sorted(i for i in ids if ids.count(i) > 1)}"
        )

    # other renderings a reader meets in Chinese sources ("also"), beside the one these pages use
    def also(t: dict) -> str:
        if not t.get("also"):
            return ""
        words = "、".join(f"“{a}”" for a in t["also"])
        return f"（亦作{words}）" if lang == "zh" else f" (also {words})"

    # each row carries an anchor named after the English term, the same in both languages: glossary/#g-guard
    if lang == "zh":
        head = "| 中文术语 | English | 释义 |\n| --- | --- | --- |"
        rows = [
            f'| <span id="{i}"></span>**{t["zh"]}**{also(t)} | {t["en"]} | {t["def_zh"]} |' for i, t in zip(ids, terms)
        ]
    else:
        head = "| Term | 中文 | Definition |\n| --- | --- | --- |"
        rows = [
            f'| <span id="{i}"></span>**{t["en"]}** | {t["zh"]}{also(t)} | {t["def_en"]} |' for i, t in zip(ids, terms)
        ]
    return "\n".join([head, *rows])


def glossary_id(term: str) -> str:
    """The glossary row anchor of an English term: "g-" and its words in lower case, joined by "-"."""
    return "g-" + re.sub(r"[^a-z0-9]+", "-", term.lower()).strip("-")


def _one_row(name: str, metric: str, where: dict | None) -> tuple[dict, dict, float]:
    ds = load(name)
    rows = select(ds, where)
    if len(rows) != 1:
        raise DataError(f"data/{name}.json: needs exactly one row, {len(rows)} match {where}")
    if not isinstance(rows[0].get(metric), (int, float)):
        raise DataError(f"data/{name}.json: row {where} has no numeric '{metric}'")
    return ds, rows[0], float(rows[0][metric])


def _ref(ds: dict, name: str, metric: str, ref) -> float:
    if isinstance(ref, dict):
        return _one_row(name, metric, ref)[2]
    if isinstance(ref, (int, float)) and not isinstance(ref, bool):
        return float(ref)
    raise DataError(f"ref must be a number or a where-dict of another row, found {ref!r}")


def _judge(name: str, metric: str, where: dict | None, ref, factor: float = 1.0) -> tuple[float, float, float]:
    ds, row, v = _one_row(name, metric, where)
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or factor <= 0:
        raise DataError(f"factor must be a positive number, found {factor!r}")
    r = _ref(ds, name, metric, ref) * factor
    other = (
        _one_row(name, metric, ref)[1] if isinstance(ref, dict) else None
    )  # a row compared with: its spread counts too
    noise, _ = figure_noise(ds, row, metric, other=other)
    return v, r, noise


def check(
    name: str, metric: str, where: dict | None = None, op: str = ">", ref=1.0, factor: float = 1.0, *, lang: str
) -> str:
    """Renders nothing; fails the build when the data no longer supports the sentence it sits in.
    op: ">" above ref beyond the figure's noise, "<" below it beyond noise, "~" within noise of ref,
    "<~" not above ref beyond noise (below, or within noise), ">~" not below ref beyond noise,
    ">=" / "<=" plain comparisons. factor scales the reference: a sentence saying "close to twice the
    other row" checks op=">", factor=1.8 against that row."""
    v, r, noise = _judge(name, metric, where, ref, factor)
    ok = {
        ">": v > r * (1 + noise),
        "<": v < r * (1 - noise),
        "~": abs(v - r) <= noise * abs(r),
        "<~": v <= r * (1 + noise),
        ">~": v >= r * (1 - noise),
        ">=": v >= r,
        "<=": v <= r,
    }.get(op)
    if ok is None:
        raise DataError(f"check(): op must be one of > < ~ <~ >~ >= <=, found {op!r}")
    if not ok:
        raise DataError(
            f"data/{name}.json {where} {metric} = {v:.4g} no longer satisfies '{op} {r:.4g}' "
            f"(noise {noise:.1%}): the sentence around this check is stale; rewrite it from the data"
        )
    return ""


def check_runs(name: str, runs: int, *, lang: str) -> str:
    """Renders nothing; fails the build when the dataset no longer holds `runs` runs of its current code
    (this run and the history entries of the same code on the same card, data.same_code_history): for a
    sentence that says how many runs back a figure ("one run of this code so far"), which a re-measurement
    would otherwise leave standing untrue."""
    if not isinstance(runs, int) or isinstance(runs, bool) or runs < 1:
        raise DataError(f"check_runs(): runs must be a whole number of runs, 1 or more, found {runs!r}")
    held = 1 + len(same_code_history(load(name)))
    if held != runs:
        raise DataError(
            f"data/{name}.json now holds {held} run(s) of its current code, where the sentence around this "
            f"check_runs says {runs}: the sentence is stale; rewrite it (and its runs) from the data"
        )
    return ""


def check_stale(name: str, is_stale: bool, *, lang: str) -> str:
    """Renders nothing; fails the build when the dataset's place in data/stale.yml (measured with code that
    has changed since) no longer matches what the sentence around this check says of it."""
    if not isinstance(is_stale, bool):
        raise DataError(f"check_stale(): the second argument is True or False, found {is_stale!r}")
    load(name)  # an unknown dataset is an error here too
    if (name in stale()) != is_stale:
        now = "is listed in data/stale.yml" if name in stale() else "is no longer stale (re-measured)"
        raise DataError(
            f"data/{name}.json {now}, unlike the sentence around this check_stale: rewrite it from the data"
        )
    return ""


def verdict(name: str, metric: str, where: dict | None = None, ref=1.0, words: list | None = None, *, lang: str) -> str:
    """faster / slower / no measurable difference (or `words`: three label keys), from the figure
    against ref and the figure's noise. For a speed-up ratio (higher is faster) use ref=1.0."""
    v, r, noise = _judge(name, metric, where, ref)
    keys = words or ["faster", "slower", "same"]
    if len(keys) != 3:
        raise DataError("verdict(): words must name three labels: above, below, within noise")
    i = 0 if v > r * (1 + noise) else 1 if v < r * (1 - noise) else 2
    k = keys[i]
    # a figure within a tenth of the band of its edge: the next run may well give the other word
    edge = r and noise and abs(abs(v - r) - noise * abs(r)) <= (EDGE - 1) * noise * abs(r)
    return (_t(k, lang) if k in TEXT else label(k, lang)) + (_t("edge", lang) if edge else "")


def verdicts(
    name: str,
    metric: str,
    cells: list,
    ref=1.0,
    words: list | None = None,
    *,
    together: str,
    each: str = "",
    subjects: list | None = None,
    refs: list | None = None,
    lang: str,
) -> str:
    """verdict() for several cells, said once when they agree: `together` + the word ("both are within
    noise of it", "两者都与目标之差在噪声之内") instead of the same words cell after cell; otherwise `each` +
    the cells' words in order, each after its subject ("the first is ...; the second ..."), by semicolons.
    cells: the rows' where-dicts; refs: one reference per cell (else `ref` for all). together, each and
    subjects are label keys (a marker is the same in both languages); "{}" in a label places the word."""
    if not cells or (subjects is not None and len(subjects) != len(cells)):
        raise DataError("verdicts(): give one or more cells, and one subject per cell if any")
    if refs is not None and len(refs) != len(cells):
        raise DataError("verdicts(): give one reference per cell")
    missing = [k for k in [together, each, *(subjects or [])] if k and k not in labels()]
    if missing:
        raise DataError(
            f"verdicts(): no label {missing[0]!r} in any data/*/labels.yml (together, each and subjects are label keys)"
        )
    together, each = label(together, lang), label(each, lang) if each else ""
    subjects = [label(s, lang) for s in subjects] if subjects else None
    said = [verdict(name, metric, w, ref if refs is None else refs[i], words, lang=lang) for i, w in enumerate(cells)]
    space = " " if lang == "en" else ""
    if len(set(said)) == 1:  # "{}" in `together` places the word: "{} in all four cells"
        return together.replace("{}", said[0]) if "{}" in together else f"{together}{space}{said[0]}"
    parts = [f"{s}{space}{w}" for s, w in zip(subjects, said)] if subjects else said
    joined = ("; " if lang == "en" else "；").join(parts)  # semicolons: a word may end in ", only just"
    return f"{each}{space if each else ''}{joined}"


FUNCS = {
    "check": check,
    "check_runs": check_runs,
    "check_stale": check_stale,
    "verdict": verdict,
    "verdicts": verdicts,
    "glossary": glossary,
    "table": table,
    "plot": plot,
    "value": value,
    "span": span,
    "difference": difference,
    "noise": noise,
    "provenance": provenance,
    "article_cards": article_cards,
}


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        raise DataError(f"marker arguments must be Python literals: {ast.unparse(node)}") from None


def render_marker(call_src: str, lang: str) -> str:
    if not _BUILD["on"]:
        return _render_marker(call_src, lang)
    key = ("marker", call_src, lang)
    if key not in _BUILD["memo"]:
        _BUILD["memo"][key] = _render_marker(call_src, lang)
    return _BUILD["memo"][key]


def _render_marker(call_src: str, lang: str) -> str:
    tree = ast.parse(call_src, mode="eval").body
    if not isinstance(tree, ast.Call) or not isinstance(tree.func, ast.Name) or tree.func.id not in FUNCS:
        raise DataError(f"unknown data marker: {call_src}")
    args = [_literal(a) for a in tree.args]
    kwargs = {}
    for k in tree.keywords:  # `**{"pass": "fwd"}` passes a column named like a Python keyword
        kwargs.update(_literal(k.value) if k.arg is None else {k.arg: _literal(k.value)})
    return FUNCS[tree.func.id](*args, lang=lang, **kwargs)


def datasets_in(markdown: str) -> list[str]:
    """The dataset names a page's markers use, in order (for the parity test)."""
    names = []
    for m in MARKER.finditer(markdown):
        tree = ast.parse(m.group("call"), mode="eval").body
        if tree.args:
            names.append(ast.literal_eval(tree.args[0]))
    return names


def render_page(markdown: str, lang: str, page_path: str) -> str:
    def sub(m):
        try:
            return render_marker(m.group("call"), lang)
        except (DataError, TypeError, SyntaxError) as e:
            raise DataError(f"{page_path}: {m.group(0)}: {e}") from None

    out = MARKER.sub(sub, markdown)
    left = UNKNOWN_MARKER.search(out)
    if left:  # a call the pattern does not name would otherwise reach the reader as text
        raise DataError(f"{page_path}: unknown data marker {left.group(0)}...; markers are {', '.join(sorted(FUNCS))}")
    return out
