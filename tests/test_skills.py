"""Skills: the catalog in the instructions, recorded once per session, skill_view.

New skills are asked about once (tests/security/test_skills_trust.py covers that); here
the person approves them (``approve=APPROVE``)."""
from __future__ import annotations

APPROVE = {"skill_approval": True}

SKILL = "---\nname: deploy\ndescription: How to deploy this service safely.\n---\nRun make deploy.\n"


def write_skill(root, name, text):
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(text)


def test_catalog_in_instructions_and_skill_view(harness, scripted_server):
    h = harness(approve=APPROVE)
    skills = h.session.project_root / ".mino" / "skills"
    write_skill(skills, "deploy", SKILL)
    write_skill(skills, "broken", "no front matter")
    scripted_server.add({"require": "- deploy: How to deploy this service safely.",
                         "calls": [{"name": "skill_view", "arguments": {"name": "deploy"}}]},
                        {"require": "Run make deploy.", "text": "Use make deploy."})
    record = h.turn("how do I deploy?")
    assert record.outcomes[0].result.output == SKILL
    assert [name for name, _, _ in h.ui.asked] == ["skill_approval"]  # skill_view asks nothing
    assert "broken" in h.notices and "name and description" in h.notices
    assert scripted_server.failures == []


def test_catalog_is_recorded_once_and_kept_on_resume(harness, scripted_server, mino_home):
    h = harness(approve=APPROVE)
    write_skill(h.session.project_root / ".mino" / "skills", "deploy", SKILL)
    write_skill(mino_home / "skills", "deploy", SKILL.replace("safely", "from home"))
    write_skill(mino_home / "skills", "review", "---\nname: review\ndescription: Review a diff.\n---\n")
    scripted_server.add({"text": "ok"}, {"text": "ok"})
    h.turn("hi")
    first = scripted_server.requests[-1]["instructions"]
    assert "deploy: How to deploy this service safely." in first and "review: Review a diff." in first
    assert "project copy wins" in h.notices
    records = [r for r in h.session.log.records if r["type"] == "session_skills"]
    assert len(records) == 1 and [s["name"] for s in records[0]["skills"]] == ["deploy", "review"]
    # A skill added later does not change a resumed session's catalog.
    write_skill(mino_home / "skills", "later", "---\nname: later\ndescription: Added later.\n---\n")
    session_id = h.session.id
    h.new_session()
    h.resume(session_id)
    h.turn("again")
    assert scripted_server.requests[-1]["instructions"] == first
    assert len([r for r in h.session.log.records if r["type"] == "session_skills"]) == 1

