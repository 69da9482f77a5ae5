"""Print `export` lines that give uv the package sources pip is configured with on this machine.

scripts/test.sh installs the pinned requirements with uv (about 45 s faster than pip on the CI machine),
and uv reads none of pip's configuration: not pip.conf, not the PIP_* variables. A machine that serves
its own wheels (a local torch CPU build through `find-links`, a mirror through `index-url`) must give uv
the same sources, or uv would resolve the same pins from other files (PyPI's CUDA build of torch, for
one). This reads pip's effective settings with `pip config list` and maps them:

    index-url        -> UV_DEFAULT_INDEX
    extra-index-url  -> UV_INDEX (space-separated)
    find-links       -> UV_FIND_LINKS (comma-separated)
    no-index         -> UV_NO_INDEX
    constraint       -> UV_CONSTRAINT (space-separated)
    trusted-host     -> UV_INSECURE_HOST (space-separated)
    cert             -> SSL_CERT_FILE
    client-cert      -> SSL_CLIENT_CERT

An extra index or a find-links location on this machine's disk that does not exist is left out (pip
warns and goes on; uv would stop). A main index on disk that does not exist stops this script with an
error, so that test.sh installs with pip instead of sending uv to PyPI. UV_INDEX_STRATEGY=unsafe-best-match
makes uv choose among all indexes as pip does. test.sh applies the lines to the uv calls only.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from urllib.parse import urlparse

KEYS = ("index-url", "extra-index-url", "find-links", "no-index", "constraint", "trusted-host", "cert", "client-cert")


def pip_settings(listing: str) -> dict[str, str]:
    """{key: value} from `pip config list` output, which prints each value as a Python string literal (a
    value written over several lines of pip.conf comes out as one literal with "\\n" in it); a PIP_*
    variable (":env:.") wins over a file, as in pip."""
    files, env = {}, {}
    for line in listing.splitlines():
        m = re.match(r"^(:env:|[\w-]+)\.([\w-]+)=(.*)$", line.strip())
        if not m or m.group(2) not in KEYS:
            continue
        section, key, literal = m.groups()
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            value = literal.strip("'\"")
        if section == ":env:":
            env[key] = str(value)
        elif section in ("global", "install"):
            files[key] = str(value)
    return {**files, **env}


def _exists(location: str) -> bool:
    if "://" not in location:
        return os.path.exists(location)
    u = urlparse(location)
    return u.scheme != "file" or os.path.exists(u.path)


def uv_exports(settings: dict[str, str]) -> dict[str, str]:
    out = {"UV_INDEX_STRATEGY": "unsafe-best-match"}
    if v := settings.get("index-url", "").strip():
        if not _exists(v):
            raise SystemExit(f"uv_env: pip's index-url {v} does not exist on this machine; install with pip")
        out["UV_DEFAULT_INDEX"] = v
    extra = [x for x in settings.get("extra-index-url", "").split() if _exists(x)]
    if extra:
        out["UV_INDEX"] = " ".join(extra)
    links = [x for x in settings.get("find-links", "").split() if _exists(x)]
    if links:
        out["UV_FIND_LINKS"] = ",".join(links)
    if settings.get("no-index", "").strip().lower() in ("1", "true", "yes", "on"):
        out["UV_NO_INDEX"] = "1"
    constraints = [x for x in settings.get("constraint", "").split() if "://" in x or os.path.exists(x)]
    if constraints:
        out["UV_CONSTRAINT"] = " ".join(constraints)
    if hosts := settings.get("trusted-host", "").split():
        out["UV_INSECURE_HOST"] = " ".join(hosts)
    if (v := settings.get("cert")) and os.path.exists(v):
        out["SSL_CERT_FILE"] = v
    if (v := settings.get("client-cert")) and os.path.exists(v):
        out["SSL_CLIENT_CERT"] = v
    return out


def main() -> None:
    listing = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=True
    ).stdout
    for k, v in uv_exports(pip_settings(listing)).items():
        print(f"export {k}={shlex.quote(v)}")


if __name__ == "__main__":
    main()
