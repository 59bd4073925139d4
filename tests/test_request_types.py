"""Requests every real server takes: each input item carries ``type`` (llama.cpp refuses
one without it), checked by the scripted server over loopback with the real client."""
from __future__ import annotations

import pytest

from mino_core.testing import ScriptedServer


def test_scripted_server_refuses_an_item_without_type():
    import openai

    with ScriptedServer([{"text": "never"}]) as server:
        client = openai.OpenAI(api_key="x", base_url=server.base_url, max_retries=0)
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.create(model="m", input=[{"role": "assistant", "content": "memo"},
                                                      {"role": "user", "content": "hi"}])
    assert "Cannot determine type of 'item'" in str(info.value)
    assert server.remaining == 1


def test_memory_bearing_multi_turn_session_and_its_resume(harness, scripted_server, notes):
    notes.front = "Memory index:\n- [project] uses-pnpm: install with pnpm"
    h = harness()
    scripted_server.add({"text": "one"}, {"text": "two"}, {"text": "three"})
    assert h.turn("first").answer == "one"
    assert h.turn("second").answer == "two"
    h.resume(h.session.id)
    assert h.turn("third").answer == "three"
    assert scripted_server.failures == []
    last = scripted_server.requests[-1]["input"]
    assert [(i["type"], i["role"]) for i in last] == [("message", "assistant")] + [
        ("message", role) for role in ("user", "assistant", "user", "assistant", "user")]
    assert last[0]["content"].startswith("Memory index:")


def test_plugin_items_without_type_are_completed_by_the_client(harness, scripted_server):
    h = harness()
    scripted_server.add({"text": "a summary"})
    assert h.session.complete("Summarise.", [{"role": "user", "content": "text"}]) == "a summary"
    assert scripted_server.requests[0]["input"][0]["type"] == "message"


def test_files_memory_index_turns(make_harness, scripted_server, mino_home):
    store = pytest.importorskip("mino_memory_files.store")
    directory = mino_home / "memory"
    directory.mkdir()
    (directory / "uses-pnpm.md").write_text(store.format_memory(store.Memory(
        "uses-pnpm", "project", "Install with pnpm.", "")), encoding="utf-8")
    scripted_server.add({"require": "uses-pnpm", "text": "pnpm"}, {"text": "yes"})
    h = make_harness(config={"memory": {"backend": "files"}})
    h.turn("which package manager?")
    h.turn("sure?")
    assert scripted_server.failures == [] and len(scripted_server.requests) == 2
    assert all(i.get("type") for r in scripted_server.requests for i in r["input"])
