"""AGENTS.md / CLAUDE.md from the project up to the repository root, loaded only as the
person approved them, through the real ``mino -p`` and ``mino instructions`` (the question
at a terminal: tests/test_terminal_pty.py)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("ROOT-RULE: run tests with make check.\n")
    (root / "CLAUDE.md").write_text("CLAUDE-ROOT: never read, AGENTS.md wins in this folder.\n")
    project = root / "services" / "api"
    project.mkdir(parents=True)
    (project / "CLAUDE.md").write_text("API-RULE: the api uses port 8080.\n")
    (tmp_path / "AGENTS.md").write_text("ABOVE-REPO: outside the repository, never read.\n")
    return root, project


def _mino(tmp_path, server, project, *args):
    env = isolated_env(tmp_path / "home")
    env.update(MINO_BASE_URL=server.base_url, MINO_PROJECT=str(project),
               MINO_PLUGINS="mino.policy,mino.skills,mino.instructions")
    return subprocess.run([MINO, *args], env=env, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_headless_skips_new_files_with_a_notice_until_approved(tmp_path, scripted_server, repo):
    root, project = repo
    scripted_server.add({"forbid": ["ROOT-RULE", "API-RULE"], "text": "without"})
    result = _mino(tmp_path, scripted_server, project, "-p", "hi")
    assert result.returncode == 0, result.stderr
    assert "Project instructions not loaded" in result.stderr
    assert str(root / "AGENTS.md") in result.stderr and str(project / "CLAUDE.md") in result.stderr
    assert "instructions approve" in result.stderr

    listed = _mino(tmp_path, scripted_server, project, "instructions")
    assert listed.stdout.splitlines()[:2] == [f"new       {root / 'AGENTS.md'}",
                                              f"new       {project / 'CLAUDE.md'}"]
    approved = _mino(tmp_path, scripted_server, project, "instructions", "approve")
    assert approved.returncode == 0 and approved.stdout.count("Approved ") == 2
    assert oct((tmp_path / "home" / "instructions-seen.json").stat().st_mode & 0o777) == "0o600"

    scripted_server.add({"require": ["ROOT-RULE", "API-RULE"],
                         "forbid": ["CLAUDE-ROOT", "ABOVE-REPO"], "text": "with"})
    result = _mino(tmp_path, scripted_server, project, "-p", "hi")
    assert result.returncode == 0 and result.stdout == "with\n", result.stderr
    instructions = scripted_server.requests[-1]["instructions"]
    assert instructions.index("ROOT-RULE") < instructions.index("API-RULE")  # nearest last
    assert "not loaded" not in result.stderr

    # A change is asked about again: skipped headless.
    (project / "CLAUDE.md").write_text("API-RULE: the api uses port 9090 now.\n")
    scripted_server.add({"require": "ROOT-RULE", "forbid": "9090", "text": "changed"})
    result = _mino(tmp_path, scripted_server, project, "-p", "hi")
    assert result.stdout == "changed\n" and "Project instructions not loaded" in result.stderr
    assert scripted_server.failures == []


def test_without_a_repository_only_the_projects_own_file(tmp_path, scripted_server):
    project = tmp_path / "plain"
    project.mkdir()
    (tmp_path / "AGENTS.md").write_text("PARENT: not read without a repository.\n")
    (project / "AGENTS.md").write_text("OWN: read.\n")
    listed = _mino(tmp_path, scripted_server, project, "instructions")
    assert listed.stdout.splitlines()[0] == f"new       {project / 'AGENTS.md'}"
    assert "PARENT" not in listed.stdout and len(listed.stdout.splitlines()) == 3
