"""scripts/live-local.sh itself: it fails when a request is refused or a turn errors, and
prints each answer's first line. Run here with a stand-in for llama-server (the scripted
server on the port the script gives it), so the check's own logic is tested wherever the
suite runs; the real model runs it in CI where the binary and the model are present."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "live-local.sh"

STAND_IN = '''#!{python}
# A stand-in for llama-server: the scripted server on --port, answering as told.
import sys, time
from mino_core.testing import ScriptedServer
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
mode = {mode!r}
server = ScriptedServer(port=port, n_ctx=50 if mode == "refuse" else None)
server.add(*[{{"text": "Hello from the stand-in.\\nA second line."}}] * 100)
server.start()
while True:
    time.sleep(1)
'''


def _run(tmp_path, mode):
    if not (ROOT / ".venv" / "bin" / "mino").exists():
        pytest.skip("the script runs .venv/bin/mino: run bash scripts/setup.sh first")
    server = tmp_path / "llama-server"
    server.write_text(STAND_IN.format(python=sys.executable, mode=mode))
    server.chmod(0o755)
    model = tmp_path / "model.gguf"
    model.write_bytes(b"")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINO_", "OPENAI_"))}
    env.update(LLAMA_SERVER=str(server), MINO_LIVE_MODEL=str(model))
    return subprocess.run(["bash", str(SCRIPT), "--no-evals", "--no-download", str(tmp_path / "work")],
                          env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)


def test_the_live_check_passes_and_prints_each_answers_first_line(tmp_path):
    result = _run(tmp_path, "answer")
    assert result.returncode == 0, result.stdout + result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(("responses ", "chat "))]
    assert len(rows) == 12
    assert all(" ok " in row and row.endswith("| Hello from the stand-in.") for row in rows), rows
    assert "12 turns, 0 failed" in result.stdout


def test_the_live_check_fails_when_the_server_refuses(tmp_path):
    result = _run(tmp_path, "refuse")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL error" in result.stdout and "exceeds the available context size" in result.stdout
    assert "12 turns, 12 failed" in result.stdout


def test_check_says_why_it_cannot_run(tmp_path):
    env = dict(os.environ, LLAMA_SERVER=str(tmp_path / "none"), PATH="/usr/bin:/bin")
    result = subprocess.run(["bash", str(SCRIPT), "--check"], env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 3 and result.stdout.startswith("no llama-server")
