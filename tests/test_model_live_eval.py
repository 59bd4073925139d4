"""``mino eval --live`` against a server: the person's limits apply, and a turn that ended
in an error is reported as that error (not as a wrong answer)."""
from __future__ import annotations

from mino_core.evals import Case, execute


def _case(tmp_path):
    return Case("live-one", tmp_path / "c.yaml", {"live": True, "turns": ["hi"],
                                                  "graders": [{"answer_contains": "hello"}]})


def test_live_eval_takes_the_persons_limits(scripted_server, mino_home, monkeypatch, tmp_path):
    (mino_home / "config.yaml").write_text("max_output_tokens: 77\n")
    monkeypatch.setenv("MINO_BASE_URL", scripted_server.base_url)
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy")
    scripted_server.add({"text": "hello there"})
    assert execute(_case(tmp_path), live=True) == ("PASS", "")
    assert scripted_server.requests[0]["max_output_tokens"] == 77


def test_live_eval_reports_an_error_as_the_error(scripted_server, mino_home, monkeypatch, tmp_path):
    monkeypatch.setenv("MINO_BASE_URL", scripted_server.base_url)
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy")
    scripted_server.add({"fail": {"status": 400, "times": 1, "message": "Cannot determine type of 'item'"},
                         "text": "hello"})
    status, reason = execute(_case(tmp_path), live=True)
    assert status == "FAIL"
    assert reason.startswith("turn 1 ended in an error:") and "Cannot determine type of 'item'" in reason
