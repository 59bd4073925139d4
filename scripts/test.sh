#!/usr/bin/env bash
# Set everything up, then run the whole suite: the eval cases, each plugin alone, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
export MINO_STRICT_PLUGINS=1
# Evals and tests use temporary homes; never the developer's ~/.mino or API keys.
unset OPENAI_API_KEY OPENAI_BASE_URL MINO_BASE_URL MINO_MODEL MINO_HOME MINO_PLUGINS MINO_DISABLE_PLUGINS MINO_MEMORY_BACKEND
.venv/bin/mino eval evals </dev/null
# Each plugin with only the core installed (as a user who installs just that plugin).
bash scripts/test-plugins-alone.sh
# Everything together, last, so its summary is the run's closing line.
.venv/bin/python -m pytest </dev/null
