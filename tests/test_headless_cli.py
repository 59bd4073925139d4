"""``mino -p`` as scripts run it: a real process against the scripted server, real files.

Pins the README's promises: stdout is the bare answer (or the documented JSON), tool
activity goes to stderr, stdin prompts, and each exit code.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")
PLUGINS = "mino.policy,mino.skills,mino-tools-fs"  # no memory backend: nothing else to recall


@pytest.fixture
def mino(tmp_path, scripted_server):
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("the deploy script is bin/ship\n")

    def run(*args, stdin=None, **env):
        full = isolated_env(tmp_path / "home")
        full.update(MINO_BASE_URL=scripted_server.base_url, MINO_PROJECT=str(project),
                    MINO_PLUGINS=PLUGINS)
        full.update(env)
        return subprocess.run([MINO, *args], env=full, capture_output=True, text=True, timeout=60,
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL)

    run.project = project
    return run


def _write_call(path="out.txt", content="hello\n"):
    return {"calls": [{"name": "write_file", "arguments": {"path": path, "content": content}}]}


def test_stdout_is_the_bare_answer_and_tool_activity_goes_to_stderr(mino, scripted_server):
    scripted_server.add({"text": "Let me look.", "calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                        {"require": "bin/ship", "text": "Run bin/ship."})
    result = mino("-p", "how do I deploy?")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Run bin/ship.\n"
    assert "[Tool: read_file]" in result.stderr and "[Tool result: completed]" in result.stderr
    assert "Assistant> Let me look." in result.stderr  # text before a call is not the answer
    assert "Assistant>" not in result.stdout and scripted_server.failures == []


def test_a_question_is_denied_and_exits_3_with_the_preview_on_stderr(mino, scripted_server):
    scripted_server.add(_write_call(), {"require": "denied", "text": "I could not write it."})
    result = mino("-p", "write out.txt")
    assert result.returncode == 3, result.stderr
    assert result.stdout == "I could not write it.\n"
    assert "no terminal to ask: denied" in result.stderr and "exit 3" in result.stderr
    assert not (mino.project / "out.txt").exists()


def test_mode_and_allow_apply_headless(mino, scripted_server):
    scripted_server.add(_write_call("a.txt"), {"text": "done a"},
                        _write_call("b.txt"), {"text": "done b"},
                        _write_call("c.txt"), {"text": "not c"})
    assert mino("-p", "write a", "--mode", "accept-edits").returncode == 0
    assert (mino.project / "a.txt").read_text() == "hello\n"
    assert mino("-p", "write b", "--allow", "write_file(b.txt)").returncode == 0
    assert (mino.project / "b.txt").exists()
    # The rule was for that run only, and only for b.txt.
    assert mino("-p", "write c", "--allow", "write_file(b.txt)").returncode == 3
    assert not (mino.project / "c.txt").exists()


def test_json_output_holds_the_documented_fields(mino, scripted_server):
    scripted_server.add(_write_call(), {"text": "Refused, so nothing was written."})
    result = mino("-p", "write it", "--output-format", "json")
    assert result.returncode == 3
    data = json.loads(result.stdout)  # one object, nothing else on stdout
    assert data["type"] == "result" and data["status"] == "denied" and data["exit_code"] == 3
    assert data["answer"] == "Refused, so nothing was written."
    assert len(data["session_id"]) == 32 and data["mode"] == "manual"
    assert data["server"] == scripted_server.base_url and data["ended"] == "answer"
    [call] = data["tool_calls"]
    assert call["name"] == "write_file" and call["status"] == "denied"
    assert call["arguments"] == {"path": "out.txt", "content": "hello\n"}
    assert call["decision"] == "deny" and call["approved"] is False
    assert data["usage"]["requests"] == 2 and data["usage"]["input_tokens"] > 0
    assert data["usage"]["total_tokens"] >= data["usage"]["input_tokens"]
    assert isinstance(data["duration_ms"], int) and data["duration_ms"] > 0
    assert "[Tool:" not in result.stderr  # the json formats keep the transcript off stderr


def test_stream_json_is_one_event_per_line_in_order(mino, scripted_server):
    scripted_server.add({"calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
                        {"text": "It is bin/ship."})
    result = mino("-p", "deploy?", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "start" and types[-1] == "result"
    assert types.index("tool_call") < types.index("decision") < types.index("tool_result") < types.index("text")
    call = events[types.index("tool_call")]
    assert call["name"] == "read_file" and call["arguments"] == {"path": "notes.txt"} and call["call_id"]
    decision = events[types.index("decision")]
    assert decision["verdict"] == "allow" and decision["call_id"] == call["call_id"]
    done = events[types.index("tool_result")]
    assert done["status"] == "completed" and "bin/ship" in done["output"]
    assert "".join(e["delta"] for e in events if e["type"] == "text") == "It is bin/ship."
    assert events[-1]["answer"] == "It is bin/ship." and events[-1]["status"] == "answered"
    assert events[0]["session_id"] == events[-1]["session_id"]


@pytest.mark.parametrize("args", [("-p", "-"), ("-p",)])
def test_the_prompt_from_stdin(mino, scripted_server, args):
    scripted_server.add({"require": "what is 2+2?", "text": "4"})
    result = mino(*args, stdin="what is 2+2?\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "4\n"
    assert scripted_server.requests[0]["input"][-1]["content"] == "what is 2+2?"


def test_a_prompt_with_piped_stdin_gets_it_as_context(mino, scripted_server):
    scripted_server.add({"require": ["explain this", "<stdin>\nERROR disk full\n</stdin>"], "text": "Disk."})
    result = mino("-p", "explain", "this", stdin="ERROR disk full\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Disk.\n" and scripted_server.failures == []


@pytest.mark.parametrize("args,stdin", [(("-p", ""), None), (("-p", "   "), None), (("-p", "-"), ""),
                                        (("-p",), None)])
def test_an_empty_prompt_is_a_usage_error(mino, scripted_server, args, stdin):
    result = mino(*args, stdin=stdin)
    assert result.returncode == 2
    assert "empty" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert scripted_server.requests == [] and result.stdout == ""


def test_usage_errors_exit_2(mino, scripted_server):
    for args in (["--output-format", "json"], ["-p", "hi", "--mode", "yolo"],
                 ["-p", "hi", "--allow", "Bash(oops"], ["-p", "hi", "--output-format", "xml"]):
        result = mino(*args)
        assert result.returncode == 2, args
        assert "Traceback" not in result.stderr and result.stdout == ""
    assert scripted_server.requests == []


def test_a_failed_turn_exits_1_with_the_reason_on_stderr(mino, scripted_server):
    scripted_server.add({"fail": {"status": 400, "times": 1, "message": "context exceeds 4096 tokens"}})
    result = mino("-p", "hi")
    assert result.returncode == 1
    assert result.stdout == "" and "context exceeds 4096 tokens" in result.stderr
    scripted_server.script.clear()
    scripted_server.add({"fail": {"status": 400, "times": 1, "message": "bad"}})
    data = json.loads(mino("-p", "hi", "--output-format", "json").stdout)
    assert data["status"] == "failed" and data["exit_code"] == 1 and data["ended"] == "error"
    assert "bad" in data["reason"]


def test_a_cut_answer_exits_1_and_prints_what_came(mino, scripted_server):
    scripted_server.add({"text": "The first half", "incomplete": "max_output_tokens"})
    result = mino("-p", "long answer please")
    assert result.returncode == 1
    assert result.stdout == "The first half\n" and "cut off" in result.stderr


def test_words_without_p_start_a_session_with_them_and_subcommands_still_work(mino, scripted_server):
    scripted_server.add({"require": "fix the tests", "text": "On it."})
    result = mino("fix", "the", "tests")
    assert result.returncode == 0, result.stderr
    assert "You> fix the tests" in result.stdout and "Assistant> On it." in result.stdout
    assert "No such command" not in result.stderr
    assert f"model gpt-5-mini at {scripted_server.base_url.split('/')[2]}" in result.stdout
    assert f"project {mino.project}" in result.stdout
    listed = mino("sessions")
    assert listed.returncode == 0 and "fix the tests" in listed.stdout


def test_p_resumes_a_session(mino, scripted_server):
    scripted_server.add({"text": "first"}, {"require": "remember me", "text": "second"})
    first = json.loads(mino("-p", "remember me", "--output-format", "json").stdout)
    again = json.loads(mino("-p", "and now?", "--resume", first["session_id"], "--output-format", "json").stdout)
    assert again["session_id"] == first["session_id"] and again["answer"] == "second"


def test_continue_takes_the_newest_session_of_the_project_and_a_bad_id_is_exit_2(mino, scripted_server):
    scripted_server.add({"text": "one"}, {"require": "first question", "text": "two"})
    first = json.loads(mino("-p", "first question", "--output-format", "json").stdout)
    again = json.loads(mino("-p", "next", "--continue", "--output-format", "json").stdout)
    assert again["session_id"] == first["session_id"] and again["answer"] == "two"
    result = mino("-p", "hi", "--resume", "f" * 32)
    assert result.returncode == 2 and "No session" in result.stderr and result.stdout == ""


def test_resuming_another_projects_session_needs_project(mino, scripted_server, tmp_path):
    scripted_server.add({"text": "one"}, {"require": "first question", "text": "there"})
    first = json.loads(mino("-p", "first question", "--output-format", "json").stdout)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = mino("-p", "next", "--resume", first["session_id"], MINO_PROJECT=str(elsewhere))
    assert refused.returncode == 2 and refused.stdout == ""
    assert f"belongs to the project {mino.project}" in refused.stderr and "--project" in refused.stderr
    moved = json.loads(mino("-p", "next", "--resume", first["session_id"], "--project",
                            "--output-format", "json", MINO_PROJECT=str(elsewhere)).stdout)
    assert moved["answer"] == "there"
    assert scripted_server.failures == []


def test_help_shows_the_prompt_form():
    result = subprocess.run([MINO, "--help"], capture_output=True, text=True, timeout=60)
    assert "Usage: mino [OPTIONS] [PROMPT]... | COMMAND [ARGS]..." in result.stdout
    assert "--output-format" in result.stdout and "--allow RULE" in result.stdout


def test_a_reader_that_leaves_early_is_not_an_error(tmp_path, scripted_server):
    scripted_server.add({"text": "line\n" * 50_000})
    env = isolated_env(tmp_path / "home")
    env.update(MINO_BASE_URL=scripted_server.base_url, MINO_PLUGINS=PLUGINS, MINO_PROJECT=str(tmp_path),
               MINO="" + MINO)
    result = subprocess.run('"$MINO" -p hi | head -n 1; exit "${PIPESTATUS[0]}"', shell=True,
                            executable="/bin/bash", env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout == "line\n"
    assert "BrokenPipe" not in result.stderr and "unexpected error" not in result.stderr
    assert "Traceback" not in result.stderr and result.returncode in (0, 1)  # 1: cut at the output cap


def test_stream_json_starts_with_start_even_after_a_config_warning(mino, scripted_server, tmp_path):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text("modle: x\n")
    scripted_server.add({"text": "ok"})
    result = mino("-p", "hi", "--output-format", "stream-json")
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["type"] for e in events][:2] == ["start", "notice"]
    assert "did you mean mode?" in events[1]["text"] and "did you mean mode?" in result.stderr
    assert events[-1]["notices"] == [events[1]["text"]]


def test_model_flag_wins_over_the_environment(mino, scripted_server):
    scripted_server.add({"text": "ok"})
    result = mino("-m", "flag-model", "-p", "hi", "--output-format", "json", MINO_MODEL="env-model")
    assert result.returncode == 0, result.stderr
    assert scripted_server.requests[-1]["model"] == "flag-model"
    assert json.loads(result.stdout)["model"] == "flag-model"
