"""Helpers the MCP client's tests share (the fixtures are in conftest.py)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

DEMO = str(Path(__file__).with_name("demo_server.py"))


def stdio_server(calls: Path | None = None, **extra) -> dict:
    """The demo server's config entry, unsandboxed (it writes DEMO_CALLS outside the
    project; test_sandboxed_servers.py runs it in the sandbox)."""
    entry = {"command": [sys.executable, DEMO], "sandbox": False}
    if calls is not None:
        entry["env"] = {"DEMO_CALLS": str(calls)}
    entry.update(extra)
    return entry


def called(path: Path) -> list[str]:
    """The tools the demo server ran, in order."""
    if not path.exists():
        return []
    return [json.loads(line)["tool"] for line in path.read_text().splitlines() if line.strip()]
