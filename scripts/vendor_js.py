#!/usr/bin/env python3
"""Fetch the pinned KaTeX and Mermaid packages from the npm registry and copy what the site serves.

The site makes no third-party requests: math and diagrams render from files under
overrides/assets/vendor/, which MkDocs copies into the built site. Each tarball's
integrity hash is checked against the pin below before anything is copied.

    python scripts/vendor_js.py            # fetch if missing or outdated
    python scripts/vendor_js.py --force    # fetch again
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "overrides" / "assets" / "vendor"

PINS = {
    "katex": (
        "0.16.25",
        "sha512-woHRUZ/iF23GBP1dkDQMh1QBad9dmr8/PAwNA54VrSOVYgI12MAcE14TqnDdQOdzyEonGzMepYnqBMYdsoAr8Q==",
        # (path in the package, path under vendor/katex)
        [
            ("package/dist/katex.min.js", "katex.min.js"),
            ("package/dist/katex.min.css", "katex.min.css"),
            ("package/dist/contrib/auto-render.min.js", "auto-render.min.js"),
            ("package/dist/fonts/", "fonts/"),
            ("package/LICENSE", "LICENSE"),
        ],
    ),
    "mermaid": (
        "11.12.1",
        "sha512-UlIZrRariB11TY1RtTgUWp65tphtBv4CSq7vyS2ZZ2TgoMjs2nloq+wFqxiwcxlhHUvs7DPGgMjs2aeQxz5h9g==",
        # the ESM build loads each diagram type's code on demand, so a page with one
        # flowchart downloads a fraction of the 2.7 MB single-file build
        [
            ("package/dist/mermaid.esm.min.mjs", "mermaid.esm.min.mjs"),
            ("package/dist/chunks/mermaid.esm.min/", "chunks/mermaid.esm.min/"),
            ("package/LICENSE", "LICENSE"),
        ],
    ),
}


def integrity(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def fetch(name: str, version: str, want: str, files, tmp: Path) -> None:
    if shutil.which("npm") is None:
        sys.exit("vendor_js: `npm` not found. Install Node.js and npm (Debian: apt-get install nodejs npm).")
    out = subprocess.run(
        ["npm", "pack", f"{name}@{version}", "--json", "--pack-destination", str(tmp)],
        capture_output=True,
        text=True,
        cwd=tmp,
    )
    if out.returncode != 0:
        sys.exit(f"vendor_js: `npm pack {name}@{version}` failed:\n{out.stderr}")
    tgz = tmp / json.loads(out.stdout)[0]["filename"]
    got = integrity(tgz)
    if got != want:
        sys.exit(f"vendor_js: {name}@{version} integrity mismatch: got {got}, pinned {want}")
    dest = VENDOR / name
    if dest.exists():
        shutil.rmtree(dest)
    with tarfile.open(tgz) as tar:
        members = tar.getmembers()
        for src, dst in files:
            chosen = [
                m for m in members if m.isfile() and (m.name == src or (src.endswith("/") and m.name.startswith(src)))
            ]
            if not chosen:
                sys.exit(f"vendor_js: {src} not in {tgz.name}")
            for m in chosen:
                rel = dst + m.name[len(src) :] if src.endswith("/") else dst
                target = dest / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(m) as f:
                    target.write_bytes(f.read())
    (dest / "VERSION").write_text(f"{name}@{version} {want}\n")
    print(f"vendored {name}@{version} -> {dest.relative_to(ROOT)}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--force", action="store_true", help="fetch even if the pinned version is present")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as t:
        for name, (version, want, files) in PINS.items():
            stamp = VENDOR / name / "VERSION"
            if not args.force and stamp.exists() and stamp.read_text().strip() == f"{name}@{version} {want}":
                print(f"{name}@{version} already vendored")
                continue
            fetch(name, version, want, files, Path(t))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
