#!/usr/bin/env bash
# The whole suite, as CI runs it: set-up, the eval cases, each plugin alone with the core,
# then everything together with pytest. Each step says what it does and when it started.
# Set-up and the alone environments are reused when their inputs did not change. A failed
# step does not stop the later ones; the exit status is non-zero if any failed, and
# pytest's summary stays the closing line.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { echo "== test.sh [$((SECONDS - started)) s] $*"; }

step "set-up: bash scripts/setup.sh --test"
bash scripts/setup.sh --test </dev/null || { echo "test.sh: set-up failed; nothing was tested." >&2; exit 1; }
export MINO_STRICT_PLUGINS=1
# Evals and tests use temporary homes; never the developer's ~/.mino or API keys.
unset OPENAI_API_KEY OPENAI_BASE_URL MINO_BASE_URL MINO_MODEL MINO_HOME MINO_PLUGINS MINO_DISABLE_PLUGINS MINO_MEMORY_BACKEND
failed=()
step "the eval cases: mino eval evals"
.venv/bin/mino eval evals </dev/null || failed+=("the eval cases")
# Each plugin with only the core installed (as a user who installs just that plugin).
step "each plugin alone with the core: bash scripts/test-plugins-alone.sh"
bash scripts/test-plugins-alone.sh || failed+=("a plugin alone")
if [ ${#failed[@]} -gt 0 ]; then
  step "FAILED: ${failed[*]} (see above); pytest runs anyway and the run exits 1"
fi
# Everything together, last, so its summary is the run's closing line.
step "everything together: pytest"
.venv/bin/python -m pytest </dev/null
status=$?
[ ${#failed[@]} -gt 0 ] && [ "$status" = 0 ] && status=1
exit "$status"
