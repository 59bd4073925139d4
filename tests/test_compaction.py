"""Context budget, compaction and its request shapes."""
from __future__ import annotations

from mino_core.compaction import SUMMARY_INSTRUCTIONS, compact_command, context_report
from mino_core.request import SUMMARY_LABEL


def four_turns(h, server):
    for n in range(1, 5):
        server.add({"text": f"answer {n}"})
        h.turn(f"question {n}")


def test_compact_keeps_the_last_two_turns_and_the_summary_request_has_no_front_input(
        harness, scripted_server, notes):
    h = harness()
    notes.front = "INDEX-MARKER saved earlier"
    four_turns(h, scripted_server)
    scripted_server.add({"forbid": "INDEX-MARKER", "require": "question 2", "text": "They asked 1 and 2."})
    compact_command(h.session)
    summary_request = scripted_server.requests[-1]
    assert summary_request["instructions"] == SUMMARY_INSTRUCTIONS
    assert "tools" not in summary_request
    text = summary_request["input"][0]["content"]
    assert "question 1" in text and "question 2" in text and "question 3" not in text
    assert "Compacted 2 turn(s)" in h.transcript

    scripted_server.add({"text": "answer 5"})
    h.turn("question 5")
    body = scripted_server.requests[-1]
    lead = body["input"][0]
    assert lead["role"] == "assistant"
    assert lead["content"] == f"INDEX-MARKER saved earlier\n\n{SUMMARY_LABEL}\nThey asked 1 and 2."
    contents = [i.get("content") for i in body["input"][1:]]
    assert contents == ["question 3", "answer 3", "question 4", "answer 4", "question 5"]
    assert scripted_server.failures == []


def test_nothing_to_compact_within_the_window(harness, scripted_server):
    h = harness()
    scripted_server.add({"text": "a"}, {"text": "b"})
    h.turn("one")
    h.turn("two")
    compact_command(h.session)
    assert "Nothing to compact" in h.transcript
    assert h.session.log.latest("compaction") is None


def test_automatic_compaction_never_touches_the_turn_in_progress_or_the_two_before(
        harness, scripted_server):
    h = harness(config={"context_window": 1200, "compaction": {"threshold": 0.5}})
    filler = "x" * 700
    # The service reports usage; turn 3's request was already near the window.
    for n, reported in ((1, 10), (2, 10), (3, 700)):
        scripted_server.add({"text": f"answer {n} {filler}", "usage": {"input_tokens": reported}})
        h.turn(f"question {n}")
    assert h.session.log.latest("compaction") is None
    # The fourth turn starts over the budget: turn 1 is summarised; 2, 3 and 4 stay whole.
    scripted_server.add({"require": "question 1", "forbid": "question 2", "text": "Turn one happened."},
                        {"text": "answer 4"})
    h.turn("question 4")
    record = h.session.log.latest("compaction")
    assert record is not None and record["turns"] == 1
    body = scripted_server.requests[-1]
    users = [i["content"] for i in body["input"] if i.get("role") == "user"]
    assert users == ["question 2", "question 3", "question 4"]
    assert "context is nearly full" in h.notices
    assert scripted_server.failures == []


def test_resume_after_compaction_rebuilds_the_same_request(harness, scripted_server, notes):
    h = harness()
    notes.front = "INDEX"
    four_turns(h, scripted_server)
    scripted_server.add({"text": "summary text"})
    compact_command(h.session)
    from mino_core.turn import current_request

    before = current_request(h.session, "INDEX")
    session_id = h.session.id
    h.new_session()
    h.resume(session_id)
    after = current_request(h.session, "INDEX")
    assert before == after


def test_a_failed_compaction_leaves_history_alone(harness, scripted_server):
    h = harness()
    four_turns(h, scripted_server)
    records = len(h.session.log.records)
    scripted_server.add({"fail": {"status": 500, "times": 5}, "text": "never"})
    compact_command(h.session)
    assert "Compaction failed" in h.transcript and "history is unchanged" in h.transcript
    assert len(h.session.log.records) == records
    scripted_server.script.clear()
    scripted_server.add({"text": "   "})
    compact_command(h.session)
    assert "summary came back empty" in h.transcript
    assert h.session.log.latest("compaction") is None


def test_context_report_lists_every_part(harness, scripted_server):
    h = harness()
    scripted_server.add({"text": "hello"})
    h.turn("hi")
    report = context_report(h.session)
    for part in ("instructions", "front input", "history", "tools", "last response"):
        assert part in report
