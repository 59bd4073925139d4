"""Bounded output: max_output_tokens on every request, a time budget per turn."""
from __future__ import annotations

import time


def test_every_request_carries_max_output_tokens_with_a_per_model_override(harness, scripted_server):
    h = harness()
    scripted_server.add({"text": "a"}, {"text": "b"}, {"text": "c"})
    h.turn("one")
    assert scripted_server.requests[-1]["max_output_tokens"] == 8192
    h.session.config.update({"max_output_tokens": 300})
    h.turn("two")
    assert scripted_server.requests[-1]["max_output_tokens"] == 300
    h.session.config.update({"models": {"scripted": {"max_output_tokens": 120}}})
    h.turn("three")
    assert scripted_server.requests[-1]["max_output_tokens"] == 120


def test_a_summary_request_is_bounded_too(harness, scripted_server):
    h = harness()
    scripted_server.add({"text": "summary"})
    h.session.complete("Summarise.", [{"type": "message", "role": "user", "content": "x"}])
    assert scripted_server.requests[0]["max_output_tokens"] == 8192


def test_a_slow_stream_stops_at_the_turn_budget_and_keeps_what_arrived(harness, scripted_server):
    h = harness(config={"turn_budget": 1})
    scripted_server.add({"text": "word " * 40, "delay": 0.1}, {"require": "cut off", "text": "ok"})
    started = time.monotonic()
    record = h.turn("talk")
    assert time.monotonic() - started < 3
    assert record.ended == "incomplete" and record.reason == "turn_budget"
    assert record.answer.startswith("word") and len(record.answer) < len("word " * 40)
    assert "[Answer cut off: the turn's time budget ran out.]" in h.transcript
    end = [r for r in h.session.log.records if r.get("type") == "turn_end"][-1]
    assert end["ended"] == "incomplete" and end["reason"] == "turn_budget"
    assert h.turn("go on").answer == "ok"


def test_an_answer_that_used_the_whole_cap_is_reported_cut(harness, scripted_server):
    h = harness(config={"max_output_tokens": 50})
    scripted_server.add({"text": "and so on", "usage": {"output_tokens": 50}},
                        {"text": "short", "usage": {"output_tokens": 49}})
    assert h.turn("talk").reason == "max_output_tokens"
    assert h.turn("again").ended == "answer"


def test_a_server_silent_past_the_budget_ends_the_turn(harness, scripted_server):
    h = harness(config={"turn_budget": 1})
    scripted_server.add({"text": "late", "delay": 2.5})
    started = time.monotonic()
    record = h.turn("hi")
    assert time.monotonic() - started < 2.4
    assert record.ended == "error" and "time budget" in record.reason
