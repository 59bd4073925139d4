"""Bad YAML on disk and the log file's mode, through the installed ``mino`` command."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys

import pytest
import yaml

from mino_core import load_yaml
from mino_core.testing.harness import isolated_env
from mino_core.yaml_safe import MAX_DEPTH, YAMLRefused

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")

# Nine anchors of nine aliases each: 9**9 strings once anything walks the value.
BOMB = "\n".join(["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
                 + [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)])
DEEP = "[" * 900 + "]" * 900  # deep enough for RecursionError in the pure-Python composer


def run(args, home, timeout=30, **env):
    full = isolated_env(home)
    full.update(env)
    return subprocess.run([MINO, *args], env=full, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.fixture
def home(tmp_path):
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.mark.parametrize("args", [["permissions"], ["-p", "hi"], ["plugins"]])
def test_an_alias_bomb_in_config_is_refused_at_once(home, args):
    (home / "config.yaml").write_text(BOMB + "\nmodel: *a8\npermissions: {deny: *a8}\n")
    # Before the fix these walked 387 million strings: the timeout is the failure.
    result = run(args, home, timeout=20, OPENAI_API_KEY="x")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "config.yaml is refused" in result.stderr and "alias" in result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("args", [["permissions"], ["-p", "hi"]])
def test_deeply_nested_config_is_one_clear_line(home, args):
    (home / "config.yaml").write_text("model: " + DEEP + "\n")
    result = run(args, home, OPENAI_API_KEY="x")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "RecursionError" not in result.stderr and "unexpected error" not in result.stderr
    assert f"nests deeper than {MAX_DEPTH} levels" in result.stderr


def test_deeply_nested_skill_front_matter_is_a_skipped_skill(home, tmp_path, scripted_server):
    project = tmp_path / "project"
    skill = project / ".mino" / "skills" / "deep"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: deep\ndescription: {DEEP}\n---\nbody\n")
    scripted_server.add({"text": "Hello."})
    result = run(["-p", "hi"], home, MINO_BASE_URL=scripted_server.base_url,
                 MINO_PROJECT=str(project), MINO_PLUGINS="mino.policy,mino.skills")
    assert result.returncode == 0, result.stderr
    assert "Hello." in result.stdout
    assert "deep/SKILL.md: needs front matter" in result.stderr
    assert "RecursionError" not in result.stderr


def test_a_memory_file_with_a_bomb_or_deep_front_matter_is_skipped(home):
    memory = home / "memory"
    memory.mkdir()
    (memory / "bomb.md").write_text(f"---\n{BOMB}\nname: bomb\ntype: user\nsummary: x\n---\n")
    (memory / "deep.md").write_text(f"---\nname: deep\ntype: user\nsummary: {DEEP}\n---\n")
    (memory / "fine.md").write_text("---\nname: fine\ntype: user\nsummary: a fact\n---\n")
    result = run(["memory", "list"], home, timeout=20, MINO_MEMORY_BACKEND="files")
    assert result.returncode == 0, result.stderr
    assert "fine: a fact" in result.stdout and "bomb" not in result.stdout
    assert "2 file(s) skipped" in result.stderr


def test_the_loader_keeps_ordinary_anchors_and_refuses_the_rest():
    text = "base: &b {x: 1, y: [1, 2]}\none: {<<: *b, z: 3}\ntwo: *b\n"
    assert load_yaml(text) == yaml.safe_load(text)
    assert load_yaml("a: [[[1]]]") == {"a": [[[1]]]}
    assert load_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH) is not None
    with pytest.raises(YAMLRefused, match="deeper"):
        load_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(YAMLRefused, match="alias"):
        load_yaml(BOMB)
    with pytest.raises(yaml.YAMLError):
        load_yaml("a: [unclosed")


def test_the_log_file_is_private_and_an_open_one_is_tightened(home, scripted_server):
    logs = home / "logs"
    scripted_server.add({"text": "One."}, {"text": "Two."})
    env = {"MINO_BASE_URL": scripted_server.base_url, "MINO_PLUGINS": "mino.policy"}
    assert run(["-p", "hi"], home, **env).returncode == 0
    log = logs / "mino.log"
    assert log.stat().st_size > 0
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    os.chmod(log, 0o644)  # as an older mino left it
    assert run(["-p", "again"], home, **env).returncode == 0
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
