"""Sessions per project: listing, --continue, resuming another project's session, the recap."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from mino_core.sessionlog import list_sessions, recap
from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")


def run(args, home, project, stdin="", **env):
    full = isolated_env(home)
    full.update(MINO_PROJECT=str(project), **env)
    return subprocess.run([MINO, *args], env=full, capture_output=True, text=True, timeout=60,
                          input=stdin)


def _write(home, session_id, project, turns, modified):
    sessions = home / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    records = [{"type": "session", "created": modified, "project": str(project), "mode": "manual"}]
    for number, text in enumerate(turns):
        records += [{"type": "message", "role": "user", "content": text},
                    {"type": "message", "role": "assistant", "content": f"answer {number}: " + "x" * 300},
                    {"type": "turn_end", "ended": "answer", "requests": 1}]
    path = sessions / f"{session_id}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    os.utime(path, (modified, modified))
    return path


def _projects(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    return here, there


def test_sessions_lists_this_project_newest_first_and_hides_empty_ones(tmp_path):
    home = tmp_path / "home"
    here, there = _projects(tmp_path)
    _write(home, "a" * 32, here, ["older question"], 1_700_000_000)
    _write(home, "b" * 32, here, ["newer question", "second"], 1_700_100_000)
    _write(home, "c" * 32, here, [], 1_700_200_000)  # no turn: hidden
    _write(home, "d" * 32, there, ["elsewhere"], 1_700_300_000)
    result = run(["sessions"], home, here)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line[:32] for line in lines] == ["b" * 32, "a" * 32]
    assert "2 turn(s)  newer question" in lines[0] and "2023-11-1" in lines[0]
    everything = run(["sessions", "--all"], home, here).stdout.splitlines()
    assert [line[:32] for line in everything] == ["d" * 32, "b" * 32, "a" * 32]
    assert everything[0].endswith(f"[{there}]")
    empty = run(["sessions"], home, tmp_path)
    assert "No sessions in this project yet" in empty.stdout


def test_list_sessions_filters_by_project(tmp_path):
    home = tmp_path / "home"
    here, there = _projects(tmp_path)
    _write(home, "a" * 32, here, ["q"], 1_700_000_000)
    _write(home, "b" * 32, there, ["q"], 1_700_000_001)
    _write(home, "c" * 32, here, [], 1_700_000_002)
    assert [s.id for s in list_sessions(home / "sessions", here, with_empty=False)] == ["a" * 32]
    assert [s.id for s in list_sessions(home / "sessions", here)] == ["c" * 32, "a" * 32]
    assert list_sessions(home / "sessions")[0].project == str(here)


def test_continue_resumes_the_newest_session_here_with_a_recap(tmp_path, scripted_server):
    home = tmp_path / "home"
    here, there = _projects(tmp_path)
    _write(home, "a" * 32, here, ["first plan", "second plan"], 1_700_000_000)
    _write(home, "d" * 32, there, ["not this one"], 1_700_300_000)
    scripted_server.add({"require": "second plan", "text": "Carrying on."})
    result = run(["--continue"], home, here, stdin="go on\n/exit\n",
                 MINO_BASE_URL=scripted_server.base_url, MINO_PLUGINS="mino.policy,mino.skills")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"Session: {'a' * 32}" in out
    assert "Last 2 exchanges:" in out and "  You: first plan" in out
    assert "  Assistant: answer 1: xxx" in out and "..." in out  # clipped
    assert max(len(line) for line in out.splitlines()) < 240
    assert "Carrying on." in out and f"Resume with: {MINO} --resume {'a' * 32}" in out  # as it was started
    assert scripted_server.failures == []


def test_continue_with_no_session_here_starts_a_new_one(tmp_path, scripted_server):
    home = tmp_path / "home"
    here, there = _projects(tmp_path)
    _write(home, "d" * 32, there, ["not this one"], 1_700_300_000)
    result = run(["--continue"], home, here, stdin="/exit\n", MINO_BASE_URL=scripted_server.base_url,
                 MINO_PLUGINS="mino.policy,mino.skills")
    assert result.returncode == 0, result.stderr
    assert "No session in this project yet" in result.stderr
    assert "d" * 32 not in result.stdout


def test_resuming_another_projects_session_asks_before_moving_the_tools(tmp_path, scripted_server):
    home = tmp_path / "home"
    here, there = _projects(tmp_path)
    _write(home, "d" * 32, there, ["over there"], 1_700_300_000)
    env = dict(MINO_BASE_URL=scripted_server.base_url, MINO_PLUGINS="mino.policy,mino.skills")
    # A no keeps the tools where they are (not resumed).
    result = run(["--resume", "dddd"], home, here, stdin="n\n", **env)
    assert result.returncode == 2
    assert f"belongs to the project {there}" in result.stdout and "add --project" in result.stdout
    assert "Not resumed" in result.stdout and "Session: " + "d" * 32 not in result.stdout
    # A yes moves them, and says where.
    scripted_server.add({"text": "Working there."})
    result = run(["--resume", "d" * 32], home, here, stdin="y\nhello\n/exit\n", **env)
    assert result.returncode == 0, result.stderr
    assert f"Project: {there}" in result.stdout and "Working there." in result.stdout
    # --project moves them without asking.
    scripted_server.add({"text": "Still there."})
    result = run(["--resume", "d" * 32, "--project"], home, here, stdin="again\n/exit\n", **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Still there." in result.stdout and "[y/N]" not in result.stdout
    assert f"Project: {there}" in result.stdout


def test_slash_resume_without_an_id_takes_the_newest_here(tmp_path, scripted_server):
    home = tmp_path / "home"
    here, there = _projects(tmp_path)
    _write(home, "a" * 32, here, ["older"], 1_700_000_000)
    _write(home, "b" * 32, here, ["newest here"], 1_700_100_000)
    _write(home, "d" * 32, there, ["elsewhere"], 1_700_300_000)
    result = run([], home, here, stdin="/resume\n\n/exit\n", MINO_BASE_URL=scripted_server.base_url,
                 MINO_PLUGINS="mino.policy,mino.skills")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert " 1. " + "b" * 32 in out and "d" * 32 not in out
    assert out.count(f"Session: {'b' * 32}") == 1 and "You: newest here" in out


def test_recap_escapes_and_clips(tmp_path):
    records = [{"type": "message", "role": "user", "content": "q1"},
               {"type": "message", "role": "assistant", "content": "a1"},
               {"type": "message", "role": "user", "content": "q2\x1b[2J"},
               {"type": "message", "role": "assistant", "content": "partial", "incomplete": "interrupted"},
               {"type": "message", "role": "user", "content": "q3 " + "y" * 400}]
    shown = recap(records, exchanges=2, width=50)
    assert shown[0] == ("user", "q2\x1b[2J")  # escaped where it is printed (ui.line)
    assert shown[1] == ("assistant", "partial [interrupted]")
    assert shown[2][1].endswith("...") and len(shown[2][1]) == 50


def test_version(tmp_path):
    result = run(["--version"], tmp_path / "home", tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("mino ") and result.stdout.split()[1][0].isdigit()
