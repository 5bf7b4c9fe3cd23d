# Shared by ./run and ./run-tests: create .venv beside the checkout and install into it.
# Usage: source scripts/env.sh; ensure_venv; pip_install <args>
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${PPVIZ_VENV:-$ROOT/.venv}"
PY="$VENV/bin/python"

ensure_venv() {
  if [ ! -x "$PY" ]; then
    echo "==> creating virtual environment in $VENV"
    python3 -m venv "$VENV"
    "$PY" -m pip install --quiet --upgrade pip
  fi
}

pip_install() {
  "$PY" -m pip install --quiet --disable-pip-version-check "$@"
}
