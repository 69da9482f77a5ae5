"""The page "Intel oneAPI Installation Guide": its blocks, its troubleshooting table, its datasets.

The runnable blocks (env.sh + a section of snippets/oneapi_installation/*.sh, and the SYCL program)
are run by tests/test_codeblocks.py against the wheels of requirements-oneapi.txt. This file checks
what that runner cannot: the display-only blocks are valid shell and say on the page why they are
not run, every message of the troubleshooting table is one a reproduction printed, the two
reproductions the page's block leaves out (Open MPI as root, Intel MPI 2021.19 from pip), bad input,
and the producers (packages regenerated exactly; the timing ones in --quick mode).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import needs
import pytest
import yaml
from sitekit import DATA, DOCS, ROOT, SNIPPETS
from sitekit.pages import blocks

HERE = SNIPPETS / "oneapi_installation"
PAGES = {lang: DOCS / lang / "oneapi-installation.md" for lang in ("en", "zh")}
MEASURE = ROOT / "scripts" / "measure" / "oneapi_installation"
# the words on the page, before a display-only block, that tell the reader it is not run here
NOT_RUN = {"en": re.compile(r"\bnot run\b", re.I), "zh": re.compile(r"不运行|未运行")}


def _need(*what):
    lacking = needs.missing(list(what))
    if lacking:
        pytest.skip("needs " + ", ".join(lacking))


def _sections(path: Path) -> dict[str, str]:
    text = path.read_text(encoding="utf-8")
    return {
        m.group(1): m.group(2)
        for m in re.finditer(r"# --8<-- \[start:([\w-]+)\]\n(.*?)# --8<-- \[end:\1\]\n", text, re.S)
    }


def _squash(code: str) -> str:
    """Code without blank lines (the include expansion puts one between env.sh and the section)."""
    return "\n".join(line for line in code.splitlines() if line.strip())


def _env_text() -> str:
    return (HERE / "env.sh").read_text(encoding="utf-8")


def _run_section(script: str, section: str, timeout: int = 300) -> subprocess.CompletedProcess:
    code = _env_text() + _sections(HERE / script)[section]
    with tempfile.TemporaryDirectory() as t:
        f = Path(t) / "block.sh"
        f.write_text(code, encoding="utf-8")
        return subprocess.run(
            ["bash", "-euo", "pipefail", str(f)], cwd=ROOT, capture_output=True, text=True, timeout=timeout
        )


# ----------------------------------------------------------------------------- the page's blocks


@pytest.mark.parametrize("script", sorted(p.name for p in HERE.glob("*.sh")))
def test_every_shell_snippet_parses(script):
    p = subprocess.run(["bash", "-n", str(HERE / script)], capture_output=True, text=True)
    assert p.returncode == 0, f"{script}: bash -n failed:\n{p.stderr}"


@pytest.mark.parametrize("lang", PAGES)
def test_display_only_blocks_parse_and_say_why_on_the_page(lang):
    page = PAGES[lang]
    text = page.read_text(encoding="utf-8")
    shown = [b for b in blocks(page) if "display" in b.marks and b.lang in ("bash", "sh", "python")]
    assert len(shown) >= 6, f"{page.name}: expected the APT, offline, setvars, modules, multi-node and XPU blocks"
    for b in shown:
        if b.lang in ("bash", "sh"):
            p = subprocess.run(["bash", "-n"], input=b.code, capture_output=True, text=True)
            assert p.returncode == 0, f"{b.id}: bash -n failed:\n{p.stderr}"
        else:
            compile(b.code, b.id, "exec")
    # the HTML-comment mark is invisible: the prose just above each such block must say it is not run
    listing = ("C source", "Python, run under", "the file the install")  # the next block runs it / installs it
    marks = [
        m
        for m in re.finditer(r'<!--pytest\.mark\.display\("([^"]*)"\)-->\n```(bash|sh|python)\n', text)
        if not m.group(1).startswith(listing)
    ]
    assert len(marks) >= 6
    for m in marks:
        before = text[max(0, m.start() - 700) : m.start()]
        assert NOT_RUN[lang].search(before), (
            f"{page.name}: no visible 'not run' reason before the block marked {m.group(1)!r}"
        )


@pytest.mark.parametrize("lang", PAGES)
def test_runnable_shell_blocks_are_env_plus_a_section(lang):
    known = {}
    for script in HERE.glob("*.sh"):
        for name, body in _sections(script).items():
            known[_squash(_env_text() + body)] = (script.name, name)
    known[_squash(_env_text())] = ("env.sh", "")
    run = [b for b in blocks(PAGES[lang]) if b.lang in ("bash", "sh") and "display" not in b.marks]
    assert len(run) >= 9
    for b in run:
        assert _squash(b.code) in known, f"{b.id}: a runnable block must be env.sh followed by one snippet section"
        assert "oneapi-wheels" in b.marks.get("needs", ()), f'{b.id}: mark it needs("oneapi-wheels")'


def test_expected_outputs_name_the_pinned_versions():
    pins = dict(re.findall(r"^([\w-]+)==([\d.]+)", (ROOT / "requirements-oneapi.txt").read_text(), re.M))
    versions = (HERE / "expected" / "versions.txt").read_text()
    assert f"Version {pins['impi-rt']} " in versions
    assert f"dpctl {pins['dpctl']} dpnp {pins['dpnp']} mpi4py {pins['mpi4py']}" in versions
    assert versions.splitlines()[2] == ".".join(pins["mkl-devel"].split(".")[:2])


# ----------------------------------------------------------------------------- troubleshooting


def _table_messages(lang: str) -> list[str]:
    """The code spans of the first column of the troubleshooting table (header and rule left out)."""
    sec = PAGES[lang].read_text(encoding="utf-8").split("{ #troubleshooting }", 1)[1]
    rows = [line for line in sec.splitlines() if line.startswith("| ")][2:]
    return [m for row in rows for m in re.findall(r"`([^`]+)`", row.split(" | ")[0])]


SEPARATE = {  # reproduced by the tests below, not by the page's block
    "mpirun.openmpi has detected an attempt to run as root",
    "Could not find a version that satisfies the requirement libfabric>=2.6 (from impi-rt)",
}


@pytest.mark.parametrize("lang", PAGES)
def test_every_troubleshooting_message_is_reproduced(lang):
    shown = (HERE / "expected" / "reproduce.txt").read_text(encoding="utf-8")
    msgs = _table_messages(lang)
    assert len(msgs) >= 10, f"{lang}: troubleshooting table not found or too short"
    ignore = {
        "mpicc",
        "mpicc -show",
        "MPI_Init",
        "I_MPI_DEBUG=5",
        "dpctl.get_devices()",
    }  # names in the message column, not messages
    for m in msgs:
        if m in ignore or m in SEPARATE:
            continue
        assert m in shown, f"{lang}: the table shows {m!r}, which no reproduction printed"
    assert SEPARATE <= set(msgs), f"{lang}: the separately reproduced messages are missing from the table"
    # the page says "the block causes the first eight": rows in the order the block prints them, the
    # separately reproduced ones last
    at = [shown.find(m) for m in msgs if m not in ignore and m not in SEPARATE]
    assert at == sorted(at), f"{lang}: troubleshooting rows are not in the order the reproduction block prints them"
    assert set(msgs[-len(SEPARATE) :]) == SEPARATE, f"{lang}: the separately reproduced rows must come last"


def test_openmpi_as_root_is_refused():
    _need("openmpi")
    if os.getuid() != 0:
        pytest.skip("Open MPI's root check only shows as root")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_ALLOW_RUN_AS_ROOT")}
    p = subprocess.run(["mpirun.openmpi", "-n", "1", "true"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode != 0
    assert "mpirun.openmpi has detected an attempt to run as root" in p.stdout + p.stderr


def test_impi_2021_19_needs_a_libfabric_pypi_lacks():
    _need("network")
    with tempfile.TemporaryDirectory() as t:
        p = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--ignore-installed",
                "--no-cache-dir",
                "--target",
                t,
                "impi-rt==2021.19.0",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert p.returncode != 0, "impi-rt 2021.19.0 now installs from PyPI alone: revisit the pin and the page"
    assert "Could not find a version that satisfies the requirement libfabric>=2.6 (from impi-rt)" in p.stderr


def test_ring_with_one_rank_says_what_it_needs():
    _need("oneapi-wheels")
    code = _env_text() + "mpicc ring.c -o ring\nmpiexec -n 1 ./ring\n"
    p = subprocess.run(["bash", "-eu"], input=code, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "ring needs at least 2 ranks, got 1" in p.stderr


def test_env_sh_without_the_wheels_says_what_to_install(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "python3").write_text(f"#!/bin/sh\necho {tmp_path}\n")
    (fake / "python3").chmod(0o755)
    p = subprocess.run(
        ["bash", "-eu"],
        input=_env_text(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}"},
    )
    assert p.returncode == 1 and "pip install -r requirements-oneapi.txt" in p.stderr


# ----------------------------------------------------------------------------- datasets


def test_packages_dataset_regenerates(tmp_path):
    _need("oneapi-wheels", "openmpi")
    out = tmp_path / "packages.json"
    p = subprocess.run(
        [sys.executable, str(MEASURE / "packages.py"), "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    fresh = json.loads(out.read_text())["rows"]
    committed = json.loads((DATA / "oneapi_installation" / "packages.json").read_text())["rows"]
    assert fresh == committed, (
        "installed sizes or versions changed: re-run scripts/measure/oneapi_installation/packages.py"
    )


@pytest.mark.parametrize("producer", ["mpi_bench", "dgemm"])
def test_timing_producers_run_quick(producer):
    _need("oneapi-wheels", "openmpi")
    p = subprocess.run(
        [sys.executable, str(MEASURE / f"{producer}.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    assert "quick run: valid, not written" in p.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (["--max-bytes", "1000"], "--max-bytes must be a power of two >= 1024, got 1000"),
        (["--rounds", "0"], "--rounds must be at least 1, got 0"),
    ],
)
def test_mpi_bench_rejects_bad_arguments(args, message):
    p = subprocess.run(
        [sys.executable, str(MEASURE / "mpi_bench.py"), *args], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2 and message in p.stderr


def test_imb_output_is_parsed():
    from measure.oneapi_installation.mpi_bench import parse_imb

    sample = """#----------------------------------------------------------------
# Benchmarking PingPong
# #processes = 2
#----------------------------------------------------------------
       #bytes #repetitions      t[usec]   Mbytes/sec
            0          200         0.33         0.00
         1024          200         0.65      1564.31
#----------------------------------------------------------------
# Benchmarking Allreduce
# #processes = 2
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            0          200         0.03         0.04         0.03
            8          200         0.49         0.52         0.50
"""
    rows = parse_imb(sample)
    assert [(r["mpi_test"], r["bytes"], r["usec"]) for r in rows] == [
        ("mpi_pingpong", 1024, 0.65),
        ("mpi_allreduce", 8, 0.50),
    ]


def test_measured_datasets_cover_what_the_page_shows():
    bench = json.loads((DATA / "oneapi_installation" / "mpi_bench.json").read_text())
    series = {r["mpi_series"] for r in bench["rows"]}
    assert series == {"impi_imb", "impi_bench_c", "openmpi_bench_c"}
    # measured on a machine of the CI's size, named with its CPU model (which changes from day to day)
    assert re.search(r"(2-core|, 2 CPUs$)", bench["provenance"]["machine"]), bench["provenance"]["machine"]
    gemm = json.loads((DATA / "oneapi_installation" / "dgemm.json").read_text())
    assert {(r["blas"], r["threads"]) for r in gemm["rows"]} == {
        (b, t) for b in ("blas_mkl", "blas_openblas") for t in (1, 2)
    }


def test_labels_are_one_string_per_language():
    """A label with a comma in a YAML flow mapping ({en: a, b, zh: …}) silently loses everything after
    the comma: the English plot then showed two series both called "Intel MPI". Every labels file is
    checked for that by tests/test_data.py::test_labels_are_en_zh_strings; here, the
    three MPI series keep three different names."""
    labels = yaml.safe_load((DATA / "oneapi_installation" / "labels.yml").read_text(encoding="utf-8"))
    series = [labels[k]["en"] for k in ("impi_imb", "impi_bench_c", "openmpi_bench_c")]
    assert len(set(series)) == 3, f"the three MPI series need three different English labels: {series}"


def test_timing_producers_refuse_a_busy_machine(monkeypatch):
    """A run at a load of 13 on 2 cores once put two BLAS threads below one and Open MPI 400x behind its idle
    figures; the producers wait for the load to fall and write nothing if it does not (--allow-busy overrides)."""
    from measure.oneapi_installation import _common as c

    monkeypatch.setattr(c, "loadavg", lambda: 13.17)
    monkeypatch.setattr(c.os, "cpu_count", lambda: 2)
    with pytest.raises(SystemExit, match=r"the machine is busy \(1-minute load 13.17 on 2 cores.*nothing was written"):
        c.wait_until_quiet("oneapi_installation/dgemm", wait_s=0)
    assert c.wait_until_quiet("oneapi_installation/dgemm", allow_busy=True) == 13.17
    monkeypatch.setattr(c, "loadavg", lambda: 0.4)
    assert c.wait_until_quiet("oneapi_installation/dgemm", wait_s=0) == 0.4


def test_open_mpi_runs_without_the_wheels_library_folder(monkeypatch):
    """With env.sh's LD_LIBRARY_PATH, Debian's Open MPI loads the wheels' libhwloc and Intel's libfabric."""
    from measure.oneapi_installation import _common as c

    lib = str(c.PREFIX / "lib")
    monkeypatch.setenv("LD_LIBRARY_PATH", f"{lib}:/opt/other/lib")
    assert c.env_system()["LD_LIBRARY_PATH"] == "/opt/other/lib"
    monkeypatch.setenv("LD_LIBRARY_PATH", lib)
    assert "LD_LIBRARY_PATH" not in c.env_system()


def test_two_blas_threads_come_close_to_twice_one():
    """The DGEMM section says two threads come close to twice one on the idle 2-core machine; the page's
    check() markers only guard "faster", so the factor is checked here, from the committed data."""
    gemm = json.loads((DATA / "oneapi_installation" / "dgemm.json").read_text())
    g = {(r["blas"], r["threads"], r["matrix_n"]): r["gflops"] for r in gemm["rows"]}
    for blas in ("blas_mkl", "blas_openblas"):
        ratio = g[(blas, 2, 2048)] / g[(blas, 1, 2048)]
        assert 1.7 <= ratio <= 2.1, (
            f"{blas}: two threads give {ratio:.2f}x one at n = 2048; the page's 'close to twice one' is stale"
        )


def test_page_states_the_load_rule_the_producers_apply():
    """The load average is a dataset-level field no marker renders: the pages state the producers' rule in
    words, and the rule they state must be the one in _common.py."""
    from measure.oneapi_installation import _common as c

    for lang, words in {"en": f"{c.BUSY} per core", "zh": f"每核 {c.BUSY}"}.items():
        text = PAGES[lang].read_text(encoding="utf-8")
        assert text.count(words) >= 2, f"{lang}: the MPI and DGEMM sections should both state the load rule ({words})"
