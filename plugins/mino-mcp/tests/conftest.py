"""Fixtures: the demo MCP server (stdio and HTTP) and a harness holding this plugin."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import pytest

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from mcptest import DEMO  # noqa: E402
from mino_mcp import plugin  # noqa: E402

NAME = "mino-mcp"
INSTALLED = any(ep.name == NAME for ep in metadata.entry_points(group="mino"))


@pytest.fixture
def calls(tmp_path):
    return tmp_path / "calls.jsonl"


@pytest.fixture
def harness(make_harness):
    """make(servers={...}, **kw): a harness whose config has those MCP servers; this plugin
    from its entry point when installed, else registered in-process."""
    made = []

    def make(servers=None, config=None, **kw):
        config = dict(config or {})
        if servers is not None:
            config["mcp"] = {"servers": servers}
        h = make_harness(config=config, extra_plugins=None if INSTALLED else {NAME: plugin}, **kw)
        made.append(h)
        return h

    yield make
    for h in made:
        h.end_session()
    plugin.stop_everything()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_demo(tmp_path):
    """The demo server over streamable HTTP on loopback: its URL."""
    port = free_port()
    log = open(tmp_path / "http-demo.log", "w")
    proc = subprocess.Popen([sys.executable, DEMO, "http", str(port)], stdout=log, stderr=log,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 120  # a loaded CI machine can take long to import the SDK
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError((tmp_path / "http-demo.log").read_text())
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    proc.wait(10)
    log.close()
