"""``mino doctor`` and mistyped subcommands, through the real ``mino``."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys

from mino_core.testing import ScriptedServer
from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")


def _mino(tmp_path, base_url, *args, **env):
    full = isolated_env(tmp_path / "home")
    full.update(MINO_BASE_URL=base_url, MINO_PROJECT=str(tmp_path),
                MINO_PLUGINS="mino.policy,mino.skills,mino-tools-fs", MINO_MODEL="scripted")
    full.update(env)
    return subprocess.run([MINO, *args], env=full, capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)


def test_doctor_checks_server_model_window_and_plugins(tmp_path):
    with ScriptedServer(n_ctx=4096) as server:
        result = _mino(tmp_path, server.base_url, "doctor")
        assert server.requests == []  # nothing was sent to the model
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert f"ok    server: {server.base_url} answers (1 model(s) listed)" in lines
    assert "ok    model: scripted is listed by the server" in lines
    assert "ok    context window: 4,096 tokens" in lines
    assert any(line.startswith("ok    plugin mino-tools-fs: mino-tools-fs ") for line in lines)
    assert any(line.startswith("ok      mino-tools-fs: ") for line in lines)  # the sandbox's status
    assert any(line.startswith(("ok    memory: ", "warn  memory: ")) for line in lines)
    assert lines[-1] == "All checks passed."


def test_doctor_fails_on_a_server_that_is_not_there_and_a_bad_model(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = _mino(tmp_path, f"http://127.0.0.1:{port}/v1", "doctor")
    assert result.returncode == 1
    assert f"FAIL  server: cannot reach http://127.0.0.1:{port}/v1" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    with ScriptedServer() as server:
        result = _mino(tmp_path, server.base_url, "doctor", MINO_MODEL="gpt-typo")
    assert "warn  model: gpt-typo is not listed by the server (it lists scripted)" in result.stdout


def test_a_mistyped_command_is_not_a_prompt(tmp_path):
    with ScriptedServer([{"text": "should never be asked"}]) as server:
        typo = _mino(tmp_path, server.base_url, "sesions")
        assert typo.returncode == 2
        assert f"No command 'sesions'. Did you mean: {MINO} sessions?" in typo.stderr
        helped = _mino(tmp_path, server.base_url, "help")
        assert helped.returncode == 0 and "Usage: mino" in helped.stdout and "doctor" in helped.stdout
        also = _mino(tmp_path, server.base_url, "plugin", "--json")
        assert also.returncode == 2 and "Did you mean" in also.stderr and "plugins" in also.stderr
        assert server.requests == []
        # A real one-word prompt still is one (headless here, so it is answered at once).
        said = _mino(tmp_path, server.base_url, "-p", "sesions")
        assert said.returncode == 0 and said.stdout == "should never be asked\n"
