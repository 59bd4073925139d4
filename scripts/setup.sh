#!/usr/bin/env bash
# Set up mino from a fresh clone: bubblewrap for the sandbox, a virtual environment in
# .venv, and the four distributions installed editable. `--test` adds the test tools.
set -euo pipefail
cd "$(dirname "$0")/.."

extras=""
[ "${1:-}" = "--test" ] && extras="[test]"

install_bwrap() {
  command -v bwrap >/dev/null 2>&1 && return 0
  [ "$(uname -s)" = Linux ] || return 0   # macOS uses the built-in sandbox-exec
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
      echo "setup: bubblewrap is not installed and I cannot install it without root;" \
           "Bash will ask before each command. Install the 'bubblewrap' package to sandbox it." >&2
      return 0
    fi
  fi
  if command -v apt-get >/dev/null 2>&1; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null >/dev/null || true
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap </dev/null >/dev/null || true
  elif command -v dnf >/dev/null 2>&1; then $sudo dnf install -y -q bubblewrap </dev/null || true
  elif command -v apk >/dev/null 2>&1; then $sudo apk add -q bubblewrap </dev/null || true
  elif command -v pacman >/dev/null 2>&1; then $sudo pacman -S --noconfirm bubblewrap </dev/null || true
  fi
  command -v bwrap >/dev/null 2>&1 || echo "setup: could not install bubblewrap; Bash will ask before each command." >&2
}

install_bwrap

python=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$python" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check \
  -e ".${extras}" \
  -e plugins/mino-tools-fs \
  -e plugins/mino-memory-files \
  -e plugins/mino-memory-graph </dev/null
