"""Completion status, streams that deviate from the service's, and the reasoning
round-trip, against deviant modes of the scripted server."""
from __future__ import annotations

import json

import pytest


def _records(h, kind):
    return [r for r in h.session.log.records if r.get("type") == kind]


def test_an_incomplete_answer_says_why_and_the_next_request_knows(harness, scripted_server, mino_home):
    h = harness()
    scripted_server.add({"text": "The first half of", "incomplete": "max_output_tokens"},
                        {"require": "[This answer was cut off: the output limit (max_output_tokens) "
                                    "was reached.]", "text": "ok"})
    record = h.turn("write a lot")
    assert record.ended == "incomplete" and record.reason == "max_output_tokens"
    assert record.answer == "The first half of"
    assert "[Answer cut off: the output limit (max_output_tokens) was reached.]" in h.transcript
    assert _records(h, "message")[-1]["incomplete"] == "max_output_tokens"
    assert '"reason": "max_output_tokens"' in (mino_home / "logs" / "mino.log").read_text()
    assert h.turn("continue").answer == "ok"
    assert scripted_server.failures == []


def test_cut_calls_are_not_run_and_the_log_stays_valid(harness, scripted_server):
    h = harness()
    scripted_server.add({"calls": [{"name": "note_read", "arguments": '{"path": "a'}],
                         "incomplete": "max_output_tokens"}, {"text": "ok"})
    record = h.turn("read")
    assert record.ended == "incomplete" and record.outcomes == []
    [output] = _records(h, "function_call_output")
    assert "cut off" in output["output"]
    assert h.turn("again").answer == "ok" and scripted_server.failures == []
    last = scripted_server.requests[-1]["input"]
    assert [i["type"] for i in last][:4] == ["message", "function_call", "function_call_output", "message"]


@pytest.mark.parametrize("deviate", [None, "no_output_index"])
def test_several_output_messages_keep_their_boundaries(harness, scripted_server, deviate):
    h = harness()
    scripted_server.add({"text": ["First part.", "Second part."], "deviate": deviate}, {"text": "x"})
    record = h.turn("hi")
    assert record.answer == "First part.\n\nSecond part."
    assert "Assistant> First part.\n\nSecond part." in h.transcript
    assert [r["content"] for r in _records(h, "message")[1:]] == ["First part.", "Second part."]
    h.turn("more")
    contents = [i["content"] for i in scripted_server.requests[-1]["input"]]
    assert contents[1:3] == ["First part.", "Second part."]


@pytest.mark.parametrize("deviate", ["deltas_only", "done_marker", "no_output_index", "no_stream",
                                     ["deltas_only", "done_marker", "no_output_index"]])
def test_items_are_rebuilt_from_deltas_and_a_stream_without_completed_is_kept_once(
        harness, scripted_server, deviate, mino_home):
    h = harness()
    (h.session.project_root / "a.txt").write_text("note text")
    scripted_server.add({"text": "Reading.", "calls": [{"name": "note_read", "arguments": {"path": "a.txt"}}],
                         "deviate": deviate},
                        {"require": "note text", "text": "It says note text.", "deviate": deviate})
    record = h.turn("read a.txt")
    assert record.answer == "It says note text." and record.ended == "answer"
    assert [o.result.status.value for o in record.outcomes] == ["completed"]
    assert len(scripted_server.requests) == 2  # nothing regenerated
    assert h.transcript.count("It says note text.") == 1
    assert [r["content"] for r in _records(h, "message")] == ["read a.txt", "Reading.", "It says note text."]
    if "done_marker" in deviate:
        log = (mino_home / "logs" / "mino.log").read_text()
        assert log.count("stream_ended_without_completed") == 2


def test_missing_call_ids_are_synthesised_never_empty(harness, scripted_server):
    h = harness()
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add({"calls": [{"name": "note_read", "arguments": {"path": "a.txt"}}] * 2,
                         "deviate": "no_call_ids"}, {"text": "ok"})
    h.turn("read twice")
    ids = [r["call_id"] for r in _records(h, "function_call")]
    assert len(set(ids)) == 2 and "" not in ids
    assert sorted(r["call_id"] for r in _records(h, "function_call_output")) == sorted(ids)
    sent = scripted_server.requests[-1]["input"]
    assert all(i["call_id"] for i in sent if i["type"].startswith("function_call"))


def test_reasoning_is_requested_logged_and_resent_before_what_it_preceded(harness, scripted_server):
    h = harness()
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add({"reasoning": "Read the file first.",
                         "calls": [{"name": "note_read", "arguments": {"path": "a.txt"}}]},
                        {"reasoning": "Now answer.", "text": "Done.", "phase": "final_answer"},
                        {"text": "bye"})
    h.turn("read it")
    first, second = scripted_server.requests
    assert first["include"] == ["reasoning.encrypted_content"] and first["store"] is False
    kinds = [i["type"] for i in second["input"]]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    assert second["input"][1]["encrypted_content"] == "enc_1:Read the file first."
    [call] = _records(h, "function_call")
    assert call["reasoning"][0]["encrypted_content"] == "enc_1:Read the file first."
    assert _records(h, "message")[-1]["phase"] == "final_answer"
    h.resume(h.session.id)
    h.turn("thanks")
    third = scripted_server.requests[-1]["input"]
    assert [i["type"] for i in third] == ["message", "reasoning", "function_call",
                                          "function_call_output", "reasoning", "message", "message"]
    assert third[5]["phase"] == "final_answer"
    assert scripted_server.failures == []


def test_reasoning_is_dropped_cleanly_when_the_model_changes(harness, scripted_server):
    h = harness()
    scripted_server.add({"reasoning": "Think.", "text": "one"}, {"text": "two"})
    h.turn("first")
    h.session.client.settings.model = "another-model"
    h.turn("second")
    assert [i["type"] for i in scripted_server.requests[-1]["input"]] == ["message"] * 3
    assert "enc_1" not in json.dumps(scripted_server.requests[-1])
    assert scripted_server.failures == []


def test_a_stream_cut_after_text_arrived_is_kept_as_cut_not_regenerated(harness, scripted_server):
    h = harness()
    scripted_server.add({"text": "word " * 30, "drop": 1})
    record = h.turn("talk")
    assert len(scripted_server.requests) == 1
    assert record.ended == "incomplete" and record.reason == "stream_ended"
    assert record.answer.startswith("word") and h.transcript.count("Assistant>") == 1
    assert "[Answer cut off: the connection closed before the response completed.]" in h.transcript
