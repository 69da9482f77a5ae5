"""The page "CUDA Compilation Pipeline Deep Dive": its commands, artifacts and datasets, regenerated.

Every compile and inspect block of the page is marked checked_by this file. Here each such block
is run exactly as the page shows it (snippets/cuda_compilation_pipeline/env.sh + a section of a
.sh file) with the pinned CUDA 13.0 toolchain from PyPI, and its normalized output must equal the
artifact the page shows under it (data/cuda_compilation_pipeline/ir/*.txt). The gencode and
register datasets and Triton's IR are regenerated the same way. Nothing is cached between runs.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import needs
import pytest
from measure.cuda_compilation_pipeline import _pipeline as cp  # noqa: E402
from once import shared_once
from sitekit import DATA, DOCS, ROOT
from sitekit.pages import blocks

# Blocks added for the review of issue 10 (device link and -rdc, CUDA 13.0's dropped targets, the
# "no kernel image" triage, launch bounds in PTX). Their artifacts are written by the same machinery
# (cp.write_artifacts); they belong in the producer's ARTIFACTS list and are registered here until then.
ME = "tests/test_cuda_compilation_pipeline.py"
PAGES = [DOCS / lang / "cuda-compilation-pipeline.md" for lang in ("en", "zh")]
IR = DATA / "cuda_compilation_pipeline" / "ir"


def _toolchain_or_skip():
    try:
        return cp.toolchain()
    except cp.ToolchainError as e:
        pytest.skip(f"needs the CUDA 13.0 toolchain: {e}")


def _diff(a: str, b: str, name: str) -> str:
    import difflib

    return (
        f"{name} differs from a fresh run:\n"
        + "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "committed", "regenerated", n=1))[:6000]
    )


def _rows(path: Path) -> list:
    return json.loads(path.read_text(encoding="utf-8"))["rows"]


# ----------------------------------------------------------------------------- the page's blocks


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.parent.name)
def test_checked_blocks_are_the_snippet_sections(page):
    """Every block this file checks is env.sh + one section (so running the section runs the block)."""
    known = {}
    for script in sorted(cp.SNIPPETS.glob("*.sh")):
        for name in cp.sections(script):
            known[cp.block_text(script.name, name).strip()] = (script.name, name)
    mine = [b for b in blocks(page) if b.marks.get("checked_by", ("",))[0] == ME]
    bash = [b for b in mine if b.lang in ("bash", "sh")]
    assert len(bash) >= 8, f"{page.name}: expected the page's compile/inspect blocks to be checked here"
    for b in bash:
        assert b.code.strip() in known, f"{b.id}: not env.sh + a section of snippets/cuda_compilation_pipeline/*.sh"
    produced = {cp.ARTIFACTS[n][:2] for n in cp.ARTIFACTS}
    shown = {known[b.code.strip()] for b in bash}
    assert shown <= produced, f"blocks whose output no artifact records: {shown - produced}"
    gpu = [b for b in blocks(page) if "gpu" in b.marks.get("needs", ())]
    assert len(gpu) >= 4 and all(b.code.strip() in known for b in gpu), "the GPU blocks must be run_h200.sh sections"


# ----------------------------------------------------------------------------- errors a reader can hit


def test_missing_toolchain_says_what_to_install(monkeypatch):
    monkeypatch.delenv("CUDA_PIPELINE_HOME", raising=False)
    monkeypatch.setattr(cp, "_site_dirs", lambda: [])
    monkeypatch.setattr(cp, "_system_nvcc", lambda: None)
    cp.toolchain.cache_clear()
    try:
        with pytest.raises(cp.ToolchainError, match=r"pip install -r requirements-cuda\.txt"):
            cp.toolchain()
    finally:
        cp.toolchain.cache_clear()


def _fake_nvcc(tmp_path, release: str):
    nvcc = tmp_path / "cuda" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.1'\n")
    nvcc.chmod(0o755)
    return nvcc


def test_system_nvcc_of_the_same_release_is_used_when_the_wheels_are_absent(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_PIPELINE_HOME", raising=False)
    monkeypatch.setattr(cp, "_site_dirs", lambda: [])
    monkeypatch.setattr(cp, "_system_nvcc", lambda: _fake_nvcc(tmp_path, cp.RELEASE))
    cp.toolchain.cache_clear()
    try:
        t = cp.toolchain()
        assert t.release == cp.RELEASE and t.source.startswith("system nvcc")
    finally:
        cp.toolchain.cache_clear()


def test_toolchain_mismatch_names_both_versions(monkeypatch, tmp_path):
    monkeypatch.delenv("CUDA_PIPELINE_HOME", raising=False)
    monkeypatch.setattr(cp, "_site_dirs", lambda: [])
    monkeypatch.setattr(cp, "_system_nvcc", lambda: _fake_nvcc(tmp_path, "12.4"))
    cp.toolchain.cache_clear()
    try:
        with pytest.raises(cp.ToolchainError, match=r"needs nvcc 13\.0.*release 12\.4"):
            cp.toolchain()
    finally:
        cp.toolchain.cache_clear()


def _pipeline(*args: str, **kw) -> subprocess.CompletedProcess:
    """_pipeline.py's command line, run from the repository root."""
    cmd = [sys.executable, "scripts/measure/cuda_compilation_pipeline/_pipeline.py", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, **kw)


def test_bad_toolchain_home_is_a_clear_error():
    p = _pipeline("bin", env={**os.environ, "CUDA_PIPELINE_HOME": "/nonexistent/cuda"})
    assert p.returncode == 1 and "no bin/nvcc there" in p.stderr and "requirements-cuda.txt" in p.stderr


def test_run_block_names_the_page_scripts_for_an_unknown_one():
    """From a bad-input audit: an unknown script was a FileNotFoundError traceback."""
    p = _pipeline("run-block", "bogus.sh", "compat")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "no script snippets/cuda_compilation_pipeline/bogus.sh; the page's are: " in p.stderr
    assert "run_h200.sh" in p.stderr


def test_unknown_architecture_lists_the_valid_ones():
    _toolchain_or_skip()
    p = _pipeline("check-arch", "sm_95")
    assert p.returncode == 1
    assert "unknown GPU architecture 'sm_95'" in p.stderr and "sm_90a" in p.stderr and "compute_100f" in p.stderr
    ok = _pipeline("check-arch", "sm_90a")
    assert ok.returncode == 0 and ok.stdout.strip() == "sm_90a"
    m = subprocess.run(
        [sys.executable, "scripts/measure/cuda_compilation_pipeline/h200.py", "--arch", "sm_91"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert m.returncode != 0 and "unknown GPU architecture 'sm_91'" in m.stderr


def test_rules_of_compatibility():
    assert cp.runs_on_cc(["sm_80"], [], (9, 0)) == "none"  # SASS never crosses a major version
    assert cp.runs_on_cc(["sm_80"], ["compute_80"], (9, 0)) == "jit"  # PTX goes forward
    assert cp.runs_on_cc(["sm_90a"], [], (9, 0)) == "sass"
    assert cp.runs_on_cc([], ["compute_90a"], (10, 0)) == "none"  # 'a' PTX is not forward compatible
    assert cp.runs_on_cc(["sm_100f"], [], (10, 3)) == "sass"  # family: later minor of the same major
    assert cp.runs_on_cc(["sm_100f"], ["compute_100f"], (12, 0)) == "none"
    assert cp.runs_on_cc([], ["compute_100"], (12, 0)) == "jit"


# ----------------------------------------------------------------------------- regeneration


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    _toolchain_or_skip()

    def produce(d):
        cp.write_artifacts(d / "ir", jobs=2)

    return shared_once(tmp_path_factory, "cuda-pipeline-artifacts", produce)[0] / "ir"


@pytest.mark.parametrize("name", [*cp.ARTIFACTS, *cp.DERIVED])
def test_artifact_regenerates(regenerated, name):
    committed = (IR / f"{name}.txt").read_text(encoding="utf-8")
    fresh = (regenerated / f"{name}.txt").read_text(encoding="utf-8")
    a, b = cp.versionless(committed), cp.versionless(fresh)
    assert a == b, _diff(a, b, f"data/cuda_compilation_pipeline/ir/{name}.txt")


def test_every_shown_artifact_exists_and_is_produced():
    produced = (
        {f"{n}.txt" for n in [*cp.ARTIFACTS, *cp.DERIVED]}
        | {f"triton_{s}.txt" for s in ("ttir", "ttgir", "llir", "ptx", "sass", "summary")}
        | {"saxpy_nvcc13.5.ptx"}
    )
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        shown = set(re.findall(r'data/cuda_compilation_pipeline/ir/([\w.\-]+)"', text))
        assert shown, f"{page.name} shows no artifact"
        assert shown <= produced, f"{page.name} includes artifacts no script writes: {shown - produced}"
    assert {p.name for p in IR.iterdir()} == produced, "data/cuda_compilation_pipeline/ir holds files no script writes"


GENCODE_TIMES = ("build_s", "build_s_spread")  # wall times of this machine: every other column is exact


def test_gencode_dataset_regenerates(tmp_path):
    """Every column but the build times regenerates exactly (contents, the three sizes, the front-end
    passes); one timed round is enough for that, and the times must still be there."""
    _toolchain_or_skip()
    out = tmp_path / "gencode.json"
    p = subprocess.run(
        [sys.executable, "scripts/measure/cuda_compilation_pipeline/gencode.py", "--rounds", "1", "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr

    def exact(rows):
        return [{k: v for k, v in r.items() if k not in GENCODE_TIMES} for r in rows]

    fresh = _rows(out)
    assert exact(fresh) == exact(_rows(DATA / "cuda_compilation_pipeline" / "gencode.json"))
    assert all(r["build_s"] > 0 and r["build_s_spread"] == 0 for r in fresh)  # one round: no spread


def test_gencode_sizes_and_build_times_back_the_fleet_recipe():
    """The page's fleet recipe (section #fleet-cost) reads these columns: nvcc's default compresses the PTX
    only (a SASS-only fatbinary is as large as with --no-compress, one with PTX is smaller),
    --compress-mode=size compresses every build further, and the build time follows the front-end passes
    (each one-pass build is faster than each two-pass build, which is faster than -arch=all-major's six).
    The times are medians of several builds run one at a time."""
    ds = json.loads((DATA / "cuda_compilation_pipeline" / "gencode.json").read_text(encoding="utf-8"))
    rows = ds["rows"]
    for col in (
        "fatbin_bytes",
        "nocompress_bytes",
        "size_mode_bytes",
        "default_fraction",
        "size_mode_fraction",
        "cicc_runs",
        "build_s",
        "build_s_spread",
    ):
        assert col in ds["metrics"] or col.endswith("_spread"), f"gencode.json declares no metric {col}"
        assert all(col in r for r in rows), f"a gencode row lacks {col}"
    assert ds["metrics"]["build_s"].get("check") is False, "build_s is CPU wall time: keep it out of the drift check"
    for r in rows:
        what = r["nvcc_flags"]
        assert r["size_mode_bytes"] < r["fatbin_bytes"] <= r["nocompress_bytes"], what
        if r["ptx_images"] == 0:
            assert r["fatbin_bytes"] == r["nocompress_bytes"] and r["default_fraction"] == 1, what
        else:
            assert r["fatbin_bytes"] < r["nocompress_bytes"], what
        assert r["default_fraction"] == round(r["fatbin_bytes"] / r["nocompress_bytes"], 4), what
        assert r["size_mode_fraction"] == round(r["size_mode_bytes"] / r["nocompress_bytes"], 4), what
        assert r["build_s"] > 0 and r["cicc_runs"] >= 1, what
    timing = ds.get("timing") or {}
    assert timing.get("builds_at_once") == 1 and timing.get("statistic") == "median" and timing.get("rounds", 0) >= 3, (
        f"gencode.json's build times must be medians of 3 or more builds run one at a time, found {timing}"
    )
    by_passes = {}
    for r in rows:
        by_passes.setdefault(r["cicc_runs"], []).append(r["build_s"])
    assert sorted(by_passes) == [1, 2, 6], f"front-end passes per build: {sorted(by_passes)}"
    assert max(by_passes[1]) < min(by_passes[2]) and max(by_passes[2]) < min(by_passes[6]), by_passes


@pytest.mark.parametrize("option", ["--rounds", "--jobs"])
def test_gencode_refuses_counts_below_one(option):
    p = subprocess.run(
        [sys.executable, "scripts/measure/cuda_compilation_pipeline/gencode.py", option, "0", "--out", "/dev/null"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and f"{option} 0: expected at least 1" in p.stderr and "Traceback" not in p.stderr


def test_resources_dataset_regenerates(regenerated, tmp_path):
    out = tmp_path / "resources.json"
    p = subprocess.run(
        [
            sys.executable,
            "scripts/measure/cuda_compilation_pipeline/resources.py",
            "--out",
            str(out),
            "--from",
            str(regenerated / "registers.txt"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 0, p.stderr
    assert _rows(out) == _rows(DATA / "cuda_compilation_pipeline" / "resources.json")


def test_triton_artifacts_regenerate(tmp_path):
    p = subprocess.run(
        [sys.executable, "scripts/measure/cuda_compilation_pipeline/_triton_ir.py", "--out-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    for f in sorted(tmp_path.glob("triton_*.txt")):
        committed = (IR / f.name).read_text(encoding="utf-8")
        assert committed == f.read_text(encoding="utf-8"), _diff(committed, f.read_text(encoding="utf-8"), f.name)


def test_newer_nvcc_ptx_regenerates(tmp_path):
    lacking = needs.missing(["network"])
    if lacking:
        pytest.skip("needs " + ", ".join(lacking) + f" (fetches nvcc {cp.NEWER_NVCC} from PyPI)")
    out = tmp_path / "newer.ptx"
    p = _pipeline("newer-ptx", "--out", str(out), timeout=600)
    assert p.returncode == 0, p.stderr
    committed = (IR / "saxpy_nvcc13.5.ptx").read_text(encoding="utf-8")
    assert committed == out.read_text(encoding="utf-8")
    assert re.search(r"^\.version 9\.5$", committed, re.M)


# ----------------------------------------------------------------------------- what the H200 showed


def test_h200_observations_match_the_rules():
    """The gencode table predicts what a compute capability 9.0 GPU does with each build; the H200 run
    recorded what it did. They must agree, and the page's claims must be in the data."""
    gencode = {r["combo"]: r for r in _rows(DATA / "cuda_compilation_pipeline" / "gencode.json")}
    h200 = _rows(DATA / "cuda_compilation_pipeline" / "h200.json")
    cold = {r["combo"]: r for r in h200 if r["group"] == "compat" and r["run_condition"] == "cond_cold"}
    assert set(cold) == set(gencode), "the H200 run and the gencode table cover different builds"
    expect = {"h200_sass": "outcome_sass", "h200_jit": "outcome_jit", "h200_none": "cudaErrorNoKernelImageForDevice"}
    for combo, row in cold.items():
        assert row["run_outcome"] == expect[gencode[combo]["on_h200"]], (
            f"{combo}: predicted {gencode[combo]['on_h200']}, saw {row['run_outcome']}"
        )
    by = {(r["combo"], r["run_condition"]): r for r in h200 if r["group"] == "compat"}
    assert by[("ptx90", "cond_warm")]["run_outcome"] == "outcome_cache_hit"
    assert by[("arch_sm90", "cond_force_jit")]["run_outcome"] == "outcome_jit"
    assert by[("ptx90", "cond_cold")]["first_launch_ms"] > by[("arch_sm90", "cond_cold")]["first_launch_ms"]
    isa = {r["ptx_file"]: r["run_outcome"] for r in h200 if r["group"] == "ptx_isa"}
    assert isa == {
        "ptx_nvcc13.0": "outcome_loaded",
        "ptx_edited_9.1": "cudaErrorUnsupportedPtxVersion",
        "ptx_nvcc13.5": "cudaErrorUnsupportedPtxVersion",
    }
    regs = {r["reg_budget"]: r["registers_used"] for r in h200 if r["group"] == "registers"}
    built = {r["reg_budget"]: r["registers_used"] for r in _rows(DATA / "cuda_compilation_pipeline" / "resources.json")}
    assert regs == built, "the H200 build's register counts differ from the pinned toolchain's"


# ----------------------------------------------------------------------------- the triage script


def _triage():
    import importlib.util

    spec = importlib.util.spec_from_file_location("triage", cp.SNIPPETS / "triage.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_triage_applies_the_rules_of_the_gencode_table():
    """triage.py (what a reader runs) and the producer's rules give the same verdict for every build
    of the gencode table on every compute capability the page names."""
    triage = _triage()
    ccs = [(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1)]
    for row in _rows(DATA / "cuda_compilation_pipeline" / "gencode.json"):
        sass = [t for t in row["sass_targets"].split(", ") if t.startswith("sm_")]
        ptx = [t for t in row["ptx_targets"].split(", ") if t.startswith("compute_")]
        for cc in ccs:
            assert triage.verdict(sass, ptx, cc) == cp.runs_on_cc(sass, ptx, cc), (row["combo"], cc)


def test_triage_errors_are_clear(tmp_path):
    p = subprocess.run(
        [sys.executable, str(cp.SNIPPETS / "triage.py"), "x", "--cc", "9"], capture_output=True, text=True
    )
    assert p.returncode == 2 and "expected a compute capability such as 9.0" in p.stderr
    p = subprocess.run(
        [sys.executable, str(cp.SNIPPETS / "triage.py"), str(tmp_path / "missing"), "--cc", "9.0"],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{_toolchain_or_skip().bin}:{os.environ['PATH']}"},
    )
    assert p.returncode == 1 and "cannot read" in p.stderr


def test_fourteen_builds_is_the_row_count_of_both_tables():
    """The page says "fourteen combinations" (gencode table) and "all fourteen builds" (the H200 runs), and
    the Chinese page "14 种构建": tie the word to the datasets, one cold run per combination on the H200."""
    root = Path(__file__).resolve().parents[1]
    gencode = _rows(root / "data" / "cuda_compilation_pipeline" / "gencode.json")
    cold = [
        r
        for r in _rows(root / "data" / "cuda_compilation_pipeline" / "h200.json")
        if r.get("group") == "compat" and r.get("run_condition") == "cond_cold"
    ]
    assert len(gencode) == 14 and len(cold) == 14 and {r["combo"] for r in cold} == {r["combo"] for r in gencode}
    en = (root / "docs" / "en" / "cuda-compilation-pipeline.md").read_text(encoding="utf-8")
    zh = (root / "docs" / "zh" / "cuda-compilation-pipeline.md").read_text(encoding="utf-8")
    assert "fourteen combinations" in en and "all fourteen builds" in en and "14 种构建" in zh


def test_a_local_array_is_counted_in_the_stack_frame_not_in_local(tmp_path):
    """The page: `LOCAL` in `cuobjdump -res-usage` is not where a kernel's local arrays go; a local array
    indexed at run time gets a stack frame (STACK) without any spill."""
    tc = _toolchain_or_skip()
    src = tmp_path / "local.cu"
    src.write_text(
        "__global__ void k(float *out, const int *idx) {\n"
        "  float a[256];\n"
        "  for (int i = 0; i < 256; i++) a[i] = out[i];\n"
        "  out[threadIdx.x] = a[idx[threadIdx.x]];\n"
        "}\n",
        encoding="utf-8",
    )
    obj = tmp_path / "local.o"
    p = subprocess.run(
        [tc.tool("nvcc"), "-arch=sm_90", "-Xptxas", "-v", "-c", str(src), "-o", str(obj)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert p.returncode == 0, p.stderr
    assert re.search(r"(\d+) bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", p.stderr), p.stderr
    u = subprocess.run([tc.tool("cuobjdump"), "-res-usage", str(obj)], capture_output=True, text=True).stdout
    m = re.search(r"STACK:(\d+) SHARED:\d+ LOCAL:(\d+)", u)
    assert m and int(m.group(1)) >= 1024 and int(m.group(2)) == 0, u


# ----------------------------------------------------------------------------- prose claims, with nvcc 13.0


def _nvcc(tc, *args, cwd):
    return subprocess.run([tc.tool("nvcc"), *args], capture_output=True, text=True, cwd=cwd)


def test_arch_given_twice_keeps_only_the_last(tmp_path):
    """The page (#gencode): -gencode options add up, -arch does not; given twice, nvcc warns and the
    binary holds the last target only."""
    tc = _toolchain_or_skip()
    p = _nvcc(
        tc, "-arch=sm_80", "-arch=sm_90", "-fatbin", str(cp.SNIPPETS / "saxpy.cu"), "-o", "t.fatbin", cwd=tmp_path
    )
    assert p.returncode == 0, p.stderr
    assert "incompatible redefinition for option 'gpu-architecture', the last value of this option was used" in p.stderr
    listed = subprocess.run(
        [tc.tool("cuobjdump"), "--list-elf", "--list-ptx", "t.fatbin"], capture_output=True, text=True, cwd=tmp_path
    ).stdout
    assert re.findall(r"\.(sm_\d+)\.(cubin|ptx)", listed) == [("sm_90", "cubin"), ("sm_90", "ptx")], listed


def test_fmad_false_splits_the_fused_multiply_add(tmp_path):
    """The page (#reading-ptx): nvcc contracts a * x[i] + y[i] into fma.rn.f32 by default (--fmad=true),
    and -fmad=false leaves mul.rn.f32 and add.rn.f32."""
    tc = _toolchain_or_skip()
    src = str(cp.SNIPPETS / "saxpy.cu")
    for flags, want, absent in (
        ([], ["fma.rn.f32"], ["mul.rn.f32"]),
        (["-fmad=false"], ["mul.rn.f32", "add.rn.f32"], ["fma.rn"]),
    ):
        p = _nvcc(tc, "-arch=sm_90", "-ptx", *flags, src, "-o", "s.ptx", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        ptx = (tmp_path / "s.ptx").read_text(encoding="utf-8")
        assert all(w in ptx for w in want) and not any(a in ptx for a in absent), (flags, ptx)


def _sass(tc, cubin: Path) -> str:
    return subprocess.run(
        [tc.tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True, check=True
    ).stdout


def test_lineinfo_leaves_the_sass_unchanged(tmp_path):
    """The page (#reading-sass): -lineinfo left the SASS of every kernel on the page unchanged."""
    tc = _toolchain_or_skip()
    for name in ("saxpy", "grid_stride", "vector_loads", "registers"):
        src = str(cp.SNIPPETS / f"{name}.cu")
        for flags, out in (([], "plain.cubin"), (["-lineinfo"], "lines.cubin")):
            p = _nvcc(tc, "-arch=sm_90", "-cubin", *flags, src, "-o", out, cwd=tmp_path)
            assert p.returncode == 0, p.stderr
        assert _sass(tc, tmp_path / "plain.cubin") == _sass(tc, tmp_path / "lines.cubin"), name


def test_reported_registers_are_the_highest_register_plus_three(tmp_path):
    """The page (#registers): the count ptxas reports follows the highest register number in the SASS
    (plus three with nvcc 13.0 for the page's kernels), not the live peak that nvdisasm -plr shows."""
    tc = _toolchain_or_skip()
    builds = [
        ("saxpy", []),
        ("grid_stride", []),
        ("vector_loads", []),
        *[("registers", f) for f in ([], ["-DMIN_BLOCKS=6"], ["-DMIN_BLOCKS=8"], ["-maxrregcount=24"])],
    ]
    seen = 0
    for name, flags in builds:
        p = _nvcc(tc, "-arch=sm_90", "-cubin", *flags, str(cp.SNIPPETS / f"{name}.cu"), "-o", "k.cubin", cwd=tmp_path)
        assert p.returncode == 0, p.stderr
        usage = subprocess.run(
            [tc.tool("cuobjdump"), "-res-usage", "k.cubin"], capture_output=True, text=True, cwd=tmp_path
        ).stdout
        reported = dict(re.findall(r"Function (\S+):\s*\n\s*REG:(\d+)", usage))
        sass = _sass(tc, tmp_path / "k.cubin")
        for fn, body in re.findall(r"Function : (\S+)\n(.*?)(?=\n\t\tFunction :|\Z)", sass, re.S):
            highest = max(int(r) for r in re.findall(r"\bR(\d+)\b", body))
            assert int(reported[fn]) == highest + 3, (name, flags, fn, highest, reported[fn])
            seen += 1
    assert seen == 8
