#!/usr/bin/env bash
# PostgreSQL's server programs (initdb, pg_ctl, postgres) for the shared-journal tests,
# installed from the distribution's packages when missing. Nothing is started here: the
# tests start a throwaway cluster of their own in a temporary folder (as `nobody` when
# run as root) and stop it at the end; without PostgreSQL those tests skip and say why.
# The package's default cluster is not created (createcluster.d), so no service is left.
set -uo pipefail
say() { echo "postgres: $*"; }
have() { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; }
have && exit 0
if [ "$(uname -s)" != Linux ] || ! command -v apt-get >/dev/null 2>&1; then
  say "PostgreSQL is not installed; install its server package to run the shared-journal tests" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; else
    say "PostgreSQL is not installed and I cannot install it without root; the" \
        "shared-journal tests will skip (install the 'postgresql' package)" >&2
    exit 0
  fi
fi
say "installing PostgreSQL from the distribution's packages (for the shared-journal tests)..."
$sudo mkdir -p /etc/postgresql-common/createcluster.d
echo "create_main_cluster = false" | $sudo tee /etc/postgresql-common/createcluster.d/mino-tests.conf >/dev/null
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null >/dev/null || true
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  postgresql </dev/null >/dev/null || true
have || say "could not install PostgreSQL; the shared-journal tests will skip" >&2
exit 0
