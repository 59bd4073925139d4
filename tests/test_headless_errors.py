"""Errors that name the problem, fast: ``mino -p`` against a port with nothing on it and
against servers without the Responses API (404, 501), as a real process on loopback.
Each ends with its documented message, tried the documented number of times. How fast is
bench/startup.py's business: the bound here only says it did not hang or wait out a
retry schedule, with a margin that holds on a loaded machine (about 10x its usual time)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mino_core.testing import ScriptedServer
from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")
# Seconds, the whole process: about 0.5-1 s idle and 3-6 s at a load of 9-14, so 20 s is
# about 10x the idle time and still far below a retry schedule or a 120 s timeout.
LIMIT = 20.0


def run(tmp_path, base_url, *args, **env):
    full = isolated_env(tmp_path / "home")
    full.update(MINO_BASE_URL=base_url, MINO_PLUGINS="mino.policy,mino.skills", MINO_PROJECT=str(tmp_path))
    full.update(env)
    started = time.monotonic()
    result = subprocess.run([MINO, "-p", "hi", *args], env=full, capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    return result, time.monotonic() - started


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_names_the_url_and_the_cause_at_once(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    result, took = run(tmp_path, url)
    assert result.returncode == 1 and result.stdout == ""
    assert f"Cannot connect to the model server at {url} (connection refused)" in result.stderr
    assert "retrying" not in result.stderr and "Traceback" not in result.stderr
    assert took < LIMIT, took


def test_no_responses_api_404_says_so_in_responses_mode(tmp_path):
    with ScriptedServer([{"text": "x"}], responses=False) as server:
        result, took = run(tmp_path, server.base_url, MINO_API="responses")
        assert len(server.paths) == 1
    assert result.returncode == 1
    assert f"The server at {server.base_url} has no Responses API ({server.base_url}/responses: HTTP 404" \
        in result.stderr and "api: chat" in result.stderr
    assert took < LIMIT, took


def test_no_responses_api_404_with_api_auto_falls_back_to_chat(tmp_path):
    with ScriptedServer([{"text": "from chat"}], responses=False) as server:
        result, took = run(tmp_path, server.base_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "from chat\n" and "has no Responses API" in result.stderr
    assert took < LIMIT, took


class _NotImplemented(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b"Not Implemented"
        self.send_response(501)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.server.seen.append(self.path)


@pytest.fixture
def server_501():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotImplemented)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_a_501_says_the_server_does_not_speak_the_responses_api(tmp_path, server_501):
    url = f"http://127.0.0.1:{server_501.server_address[1]}/v1"
    result, took = run(tmp_path, url, MINO_API="responses")
    assert result.returncode == 1
    assert f"has no Responses API ({url}/responses: HTTP 501: Not Implemented)" in result.stderr
    assert server_501.seen == ["/v1/responses"]  # not retried
    assert took < LIMIT, took


def test_a_501_everywhere_with_api_auto_ends_after_the_chat_try(tmp_path, server_501):
    url = f"http://127.0.0.1:{server_501.server_address[1]}/v1"
    result, took = run(tmp_path, url)
    assert result.returncode == 1
    assert f"has no chat completions endpoint ({url}/chat/completions: HTTP 501" in result.stderr
    assert server_501.seen == ["/v1/responses", "/v1/chat/completions"]
    assert took < LIMIT, took


class _Silent:
    """A loopback server that accepts connections and never answers."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.held: list[float] = []  # when each connection came
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        conns = []
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(time.monotonic())
            conns.append(conn)

    def close(self):
        self._stop = True
        self.sock.close()


def test_a_silent_server_is_tried_twice_and_named(tmp_path):
    server = _Silent()
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("timeout: 1\n")
    try:
        result, took = run(tmp_path, server.url)
    finally:
        server.close()
    assert result.returncode == 1
    assert f"The model server at {server.url} did not answer in time (tried twice" in result.stderr
    assert len(server.held) == 2
    waited = 2 * 1.0  # the server's share: two read timeouts of 1 s
    assert took - waited < LIMIT, took
