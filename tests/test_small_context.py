"""A server with a small context, as ``llama-server -c N`` is: mino learns the window (from
the server's refusal, or from /props and /v1/models before it), compacts and sends again;
answers cut by the context's end, the server's own limit or a loop are marked cut.

Each test runs the real ``mino -p`` (or the REPL on a pty) against the scripted server
playing llama.cpp (``ScriptedServer(n_ctx=...)``: its /props, its model list, its
overflow error word for word)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from mino_core.testing import ScriptedServer, request_text
from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")
ANSWER = " ".join(f"word{i}" for i in range(200))  # a long answer: 200 tokens to the server


@pytest.fixture
def run(tmp_path):
    project = tmp_path / "project"
    project.mkdir()

    def go(server, *args, stdin=None, **env):
        full = isolated_env(tmp_path / "home")
        full.update(MINO_BASE_URL=server.base_url, MINO_PROJECT=str(project),
                    MINO_PLUGINS="mino.policy,mino.skills")
        full.update(env)
        return subprocess.run([MINO, *args], env=full, capture_output=True, text=True, timeout=120,
                              stdin=subprocess.DEVNULL)

    go.home = tmp_path / "home"
    return go


def _three_turns(run, server):
    for n in (1, 2, 3):
        server.add({"text": f"answer {n}: {ANSWER}"})
        result = run(server, *(["-c"] if n > 1 else []), "-p", f"question {n}")
        assert result.returncode == 0, result.stderr


def _log(home):
    [path] = list((home / "sessions").glob("*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_an_overflow_teaches_the_window_compacts_and_sends_again_once(run):
    # The server publishes no window (publish=()): only its refusal names it.
    with ScriptedServer(publish=()) as server:
        _three_turns(run, server)
        size = len(request_text(server.requests[-1]).split())
        server.n_ctx = size + 100  # the next request carries answer 3 too: it does not fit
        server.add({"require": "question 3", "text": "They asked three questions."},
                   {"require": ["They asked three questions.", "question 4"], "forbid": "word150",
                    "text": "It fits now."})
        result = run(server, "-c", "-p", "question 4")
        assert result.returncode == 0, result.stderr
        assert result.stdout == "It fits now.\n"
        assert len(server.overflows) == 1 and server.failures == []
        said = [line for line in result.stderr.splitlines() if "context" in line]
        assert len(said) == 1, result.stderr  # one line says what happened
        assert said[0].startswith(f"(The server's context is {server.n_ctx:,} tokens and the request ")
        assert "compacted 3 turn(s)" in said[0] and said[0].endswith("and sent it again.)")
        assert "Error" not in result.stderr
        # The session keeps the window it learned: the next process knows it too, and sees
        # an answer that runs into the context's end as cut (the server says "completed").
        assert [r["tokens"] for r in _log(run.home) if r.get("type") == "context_window"] == [server.n_ctx]
        server.add({"text": " ".join(f"long{i}" for i in range(2000))})
        result = run(server, "-c", "-p", "question 5")
        assert result.returncode == 1 and "context window was full" in result.stderr, result.stderr
    assert len(server.overflows) == 1 and server.failures == []


def test_a_message_that_alone_does_not_fit_says_what_to_do_and_is_not_sent_again(run):
    with ScriptedServer(n_ctx=600, publish=()) as server:
        result = run(server, "-p", "long " * 800)
        assert result.returncode == 1
        assert "exceeds the available context size (600 tokens)" in result.stderr
        assert "there is nothing older to compact" in result.stderr and "-c" in result.stderr
        server.add({"text": "short one answered"})
        result = run(server, "-c", "-p", "short")
    assert result.returncode == 0 and result.stdout == "short one answered\n", result.stderr
    assert len(server.overflows) == 1  # the refused message was not sent again


def test_the_window_from_props_compacts_before_the_server_refuses(run):
    with ScriptedServer(publish=("props",)) as server:
        _three_turns(run, server)
        size = len(request_text(server.requests[-1]).split())
        server.n_ctx = size + 250  # fits, but past 80% of the window
        server.add({"require": "question 1", "forbid": "question 2", "text": "Three questions so far."},
                   {"require": "Three questions so far.", "text": "Compacted first."})
        result = run(server, "-c", "-p", "question 4")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Compacted first.\n"
    assert server.overflows == [] and "/props" in server.gets
    assert "context is nearly full" in result.stderr
    assert [r for r in _log(run.home) if r.get("type") == "compaction"]


def test_a_window_from_the_model_list(run):
    with ScriptedServer(n_ctx=4096, publish=("models",)) as server:
        server.add({"text": "ok"})
        result = run(server, "-p", "hi")
    assert result.returncode == 0, result.stderr
    # Asked once, and the model list named it: /props was not needed.
    assert server.gets == ["/v1/models"]
    from mino_core.config import ModelSettings
    from mino_core.context_window import probe

    with ScriptedServer(n_ctx=4096, publish=("models",)) as server:
        assert probe(ModelSettings(api_key="x", base_url=server.base_url, model="scripted")) == 4096


def test_an_answer_cut_by_the_context_end_is_cut_and_exits_1(run):
    # llama.cpp's Responses API calls an answer stopped by the context's end "completed".
    with ScriptedServer() as server:
        server.add({"text": "ok"})
        run(server, "-p", "hello")
        size = len(request_text(server.requests[-1]).split())
        server.n_ctx = size + 80
        server.add({"text": ANSWER})
        result = run(server, "-c", "-p", "hello again", "--output-format", "json")
    assert result.returncode == 1, result.stderr
    out = json.loads(result.stdout)
    assert out["status"] == "failed" and out["ended"] == "incomplete" and out["reason"] == "context_window"
    assert out["answer"].startswith("word0") and "word199" not in out["answer"]
    assert any("the server's context window was full" in n for n in out["notices"])
    assert _log(run.home)[-2].get("incomplete") == "context_window"


def test_chat_length_short_of_the_limit_is_the_servers_own_stop(run):
    with ScriptedServer(responses=False) as server:
        server.add({"text": "half of it", "incomplete": True})
        result = run(server, "-p", "write a lot", MINO_API="chat")
    assert result.returncode == 1
    assert result.stdout == "half of it\n"
    assert "[Answer cut off: the server stopped it at its own output limit.]" in result.stderr


def test_a_repeating_answer_is_stopped_with_a_note(run):
    loop = "She was so scared that she could not move at all. "
    with ScriptedServer() as server:
        server.add({"text": "Once upon a time. " + loop * 400, "delay": 0.0005})
        result = run(server, "-p", "tell a story")
    assert result.returncode == 1, result.stderr
    assert "[Answer cut off: it was repeating itself, so mino stopped it.]" in result.stderr
    # Stopped early: the answer kept holds a few repeats, not the 400 the server had.
    assert result.stdout.startswith("Once upon a time. She was so scared")
    assert 3 <= result.stdout.count(loop.strip()) < 40
    [end] = [r for r in _log(run.home) if r.get("type") == "turn_end"]
    assert end["ended"] == "incomplete" and end["reason"] == "repetition"
