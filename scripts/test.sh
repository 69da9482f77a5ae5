#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian machine, then run them.
#   bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

# The install needs about 8 GB: the venv takes 7.1 GB (torch, Triton, MLIR/JAX, the oneAPI wheels),
# Debian's Chromium, CJK fonts and Open MPI the rest. pip keeps no second copy of the wheels it
# downloads (without this, ~/.cache/pip holds the downloaded wheels too, several GB on a machine with no
# local mirror; a CI run on 2026-12-03 stopped with "No space left on device" while installing).
export PIP_NO_CACHE_DIR=1
avail_kb=$(df -Pk . | awk 'NR == 2 {print $4}')
echo "test.sh: $((avail_kb / 1024)) MiB free on $(df -P . | awk 'NR == 2 {print $6}') before the install (about 8 GB is needed on a fresh machine)"
if [ ! -d .venv ] && [ "$avail_kb" -lt $((9 * 1024 * 1024)) ]; then
  echo "test.sh: WARNING: less than 9 GiB free and no .venv yet: the install may stop with 'No space left on device'" >&2
fi

need_apt=()
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || need_apt+=(fonts-noto-cjk)
command -v npm >/dev/null || need_apt+=(nodejs npm)
# the oneAPI page compares Intel MPI with Debian's Open MPI and links oneMKL through pkg-config
command -v mpirun.openmpi >/dev/null || need_apt+=(openmpi-bin libopenmpi-dev)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need_apt[@]}" >/dev/null
  $SUDO apt-get clean  # the downloaded .deb files are not needed once installed
fi

PY=${PYTHON:-python3}
[ -d .venv ] || $PY -m venv .venv
. .venv/bin/activate
# uv installs the pinned requirements about 45 s faster than pip on the CI machine (54 s against 102 s
# for the three files below, bytecode compiled by both, the same packages installed). uv reads none of
# pip's configuration, so scripts/uv_env.py hands it the sources pip is configured with (find-links with
# a local torch CPU build, mirrors, constraints), in the uv calls' environment only. If uv cannot be
# installed, if uv_env.py fails, or if uv fails on a file, pip installs that file as before.
UV="" UV_EXPORTS=""
if python -m pip install -q --disable-pip-version-check uv==0.9.0 && UV_EXPORTS=$(python scripts/uv_env.py); then
  UV=$(command -v uv || true)
fi
install() {  # install <requirements file>
  # UV_NO_CACHE: uv keeps no cache directory after the install, as PIP_NO_CACHE_DIR above
  if [ -n "$UV" ] && (eval "$UV_EXPORTS" && UV_NO_CACHE=1 "$UV" pip install -q --python "$(command -v python)" \
      --compile-bytecode -r "$1"); then
    return
  fi
  [ -z "$UV" ] || echo "test.sh: uv could not install $1; installing it with pip" >&2
  python -m pip install -q --disable-pip-version-check -r "$1"
}
install requirements-test.txt
# the site's own code (scripts/sitekit, scripts/measure) as an importable package: pyproject.toml
python -m pip install -q --disable-pip-version-check --no-deps -e .
# the CUDA toolchain from PyPI (nvcc, ptxas, cuobjdump, nvdisasm) for the CUDA pipeline page:
# compiling and disassembling need no GPU
install requirements-cuda.txt
# Intel MPI, oneMKL and the SYCL CPU runtime as wheels (about 3.3 GB) for the oneAPI page
install requirements-oneapi.txt
python scripts/vendor_js.py
export NO_MKDOCS_2_WARNING=1
# lint (pyproject.toml [tool.ruff]) before the long tests: a mistake shows in seconds
ruff check --no-cache .
ruff format --check --no-cache .
# two workers: the CI machine has 2 cores
# worksteal: an idle worker takes queued tests from the busy one, so the long tests at the end do not
# leave a core idle (measured here: 618 s against 744 s with the default load scheduling)
exec python -m pytest -n "${PYTEST_WORKERS:-2}" --dist worksteal "$@"
