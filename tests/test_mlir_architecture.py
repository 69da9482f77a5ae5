"""The page "MLIR Architecture": its IR samples regenerated, the runner's numbers against numpy, its blocks.

Every IR sample and command output the page shows (data/mlir_architecture/ir/*.txt) is written by
scripts/measure/mlir_architecture/ir_samples.py; here it is run again into a temporary folder and
each sample must equal the committed one (the per-pass timing with its numbers masked), so an upgrade
of MLIR, Triton, JAX or torch-mlir shows up as a diff. The shell blocks themselves also run in
tests/test_codeblocks.py against the same files.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import needs
import numpy as np
import pytest
from sitekit import DATA, DOCS, ROOT
from sitekit.pages import blocks

ME = "tests/test_mlir_architecture.py"
PAGES = [DOCS / lang / "mlir-architecture.md" for lang in ("en", "zh")]
IR = DATA / "mlir_architecture" / "ir"
SNIPPETS = ROOT / "snippets" / "mlir_architecture"
PRODUCER = ROOT / "scripts" / "measure" / "mlir_architecture" / "ir_samples.py"

sys.path.insert(0, str(ROOT / "scripts"))
from measure.mlir_architecture import _common as common  # noqa: E402
from measure.mlir_architecture import ir_samples  # noqa: E402


def _need_mlir():
    lacking = needs.missing(["mlir-opt"])
    if lacking:
        pytest.skip("needs " + ", ".join(lacking))


def _diff(a: str, b: str, name: str) -> str:
    return (
        f"{name} differs from a fresh run:\n"
        + "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "committed", "regenerated", n=1))[:6000]
    )


# ----------------------------------------------------------------------------- regeneration


def test_samples_regenerate(tmp_path):
    """One test (not one per sample): under xdist each worker would otherwise regenerate them all."""
    _need_mlir()
    p = subprocess.run(
        [sys.executable, str(PRODUCER), "--ir-dir", str(tmp_path), "--out", str(tmp_path / "m.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    problems = []
    for name in sorted(ir_samples.SOURCES):
        committed = (IR / f"{name}.txt").read_text(encoding="utf-8")
        fresh = (tmp_path / f"{name}.txt").read_text(encoding="utf-8")
        if name in ir_samples.VOLATILE:
            committed, fresh = ir_samples.mask_numbers(committed), ir_samples.mask_numbers(fresh)
        if committed != fresh:
            problems.append(_diff(committed, fresh, f"data/mlir_architecture/ir/{name}.txt"))
    assert not problems, "\n".join(problems)[:12000]
    rows = lambda f: json.loads(f.read_text(encoding="utf-8"))["rows"]  # noqa: E731
    assert rows(tmp_path / "m.json") == rows(DATA / "mlir_architecture" / "ir_samples.json"), "the manifest changed"


def test_every_shown_sample_is_produced():
    produced = {f"{n}.txt" for n in ir_samples.SOURCES}
    assert {p.name for p in IR.iterdir()} == produced, "data/mlir_architecture/ir holds files no script writes"
    for page in PAGES:
        shown = set(re.findall(r'data/mlir_architecture/ir/([\w.\-]+)"', page.read_text(encoding="utf-8")))
        assert shown, f"{page.name} shows no sample"
        assert shown <= produced, f"{page.name} includes samples no script writes: {shown - produced}"


# ----------------------------------------------------------------------------- what the page claims


def _dense(text: str, name: str) -> np.ndarray:
    m = re.search(rf"%{name} = arith\.constant dense<(\[.*?\])> : tensor<([\dx]+)xf32>", text)
    assert m, f"main.mlir: no dense constant %{name}"
    return np.array(json.loads(m.group(1)), dtype=np.float32)


def _printed(text: str) -> list[np.ndarray]:
    """The arrays printMemrefF32 printed, in order (one per top-level [...])."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "[":
            depth += 1
        if depth:
            cur += ch
        if ch == "]":
            depth -= 1
            if depth == 0:
                out.append(np.array(json.loads(cur), dtype=np.float32))
                cur = ""
    return out


def test_runner_result_matches_numpy():
    """The page's `mlir-runner` output (committed, and regenerated above) is relu(x @ w) and its row sums."""
    main = (SNIPPETS / "main.mlir").read_text(encoding="utf-8")
    x, w = _dense(main, "x"), _dense(main, "w")
    relu = np.maximum(x @ w, 0)
    got = _printed((IR / "run.txt").read_text(encoding="utf-8"))
    assert len(got) == 2, got
    np.testing.assert_allclose(got[0], relu, rtol=1e-6)
    np.testing.assert_allclose(got[1], relu.sum(axis=1), rtol=1e-6)
    assert (relu == 0).any() and (relu > 0).any(), "inputs should exercise both sides of the ReLU"


def test_rewrite_pattern():
    p = subprocess.run([sys.executable, str(SNIPPETS / "rewrite.py")], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr  # its __main__ runs _test(): fused once, not fused when shared


def test_bench_block_runs_and_computes():
    _need_mlir()
    lines = common.run_block("bench.sh", "time").split()
    assert len(lines) == 12 and lines[0::4] == ["untiled", "tile", "vectorize"], lines
    for i in range(0, 12, 4):
        assert float(lines[i + 1]) == 256.0 and float(lines[i + 2]) == 256.0, lines
        assert float(lines[i + 3]) > 0


def test_timing_order_in_data():
    """The page says tiling helps and vectorizing helps more; the committed timings must say so."""
    rows = {r["variant"]: r for r in json.loads((DATA / "mlir_architecture" / "matmul_cpu.json").read_text())["rows"]}
    assert set(rows) == {"mm_untiled", "mm_tiled", "mm_vectorized"}
    assert rows["mm_vectorized"]["ms"] < rows["mm_tiled"]["ms"] < rows["mm_untiled"]["ms"]


# ----------------------------------------------------------------------------- the page's blocks and bad input


def _lines(code: str) -> str:
    """The code without blank lines (the page's include of env.sh leaves one after it)."""
    return "\n".join(line for line in code.splitlines() if line.strip())


def _known_blocks() -> dict[str, tuple[str, str]]:
    known = {}
    for script in sorted(SNIPPETS.glob("*.sh")):
        if script.name == "env.sh":
            continue
        for name in common.sections(script.name):
            known[_lines(common.block(script.name, name))] = (script.name, name)
    return known


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.parent.name)
def test_shell_blocks_are_snippet_sections(page):
    """Every shell block is env.sh + one section, so the producer runs exactly what the page shows."""
    known = _known_blocks()
    shell = [b for b in blocks(page) if b.lang in ("bash", "sh") and "display" not in b.marks]
    assert len(shell) >= 15, f"{page.name}: expected the page's commands"
    for b in shell:
        assert _lines(b.code) in known, f"{b.id}: not env.sh + a section of snippets/mlir_architecture/*.sh"
        assert "mlir-opt" in b.marks.get("needs", ()) or b.marks.get("checked_by", ("",))[0] == ME, (
            f'{b.id}: mark it needs("mlir-opt") or checked_by this file'
        )


def test_tools_error_says_what_to_set():
    p = subprocess.run(
        [sys.executable, str(SNIPPETS / "tools.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MLIR_BIN": "/nonexistent/llvm-22/bin"},
    )
    assert p.returncode == 1 and "no mlir-opt there" in p.stderr, p.stderr


def _fake_tools(folder: Path, version: str, works: bool) -> Path:
    """A folder with an mlir-opt that reports `version` and, unless `works`, fails on anything
    else, and an mlir-runner that prints nothing: tools that run but give no result."""
    folder.mkdir()
    opt = "mlir-opt: broken" if not works else ""
    (folder / "mlir-opt").write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then echo "LLVM (http://llvm.org/):"; echo "  LLVM version {version}"; exit 0; fi\n'
        + (f'echo "{opt}" >&2; exit 1\n' if not works else "cat\n")
    )
    (folder / "mlir-runner").write_text("#!/bin/sh\ncat >/dev/null\n")
    for f in folder.iterdir():
        f.chmod(0o755)
    return folder


def _run_code(code: str, mlir_bin: Path, strict: bool = True) -> subprocess.CompletedProcess:
    """A page block as tests/test_codeblocks.py runs it (strict: bash -euo pipefail), or as blocks pasted one
    after another into one terminal (not strict: one bash, no -e), in the repository, with MLIR_BIN set."""
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code] if strict else ["bash", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MLIR_BIN": str(mlir_bin)},
        timeout=120,
    )


def test_tools_refuses_another_llvm(tmp_path):
    """MLIR_BIN at an LLVM 19 mlir-opt: tools.py says so and exits 1, and a page block stops at env.sh."""
    fake = _fake_tools(tmp_path / "llvm19", "19.1.7", works=True)
    p = subprocess.run(
        [sys.executable, str(SNIPPETS / "tools.py")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MLIR_BIN": str(fake)},
    )
    assert p.returncode == 1 and "is LLVM 19.1.7" in p.stderr and not p.stdout, (p.stdout, p.stderr)
    p = _run_code(common.block("commands.sh", "version"), fake)
    assert p.returncode != 0 and not p.stdout, (p.stdout, p.stderr)


def test_env_sh_stops_without_tools(tmp_path):
    """No mlir-opt where MLIR_BIN points: the block stops at env.sh instead of running the commands."""
    p = _run_code(common.block("bench.sh", "time"), tmp_path / "nothing")
    assert p.returncode != 0 and not p.stdout and "no mlir-opt there" in p.stderr, (p.stdout, p.stderr)


def test_timing_block_fails_instead_of_printing_names(tmp_path):
    """Tools of the right version that produce nothing: the timing block fails, it prints no bare names."""
    for name, works in (("broken", False), ("silent", True)):
        p = _run_code(common.block("bench.sh", "time"), _fake_tools(tmp_path / name, "22.1.8", works))
        assert p.returncode != 0, (name, p.stdout, p.stderr)
        assert not p.stdout.strip(), (name, p.stdout)


def test_blocks_can_be_pasted_one_after_another(tmp_path):
    """The first block leaves the terminal in snippets/mlir_architecture; env.sh at the top of the next one
    must still find tools.py (it once failed there with "can't open file", hidden by the first block's PATH)."""
    fake = _fake_tools(tmp_path / "llvm22", "22.1.8", works=True)
    block = common.block("commands.sh", "version")
    p = _run_code(block + "\n" + block + "\npwd\n", fake, strict=False)
    assert p.returncode == 0 and "can't open file" not in p.stderr, p.stderr
    assert p.stdout.count("LLVM version 22.1.8") == 2, p.stdout
    assert p.stdout.strip().endswith("snippets/mlir_architecture"), p.stdout


def test_a_failing_timing_block_leaves_the_readers_shell_open(tmp_path):
    """Broken tools: the timing block fails in its subshell, and what the reader types next still runs."""
    fake = _fake_tools(tmp_path / "broken", "22.1.8", works=False)
    p = _run_code(common.block("bench.sh", "time") + "\necho still-here $?\n", fake, strict=False)
    assert "still-here 1" in p.stdout, (p.stdout, p.stderr)


def test_install_block_installs_what_the_blocks_need():
    """install.sh installs requirements-mlir.txt and the torch and Triton that requirements-test.txt pins
    (and that requirements-mlir.txt does not hold, as the page says)."""
    install = (SNIPPETS / "install.sh").read_text(encoding="utf-8")
    assert subprocess.run(["bash", "-n", str(SNIPPETS / "install.sh")]).returncode == 0
    assert "pip install -r requirements-mlir.txt" in install
    pins = lambda f: dict(  # noqa: E731
        re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+)", (ROOT / f).read_text(encoding="utf-8"), re.M)
    )
    test_pins, mlir_pins = pins("requirements-test.txt"), pins("requirements-mlir.txt")
    for pkg in ("torch", "triton"):
        assert pkg not in mlir_pins, f"requirements-mlir.txt now pins {pkg}: update install.sh and the page"
        assert f"{pkg}=={test_pins[pkg]}" in install, (
            f"install.sh: {pkg} is not requirements-test.txt's {test_pins[pkg]}"
        )
    assert "-r requirements-mlir.txt" in (ROOT / "requirements-test.txt").read_text(encoding="utf-8")


def _opt(*args: str, stdin: str | None = None) -> str:
    path = subprocess.run([sys.executable, str(SNIPPETS / "tools.py")], capture_output=True, text=True, check=True)
    env = {**os.environ, "PATH": path.stdout.strip() + os.pathsep + os.environ["PATH"]}
    p = subprocess.run(
        ["mlir-opt", *args], cwd=SNIPPETS, input=stdin, capture_output=True, text=True, env=env, timeout=120
    )
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_page_claims_checked_against_the_tools():
    """Statements of the page that the shown outputs do not prove on their own."""
    _need_mlir()
    mlp = (SNIPPETS / "mlp.mlir").read_text(encoding="utf-8")
    bufferize = "--one-shot-bufferize=bufferize-function-boundaries"
    # stage 1: the map writes in place because its destination is the fill's tensor.empty %e; with a
    # fresh tensor.empty as its destination the pass allocates a second buffer
    assert _opt(bufferize, stdin=mlp).count("memref.alloc()") == 2
    fresh = mlp.replace("outs(%e : tensor<4x2xf32>)\n", "outs(%e2 : tensor<4x2xf32>)\n").replace(
        "  %acc =", "  %e2 = tensor.empty() : tensor<4x2xf32>\n  %acc ="
    )
    assert fresh != mlp and _opt(bufferize, stdin=fresh).count("memref.alloc()") == 3
    # type conversion: reconcile-unrealized-casts removes exactly the unrealized casts (in pairs)
    to_llvm = [
        bufferize,
        "--convert-linalg-to-loops",
        "--convert-scf-to-cf",
        "--expand-strided-metadata",
        "--finalize-memref-to-llvm",
        "--convert-to-llvm",
    ]
    before = _opt(*to_llvm, "mlp.mlir")
    after = _opt("--reconcile-unrealized-casts", stdin=before)
    casts = before.count("builtin.unrealized_conversion_cast")
    assert casts and casts % 2 == 0 and "unrealized_conversion_cast" not in after
    assert len(before.splitlines()) - len(after.splitlines()) == casts
    # expand-strided-metadata: the tiled matmul's subviews survive the LLVM conversions without it
    tiled = [
        "--transform-preload-library=transform-library-paths=tile.mlir",
        "--transform-interpreter",
        "--canonicalize",
        *to_llvm[:4],
        "--lower-affine",
    ]
    assert "memref.subview" in _opt(
        *[a for a in tiled if a != "--expand-strided-metadata"],
        "--finalize-memref-to-llvm",
        "--convert-to-llvm",
        "matmul_bench.mlir",
    )
    assert "memref.subview" not in _opt(*tiled, "--finalize-memref-to-llvm", "--convert-to-llvm", "matmul_bench.mlir")
    # the rewrite section: upstream's math-uplift-to-fma checks the same flag but fuses @shared too
    source = re.search(r'SOURCE = """(.*?)"""', (SNIPPETS / "rewrite.py").read_text(encoding="utf-8"), re.S)
    assert source
    uplifted = _opt("--math-uplift-to-fma", stdin=source.group(1))
    assert uplifted.count("math.fma") == 2, uplifted
    strict = _opt("--math-uplift-to-fma", stdin=source.group(1).replace(" fastmath<contract>", ""))
    assert "math.fma" not in strict
    # the vectorized C tile is read and written back in every step of the k loop (its body up to the yield)
    vec = _opt(
        "--transform-preload-library=transform-library-paths=vectorize.mlir",
        "--transform-interpreter",
        "--canonicalize",
        "matmul_bench.mlir",
    )
    k_body = vec[vec.index("scf.for %arg7") :]
    k_body = k_body[: k_body.index("scf.yield")]
    assert "vector.transfer_read %arg8" in k_body and "vector.transfer_write" in k_body, k_body[-2000:]


def test_producer_rejects_bad_arguments():
    p = subprocess.run([sys.executable, str(PRODUCER), "--jobs", "0"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 2 and "--jobs must be at least 1" in p.stderr
    p = subprocess.run(
        [sys.executable, str(ROOT / "scripts/measure/mlir_architecture/matmul_cpu.py"), "--rounds", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and "--rounds must be at least 2" in p.stderr


def test_unknown_section_is_a_clear_error():
    with pytest.raises(KeyError, match="has no section 'nope'"):
        common.block("pipeline.sh", "nope")


def test_page_files_exist():
    for page in PAGES:
        assert page.is_file(), f"{page} missing"
    assert Path(ROOT / "requirements-mlir.txt").is_file()
