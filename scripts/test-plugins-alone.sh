#!/usr/bin/env bash
# Test each plugin alone: the core plus that one plugin in a fresh virtual environment.
# Catches a plugin that leans on a sibling's dependency or on a sibling being installed.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
for dir in plugins/*/; do
  name=$(basename "$dir")
  venv=".venv-alone/$name"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[test]" -e "$dir" </dev/null
  echo "== $name alone"
  (cd "$dir" && MINO_STRICT_PLUGINS=1 "../../$venv/bin/python" -m pytest \
      tests </dev/null)
done
