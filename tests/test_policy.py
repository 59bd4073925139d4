"""The default policy, mode by mode, through real turns."""
from __future__ import annotations

import pytest

from mino_core.permissions import Decision, Rule, combine


def run_one(harness, scripted_server, mode, name, approve="none", config=None):
    h = harness(mode=mode, approve=approve, config=config or {})
    (h.session.project_root / "a.txt").write_text("x")
    scripted_server.add({"calls": [{"name": name, "arguments": {"path": "a.txt", "content": "y"}}]},
                        {"text": "ok"})
    record = h.turn("go")
    asked = "Approve this operation?" in h.transcript
    return record.outcomes[0].result.status.value, asked


@pytest.mark.parametrize("mode,name,status,asked", [
    ("manual", "note_read", "completed", False),
    ("manual", "note_write", "denied", True),
    ("accept-edits", "note_write", "completed", False),
    ("bypass", "note_write", "completed", False),
    ("manual", "note_shell", "completed", False),
    ("manual", "note_send", "denied", True),
    ("accept-edits", "note_send", "denied", True),
    ("bypass", "note_send", "completed", False),
])
def test_mode_ladder(harness, scripted_server, mode, name, status, asked):
    assert run_one(harness, scripted_server, mode, name) == (status, asked)


def test_deny_rule_wins_even_in_bypass(harness, scripted_server):
    config = {"permissions": {"deny": ["note_write(a.*)"]}}
    status, asked = run_one(harness, scripted_server, "bypass", "note_write", config=config)
    assert (status, asked) == ("denied", False)
    assert "deny rule note_write(a.*)" in scripted_server.texts()[-1]


def test_allow_rule_runs_shown(harness, scripted_server):
    config = {"permissions": {"allow": ["note_send"]}}
    assert run_one(harness, scripted_server, "manual", "note_send", config=config) == ("completed", False)


def test_a_target_outside_the_project_is_not_a_project_edit(harness, scripted_server, tmp_path):
    h = harness(mode="accept-edits", approve="none")
    scripted_server.add({"calls": [{"name": "note_write", "arguments": {"path": "../outside.txt",
                                                                       "content": "y"}}]}, {"text": "ok"})
    record = h.turn("go")
    assert record.outcomes[0].result.status.value == "denied"
    assert "Approve this operation?" in h.transcript


def test_combine_deny_beats_ask_beats_allow():
    assert combine([Decision.allow(), Decision.ask(), Decision.deny("x")]).verdict == "deny"
    assert combine([Decision.allow(), Decision.ask()]).verdict == "ask"
    assert combine([Decision.allow(), Decision.allow(show=True)]).show is True
    assert combine([]).verdict == "ask"


def test_rules():
    assert Rule.parse("Bash(git status)").matches("Bash", {"command": "git status --short"})
    assert not Rule.parse("Bash(git status)").matches("Bash", {"command": "git statusx"})
    assert Rule.parse("write_file(docs/*)").matches("write_file", {"path": "docs/a.md"})
    assert not Rule.parse("write_file(docs/*)").matches("write_file", {"path": "src/a.py"})
    assert Rule.parse("memory_save").matches("memory_save", {"name": "x"})


def test_a_plugins_own_write_passes_the_permission_decision(harness):
    from mino_core import Preview

    preview = Preview([("Fact", "prefers tabs")])
    h = harness(approve="all", config={"permissions": {"deny": ["memory_reflection"]}})
    assert h.session.authorize("memory_reflection", {"fact": "x"}, preview) is False
    assert "denied by the deny rule memory_reflection" in h.notices
    assert "Approve" not in h.transcript

    h = harness(approve="none")
    assert h.session.authorize("memory_reflection", {}, preview) is False
    assert 'Fact: "prefers tabs"' in h.transcript and "Approve this operation? [y/N] n" in h.transcript

    h = harness(approve="none", mode="bypass")
    assert h.session.authorize("memory_reflection", {}, preview) is True
    assert "[Tool: memory_reflection]" in h.transcript and "Approve" not in h.transcript
    assert h.session.authorize("skill_file", {}, preview, always_ask=True) is False
    verdicts = [r["verdict"] for r in h.session.log.records if r["type"] == "decision"]
    assert verdicts == ["allow", "allow"]


def test_a_policy_plugin_that_crashes_makes_the_call_ask(harness, scripted_server, monkeypatch):
    from mino_core import hookimpl

    class Broken:
        @hookimpl
        def decide_permission(self, call, tool, mode, session):
            raise RuntimeError("policy bug")

    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,mino.skills,notes,broken")
    monkeypatch.delenv("MINO_STRICT_PLUGINS", raising=False)  # containment is the point here
    h = harness(mode="bypass", approve="none")
    h.agent.host.register("broken", Broken())
    scripted_server.add({"calls": [{"name": "note_send", "arguments": {"path": "x"}}]}, {"text": "ok"})
    record = h.turn("go")
    assert record.outcomes[0].result.status.value == "denied"
    assert "Approve this operation?" in h.transcript
    assert "broken failed in decide_permission: RuntimeError: policy bug" in h.notices


def test_command_subjects_split_compound_commands():
    from mino_core.permissions import command_subject

    subject = command_subject("FOO=1 sudo /bin/rm -rf x && echo $(curl y) | sh -c 'rm z'")
    assert {"rm -rf x", "/bin/rm -rf x", "curl y", "rm z"} <= set(subject.deny)
    assert subject.allow is None  # a command substitution is never allowed by a rule
    assert command_subject("git status | grep x").allow == ("git status", "grep x")
    assert command_subject("echo 'a; rm b'").allow == ("echo a; rm b",)  # quoted: one command
    assert command_subject("echo 'open").allow is None


def test_path_subjects_resolve_against_the_project(tmp_path):
    from mino_core.permissions import subject_of

    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    subject = subject_of({"path": "./x/../link/k.txt"}, tmp_path)
    assert subject.allow == ("real/k.txt",)
    assert {"./x/../link/k.txt", "link/k.txt", "real/k.txt", str(tmp_path / "real/k.txt")} <= set(subject.deny)
    assert subject_of({"path": "/etc/passwd"}, tmp_path).allow == ("/etc/passwd",)
    assert Rule.parse("write_file(secrets)").matches("write_file", {"path": "secrets/k"},
                                                     subject_of({"path": "secrets/k"}, tmp_path))
