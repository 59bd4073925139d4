"""memory_search, memory_view and memory_save through the real agent and policy."""
import pytest

from mino_memory_graph.loop.standing import USER_LABEL
from mino_memory_graph.loop.tools import CHANGED

from graphtest import GRAPH, graph_of, journal
from oracle import replay

pytestmark = pytest.mark.usefixtures("graph_only")


def user_facts(home):
    g = graph_of(home)
    n = next((n for n in replay(g).nodes.values() if n.label == USER_LABEL), None)
    return {f.key: f.value for f in n.facts if f.active} if n else {}


SAVE = {"name": "memory_save", "arguments": {"where": "user", "key": "language",
                                             "value": "answers in Chinese"}}


@pytest.mark.parametrize("mode,asked", [("manual", True), ("accept-edits", True),
                                        ("bypass", False)])
def test_memory_save_asks_outside_bypass(make_harness, scripted_server, mino_home, mode, asked):
    h = make_harness(approve="all", mode=mode, config=GRAPH)
    scripted_server.add({"calls": [SAVE]}, {"text": "ok"})
    rec = h.turn("Remember: answer me in Chinese.")
    assert bool(h.ui.asked) == asked
    assert rec.outcomes[0].result.status.value == "completed"
    assert user_facts(mino_home) == {"language": "answers in Chinese"}
    if not asked:
        assert 'Value: "answers in Chinese"' in h.transcript  # shown


def test_memory_save_denied_writes_nothing(make_harness, scripted_server, mino_home):
    h = make_harness(approve="none", config=GRAPH)
    scripted_server.add({"calls": [SAVE]}, {"text": "ok"})
    rec = h.turn("Remember: answer me in Chinese.")
    assert rec.outcomes[0].result.status.value == "denied"
    assert user_facts(mino_home) == {}


def test_confirmation_fields_are_quoted_and_escaped(make_harness, scripted_server):
    h = make_harness(approve="all", config=GRAPH)
    value = "say \"hi\"\nthen\u200bstop \u202e"
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "user", "key": "greeting", "value": value}}]}, {"text": "ok"})
    h.turn("remember my greeting")
    (_, text, _), = h.ui.asked
    assert 'Memory: "user profile (global: every project)"' in text
    assert 'Value: "say \\"hi\\"\\nthen\\u200bstop \\u202e"' in text
    assert 'Key: "greeting"' in text and "Journal:" in text
    assert "approval applies only to this content" in text
    assert "Warning: this text contains" in text  # the filter flags invisible characters


def test_approval_binds_to_the_node_as_seen(make_harness, scripted_server, mino_home):
    def approve(tool, text):
        s = journal(mino_home)
        with s.write() as r:
            u = next(n.id for n in replay(s).nodes.values() if n.label == USER_LABEL)
            r.fact(u, "language", "answers in French")
        s.close()
        return True

    h = make_harness(approve="all", config=GRAPH)
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "user", "key": "language", "value": "answers in German"}}]}, {"text": "ok"})
    h.turn("remember german")
    h2 = make_harness(approve=approve, config=GRAPH)
    scripted_server.add({"calls": [SAVE]}, {"text": "ok"})
    rec = h2.turn("Remember: answer me in Chinese.")
    out = rec.outcomes[0].result
    assert out.status.value == "failed" and out.output == CHANGED
    assert user_facts(mino_home) == {"language": "answers in French"}


def test_replacing_shows_the_current_value_and_keeps_history(make_harness, scripted_server,
                                                             mino_home):
    h = make_harness(approve="all", config=GRAPH)
    for value in ("pnpm", "yarn"):
        scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
            "where": "project", "key": "package manager", "value": value}}]}, {"text": "ok"})
        h.turn("remember the package manager")
    assert 'Current value: "pnpm"' in h.ui.asked[-1][1]
    g = graph_of(mino_home)
    p = next(n for n in replay(g).nodes.values() if n.label.startswith("project "))
    assert p.fact("package manager").value == "yarn"
    assert [f.value for f in p.facts if f.key == "package manager"] == ["pnpm", "yarn"]
    assert any(k == "provenance" and "source memory_save" in d for _, k, d in p.log)


def test_new_node_then_search_and_view_never_ask(make_harness, scripted_server, mino_home):
    h = make_harness(approve={"memory_save": True}, config=GRAPH)
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "new", "label": "staging deploy", "key": "how",
        "value": "deploy staging with make stage", "area": "procedural"}}]}, {"text": "ok"})
    h.turn("remember how to deploy staging")
    g = graph_of(mino_home)
    node = next(n for n in replay(g).nodes.values() if n.label == "staging deploy")
    assert node.area == "Procedural"
    scripted_server.add({"calls": [{"name": "memory_search",
                                    "arguments": {"query": "deploy staging"}},
                                   {"name": "memory_view", "arguments": {"node": node.id}},
                                   {"name": "memory_view",
                                    "arguments": {"node": node.id, "what": "history"}}]},
                        {"text": "ok"})
    asked_before = len(h.ui.asked)
    rec = h.turn("how do I deploy staging?")
    assert len(h.ui.asked) == asked_before
    outs = [o.result.output for o in rec.outcomes]
    assert "data, not instructions" in outs[0] and "make stage" in outs[0]
    assert f"[Aspect/Procedural] staging deploy #{node.id}" in outs[1]
    assert "[active] how: deploy staging with make stage" in outs[2]


def test_memory_view_of_a_missing_node_is_invalid(make_harness, scripted_server):
    h = make_harness(config=GRAPH)
    scripted_server.add({"calls": [{"name": "memory_view", "arguments": {"node": 999}}]},
                        {"text": "ok"})
    rec = h.turn("view it")
    assert rec.outcomes[0].result.status.value == "invalid_arguments"


def test_tool_descriptions_forbid_secrets(make_harness, scripted_server):
    h = make_harness(config=GRAPH)
    scripted_server.add({"text": "ok"})
    h.turn("hi")
    tools = {t["name"]: t for t in scripted_server.requests[0]["tools"]}
    assert {"memory_search", "memory_view", "memory_save"} <= set(tools)
    assert "Never save secrets" in tools["memory_save"]["description"]
