"""Item 7: Bash rules match each simple command, through the real policy and Bash tool.

Bash runs without the sandbox here, so a call no rule settles asks (and is refused)."""
from __future__ import annotations

import pytest

from mino_core.policy import EXPLANATION

from .conftest import call


@pytest.mark.parametrize("command", [" rm -rf victim", "true; rm victim", "/bin/rm victim",
                                     "echo a | rm victim", "true && rm victim", "false || rm victim",
                                     "true\nrm victim", "sudo rm victim", "FOO=1 rm victim",
                                     "echo $(rm victim)", "sh -c 'rm victim'", "(rm victim)"])
def test_a_deny_on_rm_catches_the_common_spellings(agent, scripted_server, project, command):
    (project / "victim").write_text("keep")
    h = agent(mode="bypass", approve="all", config={"permissions": {"deny": ["Bash(rm)"]}})
    status, _, decision = call(scripted_server, h, "Bash", command=command)
    assert status == "denied" and decision["reason"] == "the deny rule Bash(rm) in config.yaml"
    assert (project / "victim").read_text() == "keep"


def test_a_glob_deny_still_matches_the_whole_text_and_each_part(agent, scripted_server, project):
    h = agent(mode="bypass", approve="all", config={"permissions": {"deny": ["Bash(git push*)"]}})
    status, _, _ = call(scripted_server, h, "Bash", command="git status; git push --force")
    assert status == "denied"


@pytest.mark.parametrize("command", ["git status; rm victim", "git status && rm victim",
                                     "git status | sh", "git status\nrm victim",
                                     "git status $(rm victim)", "git status `rm victim`",
                                     "git status 'unterminated"])
def test_an_allow_rule_allows_only_when_every_part_is_allowed(agent, scripted_server, project, command):
    (project / "victim").write_text("keep")
    h = agent(mode="manual", approve="none", config={"permissions": {"allow": ["Bash(git status)"]}})
    status, _, decision = call(scripted_server, h, "Bash", command=command)
    assert status == "denied" and "Approve this operation?" in h.transcript
    assert "allow rule" not in decision["reason"]
    assert (project / "victim").read_text() == "keep"


def test_parts_allowed_by_different_rules_run(agent, scripted_server, project):
    h = agent(mode="manual", approve="none",
              config={"permissions": {"allow": ["Bash(echo)", "Bash(tr *)"]}})
    status, output, decision = call(scripted_server, h, "Bash", command="echo hi | tr a-z A-Z")
    assert status == "completed" and "HI" in output and "Approve" not in h.transcript
    assert decision["reason"] == "the allow rule Bash(echo) in config.yaml"


def test_a_spelled_path_is_not_the_allowed_command(agent, scripted_server, project):
    """An allow on ``git status`` must not run a ``./git`` the model wrote."""
    h = agent(mode="manual", approve="none", config={"permissions": {"allow": ["Bash(git status)"]}})
    status, _, _ = call(scripted_server, h, "Bash", command="./git status")
    assert status == "denied"


def test_mino_permissions_says_command_rules_are_no_boundary():
    assert "NOT a security boundary" in EXPLANATION
    for example in ('" rm -rf x"', '"true; rm x"', '"/bin/rm x"', "EVERY simple command"):
        assert example in EXPLANATION
