# Creates (or reuses) the project's virtual environment in .venv and installs
# the package with the given extras. Sourced by run.sh and test.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# Everything below runs .venv's programs by path. A virtual environment
# activated in the calling shell would be inherited by the processes the
# tests start, and IPython there warns that it is not installed in it.
unset VIRTUAL_ENV
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[$1]"
