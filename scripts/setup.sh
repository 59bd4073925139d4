#!/usr/bin/env bash
# Set up mino from a fresh clone: bubblewrap for the sandbox, a virtual environment in
# .venv, and the six distributions installed editable, third-party versions pinned by
# constraints.txt. Run it again at any time: when nothing it installs from changed
# (pyproject files, constraints.txt, this script, the Python) it finishes in a second.
#
#   bash scripts/setup.sh           mino itself
#   bash scripts/setup.sh --test    also the test tools (pytest, hypothesis, pyte), psycopg
#                                   and PostgreSQL's server (the shared-journal tests)
#   bash scripts/setup.sh --link    also put `mino` on your PATH (a link in ~/.local/bin)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

extras="" link=no
for arg in "$@"; do
  case "$arg" in
    --test) extras="[test]" ;;
    --link) link=yes ;;
    *) echo "setup: unknown option $arg (use --test, --link)" >&2; exit 2 ;;
  esac
done
say() { echo "setup: $*"; }

install_bwrap() {
  command -v bwrap >/dev/null 2>&1 && return 0
  [ "$(uname -s)" = Linux ] || return 0   # macOS uses the built-in sandbox-exec
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      say "bubblewrap is not installed and I cannot install it without root;" \
          "Bash will ask before each command. Install the 'bubblewrap' package to sandbox it." >&2
      return 0
    fi
  fi
  say "installing bubblewrap (the sandbox for Bash)..."
  if command -v apt-get >/dev/null 2>&1; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null >/dev/null || true
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap </dev/null >/dev/null || true
  elif command -v dnf >/dev/null 2>&1; then $sudo dnf install -y -q bubblewrap </dev/null || true
  elif command -v apk >/dev/null 2>&1; then $sudo apk add -q bubblewrap </dev/null || true
  elif command -v pacman >/dev/null 2>&1; then $sudo pacman -S --noconfirm bubblewrap </dev/null || true
  fi
  command -v bwrap >/dev/null 2>&1 || say "could not install bubblewrap; Bash will ask before each command." >&2
}

install_bwrap
# PostgreSQL's server programs for the shared-journal tests (they start their own cluster)
[ -n "$extras" ] && bash scripts/postgres.sh </dev/null

python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  say "creating the virtual environment .venv ($("$python" --version 2>&1))..."
  "$python" -m venv .venv
fi

# What the install depends on; the same hash means the same install.
inputs() {
  cat pyproject.toml plugins/*/pyproject.toml constraints.txt scripts/setup.sh
  echo "extras=$extras"
  .venv/bin/python -c 'import sys; print(sys.version)'
}
stamp=.venv/.mino-setup-stamp
hash=$(inputs | sha256sum | cut -d' ' -f1)
# ...and what it installed is still there (a package removed by hand is put back).
installed() {
  local wanted="mino-core mino-tools-fs mino-memory-files mino-memory-graph mino-mcp mino-mcp-memory"
  [ -n "$extras" ] && wanted="$wanted pytest hypothesis pyte wheel psycopg"
  .venv/bin/python -c 'import sys
from importlib.metadata import version
for name in sys.argv[1:]:
    version(name)' $wanted 2>/dev/null
}
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] && [ -x .venv/bin/mino ] && installed; then
  say "up to date: nothing changed since the last set-up (.venv)"
else
  # pip warns once per package about an index folder a machine's pip.conf names but lacks.
  pip=(pip_quiet .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt)
  pip_quiet() { "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2); }
  # Build the editable installs with the environment's own setuptools and wheel (pinned),
  # not a fresh download of them for each distribution; the tests build wheels with them.
  if ! .venv/bin/python -c "import setuptools, wheel" 2>/dev/null; then
    say "installing setuptools and wheel (to build the installs)..."
    "${pip[@]}" setuptools wheel </dev/null
  fi
  say "installing mino-core${extras} and the five plugins, editable (versions from constraints.txt)..."
  "${pip[@]}" --no-build-isolation \
    -e ".${extras}" \
    -e plugins/mino-tools-fs \
    -e plugins/mino-memory-files \
    -e "plugins/mino-memory-graph${extras:+[postgres]}" \
    -e plugins/mino-mcp \
    -e plugins/mino-mcp-memory </dev/null
  echo "$hash" > "$stamp"
  say "installed."
fi

# How to run mino from anywhere.
bin=$root/.venv/bin/mino
local_bin=$HOME/.local/bin
if [ "$link" = yes ]; then
  mkdir -p "$local_bin"
  ln -sf "$bin" "$local_bin/mino"
  say "linked $local_bin/mino -> $bin"
fi
if [ "$(command -v mino 2>/dev/null || true)" = "$bin" ] || \
   [ "$(readlink -f "$(command -v mino 2>/dev/null || echo /nonexistent)")" = "$(readlink -f "$bin")" ]; then
  say "done. Run: mino   (it is on your PATH)"
elif [ -L "$local_bin/mino" ] && [ "$(readlink -f "$local_bin/mino")" = "$(readlink -f "$bin")" ]; then
  say "done. $local_bin/mino links here, but $local_bin is not on your PATH: add"
  say "  export PATH=\"$local_bin:\$PATH\"   to your shell's profile, then run: mino"
else
  say "done. Run mino as $bin"
  say "To run it as plain 'mino' from anywhere: bash scripts/setup.sh --link (a link in $local_bin),"
  say "or add  export PATH=\"$root/.venv/bin:\$PATH\"  to your shell's profile."
fi
# Before the first run: a model. Said only when none is configured yet.
home=${MINO_HOME:-$HOME/.mino}
if [ -z "${OPENAI_API_KEY:-}${MINO_BASE_URL:-}${OPENAI_BASE_URL:-}" ] && \
   ! grep -qsE '^(api_key|base_url):' "$home/config.yaml"; then
  say "Before the first run, give mino a model:"
  say "  export OPENAI_API_KEY=sk-...                      (OpenAI), or a server on this machine:"
  say "  export MINO_BASE_URL=http://127.0.0.1:8080/v1     (llama.cpp; Ollama: :11434/v1; LM Studio: :1234/v1)"
  say "then run: .venv/bin/mino   (.venv/bin/mino doctor checks the set-up)"
fi
