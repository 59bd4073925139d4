#!/usr/bin/env bash
# Test each plugin alone: the core plus that one plugin in its own virtual environment
# (.venv-alone/NAME). Catches a plugin that leans on a sibling's dependency or on a sibling
# being installed. An environment is rebuilt only when what it installs from changed (the
# two pyproject files, constraints.txt, this script, the Python); every plugin is tested
# even when an earlier one failed, and the exit status says whether all passed.
set -uo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
status=0
# pip warns once per package about an index folder a machine's pip.conf names but lacks.
pip_quiet() { "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2); }
for dir in plugins/*/; do
  name=$(basename "$dir")
  venv=".venv-alone/$name"
  hash=$({ cat pyproject.toml "$dir/pyproject.toml" constraints.txt scripts/test-plugins-alone.sh
           "$python" -c 'import sys; print(sys.version)'; } | sha256sum | cut -d' ' -f1)
  if [ -f "$venv/.mino-stamp" ] && [ "$(cat "$venv/.mino-stamp")" = "$hash" ] &&
     "$venv/bin/python" -c 'import sys
from importlib.metadata import version
for name in sys.argv[1:]:
    version(name)' mino-core "$name" pytest 2>/dev/null; then
    echo "== $name alone: $venv is up to date"
  else
    echo "== $name alone: installing mino-core[test] and $name into $venv..."
    rm -rf "$venv"
    pip=(pip_quiet "$venv/bin/python" -m pip install -q --disable-pip-version-check -c constraints.txt)
    if ! { "$python" -m venv "$venv" && "${pip[@]}" setuptools wheel </dev/null &&
           "${pip[@]}" --no-build-isolation -e ".[test]" -e "$dir" </dev/null; }; then
      echo "== $name alone: could not install" >&2
      status=1
      continue
    fi
    echo "$hash" > "$venv/.mino-stamp"
  fi
  echo "== $name alone: pytest"
  (cd "$dir" && MINO_STRICT_PLUGINS=1 "../../$venv/bin/python" -m pytest \
      tests </dev/null) || status=1
done
exit $status
