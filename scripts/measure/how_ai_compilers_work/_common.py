"""Shared by the how_ai_compilers_work_* measurement scripts: snippet loading, ceilings, timing.

Not a measurement script itself (it writes nothing): the three scripts beside it import it.
"""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time

from sitekit import ROOT  # noqa: E402

SNIPPETS = ROOT / "snippets" / "how_ai_compilers_work"


def load_snippet(name: str):
    """Import snippets/how_ai_compilers_work/<name>.py: the page's code is the code we time."""
    path = SNIPPETS / f"{name}.py"
    if not path.is_file():
        raise SystemExit(f"snippet {path} not found")
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod            # @triton.jit reads the source through the module
    spec.loader.exec_module(mod)
    return mod


SMOKE = False    # --smoke: run the script's logic on a CPU through Triton's interpreter; writes nothing


def start_smoke():
    """Switch to smoke mode. Call before any snippet is loaded (they read TRITON_INTERPRET on import)."""
    global SMOKE
    SMOKE = True
    os.environ["TRITON_INTERPRET"] = "1"


def require_cuda(script: str):
    """Exit unless a CUDA GPU is usable. Asked in a child process, so that this process's CUDA
    driver stays uninitialized (a process that forks workers must not have touched CUDA)."""
    if SMOKE:
        return
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != "True":
        sys.exit(f"{script}: needs a CUDA GPU (torch.cuda.is_available() is not True); "
                 "--smoke runs the logic on a CPU without writing data")


def sync():
    import torch
    if not SMOKE:
        torch.cuda.synchronize()


def bench(fn, rep=200):
    """Median milliseconds over do_bench's repetitions (CUDA events), after one checked call."""
    if SMOKE:
        fn()
        t = []
        for _ in range(3):
            t0 = time.perf_counter()
            fn()
            t.append((time.perf_counter() - t0) * 1e3)
        return sorted(t)[1]
    import torch
    from triton.testing import do_bench
    fn()
    torch.cuda.synchronize()
    return do_bench(fn, warmup=25, rep=rep, return_mode="median")


def ceilings(rows: list | None = None) -> dict:
    """Copy bandwidth (bytes read + written) and the cuBLAS fp16 rate, measured in this run."""
    if SMOKE:   # placeholders: smoke runs check logic, never numbers
        return {"copy_tbps": 1.0, "mm_tflops": 1.0}
    import torch
    nbytes = 1 << 30
    src = torch.randint(0, 255, (nbytes,), dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    assert torch.equal(dst, src)
    copy_tbps = 2 * nbytes / bench(lambda: dst.copy_(src)) / 1e9
    del src, dst
    s = 8192
    A = torch.randn(s, s, device="cuda", dtype=torch.float16)
    B = torch.randn(s, s, device="cuda", dtype=torch.float16)
    C = A @ B
    refc = A.float() @ B.float()
    assert (C.float() - refc).norm() / refc.norm() < 1e-2
    del C, refc
    mm_tflops = 2 * s ** 3 / bench(lambda: A @ B, rep=100) / 1e9
    del A, B
    out = {"copy_tbps": copy_tbps, "mm_tflops": mm_tflops}
    if rows is not None:
        rows.append({"case": "aic_ceiling", "aic_impl": "aic_copy_1gib", "tbps": copy_tbps})
        rows.append({"case": "aic_ceiling", "aic_impl": "aic_cublas_fp16_8192", "tflops": mm_tflops})
    return out


if __name__ == "__main__":
    print(__doc__)


def finish(name: str, metrics: dict, rows: list, out, argv, script: str) -> int:
    """Validate the dataset; write it (atomically), or in a smoke run only report that it is valid."""
    from sitekit import data
    ds = data.new(name, metrics, rows, argv=[script, *(argv if argv is not None else sys.argv[1:])])
    if SMOKE:
        data.validate(ds, "smoke run")
        print(f"smoke run: {len(rows)} rows valid, nothing written")
        return 0
    print("wrote", data.write(ds, out))
    return 0
