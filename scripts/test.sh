#!/usr/bin/env bash
# The whole suite, as CI runs it: set-up, the eval cases, each plugin alone with the core,
# and everything together with pytest. Each step says what it does and when it started.
# Set-up and the alone environments are reused while their inputs are unchanged. The
# plugins alone run, at low priority, while the whole suite runs beside them (two cores);
# pytest's output follows theirs, so its summary is the closing line. A failed step does
# not stop the others; the exit status is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
step() { echo "== test.sh [$((SECONDS - started)) s] $*"; }

step "set-up: bash scripts/setup.sh --test"
bash scripts/setup.sh --test </dev/null || { echo "test.sh: set-up failed; nothing was tested." >&2; exit 1; }
export MINO_STRICT_PLUGINS=1
# Evals and tests use temporary homes; never the developer's ~/.mino or API keys.
unset OPENAI_API_KEY OPENAI_BASE_URL MINO_BASE_URL MINO_MODEL MINO_HOME MINO_PLUGINS MINO_DISABLE_PLUGINS MINO_MEMORY_BACKEND MINO_GRAPH_URL
failed=()
step "the eval cases: mino eval evals"
.venv/bin/mino eval evals </dev/null || failed+=("the eval cases")
# Against a real model (SmolLM2-135M on llama.cpp's llama-server) where both are here: the
# server binary (LLAMA_SERVER, ../shared/tools) and the model already fetched (nothing is
# downloaded in CI); otherwise skipped, saying which is missing.
if why=$(bash scripts/live-local.sh --check --no-download </dev/null); then
  step "the live check: bash scripts/live-local.sh --no-evals --no-download ($why)"
  bash scripts/live-local.sh --no-evals --no-download </dev/null || failed+=("the live check")
else
  step "the live check: skipped: $why"
fi

log=$(mktemp "${TMPDIR:-/tmp}/mino-pytest.XXXXXX")
trap 'rm -f "$log"' EXIT
step "everything together: pytest, started now beside the plugins alone (its output follows theirs)"
.venv/bin/python -m pytest </dev/null >"$log" 2>&1 &
main=$!
# Each plugin with only the core installed (as a user who installs just that plugin).
step "each plugin alone with the core: bash scripts/test-plugins-alone.sh"
# At the lowest priority: the whole suite's terminal tests time key presses, and must not
# wait for a core while the plugins' suites run.
nice -n 19 bash scripts/test-plugins-alone.sh </dev/null || failed+=("a plugin alone")
if [ ${#failed[@]} -gt 0 ]; then
  step "FAILED: ${failed[*]} (see above); the run exits 1 whatever pytest says"
fi
step "everything together: pytest's output so far, then as it comes"
if tail --version 2>/dev/null | grep -q GNU; then
  tail -n +1 -f --pid="$main" "$log"
  wait "$main"; status=$?
else
  wait "$main"; status=$?
  cat "$log"
fi
[ ${#failed[@]} -gt 0 ] && [ "$status" = 0 ] && status=1
exit "$status"
