"""Folder trust and the folders that are never a project (/ and the home folder), through
the real ``mino -p`` (the trust question itself: tests/test_terminal_pty.py)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")


def _run(tmp_path, server, project, *args, **env):
    full = isolated_env(tmp_path / "minohome", trust_folder=False)
    full.update(MINO_BASE_URL=server.base_url, MINO_PROJECT=str(project),
                MINO_PLUGINS="mino.policy,mino.skills,mino-tools-fs", HOME=str(tmp_path / "me"))
    full.update(env)
    return subprocess.run([MINO, *args], env=full, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_bash_is_refused_in_the_home_folder_even_in_bypass(tmp_path, scripted_server):
    me = tmp_path / "me"
    me.mkdir()
    scripted_server.add({"calls": [{"name": "Bash", "arguments": {"command": "touch made-here"}}]},
                        {"require": "refuses Bash", "text": "I cannot run commands here."})
    result = _run(tmp_path, scripted_server, me, "-p", "make a file", "--mode", "bypass",
                  "--output-format", "json")
    out = json.loads(result.stdout)
    assert out["answer"] == "I cannot run commands here.", result.stderr
    assert out["tool_calls"][0]["status"] == "denied" and result.returncode == 3
    assert not (me / "made-here").exists()
    assert any("not a project: Bash is refused here" in n for n in out["notices"])
    assert scripted_server.failures == []


def test_an_untrusted_folder_runs_headless_without_a_question(tmp_path, scripted_server):
    project = tmp_path / "work"
    project.mkdir()
    scripted_server.add({"text": "Answered."})
    result = _run(tmp_path, scripted_server, project, "-p", "hi")
    assert result.returncode == 0 and result.stdout == "Answered.\n", result.stderr
    assert "trust" not in result.stderr.lower()
    assert not (tmp_path / "minohome" / "trusted-folders.json").exists()
