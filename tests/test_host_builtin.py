"""The core's own plugins are made per host, and reach the session only through hooks."""
from __future__ import annotations

import pytest

from mino_core import hookimpl
from mino_core.plugins import PluginContext, build_host

SKILL = "---\nname: deploy\ndescription: How to deploy this service safely.\n---\nRun make deploy.\n"


def test_every_host_gets_its_own_core_plugins(tmp_path, monkeypatch):
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,mino.skills")
    context = PluginContext(home=tmp_path, project_root=tmp_path, config={})
    first, second = build_host(context, entry_points=[]), build_host(context, entry_points=[])
    for name in ("mino.policy", "mino.skills"):
        assert first.pm.get_plugin(name) is not None
        assert first.pm.get_plugin(name) is not second.pm.get_plugin(name)
    # One host's skills catalog is not another's.
    first.pm.get_plugin("mino.skills").catalogs["s1"] = {"x": {}}
    assert second.pm.get_plugin("mino.skills").catalogs == {}


@pytest.fixture
def with_skill(make_harness, monkeypatch):
    def make(plugins: str, **kwargs):
        monkeypatch.setenv("MINO_PLUGINS", plugins)
        h = make_harness(config={}, approve={"skill_approval": True}, **kwargs)
        folder = h.session.project_root / ".mino" / "skills" / "deploy"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL)
        return h
    return make


def test_with_mino_skills_the_catalog_and_the_tool_are_both_there(with_skill, scripted_server):
    h = with_skill("mino.policy,mino.skills")
    scripted_server.add({"text": "ok"})
    h.turn("hi")
    request = scripted_server.requests[-1]
    assert "- deploy: How to deploy this service safely." in request["instructions"]
    assert [t["name"] for t in request["tools"]] == ["skill_view"]


@pytest.mark.parametrize("how", ["MINO_PLUGINS=mino.policy", "MINO_DISABLE_PLUGINS=mino.skills"])
def test_without_mino_skills_neither_the_catalog_nor_the_tool(with_skill, scripted_server,
                                                              monkeypatch, how):
    if how.startswith("MINO_DISABLE"):
        monkeypatch.setenv("MINO_DISABLE_PLUGINS", "mino.skills")
        h = with_skill("mino.policy,mino.skills")
    else:
        h = with_skill("mino.policy")
    scripted_server.add({"text": "ok"})
    h.turn("hi")
    request = scripted_server.requests[-1]
    assert h.agent.host.plugins["mino.skills"].status == "disabled"
    assert "deploy" not in request["instructions"] and "skill_view" not in request["instructions"]
    assert "tools" not in request
    assert h.ui.asked == []  # no skill is reviewed when skills are off
    assert [r for r in h.session.log.records if r["type"] == "session_skills"] == []


class HouseRules:
    @hookimpl
    def instructions(self, session):
        return f"House rules for {session.project_root.name}: run make lint."


def test_any_plugin_can_add_to_the_instructions(make_harness, scripted_server, monkeypatch):
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,mino.skills,rules")
    h = make_harness(config={}, extra_plugins={"rules": HouseRules()})
    scripted_server.add({"text": "ok"}, {"text": "ok"})
    h.turn("hi")
    h.turn("again")
    first, second = (r["instructions"] for r in scripted_server.requests)
    assert first.endswith("House rules for project: run make lint.")
    assert second == first
