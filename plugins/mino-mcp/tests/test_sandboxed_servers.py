"""stdio servers run in the sandbox by default (the core's ``sandbox_command``, which
tools-fs answers with the Bash sandbox): a real server, started by the SDK through the real
bubblewrap, sees the project and not what lies beside it, and reaches no network unless its
entry says ``network: true``."""
from __future__ import annotations

import shutil
import socket
import sys

import pytest

from mcptest import DEMO

READ, CONNECT = "mcp__demo__read", "mcp__demo__connect"


def call(name, **arguments):
    return {"calls": [{"name": name, "arguments": arguments}]}


def outputs(session):
    return [r["output"] for r in session.log.records if r.get("type") == "function_call_output"]


@pytest.fixture
def boxed(harness, project, tmp_path):
    """make(**entry): a harness with the demo server sandboxed (the default), run from a
    copy inside the project (the sandbox empties the homes, where a checkout may be)."""
    demo = project / "demo_server.py"
    shutil.copy(DEMO, demo)

    def make(**entry):
        h = harness({"demo": {"command": [sys.executable, str(demo)], **entry}}, approve="all")
        if h.agent.host.context.sandbox_command(["true"]) is None:
            pytest.skip("no sandbox on this machine (bubblewrap missing or not usable), "
                        "or tools-fs is not installed beside mino-mcp")
        return h
    return make


def test_a_sandboxed_server_sees_the_project_and_not_what_lies_beside_it(
        boxed, scripted_server, project, tmp_path):
    (project / "notes.txt").write_text("project notes\n")
    beside = tmp_path / "beside"
    beside.mkdir()
    (beside / "secret.txt").write_text("beside-the-project-secret\n")
    h = boxed()
    scripted_server.add(call(READ, path=str(project / "notes.txt")))
    scripted_server.add(call(READ, path=str(beside / "secret.txt")))
    scripted_server.add(call(READ, path=str(h.agent.home / "config.yaml")))
    scripted_server.add({"text": "done"})
    assert h.turn("read them").answer == "done"
    mine, theirs, config = outputs(h.session)
    assert "project notes" in mine
    assert "beside-the-project-secret" not in theirs and "cannot read" in theirs
    assert "cannot read" in config  # mino's home is hidden too


@pytest.mark.parametrize("network", [False, True])
def test_a_sandboxed_server_reaches_the_network_only_when_its_entry_says_so(
        boxed, scripted_server, network):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        port = listener.getsockname()[1]
        h = boxed(network=network)
        scripted_server.add(call(CONNECT, port=port))
        scripted_server.add({"text": "done"})
        h.turn("connect")
    [out] = outputs(h.session)
    assert ("connected" in out and "cannot connect" not in out) if network else "cannot connect" in out


def test_without_a_sandbox_a_sandboxed_server_is_one_notice_naming_the_switch(
        harness, scripted_server):
    h = harness({"demo": {"command": [sys.executable, DEMO]}},
                config={"tools-fs": {"sandbox": False}})
    scripted_server.add({"text": "ok"})
    h.turn("hi")
    assert "sandbox: false" in h.notices and "not available" in h.notices
