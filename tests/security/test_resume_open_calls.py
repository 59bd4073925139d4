"""A mino killed during a tool call leaves a function_call with no output in its log; the
OpenAI service refuses such a request (HTTP 400), so resuming must close those calls as
Ctrl-C does. Each test checks the next request body the scripted server received."""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time

from mino_core.repl import handle_command
from mino_core.session import RESUMED_OUTPUT
from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")


def _assert_every_call_answered(body):
    items = body["input"]
    calls = [i["call_id"] for i in items if i.get("type") == "function_call"]
    outputs = [i["call_id"] for i in items if i.get("type") == "function_call_output"]
    assert calls, items
    assert sorted(calls) == sorted(outputs), items
    for call in calls:  # each output after its call
        first_call = next(k for k, i in enumerate(items) if i.get("call_id") == call)
        assert any(i.get("type") == "function_call_output" and i["call_id"] == call
                   for i in items[first_call + 1:])


def _log_path(home):
    [path] = list((home / "sessions").glob("*.jsonl"))
    return path


def _records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_session_killed_during_bash_resumes_with_every_call_answered(tmp_path, scripted_server):
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = isolated_env(home)
    env.update(MINO_BASE_URL=scripted_server.base_url, MINO_PROJECT=str(project),
               MINO_PLUGINS="mino.policy,mino-tools-fs")
    scripted_server.add({"calls": [{"name": "Bash", "arguments": {"command": "sleep 5"}}]})
    proc = subprocess.Popen([MINO, "--mode", "bypass", "-p", "wait a bit"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    # Headless, the transcript of tool activity goes to stderr (stdout holds only the answer).
    seen, deadline = b"", time.monotonic() + 30
    try:
        while b"[Tool: Bash]" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 1.0)
            if ready:
                chunk = os.read(proc.stderr.fileno(), 4096)
                if not chunk:
                    break
                seen += chunk
        assert b"[Tool: Bash]" in seen, seen
        time.sleep(0.5)  # inside the call: the sleep runs, its output is not written yet
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
    log = _log_path(home)
    session_id = log.stem
    before = _records(log)
    assert [r["type"] for r in before if r["type"].startswith("function_call")] == ["function_call"]

    scripted_server.add({"require": "mino stopped before this call finished", "text": "Resumed."})
    result = subprocess.run([MINO, "--resume", session_id, "-p", "go on"], env=env,
                            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Resumed." in result.stdout
    assert "ended during a tool call (Bash)" in result.stderr
    assert scripted_server.failures == []
    _assert_every_call_answered(scripted_server.requests[-1])
    closing = [r for r in _records(log) if r["type"] == "function_call_output"]
    assert [(r["status"], r["output"]) for r in closing] == [("failed", RESUMED_OUTPUT)]


def test_slash_resume_closes_calls_a_crash_left_open(make_harness, scripted_server):
    h = make_harness(config={})
    log = h.session.log
    # What a crash mid-turn leaves: two calls, one answered, one not.
    log.append({"type": "message", "role": "user", "content": "look around"})
    for call_id in ("call_a", "call_b"):
        log.append({"type": "function_call", "call_id": call_id, "name": "skill_view",
                    "arguments": "{\"name\": \"x\"}"})
    log.append({"type": "function_call_output", "call_id": "call_a", "status": "completed",
                "output": "done"})
    crashed = log.id
    h.new_session()
    handle_command(h.agent, f"/resume {crashed}")
    assert h.agent.session.id == crashed
    assert "ended during a tool call (skill_view)" in h.notices
    scripted_server.add({"text": "Carrying on."})
    h.session = h.agent.session
    record = h.turn("carry on")
    assert record.answer == "Carrying on." and scripted_server.failures == []
    _assert_every_call_answered(scripted_server.requests[-1])
    # Resumed again: nothing is left open, so nothing more is written.
    count = len(h.session.log.records)
    h.new_session()
    handle_command(h.agent, f"/resume {crashed}")
    assert len(h.agent.session.log.records) == count
