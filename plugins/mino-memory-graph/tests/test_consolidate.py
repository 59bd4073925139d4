"""Consolidation (Mnemo's consolidate.rs): recurring themes fold into lessons by Mnemo's rule
and thresholds; the planner is idempotent; nothing is erased; it runs on ``mino memory
consolidate`` and when a session ends past the threshold of new episodes."""
import json

import click
import pytest
from click.testing import CliRunner

from mino_core import PluginContext
from mino_memory_graph.loop import consolidate
from mino_memory_graph import plugin
from mino_memory_graph.store import Store

from graphtest import GRAPH, graph_of, journal
from oracle import apply_ops, replay


@pytest.fixture(autouse=True)
def _defaults(monkeypatch):
    for key in ("MNEMO_MIN_OCCURRENCES", "MNEMO_CONSOLIDATE_THRESHOLD", "MNEMO_MEMORY_JOURNAL"):
        monkeypatch.delenv(key, raising=False)


def _seed(path):
    """Three sources sharing helm, rollback and timed; one unrelated episode; a project."""
    s = Store.open(path)
    with s.write() as r:
        p = r.create_node("Entity", "project dir:/p")
        a = r.episode("task: deploy helm chart")
        r.fact(a, "goal", "helm rollback timed out on staging")
        b = r.episode("task: fix helm rollback")
        r.fact(b, "goal", "helm rollback timed out again")
        c = r.create_node("Aspect", "pain: Bash(helm rollback web) failed: timed out", "Salience")
        r.fact(c, "failure", "Bash(helm rollback web) failed: timed out")
        d = r.episode("task: write docs")
        r.fact(d, "goal", "docs for the readme")
        for n in (a, b, c, d):
            r.link(n, p, "PartOf")
    return s, (a, b, c, d)


def test_theme_tokens_follow_mnemo():
    class N:
        label = "pain: Bash(helm rollback) failed: TIMED out x9 ab"
        facts = []
    assert consolidate.theme_tokens(N) == {"bash", "helm", "rollback", "timed"}


def test_one_lesson_per_shared_theme_then_nothing_then_new_evidence_supersedes(tmp_path):
    path = tmp_path / "j.jsonl"
    s, (a, b, c, d) = _seed(path)
    ops, lessons = consolidate.plan(s.graph)
    assert [x["label"] for x in lessons] == ["lesson: helm rollback timed"]
    (lesson,) = lessons
    assert lesson["sources"] == [a, b, c] and lesson["change"] == "new"
    assert [name for name, _ in ops] == ["CreateNode", "SetArea", "AddFact", "AddFact"]
    apply_ops(s, ops)
    n = s.graph.nodes[lesson["node"]]
    assert n.area == "Semantic" and n.kind == "Aspect"
    assert n.fact("recurring_theme").value == "seen in 3 episodes: helm rollback timed"
    assert n.fact("sources").value == f"#{a} #{b} #{c}"
    # idempotent: a second pass right after plans nothing and says the lesson is unchanged
    again, lessons2 = consolidate.plan(s.graph)
    assert again == [] and [x["change"] for x in lessons2] == ["unchanged"]
    before = path.read_bytes()
    with s.write() as r:
        e = r.episode("task: helm rollback timed out a third time")
    ops3, lessons3 = consolidate.plan(s.graph)
    assert [name for name, _ in ops3] == ["SupersedeFact"] and lessons3[0]["change"] == "updated"
    apply_ops(s, ops3)
    n = s.graph.nodes[lesson["node"]]
    assert n.fact("sources").value == f"#{a} #{b} #{c} #{e}"
    # nothing erased: the journal only grew, the old sources value is history
    after = path.read_bytes()
    assert after.startswith(before) and b"DeleteNode" not in after
    assert [f.value for f in n.facts if not f.active] == [f"#{a} #{b} #{c}"]
    replayed = replay(path)
    assert replayed.state_of(lesson["node"]) == s.graph.state_of(lesson["node"])


def test_one_shared_word_is_no_lesson_and_min_occurrences_is_read(tmp_path, monkeypatch):
    s = Store.open(tmp_path / "j.jsonl")
    with s.write() as r:
        r.episode("task: checkout page styling")
        r.episode("task: checkout api timeout")
    assert consolidate.plan(s.graph) == ([], [])  # share only "checkout"
    s2, _ = _seed(tmp_path / "k.jsonl")
    monkeypatch.setenv("MNEMO_MIN_OCCURRENCES", "4")
    assert consolidate.plan(s2.graph) == ([], [])  # 3 sources, 4 needed
    for junk in ("0", "-2", "many", ""):
        monkeypatch.setenv("MNEMO_MIN_OCCURRENCES", junk)
        assert consolidate.min_sources() == 2
    monkeypatch.setenv("MNEMO_CONSOLIDATE_THRESHOLD", "5")
    assert consolidate.threshold() == 5
    monkeypatch.setenv("MNEMO_CONSOLIDATE_THRESHOLD", "x")
    assert consolidate.threshold() == 3


def test_the_index_backed_graph_plans_the_same(tmp_path):
    path = tmp_path / "j.jsonl"
    s, _ = _seed(path)
    whole = consolidate.plan(s.graph)
    s.close()
    lazy = Store.open(path)
    assert consolidate.plan(lazy.graph) == whole
    lazy.close()


def test_mino_memory_consolidate(tmp_path):
    s, (a, b, c, d) = _seed(tmp_path / "graph" / "journal.jsonl")
    s.close()
    ctx = PluginContext(home=tmp_path, project_root=tmp_path, config={})

    @click.group()
    def memory():
        pass
    plugin.register_memory_commands(memory, ctx)
    run = CliRunner().invoke
    out = run(memory, ["consolidate", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["applied"] == 1 and data["lessons"][0]["sources"] == [a, b, c]
    again = json.loads(run(memory, ["consolidate", "--json"]).output)
    assert again["applied"] == 0 and again["lessons"][0]["change"] == "unchanged"
    text = run(memory, ["consolidate"]).output
    assert "lesson: helm rollback timed  (unchanged; 3 sources:" in text


MESSAGES = ["the helm rollback timed out on staging, look", "helm rollback timed out again",
            "why does the helm rollback keep timing out"]
OTHER = ["what is in the readme", "list the docs folder"]


def _session(make_harness, scripted_server, messages, **kw):
    h = make_harness(config=kw.pop("config", GRAPH), **kw)
    _talk(h, scripted_server, messages)
    return h


def _talk(h, scripted_server, messages):
    for text in messages:
        scripted_server.add({"text": "looking"})
        h.turn(text)
    h.end_session()


def _lessons(home):
    g = graph_of(home)
    return [n for n in replay(g).nodes.values() if n.label.startswith("lesson: ") and not n.deleted]


def test_a_session_past_the_threshold_consolidates_when_it_ends(graph_only, make_harness,
                                                                scripted_server, mino_home):
    h = _session(make_harness, scripted_server, MESSAGES[:2])
    assert _lessons(mino_home) == []  # 2 new episodes: below the threshold of 3
    h.new_session()
    _talk(h, scripted_server, OTHER + MESSAGES[2:])
    g = graph_of(mino_home)
    found = {n.label: n.fact("sources").value for n in _lessons(mino_home)}
    eps = sorted(n.id for n in replay(g).nodes.values() if n.kind == "TaskEpisode"
                 and n.label.startswith("task: ") and "helm" in n.label)
    # the three helm episodes (two sessions) share helm and rollback; two also "timed"
    assert found == {"lesson: helm rollback": " ".join(f"#{e}" for e in eps),
                     "lesson: helm rollback timed": " ".join(f"#{e}" for e in eps[:2])}
    assert "2 lesson(s) from recurring themes" in h.notices


def test_the_threshold_comes_from_the_environment(graph_only, make_harness, scripted_server,
                                                  mino_home, monkeypatch):
    monkeypatch.setenv("MNEMO_CONSOLIDATE_THRESHOLD", "2")
    _session(make_harness, scripted_server, MESSAGES[:2])
    assert [n.label for n in _lessons(mino_home)] == ["lesson: helm rollback timed"]


def test_a_deny_rule_stops_the_lessons(graph_only, make_harness, scripted_server, mino_home):
    config = {**GRAPH, "permissions": {"deny": ["memory_consolidate"]}}
    h = _session(make_harness, scripted_server, MESSAGES, config=config)
    assert _lessons(mino_home) == []
    assert "not folded into lessons (denied by" in h.notices


def test_a_session_with_no_turn_here_opens_no_journal_when_it_ends(graph_only, make_harness,
                                                                    mino_home):
    h = make_harness(config=GRAPH)
    h.end_session()  # mino started and left at once
    assert not (mino_home / "graph").exists() and h.notices == ""


def test_the_session_node_this_process_made_is_where_the_session_began(
        graph_only, make_harness, scripted_server, mino_home):
    from mino_memory_graph.loop import loop

    h = _session(make_harness, scripted_server, MESSAGES[:1])
    h.new_session()
    _talk(h, scripted_server, OTHER[:1])  # the second session's node: not the lowest id
    sid = str(h.session.id)
    mem = loop.memory_for(h.session.home, h.session.config)
    known = mem.standing.sessions[sid]
    g = graph_of(mino_home)
    assert consolidate._began_at(g, sid, known) == consolidate._began_at(g, sid) == known
    assert consolidate._began_at(g, sid, known - 1) == known  # not its node: the scan


def _large(path, themes=30, per=10, pairs=150):
    """A memory past ``LARGE``: ``themes`` groups of ``per`` episodes sharing two words,
    ``pairs`` pairs sharing one word, and one word ("deploy") in every episode."""
    s = Store.open(path)
    with s.write() as r:
        for j in range(themes):
            for k in range(per):
                r.episode(f"task: deploy alpha{j} beta{j} item{j}x{k}")
        for i in range(pairs):
            for k in range(2):
                r.episode(f"task: deploy pair{i} other{i}x{k}")
    return s


def test_a_large_memory_gets_its_themes_not_its_chance_pairs_and_common_words(tmp_path):
    """Mnemo's rule alone makes a lesson of every pair sharing a word and "deploy" (150
    here) and of each theme with "deploy" in it; at scale a theme needs 3 sources and a
    word in most sources is no theme, so only the 30 real themes are lessons."""
    s = _large(tmp_path / "j.jsonl")
    ops, lessons = consolidate.plan(s.graph, limit=None)
    assert [x["label"] for x in lessons] == sorted(
        f"lesson: alpha{j} beta{j}" for j in range(30))
    assert all(x["occurrences"] == 10 for x in lessons)
    s.close()


def test_one_pass_writes_a_bounded_number_and_a_session_end_only_what_is_new(tmp_path):
    s = _large(tmp_path / "j.jsonl")
    assert consolidate._index_of(s) is not None
    first = consolidate.apply_new(s)
    assert sum(x["change"] == "new" for x in first) == consolidate.MAX_WRITES
    second = consolidate.apply_new(s)  # the first was cut short: the rest now
    assert sum(x["change"] == "new" for x in second) == 30 - consolidate.MAX_WRITES
    assert consolidate.apply_new(s) == []  # no source since: nothing read, nothing planned
    with s.write() as r:
        new = [r.episode(f"task: gamma delta run{k}") for k in range(3)]
    third = consolidate.apply_new(s)
    assert [(x["label"], x["sources"], x["change"]) for x in third] == [
        ("lesson: delta gamma", new, "new")]
    g = s.graph
    assert len(consolidate._lesson_nodes(g)) == 31
    # a full pass (`mino memory consolidate`) finds nothing left to write
    assert consolidate.plan(g, limit=None)[0] == []
    s.close()
