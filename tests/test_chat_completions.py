"""Chat completions end to end: the adapter against the scripted server's
``/v1/chat/completions`` (strict about alternating roles), through the real openai client."""
from __future__ import annotations

import pytest

from mino_core.chat import FRONT_LABEL, to_chat
from mino_core.testing import ScriptedServer
from mino_core.testing.harness import Harness


def call(name, **arguments):
    return {"calls": [{"name": name, "arguments": arguments}]}


@pytest.fixture
def chat(harness):
    def make(**kwargs):
        config = dict(kwargs.pop("config", {}), api="chat")
        return harness(config=config, **kwargs)
    return make


def roles(body):
    return [m["role"] for m in body["messages"]]


def test_plain_answer_same_transcript_and_log_shapes(chat, harness, scripted_server):
    scripted_server.add({"text": "Hi!"}, {"text": "Hi!"})
    on_chat, on_responses = chat(), harness()
    assert on_chat.turn("hello").answer == "Hi!"
    on_responses.turn("hello")
    assert scripted_server.paths[0].endswith("/chat/completions")
    assert scripted_server.paths[1].endswith("/responses")
    assert on_chat.transcript == on_responses.transcript
    shape = lambda h: [(r["type"], r.get("role"), r.get("content")) for r in h.session.log.records  # noqa: E731
                       if r.get("type") in ("message", "turn_end")]
    assert shape(on_chat) == shape(on_responses)
    body = scripted_server.requests[0]
    assert roles(body) == ["system", "user"] and body["max_tokens"] == 8192
    assert "You are mino" in body["messages"][0]["content"]
    assert on_chat.session.state["usage"]["input_tokens"] > 0


def test_tool_call_approved_and_denied(chat, scripted_server):
    h = chat(approve="all")
    scripted_server.add(call("note_write", path="n.txt", content="hello"), {"text": "ok"})
    record = h.turn("write")
    assert (h.session.project_root / "n.txt").read_text() == "hello"
    assert [o.result.status.value for o in record.outcomes] == ["completed"]
    second = scripted_server.requests[1]
    assert roles(second) == ["system", "user", "assistant", "tool"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "note_write"
    assert second["messages"][3]["tool_call_id"] == second["messages"][2]["tool_calls"][0]["id"]

    h2 = chat(approve="none")
    scripted_server.add(call("note_write", path="m.txt", content="x"), {"require": "status: denied", "text": "ok"})
    h2.turn("write")
    assert not (h2.session.project_root / "m.txt").exists()
    assert "[Tool result: denied]" in h2.transcript
    assert scripted_server.failures == []


def test_memory_index_never_breaks_alternation_over_turns(chat, scripted_server, notes):
    notes.front = "Memory index:\n- [project] uses-pnpm: install with pnpm"
    h = chat()
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add({"text": ["one", "two"]}, call("note_read", path="a.txt"),
                        {"text": "read"}, {"text": "three"})
    h.turn("first")
    h.turn("second")
    h.resume(h.session.id)
    h.turn("third")
    assert scripted_server.failures == []
    last = scripted_server.requests[-1]
    assert roles(last) == ["system", "user", "assistant", "user", "assistant", "tool", "assistant", "user"]
    assert last["messages"][0]["content"].endswith(f"{FRONT_LABEL}\nMemory index:\n- [project] "
                                                   "uses-pnpm: install with pnpm")
    assert last["messages"][2]["content"] == "one\n\ntwo"


def test_adapter_merges_runs_of_one_role():
    request = {"model": "m", "instructions": "Be brief.", "input": [
        {"type": "message", "role": "assistant", "content": "memo"},
        {"type": "message", "role": "user", "content": "a"},
        {"type": "message", "role": "user", "content": "b"},
        {"type": "message", "role": "assistant", "content": "text"},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call", "call_id": "c2", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x"},
        {"type": "function_call_output", "call_id": "c2", "output": "y"},
        {"type": "reasoning", "id": "r", "summary": [], "encrypted_content": "e"}],
        "tools": [{"type": "function", "name": "f", "description": "d", "parameters": {"type": "object"}}]}
    kwargs = to_chat(request)
    messages = kwargs["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert messages[0]["content"] == f"Be brief.\n\n{FRONT_LABEL}\nmemo"
    assert messages[1]["content"] == "a\n\nb"
    assert messages[2]["content"] == "text" and [c["id"] for c in messages[2]["tool_calls"]] == ["c1", "c2"]
    assert kwargs["tools"] == [{"type": "function", "function": {
        "name": "f", "description": "d", "parameters": {"type": "object"}}}]


def test_compaction_on_chat(chat, scripted_server):
    h = chat()
    for n in range(4):
        scripted_server.add({"text": f"answer {n}"})
    for n in range(4):
        h.turn(f"question {n}")
    scripted_server.add({"text": "SUMMARY-TEXT"}, {"require": "SUMMARY-TEXT", "text": "after"})
    from mino_core.compaction import compact_command

    compact_command(h.session)
    assert "Compacted" in h.transcript
    assert h.turn("next").answer == "after"
    last = scripted_server.requests[-1]
    assert roles(last)[:2] == ["system", "user"] and "SUMMARY-TEXT" in last["messages"][0]["content"]
    assert scripted_server.failures == []


def test_cut_answer_and_missing_call_ids_on_chat(chat, scripted_server):
    h = chat()
    scripted_server.add({"text": "half", "incomplete": True})
    record = h.turn("long")
    # finish_reason "length" one token in, far below the 8,192 asked for: the server's own limit.
    assert record.ended == "incomplete" and record.reason == "server_limit"
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add({"calls": [{"name": "note_read", "arguments": {"path": "a.txt"}}] * 2,
                         "deviate": "no_call_ids"}, {"require": "cut off", "text": "ok"})
    h.turn("read")
    ids = [r["call_id"] for r in h.session.log.records if r.get("type") == "function_call"]
    assert len(set(ids)) == 2 and "" not in ids
    assert scripted_server.failures == []


def test_auto_falls_back_to_chat_once_and_says_so(mino_home, project, monkeypatch):
    monkeypatch.delenv("MINO_API", raising=False)
    with ScriptedServer([{"text": "one"}, {"text": "two"}], responses=False) as server:
        h = Harness(server, mino_home, project, config={})
        assert h.turn("first").answer == "one"
        assert h.turn("second").answer == "two"
    assert [p.rsplit("/", 1)[-1] for p in server.paths] == ["responses", "completions", "completions"]
    assert h.notices.count("using chat completions for the rest of this run") == 1
    assert server.failures == []


@pytest.mark.parametrize("deviate", ["no_stream", "no_call_ids"])
def test_chat_server_deviations(chat, scripted_server, deviate):
    h = chat()
    (h.session.project_root / "a.txt").write_text("note text")
    scripted_server.add({"text": "Reading.", "calls": [{"name": "note_read", "arguments": {"path": "a.txt"}}],
                         "deviate": deviate},
                        {"require": "note text", "text": "It says note text.", "deviate": deviate})
    record = h.turn("read a.txt")
    assert record.answer == "It says note text." and len(scripted_server.requests) == 2
    assert [o.result.status.value for o in record.outcomes] == ["completed"]
    assert "Assistant> Reading." in h.transcript
    assert scripted_server.failures == []


def test_chat_tool_call_chunks_without_index():
    from mino_core.chat import Reader

    reader = Reader()
    for call in ({"id": "a", "function": {"name": "f", "arguments": '{"x"'}}, {"function": {"arguments": ": 1}"}},
                 {"id": "b", "function": {"name": "g", "arguments": "{}"}}):
        reader.feed({"choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
    assert [(c["call_id"], c["name"], c["arguments"]) for c in reader.response().calls] == [
        ("a", "f", '{"x": 1}'), ("b", "g", "{}")]
