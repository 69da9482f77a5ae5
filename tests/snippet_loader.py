"""Import a snippet file under a private module name, with Triton's interpreter on or off
while its @triton.jit functions are created (the choice is made at decoration time)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path


def load(path: Path, name: str, interpret: bool):
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if old is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = old
    return mod
