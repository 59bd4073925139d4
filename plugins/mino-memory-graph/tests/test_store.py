"""Model, journal format, replay, quarantine, torn lines, derived cache (real files)."""
import json
import os
import stat

import pytest
from hypothesis import example, given, settings, strategies as st

from mino_memory_graph.core import model as _model
from mino_memory_graph.core import ops
from oracle import fold, replay, same_graph
from mino_memory_graph.journal.journal import Report
from mino_memory_graph.core.model import ApplyError, CLOCK_START, Graph
from mino_memory_graph.core.errors import MemoryError_
from mino_memory_graph.store import Store


@pytest.fixture
def jpath(tmp_path):
    return tmp_path / "mem" / "journal.jsonl"


def build(store):
    with store.write() as r:
        a = r.create_node("Aspect", "deploy port")
        r.fact(a, "port", "8081")
        p = r.create_node("Entity", "project git:example")
        e = r.link(a, p, "PartOf")
    with store.write() as r:
        fid, old = r.fact(a, "port", "9090")
        r.commit_log(a, "tool_call", "bash: ok")
        r.mark_useful(a)
        r.record_outcome(e, False)
    return a, p, e, fid, old


def test_line_format_is_mnemos(jpath):
    s = Store.open(jpath)
    build(s)
    lines = jpath.read_text().splitlines()
    assert lines[0] == ('{"CreateNode":{"id":1,"kind":"Aspect","label":"deploy port",'
                        '"at":1700000000001}}')
    assert lines[1] == ('{"AddFact":{"node":1,"fact_id":1,"key":"port","value":"8081",'
                        '"at":1700000000001}}')
    assert json.loads(lines[4]) == {"SupersedeFact": {
        "node": 1, "old_fact": 1, "new_key": "port", "new_value": "9090", "new_fact_id": 2,
        "at": 1700000000002}}
    assert '"RecordOutcome":{"edge":1,"success":false' in lines[-1]


def test_files_are_private(jpath):
    Store.open(jpath)
    assert stat.S_IMODE(os.stat(jpath).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(jpath.with_suffix(".lock")).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(jpath.parent).st_mode) == 0o700


def test_model_semantics(jpath):
    s = Store.open(jpath)
    a, p, e, fid, old = build(s)
    n = s.graph.nodes[a]
    assert [(f.id, f.key, f.value, f.active, f.superseded_by) for f in n.facts] == [
        (1, "port", "8081", False, 2), (2, "port", "9090", True, None)]
    assert s.graph.edges[e].weight == pytest.approx(0.4) and s.graph.edges[e].failure == 1
    assert n.useful == 1 and n.area == "Semantic" and s.graph.nodes[p].area == "Spatial"
    st = s.state(a)
    assert st.startswith("[Aspect/Semantic] deploy port #1\nfacts:\n  - port: 9090\n")
    assert "8081" not in st  # retired values never reach the state text
    assert "usefulness votes: 1 useful / 0 unhelpful" in st
    h = s.history(a)
    assert [f["status"] for f in h["facts"]] == ["superseded", "active"]


def test_supersede_retires_every_live_copy():
    g = Graph()
    g.apply(*ops.create_node(1, "Aspect", "x", 1))
    g.apply(*ops.add_fact(1, 1, "k", "a", 2))
    g.apply(*ops.add_fact(1, 2, "k", "b", 3))
    g.apply(*ops.supersede_fact(1, 1, "k", "c", 3, 4))
    assert [f.active for f in g.nodes[1].facts] == [False, False, True]
    assert g.nodes[1].log[-1][2] == "1 (+1 other live 'k') -> 3: c"


def test_edge_weights_and_death():
    g = Graph()
    for i in (1, 2):
        g.apply(*ops.create_node(i, "Aspect", f"n{i}", 1))
    g.apply(*ops.link(1, 1, 2, "SuppliesContext", 5))
    g.apply(*ops.record_outcome(1, False, 6))
    assert g.edges[1].weight == pytest.approx(0.4, abs=1e-7)
    for _ in range(4):
        g.apply(*ops.record_outcome(1, False, 6))
    # float32 as in Mnemo: 0.5 - 5 x 0.1 leaves 1.5e-8, so the sixth failure kills it
    assert 0 < g.edges[1].weight < 1e-7 and g.edges[1].alive_at(10)
    g.apply(*ops.record_outcome(1, False, 6))
    assert g.edges[1].weight == 0.0 and not g.edges[1].alive_at(10)
    g.apply(*ops.reweight(1, 2.0, 7))
    assert g.edges[1].weight == 1.0
    g.apply(*ops.record_outcome(1, True, 8))
    assert g.edges[1].weight == 1.0 and g.edges[1].success == 1
    g.apply(*ops.unlink(1, 9))
    assert not g.edges[1].alive_at(10)


def test_unappliable_ops_raise_without_change():
    g = Graph()
    g.apply(*ops.create_node(1, "Aspect", "x", 1))
    for op in (ops.create_node(1, "Entity", "y", 2), ops.add_fact(9, 1, "k", "v", 2),
               ops.supersede_fact(1, 77, "k", "v", 2, 2), ops.link(1, 1, 9, "PartOf", 2),
               ops.unlink(3, 2)):
        with pytest.raises(ApplyError):
            g.apply(*op)
    assert g.nodes[1].label == "x" and not g.nodes[1].facts and not g.edges


def test_soft_and_hard_delete(jpath):
    s = Store.open(jpath)
    with s.write() as r:
        a = r.create_node("Aspect", "ingress rewrite annotation")
        b = r.create_node("Aspect", "ingress rewrite other")
    assert {h.node for h in s.search("ingress rewrite").hits} == {a, b}
    with s.write() as r:
        r.delete(a)
        r.delete(b, hard=True)
    assert s.search("ingress rewrite").hits == []
    assert "deleted: hard=false" in s.state(a)  # state still readable after soft delete
    with pytest.raises(MemoryError_):
        s.state(b)
    with s.write() as r:
        assert r.create_node("Aspect", "new") == 3  # ids never reused
    s2 = Store.open(jpath)
    assert same_graph(s2.graph, s.graph)


def test_ids_and_clock(jpath):
    s = Store.open(jpath)
    build(s)
    ats = [next(iter(json.loads(l).values()))["at"] for l in jpath.read_text().splitlines()]
    assert ats[0] == CLOCK_START + 1 and ats == sorted(ats) and len(set(ats)) == 2
    s2 = Store.open(jpath)
    with s2.write() as r:
        assert r.at > max(ats)
        assert r.create_node("Aspect", "z") == 3


@pytest.mark.parametrize("index", [False, True])
def test_a_block_that_raises_keeps_none_of_its_ops(tmp_path, index):
    """All or nothing: ops applied before the error are neither in the journal nor in the
    graph, this store's or another's; the next write goes on from the journal."""
    home = tmp_path / "home"
    s = Store.open(home=home, config={}) if index else Store.open(tmp_path / "j.jsonl")
    with s.write() as r:
        kept = r.create_node("Aspect", "deploy port")
    before = s.journal.path.read_bytes()
    with pytest.raises(ZeroDivisionError):
        with s.write() as r:
            lost = r.create_node("Aspect", "half written")
            r.fact(kept, "port", "9090")
            1 / 0
    assert s.journal.path.read_bytes() == before
    assert lost not in s.graph.nodes and s.graph.nodes[kept].fact("port") is None
    with s.write() as r:
        again = r.create_node("Aspect", "written whole")
    assert again == lost  # the id the failed block took is given again: it was never kept
    other = Store.open(home=home, config={}) if index else Store.open(tmp_path / "j.jsonl")
    assert [other.graph.nodes[n].label for n in (kept, again)] == ["deploy port", "written whole"]
    s.close()
    other.close()


def test_two_stores_see_each_other(jpath):
    a, b = Store.open(jpath), Store.open(jpath)
    with a.write() as r:
        x = r.create_node("Aspect", "alpha beta")
    with b.write() as r:
        y = r.create_node("Aspect", "alpha gamma")
    assert x != y
    assert {h.node for h in a.search("alpha").hits} == {x, y}


def test_replay_equals_live_and_mnemo_lines_load(jpath):
    s = Store.open(jpath)
    build(s)
    with s.write() as r:
        r.push_context(1, 2, "note", 3, [0.5, 1.0, 2.0])
        r.set_area(1, "executive")
    s2 = Store.open(jpath)
    assert same_graph(s2.graph, s.graph)
    assert s2.state(1) == s.state(1)
    # a line as Mnemo writes it (vec omitted, f32 delta) replays here
    with open(jpath, "ab") as fh:
        fh.write(b'{"PushContext":{"to":1,"chunk":{"from":2,"dim":0,"note":"x"},'
                 b'"at":1700000000099}}\n{"Reweight":{"edge":1,"delta":0.25,"at":1700000000099}}\n')
    s2.refresh()
    assert s2.graph.nodes[1].context[-1]["vec"] == [] and s2.report.quarantined == 0


def test_quarantine_bad_lines_and_blank_padding(jpath):
    s = Store.open(jpath)
    build(s)
    good = jpath.read_bytes().splitlines(keepends=True)
    bad = [b"not json\n", b"\xff\xfe garbage\n", b'{"Nope":{}}\n', b"\n", b"   \n",
           b'{"AddFact":{"node":1}}\n', b'{"CreateNode":{"id":-1,"kind":"Aspect","label":"x","at":1}}\n',
           b'{"AddFact":{"node":1,"fact_id":99,"key":"k","value":"' + b"x" * 50000 + b'","at":1}} trailing\n']
    jpath.write_bytes(b"".join(good[:3] + bad + good[3:]))
    s2 = Store.open(jpath)
    assert same_graph(s2.graph, s.graph)
    assert s2.report.quarantined == 6 and s2.report.blank == 2
    recs = [json.loads(l) for l in jpath.with_suffix(".corrupt").read_text().splitlines()]
    assert len(recs) == 6 and all({"reason", "raw"} <= set(r) for r in recs)
    assert "utf-8" in recs[1]["reason"]
    assert max(len(r["raw"]) for r in recs) < 4200 and "truncated" in recs[-1]["raw"]


def test_lines_that_only_parse_together_are_each_quarantined(jpath):
    """Two bad lines that would form one valid op if read as one text (and a third
    that makes the count come out right) never apply: each line is judged alone."""
    s = Store.open(jpath)
    build(s)
    good = jpath.read_bytes()
    bad = (b'{"CreateNode":{"id":7,"kind":"Aspect","label":"}\n'
           b'{","at":1700000000077}}\n'
           b'1,2\n')
    jpath.write_bytes(good + bad)
    s2 = Store.open(jpath)
    assert same_graph(s2.graph, s.graph) and 7 not in s2.graph.nodes
    assert s2.report.quarantined == 3


def test_offsets_across_chunks_and_non_ascii(jpath, monkeypatch):
    """Tiny chunks, non-ASCII text, a non-UTF-8 line, bad and unappliable lines: every
    reported offset is the line's byte offset, and the graph is the one-chunk graph."""
    from mino_memory_graph.journal import journal as jmod

    lines = []
    for i in range(1, 40):
        lines.append(ops.encode(*ops.create_node(i, "Aspect", f"n\u00e9{i} \u2603", 10 + i)))
        lines.append(ops.encode(*ops.add_fact(i, i, "k", "v\u00fc" * (i % 5), 10 + i)))
    lines.insert(7, b"not json\n")
    lines.insert(30, b"\xff\xfe\n")
    lines.insert(50, ops.encode(*ops.add_fact(999, 500, "k", "v", 99)))  # no such node
    lines.insert(61, b"\n")
    data = b"".join(lines)
    starts = [sum(len(x) for x in lines[:i]) for i in range(len(lines))]
    results = []
    for chunk in (1 << 18, 1, 97):
        monkeypatch.setattr(jmod, "CHUNK", chunk)
        g, rep, bad = Graph(), Report(), []
        fold(data, g, 1000, rep, bad)
        assert [b["offset"] for b in bad] == [1000 + starts[7], 1000 + starts[30]]
        assert [k["offset"] for k in rep.skips] == [1000 + starts[50]]
        assert (rep.ops, rep.applied, rep.skipped, rep.blank) == (79, 78, 1, 1)
        results.append(g)
    assert same_graph(results[0], results[1]) and same_graph(results[0], results[2])


def test_unappliable_line_skipped_with_warning(jpath):
    from mino_core import notices

    s = Store.open(jpath)
    build(s)
    with open(jpath, "ab") as fh:
        fh.write(ops.encode(*ops.create_node(1, "Aspect", "dup", CLOCK_START + 50)))
        fh.write(ops.encode(*ops.add_fact(42, 100, "k", "v", CLOCK_START + 50)))
    s2 = Store.open(jpath)
    assert s2.report.skipped == 2 and s2.graph.nodes[1].label == "deploy port"
    assert any("skipping unappliable" in n for n in notices.drain())  # a notice, not raw stderr
    assert not s2.check()["ok"]


def test_torn_last_line_is_terminated_and_quarantined(jpath):
    s = Store.open(jpath)
    build(s)
    size = jpath.stat().st_size
    with open(jpath, "ab") as fh:
        fh.write(b'{"CreateNode":{"id":3,"kind":"Asp')  # a writer died here
    other = Store.open(jpath)
    assert other.report.quarantined == 1
    with s.write() as r:  # catches up, quarantines, terminates the torn line first
        n = r.create_node("Aspect", "after the tear")
    raw = jpath.read_bytes()
    assert raw[size:].startswith(b'{"CreateNode":{"id":3,"kind":"Asp\n{"CreateNode"')
    assert n == 3
    fresh = Store.open(jpath)
    assert same_graph(fresh.graph, s.graph)
    other.refresh()
    assert same_graph(other.graph, s.graph)
    assert "torn" in jpath.with_suffix(".corrupt").read_text()


def test_torn_but_complete_tail_is_applied(jpath):
    s = Store.open(jpath)
    build(s)
    with open(jpath, "ab") as fh:
        fh.write(ops.encode(*ops.create_node(3, "Aspect", "whole", CLOCK_START + 9))[:-1])
    o = Store.open(jpath)
    assert o.graph.nodes[3].label == "whole"
    with s.write() as r:
        assert r.create_node("Aspect", "next") == 4
    assert same_graph(replay(jpath), s.graph)


def test_request_validation_errors(jpath):
    s = Store.open(jpath)
    with pytest.raises(MemoryError_):
        with s.write() as r:
            r.create_node("Wizard", "x")
    with pytest.raises(ApplyError):
        with s.write() as r:
            r.create_node("Aspect", "kept")
            r.add_fact(99, "k", "v")
    # the op applied before the failure was still journaled: memory == journal
    assert same_graph(replay(jpath), s.graph)
    with pytest.raises(ValueError):
        with s.write() as r:
            r.create_node("Aspect", "bad \udcff surrogate")
    assert same_graph(replay(jpath), s.graph)


def test_journal_location(tmp_path, monkeypatch):
    from mino_memory_graph.journal.journal import resolve_journal_path
    monkeypatch.delenv("MNEMO_MEMORY_JOURNAL", raising=False)
    assert resolve_journal_path(tmp_path) == tmp_path / "graph" / "journal.jsonl"
    cfg = {"memory": {"graph": {"journal": str(tmp_path / "x.jsonl")}}}
    assert resolve_journal_path(tmp_path, cfg) == tmp_path / "x.jsonl"
    monkeypatch.setenv("MNEMO_MEMORY_JOURNAL", str(tmp_path / "env.jsonl"))
    assert resolve_journal_path(tmp_path, cfg) == tmp_path / "env.jsonl"


# --- the per-node index of active facts by key ------------------------------------------


_FACT_OP = st.one_of(
    st.tuples(st.just("add"), st.integers(1, 2), st.integers(1, 6), st.sampled_from("kkj"),
              st.text("ab", max_size=1)),
    st.tuples(st.just("sup"), st.integers(1, 2), st.integers(0, 6), st.sampled_from("kkj"),
              st.text("ab", max_size=1), st.integers(1, 7)),
    st.tuples(st.just("look"), st.integers(1, 2), st.sampled_from("kj")),
)


def _fact_journal(script):
    """Ops over three nodes: fact ids repeat, run backwards, name retired facts or none."""
    out = [ops.create_node(i, "Aspect", f"n{i}", i) for i in (1, 2, 3)]
    at = 10
    for step in script:
        at += 1
        if step[0] == "add":
            _, node, fid, key, value = step
            out.append(ops.add_fact(node, fid, key, value, at))
        elif step[0] == "sup":
            _, node, old, key, value, fid = step
            out.append(ops.supersede_fact(node, old, key, value, fid, at))
        else:
            out.append(("look", step[1:]))
    return out


def _run(journal, scan_only: bool, replay: bool):
    g = Graph()
    looks = []
    real = _model.key_index
    if scan_only:
        _model.key_index = lambda facts: False  # the pre-index behaviour: always scan
    try:
        for name, body in journal:
            if name == "look":
                n = g.nodes[body[0]]
                f = n.fact(body[1])
                looks.append(None if f is None else f.id)
                continue
            if replay:
                fold(ops.encode(name, body), g, 0, Report(), [])
            else:
                try:
                    g.apply(name, body)
                except ApplyError:
                    pass
    finally:
        _model.key_index = real
    snap = [(n.id, [(f.id, f.key, f.value, f.active, f.superseded_by) for f in n.facts],
             list(n.log)) for n in g.nodes.values()]
    return snap, looks, g.next_fact


@settings(max_examples=400, deadline=None)
@given(st.lists(_FACT_OP, max_size=30))
@example([("add", 1, 3, "k", "a"), ("sup", 1, 3, "k", "b", 4), ("add", 1, 3, "k", "c"),
          ("sup", 1, 3, "k", "d", 5)])  # a reused id: "fact 3" is the retired first one
@example([("add", 1, 1, "k", "a"), ("sup", 1, 1, "k", "b", 2), ("add", 1, 2, "j", "c"),
          ("sup", 1, 2, "j", "d", 3)])  # an added fact reuses a live id under another key
@example([("add", 1, 1, "k", "a"), ("add", 1, 2, "j", "b"), ("sup", 1, 1, "k", "c", 3),
          ("sup", 1, 3, "k", "d", 2), ("sup", 1, 2, "k", "e", 4)])  # a supersede reuses one
def test_fact_index_equals_scanning(script):
    """Supersede through the key index (replay and live handlers) equals the full scan,
    even for foreign journals: repeated fact ids, ids going backwards, renamed keys,
    several live values under one key, retired or missing targets."""
    journal = _fact_journal(script)
    ref = _run(journal, scan_only=True, replay=False)
    assert _run(journal, scan_only=False, replay=False) == ref
    assert _run(journal, scan_only=False, replay=True) == ref


def test_a_big_fold_into_a_long_lived_graph_is_frozen_and_release_breaks_cycles(
        monkeypatch):
    """A store's cold open freezes what it built (no collection walks it again); a
    released graph holds no reference to itself, so dropping it frees it even then."""
    import gc
    import sys

    from mino_memory_graph.journal import journal

    monkeypatch.setattr(journal, "FREEZE_OPS", 20)
    lines = [ops.create_node(i, "Aspect", f"n{i}", i) for i in range(1, 31)]
    data = b"".join(ops.encode(name, body) for name, body in lines)
    before = gc.get_freeze_count()
    try:
        small = Graph()
        fold(data[: data.index(b"\n") + 1], small, 0, Report(), [], long_lived=True)
        assert gc.get_freeze_count() == before  # one op: below the threshold
        g = Graph()
        fold(data, g, 0, Report(), [], long_lived=True)
        assert gc.get_freeze_count() > before
        assert len(g.nodes) == 30 and gc.isenabled()
    finally:
        gc.unfreeze()
    assert sys.getrefcount(g) > 2  # its handlers close over it
    g.release()
    assert sys.getrefcount(g) == 2  # only ``g`` and the call's argument
    assert g.state_of(1).startswith("[Aspect/Semantic] n1 #1")


# --- issue 16: the rewrite primitive, bad lines reported once --------------------------

def test_journal_rewrite_replaces_the_file_whole_and_can_keep_the_old_one(jpath):
    from mino_memory_graph.journal.journal import Journal

    s = Store.open(jpath)
    build(s)
    s.close()
    old = jpath.read_bytes()
    j = Journal(jpath)
    with j.locked(exclusive=True):
        kept = jpath.with_name("journal.kept.jsonl")
        size = j.rewrite(iter([b"{}\n", b"[]\n"]), keep_old=kept)
    assert size == 6 and jpath.read_bytes() == b"{}\n[]\n" and not j.replaced()
    assert kept.read_bytes() == old and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(jpath).st_mode) == 0o600

    def broken():
        yield b"half"
        raise OSError("disk full")
    with j.locked(exclusive=True), pytest.raises(OSError):
        j.rewrite(broken())
    assert jpath.read_bytes() == b"{}\n[]\n"  # the old file, untouched
    assert [p.name for p in jpath.parent.iterdir() if ".rewrite-" in p.name] == []
    j.close()


def test_bad_lines_are_unreported_until_marked(jpath):
    s = Store.open(jpath)
    build(s)
    with open(jpath, "ab") as fh:
        fh.write(b"garbage one\n")
    s.refresh()
    new = s.journal.unreported()
    assert [r["raw"] for r in new] == ["garbage one"]
    s.journal.mark_reported(new)
    assert s.journal.unreported() == []
    with open(jpath, "ab") as fh:
        fh.write(b"garbage two\n")
    s.refresh()
    assert [r["raw"] for r in s.journal.unreported()] == ["garbage two"]
    assert stat.S_IMODE(os.stat(s.journal.reported_path).st_mode) == 0o600
    s.close()
