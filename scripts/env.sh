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

# Debian's Chromium for the browser tests; Playwright drives it, it never downloads a browser.
ensure_chromium() {
  if [ -x "${PPVIZ_CHROMIUM:-/usr/bin/chromium}" ]; then
    return
  fi
  echo "==> installing Debian's chromium for the browser tests"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
}

# The widget's build and test tools from js/package-lock.json, then the bundle
# ppviz/static/widget.js (so the editable install below finds it and skips its own npm run).
ensure_js() {
  echo "==> npm ci in js/ and building the widget bundle"
  (cd "$ROOT/js" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error && npm run --silent build)
}

# Copies of notebooks/ to run and edit in Jupyter ($PPVIZ_SCRATCH, by default scratch/ in the
# checkout, which git ignores), so running them never changes the stored notebooks. A copy
# that exists is kept (it may hold your edits): delete it to get the current notebook.
SCRATCH="${PPVIZ_SCRATCH:-$ROOT/scratch}"
scratch_notebooks() {
  mkdir -p "$SCRATCH"
  local notebook
  for notebook in "$ROOT"/notebooks/*.ipynb; do
    if [ ! -e "$SCRATCH/$(basename "$notebook")" ]; then cp "$notebook" "$SCRATCH/"; fi
  done
}

# The documentation site (mkdocs.yml) into site/, built afresh; arguments go to `mkdocs build`.
build_docs() {
  echo "==> building the documentation site (MkDocs) into site/"
  # Material prints a banner about a future MkDocs 2 on every build; it says nothing about this site
  (cd "$ROOT" && NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true "$VENV/bin/mkdocs" build --clean "$@")
}
