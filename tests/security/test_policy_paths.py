"""Item 7: a path rule matches the file, not the spelling (real policy, real file tools)."""
from __future__ import annotations

import pytest

from .conftest import call

DENY_SECRETS = {"permissions": {"deny": ["write_file(secrets/*)", "read_file(secrets/*)"]}}


@pytest.fixture
def secrets(project):
    (project / "secrets").mkdir()
    (project / "secrets" / "k.txt").write_text("key\n")
    (project / "x").mkdir()
    (project / "alias").symlink_to(project / "secrets")
    return project / "secrets"


@pytest.mark.parametrize("spelling", ["secrets/k.txt", "./secrets/k.txt", "x/../secrets/k.txt",
                                      "ABS", "alias/k.txt", "secrets//k.txt", "secrets/./k.txt"])
def test_a_deny_rule_stops_every_spelling_of_the_file(agent, scripted_server, secrets, spelling):
    h = agent(mode="bypass", approve="all", config=dict(DENY_SECRETS))
    path = str(secrets / "k.txt") if spelling == "ABS" else spelling
    status, output, _ = call(scripted_server, h, "write_file", path=path, content="stolen\n")
    assert status == "denied" and "write_file(secrets/*)" in scripted_server.texts()[-1]
    assert (secrets / "k.txt").read_text() == "key\n"
    status, _, _ = call(scripted_server, h, "read_file", path=path)
    assert status == "denied"


def test_a_deny_rule_also_stops_edit_file_and_new_files(agent, scripted_server, secrets):
    h = agent(mode="bypass", approve="all", config={"permissions": {"deny": ["*_file(secrets/*)"]}})
    status, _, _ = call(scripted_server, h, "edit_file", path="x/../secrets/k.txt",
                        old_string="key", new_string="stolen")
    assert status == "denied"
    status, _, _ = call(scripted_server, h, "write_file", path="./alias/new.txt", content="x")
    assert status == "denied" and not (secrets / "new.txt").exists()


def test_a_folder_rule_without_a_glob_covers_the_folder(agent, scripted_server, secrets):
    h = agent(mode="bypass", approve="all", config={"permissions": {"deny": ["write_file(secrets)"]}})
    status, _, _ = call(scripted_server, h, "write_file", path="./secrets/k.txt", content="x")
    assert status == "denied"
    status, _, _ = call(scripted_server, h, "write_file", path="secretsx.txt", content="x")
    assert status == "completed"


@pytest.mark.parametrize("spelling", ["docs/../secrets/k.txt", "docs/link/k.txt"])
def test_an_allow_rule_must_match_the_resolved_file(agent, scripted_server, secrets, project, spelling):
    """``docs/*`` matched the spelling ``docs/../secrets/k.txt``; it must not allow it."""
    (project / "docs").mkdir()
    (project / "docs" / "link").symlink_to(secrets)
    h = agent(mode="manual", approve="none", config={"permissions": {"allow": ["write_file(docs/*)"]}})
    status, _, decision = call(scripted_server, h, "write_file", path=spelling, content="x")
    assert status == "denied" and "Approve this operation?" in h.transcript
    assert "allow rule" not in decision["reason"]
    assert (secrets / "k.txt").read_text() == "key\n"
    status, _, decision = call(scripted_server, h, "write_file", path="./docs/a.md", content="x")
    assert status == "completed" and "allow rule write_file(docs/*)" in decision["reason"]
