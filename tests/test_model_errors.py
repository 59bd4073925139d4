"""Errors from real servers: the server's own words, no retry where a retry cannot help,
and a refused turn that does not poison the session. Real HTTP, the real openai client."""
from __future__ import annotations

import socket

from mino_core.testing import request_text
from mino_core.testing.harness import Harness


def test_a_4xx_shows_the_servers_message_and_is_not_retried(harness, scripted_server):
    h = harness()
    scripted_server.add({"fail": {"status": 400, "times": 5, "message": "context exceeds 4096 tokens"},
                         "text": "never"})
    record = h.turn("hi")
    assert record.ended == "error" and len(scripted_server.requests) == 1
    assert "HTTP 400: context exceeds 4096 tokens" in h.notices
    assert "context exceeds 4096 tokens" in record.reason


def test_a_500_naming_the_request_is_not_retried_but_a_plain_503_is(harness, scripted_server):
    h = harness()
    scripted_server.add({"fail": {"status": 500, "times": 5,
                                  "message": "Failed to parse tool call arguments as JSON"},
                         "text": "never"})
    h.turn("hi")
    assert len(scripted_server.requests) == 1
    assert "Failed to parse tool call arguments as JSON" in h.notices
    assert "Try again in a moment" not in h.notices
    scripted_server.script.clear()
    scripted_server.add({"fail": {"status": 503, "times": 1, "message": "loading model"}, "text": "up"})
    assert h.turn("again").answer == "up"
    assert "HTTP 503: loading model; retrying" in h.notices


def test_a_refused_turn_is_not_sent_again_and_the_person_is_told(harness, scripted_server):
    h = harness()
    scripted_server.add({"fail": {"status": 400, "times": 1, "message": "bad content"}, "text": "x"})
    h.turn("POISON message")
    assert "will not be sent again" in h.notices
    scripted_server.script.clear()
    scripted_server.add({"forbid": "POISON", "text": "fine"}, {"forbid": "POISON", "text": "still fine"})
    assert h.turn("next").answer == "fine"
    # The log keeps what happened; a resumed session leaves it out too.
    assert "POISON" in h.session.log.path.read_text()
    h.resume(h.session.id)
    assert h.turn("after resume").answer == "still fine"
    assert scripted_server.failures == []


def test_invalid_call_arguments_are_resent_as_valid_json_and_the_model_sees_its_text(
        harness, scripted_server):
    h = harness()
    scripted_server.add({"calls": [{"name": "note_read", "arguments": '{"path": "a.txt'}]},
                        {"require": ['{"path": "a.txt', "not a JSON object"], "text": "sorry"},
                        {"text": "next"})
    assert h.turn("read").answer == "sorry"
    sent = [i for i in scripted_server.requests[1]["input"] if i["type"] == "function_call"]
    assert sent[0]["arguments"] == "{}"
    logged = [r for r in h.session.log.records if r.get("type") == "function_call"]
    assert logged[0]["arguments"] == '{"path": "a.txt'
    assert h.turn("again").answer == "next"
    assert scripted_server.failures == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_connection_refused_names_the_url_and_is_not_retried(scripted_server, mino_home, project):
    scripted_server._server.server_address = ("127.0.0.1", _closed_port())  # base_url of nothing
    h = Harness(scripted_server, mino_home, project, config={})
    record = h.turn("hi")
    assert record.ended == "error"
    assert f"Cannot connect to the model server at {scripted_server.base_url} (connection refused)" \
        in h.notices
    assert "retrying" not in h.notices


def test_no_responses_endpoint_names_the_url_in_responses_mode(mino_home, project, monkeypatch):
    from mino_core.testing import ScriptedServer

    monkeypatch.setenv("MINO_API", "responses")
    with ScriptedServer([{"text": "x"}], responses=False) as server:
        h = Harness(server, mino_home, project, config={})
        record = h.turn("hi")
    assert record.ended == "error" and len(server.paths) == 1
    assert f"{server.base_url}/responses: HTTP 404" in h.notices and "api: chat" in h.notices
    assert "retrying" not in h.notices


def test_request_text_of_error_is_a_single_line(harness, scripted_server):
    h = harness()
    scripted_server.add({"fail": {"status": 422, "times": 1, "message": "line one\nline two"}, "text": "x"})
    h.turn("hi")
    assert "HTTP 422: line one line two" in h.notices
    assert request_text(scripted_server.requests[0])


def test_a_server_refusing_include_is_asked_again_without_it(harness, scripted_server):
    h = harness()
    scripted_server.add({"fail": {"status": 400, "times": 1,
                                  "message": "include: reasoning.encrypted_content is not supported"},
                         "text": "one"}, {"text": "two"})
    assert h.turn("hi").answer == "one"
    assert h.turn("again").answer == "two"
    assert [("include" in r) for r in scripted_server.requests] == [True, False, False]
