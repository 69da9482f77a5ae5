"""Regenerate the PTX sample and the PTX table of "Getting Started with OpenAI Triton" on the CPU.

scripts/measure/triton_getting_started/ptx.py compiles the page's add_kernel for sm_90 with the
wrapper's defaults (no GPU needed) and writes data/triton_getting_started/ptx.json and
data/triton_getting_started/ir/add_kernel.sm_90a.ptx. This test runs it into a temporary folder and
fails if either differs from the committed files, so the page never shows PTX that the kernel, the
wrapper's defaults or the pinned Triton no longer produce. Only the PTX ISA version line is
normalized (it follows the ptxas that Triton bundles).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from once import shared_once

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "measure" / "triton_getting_started" / "ptx.py"
PTX = ROOT / "data" / "triton_getting_started" / "ir" / "add_kernel.sm_90a.ptx"
DATASET = ROOT / "data" / "triton_getting_started" / "ptx.json"
INCLUDE = "data/triton_getting_started/ir/add_kernel.sm_90a.ptx"


def _normalize(ptx: str) -> str:
    ptx = re.sub(r"^\.version \d+\.\d+$", ".version X.Y", ptx, flags=re.M)
    return re.sub(r"^//.*$\n?", "", ptx, flags=re.M)  # generator banners, paths


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    return shared_once(tmp_path_factory, "getting-started-ptx", _regenerate)[1]


def _regenerate(t):
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(t / "cache")  # compile for real, not from a cache
    p = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(t / "ptx.json"), "--ptx-out", str(t / "k.ptx")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads((t / "ptx.json").read_text()), (t / "k.ptx").read_text()


def test_ptx_sample_is_what_the_kernel_compiles_to(regenerated):
    _, ptx = regenerated
    assert _normalize(ptx) == _normalize(PTX.read_text()), (
        f"{PTX.relative_to(ROOT)} is stale: run python {SCRIPT.relative_to(ROOT)}"
    )


def test_ptx_table_matches(regenerated):
    new, _ = regenerated
    old = json.loads(DATASET.read_text())
    assert new["rows"] == old["rows"], f"{DATASET.relative_to(ROOT)} is stale: run python {SCRIPT.relative_to(ROOT)}"
    assert new["metrics"] == old["metrics"]


def test_sample_shows_the_vectorized_kernel():
    ptx = PTX.read_text()
    assert ".target sm_90a" in ptx
    assert "ld.global.v4.b32" in ptx and "st.global.v4.b32" in ptx
    assert "ld.global.b32" not in ptx  # the multiple-of-16 variant: no scalar loads


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_both_pages_include_the_sample(lang):
    page = (ROOT / "docs" / lang / "triton-getting-started.md").read_text(encoding="utf-8")
    assert f'--8<-- "{INCLUDE}"' in page


_DUPLICATES = """
import json, re, sys
sys.path.insert(0, "snippets/triton_getting_started")
from inspect_kernel import compile_add
ptx = compile_add(False, 128, 8).asm["ptx"]
print(json.dumps({"loads": sorted(set(re.findall(r"@(%p\\d+) ld\\.global", ptx))),
                  "stores": sorted(set(re.findall(r"@(%p\\d+) st\\.global", ptx))),
                  "mod128": bool(re.search(r"and\\.b32\\s+%r\\d+, %r\\d+, 127;", ptx))}))
"""


def test_fewer_elements_than_threads_load_every_copy_and_store_one():
    """The page: with fewer elements than threads (128 on 8 warps), several threads hold copies of the same
    elements; every copy is loaded, only one is stored. In the PTX: element index = thread index mod 128,
    the loads are guarded by the bounds predicate only, the store by another one."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-c", _DUPLICATES], cwd=ROOT, env=env, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout)
    assert got["mod128"] and got["loads"] and got["stores"], got
    assert not set(got["loads"]) & set(got["stores"]), got
