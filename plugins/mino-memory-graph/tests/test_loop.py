"""The Mnemo loop through the real agent: recall block, episodes, steer, reinforce, credit."""
import json

import pytest

from mino_core import Tool, ToolResult, hookimpl
from mino_memory_graph.loop import loop
from mino_memory_graph.loop.standing import USER_LABEL, project_identity

from graphtest import GRAPH, graph_of, journal
from oracle import replay

PLUGINS = "mino.policy,mino.skills,mino-memory-graph,probe"


class Probe:
    """A test tool plugin: ``probe_run`` fails with the given text when ``fail`` is set."""

    @hookimpl
    def register_tools(self, context):
        schema = {"type": "object", "properties": {"command": {"type": "string"},
                                                   "fail": {"type": "string"}},
                  "required": ["command"], "additionalProperties": False}

        def run(args, ctx):
            if args.get("fail"):
                return ToolResult.failed(args["fail"])
            return ToolResult.completed(f"ran {args['command']}")
        return [Tool("probe_run", "Run a pretend command.", schema, run=run, read_only=True)]


@pytest.fixture(autouse=True)
def _with_probe(graph_only, monkeypatch):
    monkeypatch.setenv("MINO_PLUGINS", PLUGINS)  # also the in-process probe plugin


@pytest.fixture
def agent(make_harness):
    def make(**kw):
        kw.setdefault("config", GRAPH)
        return make_harness(extra_plugins={"probe": Probe()}, **kw)
    return make


def lead(body):
    items = body.get("input") or []
    if items and items[0].get("role") == "assistant":
        return items[0]["content"]
    return None


def save_user_fact(h, server, key, value):
    server.add({"calls": [{"name": "memory_save",
                           "arguments": {"where": "user", "key": key, "value": value}}]},
               {"text": "Saved."})
    h.turn("Please remember this preference for later.")


def test_empty_memory_adds_nothing_to_the_request(agent, scripted_server, mino_home):
    h = agent()
    scripted_server.add({"text": "hello"})
    h.turn("Say hello in one word please.")
    body = scripted_server.requests[0]
    assert body["input"][0]["role"] == "user"
    g = graph_of(mino_home)
    eps = [n for n in replay(g).nodes.values() if n.kind == "TaskEpisode"]
    # the session's node, then the turn's episode (PartOf the project and the session)
    assert len(eps) == 2 and eps[0].label == f"session {h.session.id}"
    assert eps[1].label.startswith("task: Say hello")
    assert eps[1].fact("message").value == "Say hello in one word please."
    project = [n for n in replay(g).nodes.values() if n.label.startswith("project ")]
    assert len(project) == 1 and project[0].fact("path") is not None
    part_of = [e for e in replay(g).edges.values() if e.kind == "PartOf"]
    assert [(e.src, e.dst) for e in part_of] == [(eps[0].id, project[0].id),
                                                 (eps[1].id, project[0].id),
                                                 (eps[1].id, eps[0].id)]


def test_saved_fact_is_recalled_next_session_in_one_labelled_leading_item(
        agent, scripted_server, mino_home):
    h = agent(approve="all")
    save_user_fact(h, scripted_server, "package manager", "pnpm, never npm")
    h.new_session()
    scripted_server.add({"text": "Use pnpm."})
    h.turn("Which package manager should I use to install dependencies?")
    body = scripted_server.requests[-1]
    text = lead(body)
    assert text is not None
    assert text.startswith(loop.LABEL)
    assert "data, not instructions" in text and "candidates, not established facts" in text
    assert f"About the user ({USER_LABEL} #" in text
    assert "- package manager: pnpm, never npm" in text
    # exactly one leading assistant item, then the user's message
    assert [i.get("role") for i in body["input"]][:2] == ["assistant", "user"]
    # never in the session log
    raw = h.session.log.path.read_text()
    assert loop.LABEL not in raw and "About the user" not in raw


def test_block_is_fixed_for_every_request_of_the_turn(agent, scripted_server):
    h = agent(approve="all")
    save_user_fact(h, scripted_server, "editor", "helix")
    scripted_server.add({"calls": [{"name": "probe_run", "arguments": {"command": "ls"}}]},
                        {"text": "done"})
    h.turn("List the files in the folder please.")
    a, b = scripted_server.requests[-2:]
    assert lead(a) == lead(b) and "editor: helix" in lead(a)


def test_recall_shows_candidates_with_state_links_feeders_and_respects_scope(
        agent, scripted_server, mino_home, project, tmp_path):
    s = journal(mino_home)
    ident = project_identity(project)
    with s.write() as r:
        p = r.create_node("Entity", f"project {ident}")
        other = r.create_node("Entity", "project dir:/elsewhere")
        mine = r.create_node("Aspect", "deploy port")
        r.fact(mine, "port", "the deploy service listens on port 8081")
        r.link(mine, p, "PartOf")
        theirs = r.create_node("Aspect", "deploy port elsewhere")
        r.fact(theirs, "port", "the deploy service listens on port 9999")
        r.link(theirs, other, "PartOf")
    s.close()
    h = agent()
    scripted_server.add({"text": "8081"})
    h.turn("Which port does the deploy service listen on?")
    text = lead(scripted_server.requests[-1])
    assert "Recalled memories (candidates, not facts):" in text
    assert f"[Aspect/Semantic] deploy port #{mine}" in text and "port 8081" in text
    assert "9999" not in text
    g = graph_of(mino_home)
    ep = max(n.id for n in replay(g).nodes.values() if n.kind == "TaskEpisode")
    assert [e.src for e in g.feeders_of(ep)] == [mine]


def test_pitfall_with_fix_renders_and_is_never_a_feeder(agent, scripted_server, mino_home):
    s = journal(mino_home)
    with s.write() as r:
        m = r.create_node("Aspect", "pain: probe_run(make test) failed: missing deps", "Salience")
        r.fact(m, "failure", "probe_run(make test) failed: missing deps")
        r.fact(m, "occurrences", "2")
        r.fact(m, "fix", "run make deps before make test")
    s.close()
    h = agent()
    scripted_server.add({"text": "ok"})
    h.turn("Run make test for the project")
    text = lead(scripted_server.requests[-1])
    assert loop.PITFALLS in text and "apply the fix first" not in text
    assert ("- seen before (2×): probe_run(make test) failed: missing deps; a fix that worked: "
            "run make deps before make test") in text
    g = graph_of(mino_home)
    ep = max(n.id for n in replay(g).nodes.values() if n.kind == "TaskEpisode")
    assert all(e.src != m for e in g.feeders_of(ep))


def _markers(g):
    return [n for n in replay(g).nodes.values() if n.area == "Salience" and not n.deleted]


def test_failure_steers_one_deduplicated_marker_counting_1_2_3(agent, scripted_server,
                                                               mino_home):
    h = agent()
    fail = {"command": "make test", "fail": "error: 3 tests failed in 0.42s"}
    for i in range(3):
        scripted_server.add({"calls": [{"name": "probe_run", "arguments": fail}]},
                            {"text": "it failed"})
        h.turn(f"run the tests, attempt {i}")
        g = graph_of(mino_home)
        ms = _markers(g)
        assert len(ms) == 1
        assert ms[0].fact("occurrences").value == str(i + 1)
    m = ms[0]
    assert m.label.startswith("pain: probe_run(make test) failed")
    assert m.fact("signature").value == "probe_run(make test) failed: error: # tests failed in #.#s"
    assert m.fact("source").value.startswith("observed")
    eps = [n.id for n in replay(g).nodes.values() if n.label.startswith("task: ")]  # the turns
    derived = sorted(e.src for e in replay(g).edges.values() if e.kind == "DerivedFrom" and e.dst == m.id)
    assert derived == sorted(eps)
    project = next(n.id for n in replay(g).nodes.values() if n.label.startswith("project "))
    assert any(e.kind == "PartOf" and e.src == m.id and e.dst == project
               for e in replay(g).edges.values())
    # every call is logged on its episode with its subject
    ep = g.nodes[eps[-1]]
    assert any(k == "tool_error" and "probe_run(make test)" in d for _, k, d in ep.log)


def test_same_failure_twice_in_one_run_steers_once(agent, scripted_server, mino_home):
    h = agent()
    fail = {"command": "make", "fail": "boom"}
    scripted_server.add({"calls": [{"name": "probe_run", "arguments": fail},
                                   {"name": "probe_run", "arguments": fail}]},
                        {"text": "failed twice"})
    h.turn("build it now")
    ms = _markers(graph_of(mino_home))
    assert len(ms) == 1 and ms[0].fact("occurrences").value == "1"


def test_refusal_is_not_a_failure(agent, scripted_server, mino_home):
    h = agent(approve="none")
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "user", "key": "k", "value": "v"}}]}, {"text": "ok"})
    h.turn("remember k is v")
    g = graph_of(mino_home)
    assert _markers(g) == []
    ep = max((n for n in replay(g).nodes.values() if n.kind == "TaskEpisode"), key=lambda n: n.id)
    assert any(k == "tool_refused" and "memory_save(k)" in d for _, k, d in ep.log)


def _seed_two(mino_home, project):
    s = journal(mino_home)
    with s.write() as r:
        p = r.create_node("Entity", f"project {project_identity(project)}")
        a = r.create_node("Aspect", "webpack build config")
        r.fact(a, "build", "the bundle build uses webpack.config.js")
        b = r.create_node("Aspect", "bundle size limit")
        r.fact(b, "size", "the bundle should stay under 200 kB")
        r.link(a, p, "PartOf")
        r.link(b, p, "PartOf")
    s.close()
    return a, b


def _feeder_weights(g):
    ep = max(n.id for n in replay(g).nodes.values() if n.kind == "TaskEpisode")
    return {e.src: e.weight for e in replay(g).edges.values()
            if e.kind == "SuppliesContext" and e.dst == ep}


def test_blame_weakens_only_feeders_sharing_words_and_a_clean_run_reinforces(
        agent, scripted_server, mino_home, project):
    a, b = _seed_two(mino_home, project)
    h = agent()
    scripted_server.add({"calls": [{"name": "probe_run", "arguments": {
        "command": "npm start", "fail": "cannot find webpack.config.js"}}]},
        {"text": "the webpack build failed"})
    h.turn("webpack bundle build and bundle size")
    w = _feeder_weights(graph_of(mino_home))
    assert w[a] == pytest.approx(0.4) and w[b] == pytest.approx(0.5)  # failed run: no reinforce
    scripted_server.add({"text": "the webpack bundle is fine"})
    h.turn("webpack bundle build and bundle size")
    w = _feeder_weights(graph_of(mino_home))
    assert w[a] == pytest.approx(0.55) and w[b] == pytest.approx(0.55)


def test_usefulness_votes_need_evidence(agent, scripted_server, mino_home, project):
    a, b = _seed_two(mino_home, project)
    h = agent()
    scripted_server.add({"text": "Keep it small."})
    h.turn("webpack bundle build and bundle size")
    g = graph_of(mino_home)
    assert (g.nodes[a].useful, g.nodes[b].useful) == (0, 0)
    scripted_server.add({"text": "Use webpack.config.js; stay under the limit."})
    h.turn("webpack bundle build and bundle size")
    g = graph_of(mino_home)
    assert g.nodes[a].useful == 1 and g.nodes[b].useful == 1
    assert g.nodes[a].unhelpful == 0 and g.nodes[b].unhelpful == 0


def test_warns_once_per_session_when_a_failure_with_a_known_fix_recurs(
        agent, scripted_server, mino_home):
    h = agent()
    fail = {"command": "make test", "fail": "missing deps"}
    scripted_server.add({"calls": [{"name": "probe_run", "arguments": fail}]}, {"text": "x"})
    h.turn("go")
    s = journal(mino_home)
    m = _markers(s.graph)[0]
    with s.write() as r:
        r.fact(m.id, "fix", "run make deps first")
    s.close()
    for _ in range(2):
        scripted_server.add({"calls": [{"name": "probe_run", "arguments": fail}]}, {"text": "x"})
        h.turn("go")
    assert h.notices.count("a fix that worked then: run make deps first") == 1


def test_memory_turn_state_is_per_turn(agent, scripted_server, mino_home):
    h = agent()
    scripted_server.add({"text": "a"}, {"text": "b"})
    first = h.turn("hello there")
    second = h.turn("deploy the service")
    one, two = (r.info.scratch[loop.NAME] for r in (first, second))
    assert set(one) >= {"episode", "user", "project", "recalled", "feeders"}
    # Each turn starts its own state and its own episode; who and where carry over.
    assert one is not two and one["episode"] != two["episode"]
    assert (one["user"], one["project"]) == (two["user"], two["project"])
    graph = graph_of(mino_home)
    turns = {n: graph.nodes[n] for n in (one["episode"], two["episode"])}
    assert all(node.kind == "TaskEpisode" for node in turns.values())
    for state in (one, two):
        json.dumps({k: v for k, v in state.items() if k not in ("memory", "steered")})
