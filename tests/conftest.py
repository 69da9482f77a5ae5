from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import blockstats  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu_block: a code block that needs a CUDA GPU (selected by scripts/gpu_ci.py)")
    config.addinivalue_line("markers", "weekly_block: a long GPU code block, left out of the nightly GPU CI")
    config.addinivalue_line("markers", "browser: drives headless Chromium against the built site")


def pytest_collection_modifyitems(config, items):
    """The tests that read the built site first, the rest after them, each group in its own order.

    xdist's work stealing (scripts/test.sh) gives the first worker the first half of this list and the
    second worker the second half, and a worker that runs out steals the tail of the other's queue. The
    site is built once (tests/once.py), by the first test that asks, while any other test that asks waits
    for it. With the site's readers first, the worker that builds it goes on to read it, and the other one
    starts on tests that do not need it: before, the second worker reached the glossary's built-page test
    13 s in and waited about 30 s for the build."""
    items.sort(key=lambda item: "built_site" not in getattr(item, "fixturenames", ()))


STATS_DIR = ROOT / "test-artifacts" / "blockstats"


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller (or a run without xdist)
        import shutil

        shutil.rmtree(STATS_DIR, ignore_errors=True)
        shutil.rmtree(ROOT / "test-artifacts" / "timeline", ignore_errors=True)


_TIMELINE: list[tuple[str, float, float]] = []  # (test id, start, end) in this process
_STARTED: dict[str, float] = {}


def pytest_runtest_logstart(nodeid, location):
    _STARTED[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid, location):
    _TIMELINE.append((nodeid, _STARTED.pop(nodeid, time.time()), time.time()))


def pytest_sessionfinish(session, exitstatus):
    # each worker's timeline (setup to teardown of every test), to see where a worker waited or idled:
    # test-artifacts/timeline/<worker>.json
    if _TIMELINE:
        import json

        wid = getattr(session.config, "workerinput", {}).get("workerid", "main")
        out = ROOT / "test-artifacts" / "timeline"
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{wid}.json").write_text(json.dumps(_TIMELINE))
    # each xdist worker leaves its blocks' outcomes for the controller's summary
    if blockstats.RESULTS:
        import json

        STATS_DIR.mkdir(parents=True, exist_ok=True)
        wid = getattr(session.config, "workerinput", {}).get("workerid", "main")
        (STATS_DIR / f"{wid}.json").write_text(json.dumps(blockstats.RESULTS))


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    import json

    results = (
        [r for f in sorted(STATS_DIR.glob("*.json")) for r in json.loads(f.read_text())] if STATS_DIR.is_dir() else []
    )
    results = results or blockstats.RESULTS
    if not results:
        return
    tr = terminalreporter
    c = Counter(r["outcome"] for r in results)
    tr.section("code blocks")
    tr.write_line(f"blocks seen: {len(results)} (both languages)")
    tr.write_line(f"  run and passed: {c['passed']}")
    tr.write_line(f"  failed: {c['failed']}")
    for outcome in ("skipped", "display"):
        reasons = Counter(r["reason"] for r in results if r["outcome"] == outcome)
        title = (
            "skipped (missing requirement)"
            if outcome == "skipped"
            else "not executed here (display-only or checked elsewhere)"
        )
        tr.write_line(f"  {title}: {sum(reasons.values())}")
        for reason, n in reasons.most_common():
            tr.write_line(f"    {n:4d}  {reason}")


import os  # noqa: E402
import subprocess  # noqa: E402

import pytest  # noqa: E402
from once import shared_once  # noqa: E402

PREBUILT_SITE_ENV = "AI_COMPILER_TESTS_PREBUILT_SITE"


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """Build the whole site once, strictly, into a temporary folder: (site_dir, return code, build log,
    seconds). PREBUILT_SITE_ENV is set only by tests/test_reader.py's README check, in the fresh clone of a
    checkout with no modified or untracked files, to the site the outer session built from the same files."""
    prebuilt = os.environ.get(PREBUILT_SITE_ENV)
    if prebuilt:
        return Path(prebuilt), 0, f"(built by the outer test session: {PREBUILT_SITE_ENV})", 0.0

    def build(out):
        env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
        # a repository URL, so that the repository links are built and checked (CI sets the real one)
        env.setdefault("SITE_REPO_URL", "https://github.com/example/ai-compiler")
        t0 = time.time()
        p = subprocess.run(
            [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        return [p.returncode, p.stdout + p.stderr, time.time() - t0]

    out, (rc, log, secs) = shared_once(tmp_path_factory, "site", build)
    return out, rc, log, secs


def _import_triton_language_interpreted():
    """Import triton.language (and Gluon) once, with the interpreter on, before any test module is collected.

    Triton 3.6 makes its standard functions (tl.zeros, tl.cdiv, ...) @jit functions at import time: interpreted
    ones if TRITON_INTERPRET=1 then, compiled ones otherwise, for the whole process. Compiled ones raise
    "Cannot call @triton.jit'd outside of the scope of a kernel" inside an interpreted kernel; interpreted ones
    still compile (the PTX facts tests compile kernels to sm_90 in this mode). So the first module to import
    triton.language decided for its whole pytest worker whether the interpreter tests after it could pass:
    the deep dive's failed when only the facts, deep-dive and getting-started files ran together. Gluon
    wraps the standard functions when it is first imported and asserts that they are compiled unless the
    interpreter is on at that moment, so it is imported here too, in the same mode."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:  # no Triton in this environment: nothing to import
        return
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"  # before `import triton`, which imports triton.language
    try:
        import triton.experimental.gluon  # noqa: F401
        import triton.language  # noqa: F401
    finally:
        if old is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old


_import_triton_language_interpreted()
