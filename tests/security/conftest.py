"""The security tests run the real core policy and the real file tools (mino-tools-fs)."""
from __future__ import annotations

import pytest

PLUGINS = "mino.policy,mino.skills,mino-tools-fs"


@pytest.fixture
def agent(make_harness, monkeypatch):
    """``agent(mode=..., approve=..., config=...)``: a harness with the real file tools.
    Bash runs without the sandbox here, so a Bash call the rules do not settle asks."""
    monkeypatch.setenv("MINO_PLUGINS", PLUGINS)

    def make(**kwargs):
        config = kwargs.setdefault("config", {})
        config.setdefault("tools-fs", {"sandbox": False})
        return make_harness(**kwargs)

    return make


def call(scripted_server, h, tool, **arguments):
    """One turn in which the model makes one call; returns (status, output, decision)."""
    scripted_server.add({"calls": [{"name": tool, "arguments": arguments}]}, {"text": "ok"})
    record = h.turn("go")
    result = record.outcomes[0].result
    decisions = [r for r in h.session.log.records if r.get("type") == "decision"]
    return result.status.value, result.output, (decisions[-1] if decisions else None)
