"""Print `export` lines that give uv the package sources pip is configured with on this machine.

scripts/test.sh installs the pinned requirements with uv (about 45 s faster than pip on the CI machine),
and uv reads none of pip's configuration: not pip.conf, not the PIP_* variables. A machine that serves
its own wheels (a local torch CPU build through `find-links`, a mirror through `index-url`) must give uv
the same sources, or uv would resolve the same pins from other files (PyPI's CUDA build of torch, for
one). This reads pip's effective settings with `pip config list` and maps them:

    index-url        -> UV_DEFAULT_INDEX
    extra-index-url  -> UV_INDEX (space-separated)
    find-links       -> UV_FIND_LINKS (comma-separated)
    constraint       -> UV_CONSTRAINT (space-separated)
    cert             -> SSL_CERT_FILE

A file:// index or a local path that does not exist is left out (pip warns and goes on; uv would stop).
UV_INDEX_STRATEGY=unsafe-best-match makes uv choose among all indexes as pip does. Run with the venv's
python: `eval "$(python scripts/uv_env.py)"`.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from urllib.parse import urlparse

KEYS = ("index-url", "extra-index-url", "find-links", "constraint", "cert")


def pip_settings(listing: str) -> dict[str, str]:
    """{key: value} from `pip config list` output; a PIP_* variable (":env:.") wins over a file."""
    files, env = {}, {}
    for line in listing.splitlines():
        m = re.match(r"^(:env:|[\w-]+)\.([\w-]+)='(.*)'$", line.strip())
        if not m or m.group(2) not in KEYS:
            continue
        section, key, value = m.groups()
        if section == ":env:":
            env[key] = value
        elif section in ("global", "install"):
            files[key] = value
    return {**files, **env}


def _exists(location: str) -> bool:
    if "://" not in location:
        return os.path.exists(location)
    u = urlparse(location)
    return u.scheme != "file" or os.path.exists(u.path)


def uv_exports(settings: dict[str, str]) -> dict[str, str]:
    out = {"UV_INDEX_STRATEGY": "unsafe-best-match"}
    if (v := settings.get("index-url")) and _exists(v):
        out["UV_DEFAULT_INDEX"] = v
    extra = [x for x in settings.get("extra-index-url", "").split() if _exists(x)]
    if extra:
        out["UV_INDEX"] = " ".join(extra)
    links = [x for x in settings.get("find-links", "").split() if _exists(x)]
    if links:
        out["UV_FIND_LINKS"] = ",".join(links)
    constraints = [x for x in settings.get("constraint", "").split() if os.path.exists(x)]
    if constraints:
        out["UV_CONSTRAINT"] = " ".join(constraints)
    if (v := settings.get("cert")) and os.path.exists(v):
        out["SSL_CERT_FILE"] = v
    return out


def main() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    for k, v in uv_exports(pip_settings(listing)).items():
        print(f"export {k}={shlex.quote(v)}")


if __name__ == "__main__":
    main()
