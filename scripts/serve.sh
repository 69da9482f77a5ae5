#!/usr/bin/env bash
# Install the site's dependencies on a fresh machine and serve it at http://127.0.0.1:8000/
#   bash scripts/serve.sh [mkdocs serve args...]
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi
PY=${PYTHON:-python3}
[ -d .venv ] || $PY -m venv .venv
. .venv/bin/activate
python -m pip install -q --disable-pip-version-check -r requirements.txt
python -m pip install -q --disable-pip-version-check --no-deps -e .
python scripts/vendor_js.py
export NO_MKDOCS_2_WARNING=1
exec mkdocs serve "$@"
