"""The turn loop end to end: real HTTP, the real openai client, a scripted model."""
from __future__ import annotations

import json

from mino_core.testing import request_text


def call(name, **arguments):
    return {"calls": [{"name": name, "arguments": arguments}]}


def test_plain_answer_has_no_leading_item(harness, scripted_server):
    h = harness()
    scripted_server.add({"text": "Hi!"})
    record = h.turn("hello")
    assert record.answer == "Hi!" and record.ended == "answer"
    body = scripted_server.requests[0]
    assert body["input"] == [{"type": "message", "role": "user", "content": "hello"}]
    assert body["stream"] is True
    assert "Assistant> Hi!" in h.transcript
    assert "You are mino" in body["instructions"]


def test_front_input_is_one_leading_item_fixed_for_the_turn_and_never_logged(harness, scripted_server, notes):
    h = harness()
    notes.front = "FRONT-MARKER data saved earlier"
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add(call("note_read", path="a.txt"), {"text": "done"})
    h.turn("read it")
    first, second = scripted_server.requests
    for body in (first, second):
        assert body["input"][0] == {"type": "message", "role": "assistant",
                                    "content": "FRONT-MARKER data saved earlier"}
    assert "FRONT-MARKER" not in h.session.log.path.read_text()


def test_approved_and_denied_edits(harness, scripted_server):
    h = harness(approve="all")
    scripted_server.add(call("note_write", path="n.txt", content="hello"), {"text": "ok"})
    h.turn("write")
    assert (h.session.project_root / "n.txt").read_text() == "hello"
    assert 'Path: "n.txt"' in h.transcript and "Approve this operation? [y/N] y" in h.transcript
    assert "[Tool: note_write]" in h.transcript and "[Tool result: completed]" in h.transcript

    h2 = harness(approve="none")
    scripted_server.add(call("note_write", path="m.txt", content="x"), {"require": "status: denied", "text": "ok"})
    h2.turn("write")
    assert not (h2.session.project_root / "m.txt").exists()
    assert "[Tool result: denied]" in h2.transcript
    assert scripted_server.failures == []


def test_invalid_arguments_never_reach_the_decision(harness, scripted_server, notes):
    h = harness(approve="all")
    scripted_server.add(
        {"calls": [{"name": "note_write", "arguments": "{not json"},
                   {"name": "note_write", "arguments": {"content": "no path"}},
                   {"name": "note_write", "arguments": {"path": "!bad", "content": "x"}},
                   {"name": "nope", "arguments": {}}]},
        {"text": "sorry"})
    record = h.turn("go")
    statuses = [o.result.status.value for o in record.outcomes]
    assert statuses == ["invalid_arguments"] * 4
    assert "Approve this operation" not in h.transcript
    text = request_text(scripted_server.requests[1])
    assert "missing required field 'path'" in text and "must not start with '!'" in text
    assert "There is no tool named 'nope'" in text
    assert list(h.session.project_root.iterdir()) == []


def test_change_after_approval_binds_to_what_was_seen(harness, scripted_server):
    def approve(tool, text):
        (h.session.project_root / "n.txt").write_text("edited by hand")
        return True

    h = harness(approve=approve)
    scripted_server.add(call("note_write", path="n.txt", content="model"), {"text": "ok"})
    record = h.turn("write")
    assert record.outcomes[0].result.status.value == "failed"
    assert (h.session.project_root / "n.txt").read_text() == "edited by hand"


def test_request_limit_ends_the_turn_and_the_log_stays_valid(harness, scripted_server, conversation):
    h = harness()
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add(*[call("note_read", path="a.txt") for _ in range(9)])
    record = h.turn("loop")
    assert record.ended == "request_limit" and record.requests == 8
    assert len(scripted_server.requests) == 8
    assert "limit of 8 model requests" in h.transcript
    calls = [r["call_id"] for r in conversation(h) if r["type"] == "function_call"]
    outputs = [r["call_id"] for r in conversation(h) if r["type"] == "function_call_output"]
    assert calls == outputs


def test_tool_call_limit_answers_every_call(harness, scripted_server, conversation):
    h = harness()
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add({"calls": [{"name": "note_read", "arguments": {"path": "a.txt"}}] * 10},
                        {"calls": [{"name": "note_read", "arguments": {"path": "a.txt"}}] * 10})
    record = h.turn("many")
    assert record.ended == "tool_limit"
    assert len(record.outcomes) == 16
    calls = [r["call_id"] for r in conversation(h) if r["type"] == "function_call"]
    outputs = [r["call_id"] for r in conversation(h) if r["type"] == "function_call_output"]
    assert sorted(calls) == sorted(outputs) and len(calls) == 20
    assert "limit of 16 tool calls" in h.transcript
    # Calls that were not run are not outcomes of a tool (no steering on them).
    assert h.transcript.count("[Tool: note_read]") == 16


def test_retries_service_errors_and_dropped_streams(harness, scripted_server, conversation):
    h = harness()
    scripted_server.add({"fail": {"status": 503, "times": 1}, "drop": 1, "text": "finally"})
    record = h.turn("hi")
    assert record.answer == "finally"
    assert len(scripted_server.requests) == 3
    assert "retrying" in h.notices
    # Nothing from the failed attempts reached the log.
    assert [r["content"] for r in conversation(h) if r["type"] == "message"] == ["hi", "finally"]


def test_retries_are_bounded_and_end_the_turn_readably(harness, scripted_server):
    h = harness()
    scripted_server.add({"fail": {"status": 500, "times": 10}, "text": "never"})
    record = h.turn("hi")
    assert record.ended == "error"
    assert "The model service failed 3 times" in h.notices
    assert "Traceback" not in h.notices + h.transcript
    # The next turn works and its request is well formed.
    scripted_server.script.clear()
    scripted_server.add({"text": "back"})
    assert h.turn("again").answer == "back"
    roles = [i.get("role") for i in scripted_server.requests[-1]["input"]]
    assert roles == ["user", "user"]


def test_refused_request_is_not_retried(harness, scripted_server):
    h = harness()
    scripted_server.add({"require": "text that is not there", "text": "x"})
    record = h.turn("hi")
    assert record.ended == "error" and len(scripted_server.requests) == 1
    assert "HTTP 400" in h.notices


def test_tool_outcome_and_after_turn_hooks(harness, scripted_server, notes):
    h = harness()
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add(call("note_fail", path="a.txt"), {"text": "it failed"})
    record = h.turn("try")
    assert [o.result.status.value for o in notes.outcomes] == ["failed"]
    assert notes.turns == [record] and not record.clean and record.ended == "answer"


def test_sandboxed_call_runs_unasked_and_other_calls_ask(harness, scripted_server):
    h = harness(approve="none")
    scripted_server.add({"calls": [{"name": "note_shell", "arguments": {"path": "x"}},
                                   {"name": "note_send", "arguments": {"path": "x"}}]}, {"text": "ok"})
    record = h.turn("go")
    assert [o.result.status.value for o in record.outcomes] == ["completed", "denied"]
    assert h.transcript.count("Approve this operation?") == 1


def test_resume_rebuilds_the_same_request(harness, scripted_server, make_harness):
    h = harness()
    scripted_server.add({"text": "one"}, {"text": "two"})
    h.turn("first")
    before = scripted_server.requests[-1]
    session_id = h.session.id
    h.new_session()
    h.resume(session_id)
    h.turn("second")
    after = scripted_server.requests[-1]
    assert after["input"][:2] == before["input"] + [{"type": "message", "role": "assistant", "content": "one"}]
    assert after["instructions"] == before["instructions"]


def test_torn_last_line_is_skipped_with_a_notice(harness, scripted_server):
    h = harness()
    scripted_server.add({"text": "one"}, {"text": "two"})
    h.turn("first")
    path = h.session.log.path
    with open(path, "ab") as fh:
        fh.write(b'{"type":"message","role":"user","cont')
    session_id = h.session.id
    h.resume(session_id)
    assert "skipped a torn last line" in h.notices
    h.turn("second")
    lines = path.read_text().splitlines()
    # The torn line stays, terminated; every later record is whole JSON.
    assert any(line.endswith('"cont') for line in lines)
    for line in lines[lines.index(next(l for l in lines if l.endswith('"cont'))) + 1:]:
        json.loads(line)


def test_reasoning_summary_streams_before_the_answer_and_logs_are_written(harness, scripted_server, mino_home):
    h = harness()
    scripted_server.add({"reasoning": "Checking the facts.", "text": "Paris."})
    h.turn("capital of France?")
    assert "(thinking) Checking the facts.\n\nAssistant> Paris." in h.transcript
    log = (mino_home / "logs" / "mino.log").read_text()
    assert '"event": "turn_end"' in log and '"ended": "answer"' in log


def test_terminal_control_sequences_from_model_or_tools_are_shown_as_escapes(harness, scripted_server):
    h = harness()
    (h.session.project_root / "a.txt").write_text("file says \x1b[2J clear")
    scripted_server.add(call("note_read", path="a.txt"), {"text": "model says \x1b]0;title\x07 hi"})
    h.turn("go")
    assert "\x1b" not in h.transcript and "\x07" not in h.transcript
    assert "file says \\u001b[2J clear" in h.transcript
    assert "model says \\u001b]0;title\\u0007 hi" in h.transcript
    # The model and the log get the text as it was.
    assert "\x1b[2J" in scripted_server.texts()[-1]
