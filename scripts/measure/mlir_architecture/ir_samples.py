#!/usr/bin/env python3
"""Every IR sample and command output shown on the page "MLIR Architecture", regenerated on the CPU.

Runs each shell block of the page (snippets/mlir_architecture/env.sh + a section of commands.sh,
pipeline.sh or bench.sh) and each Python snippet with the pinned tools of requirements-mlir.txt
(MLIR 22.1.8 from PyPI, iree-base-compiler, JAX, torch-mlir) and Triton 3.6, and writes their output
to data/mlir_architecture/ir/<sample>.txt, plus a manifest dataset (sample, source, lines).
tests/test_mlir_architecture.py runs it again into a temporary folder and fails on any difference,
so a tool upgrade shows up as a diff. No GPU: Triton compiles for sm_90 without one.

    python scripts/measure/mlir_architecture/ir_samples.py [--out data/mlir_architecture/ir_samples.json] [--ir-dir DIR]
"""
from __future__ import annotations

META = {"needs": "cpu", "tier": "nightly", "budget_s": 60}

import re
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from sitekit import data

from measure.cuda_compilation_pipeline._triton_ir import strip_llir, strip_mlir, strip_ptx
from measure.mlir_architecture._common import IR, ROOT, run_block, run_python, write_text

NAME = data.name_of(__file__)

# sample name -> (script, section): the page shows env.sh + that section, and this sample under it
SHELL = {
    "version": ("commands.sh", "version"),
    "custom": ("commands.sh", "custom"),
    "generic": ("commands.sh", "generic"),
    "verify": ("commands.sh", "verify"),
    "effects": ("commands.sh", "effects"),
    "tosa_fail": ("commands.sh", "tosa-fail"),
    "tosa_ok": ("commands.sh", "tosa-ok"),
    "triton_passes": ("commands.sh", "triton-dump"),
    "gpu": ("commands.sh", "gpu"),
    "stage_bufferized": ("pipeline.sh", "bufferized"),
    "stage_loops": ("pipeline.sh", "loops"),
    "stage_affine": ("pipeline.sh", "affine"),
    "stage_cf": ("pipeline.sh", "cf"),
    "stage_llvm": ("pipeline.sh", "llvm"),
    "stage_llvmir": ("pipeline.sh", "llvmir"),
    "run": ("pipeline.sh", "run"),
    "dump_pipeline": ("pipeline.sh", "dump-pipeline"),
    "after_all": ("pipeline.sh", "after-all"),
    "timing": ("pipeline.sh", "timing"),
    "tiled": ("bench.sh", "tile"),
    "vectorized": ("bench.sh", "vectorize"),
}
# samples whose numbers change from run to run: the test compares them with every number masked
VOLATILE = {"timing"}
NUMBER = re.compile(r"\d+(?:\.\d+)?")

EXCERPT = {"triton_llir_excerpt": ("llir", r"^define |cp\.async|wgmma|barrier"),
           "triton_ptx_excerpt": ("ptx", r"^\.visible \.entry|cp\.async|wgmma|bar\.sync")}


def mask_numbers(text: str) -> str:
    """The text with every number replaced by N and runs of spaces by one (numbers are padded)."""
    return re.sub(r"[ \t]+", " ", NUMBER.sub("N", text))


def excerpt(text: str, pattern: str, width: int = 150) -> str:
    """The lines matching pattern, with their line numbers, cut at width characters."""
    lines = text.splitlines()
    keep = [f"{i:4d}  {l if len(l) <= width else l[:width] + ' …'}"
            for i, l in enumerate(lines, 1) if re.search(pattern, l.strip() if pattern.startswith("^") else l)]
    return f"; {len(keep)} of {len(lines)} lines: those matching /{pattern}/\n" + "\n".join(keep) + "\n"


def triton_samples() -> dict[str, str]:
    import os
    import tempfile
    with tempfile.TemporaryDirectory(prefix="triton_cache_") as cache:
        os.environ["TRITON_CACHE_DIR"] = cache      # compile for real, never from a cache
        from sitekit import measure
        mod = measure.snippet("mlir_architecture/triton_stages")    # compiles at import, prints the summary
        k = mod.kernel
    out = {"triton_ttir": strip_mlir(k.asm["ttir"]), "triton_ttgir": strip_mlir(k.asm["ttgir"])}
    stripped = {"llir": strip_llir(k.asm["llir"]), "ptx": strip_ptx(k.asm["ptx"])}
    for name, (stage, pattern) in EXCERPT.items():
        out[name] = excerpt(stripped[stage], pattern)
    return out


def python_samples() -> dict[str, str]:
    out = {}
    summary, _ = run_python("triton_stages.py")
    out["triton_summary"] = summary
    out["rewrite"], _ = run_python("rewrite.py")
    xla, _ = run_python("xla.py")
    i = xla.index("HloModule")
    out["xla_stablehlo"], out["xla_hlo"] = xla[:i].rstrip() + "\n", xla[i:].rstrip() + "\n"
    torch_out, _ = run_python("torch_import.py")
    i = torch_out.index("#map")
    out["torch_dialect"], out["torch_linalg"] = torch_out[:i].rstrip() + "\n", torch_out[i:].rstrip() + "\n"
    return out


SOURCES = {**{k: f"{s}:{sec}" for k, (s, sec) in SHELL.items()},
           "triton_ttir": "triton_stages.py", "triton_ttgir": "triton_stages.py",
           "triton_llir_excerpt": "triton_stages.py", "triton_ptx_excerpt": "triton_stages.py",
           "triton_summary": "triton_stages.py", "rewrite": "rewrite.py", "xla_stablehlo": "xla.py",
           "xla_hlo": "xla.py", "torch_dialect": "torch_import.py", "torch_linalg": "torch_import.py"}


def generate(jobs: int = 2) -> dict[str, str]:
    """{sample name: text} for every sample the page shows."""
    with ThreadPoolExecutor(max_workers=jobs) as ex:
        shell = {name: ex.submit(run_block, *where) for name, where in SHELL.items()}
        py = ex.submit(python_samples)
        out = {name: f.result() for name, f in shell.items()}
        out.update(py.result())
    out.update(triton_samples())
    return {k: v.replace(str(ROOT), "<repo>") for k, v in sorted(out.items())}


def main(argv=None) -> int:
    ap = data.arg_parser(__doc__, NAME)
    ap.add_argument("--ir-dir", type=Path, default=IR, help="where the samples go (default data/mlir_architecture/ir)")
    ap.add_argument("--jobs", type=int, default=2, help="blocks run at once (default 2: the CI machine has 2 cores)")
    args = ap.parse_args(argv)
    if args.jobs < 1:
        ap.error(f"--jobs must be at least 1, got {args.jobs}")
    samples = generate(args.jobs)
    if not args.quick:
        for name, text in samples.items():
            write_text(args.ir_dir / f"{name}.txt", text)
    rows = [{"sample": name, "source": SOURCES[name], "lines": len(text.splitlines())}
            for name, text in samples.items()]
    metrics = {"lines": {"unit": "lines", "noise": 0, "fmt": "d", "check": False}}
    ds = data.new(NAME, metrics, rows, argv=[__file__, *(argv if argv is not None else sys.argv[1:])])
    ds["sources"].update(run_sources())
    return data.save(ds, args.out, quick=args.quick)


def run_sources() -> dict[str, str]:
    """{repository path: source_hash} of the snippet files the samples come from but this process does not
    import (they run as subprocesses): the shell scripts, the Python snippets, and the .mlir inputs, so a
    change to any of them marks this dataset stale (tests/test_data.py) until it is regenerated."""
    from sitekit import measure

    folder = ROOT / "snippets" / "mlir_architecture"
    names = {s for s, _ in SHELL.values()} | {"env.sh", "tools.py", "rewrite.py", "xla.py", "torch_import.py"}
    files = sorted([folder / n for n in names] + list(folder.glob("*.mlir")))
    return {str(f.relative_to(ROOT)): measure.source_hash(f.read_bytes(), f) for f in files}


if __name__ == "__main__":
    raise SystemExit(main())
