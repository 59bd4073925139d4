"""A cold open parsed by a worker process (``feed``) gives exactly what ``fold`` gives:
the graph, the counts, the quarantine records and the skip offsets; a worker that dies
costs only time (real processes, real files)."""
import os

import pytest

from mino_memory_graph import feed, journal as jmod, ops
from mino_memory_graph.cache import graph_snapshot, same_graph
from mino_memory_graph.journal import Journal, Report, fold
from mino_memory_graph.model import Graph
from mino_memory_graph.store import Store


def mixed_journal() -> bytes:
    """Every operation, non-ASCII and escaped text, floats, and the lines a journal
    should never hold: garbage, blank, non-UTF-8, unappliable, and a line longer than a
    worker's read (it spans frames)."""
    out = []
    at = 1_700_000_000_000
    for i in range(1, 300):
        at += 1
        kind = ("Aspect", "TaskEpisode", "Entity", "Harness", "Outcome")[i % 5]
        label = f"project p{i}" if kind == "Entity" else f"n\u00e9{i} \u2603 \"q\""
        out.append(ops.create_node(i, kind, label, at))
        out.append(ops.add_fact(i, 2 * i, "port", f"80{i}\n\\", at))
        if i > 2:
            out.append(ops.supersede_fact(i - 1, 2 * (i - 1), "port", f"v{i}", 2 * i + 1, at))
            out.append(ops.link(i, i, i - 2, ("PartOf", "SuppliesContext")[i % 2], at))
            out.append(ops.record_outcome(i - 2, i % 3 == 0, at))
            out.append(ops.commit_log(i, "tool_call", f"bash {i} \u00fc", at))
            out.append(ops.record_usefulness(i, i % 4 != 0, at))
        if i % 50 == 0:
            out.append(ops.set_area(i, "Executive", at))
            out.append(ops.reweight(i - 1, -0.125, at))
            out.append(ops.push_context(i, {"from": 1, "dim": 3, "vec": [0.5, 1e-3, 2],
                                            "note": "n"}, at))
            out.append(ops.unlink(i - 3, at))
            out.append(ops.delete_node(i - 10, i % 100 == 0, at))
    lines = [ops.encode(name, body) for name, body in out]
    lines.insert(100, b"not json\n")
    lines.insert(200, b"\xff\xfe garbage\n")
    lines.insert(300, b"\n")
    lines.insert(400, ops.encode(*ops.add_fact(99_999, 7, "k", "v", at)))  # no such node
    lines.insert(500, b'{"AddFact":{"node":1}}\n')
    lines.insert(600, ops.encode(*ops.add_fact(5, 90_000, "long", "x" * 300_000, at)))
    lines.insert(700, b'{"CreateNode":{"id":1,"kind":"Aspect","label":"x","at":1}} tail\n')
    return b"".join(lines)


def replay_here(data: bytes):
    g, rep, bad = Graph(), Report(), []
    fold(data, g, 0, rep, bad)
    return g, rep, bad


def replay_in_worker(path, start=0, **kw):
    j = Journal(path)
    try:
        g, rep, bad = Graph(), Report(), []
        end = j.last_newline(0, j.size())
        reached = feed.fold_in_worker(j, start, end, g, rep, bad, **kw)
        return g, rep, bad, reached, end
    finally:
        j.close()


def outcome(g, rep, bad):
    return (graph_snapshot(g)[:3], graph_snapshot(g)[4:], g.clock,
            (rep.ops, rep.applied, rep.skipped, rep.blank), rep.skips, bad, sorted(g.dirty))


def test_the_worker_gives_what_fold_gives(tmp_path):
    data = mixed_journal()
    path = tmp_path / "journal.jsonl"
    path.write_bytes(data)
    ref = replay_here(data)
    g, rep, bad, reached, end = replay_in_worker(path)
    assert reached == end == len(data)
    assert outcome(g, rep, bad) == outcome(*ref)
    assert len(bad) == 4 and rep.skipped >= 1 and rep.blank == 1
    # the derived text the model reads is the same too
    for nid in (1, 5, 150, 299):
        assert g.state_of(nid) == ref[0].state_of(nid)


def test_a_worker_that_dies_costs_only_time(tmp_path):
    data = mixed_journal()
    path = tmp_path / "journal.jsonl"
    path.write_bytes(data)
    ref = replay_here(data)
    g, rep, bad, reached, end = replay_in_worker(path, stop_after=1)
    assert 0 < reached < end and data[reached - 1:reached] == b"\n"
    fold(data[reached:], g, reached, rep, bad)  # the caller folds the rest
    assert same_graph(g, ref[0])
    assert (rep.ops, rep.applied, rep.skipped) == (ref[1].ops, ref[1].applied, ref[1].skipped)
    assert bad == ref[2] and rep.skips == ref[1].skips


def test_a_worker_that_cannot_start_applies_nothing(tmp_path, monkeypatch):
    path = tmp_path / "journal.jsonl"
    path.write_bytes(mixed_journal())
    monkeypatch.setattr(feed.sys, "executable", str(tmp_path / "no-such-python"))
    g, rep, bad, reached, _ = replay_in_worker(path)
    assert reached == 0 and not g.nodes and rep.ops == 0


def test_store_open_uses_the_worker_for_a_big_cold_open(tmp_path, monkeypatch):
    data = mixed_journal()
    path = tmp_path / "mem" / "journal.jsonl"
    path.parent.mkdir()
    path.write_bytes(data + data[:50])  # and a torn last line
    used = []
    real, real_available = feed.fold_in_worker, feed.available

    def spy(*a, **kw):
        used.append(a[1:3])
        return real(*a, **kw)

    monkeypatch.setattr(feed, "fold_in_worker", spy)
    monkeypatch.setattr(feed, "MIN_BYTES", 1000)
    monkeypatch.setattr(feed, "available", lambda: True)
    s = Store.open(path, use_cache=False, fsync=False)
    assert used == [(0, len(data))]
    monkeypatch.setenv("MINO_GRAPH_REPLAY_WORKER", "0")
    monkeypatch.setattr(feed, "available", real_available)
    assert not feed.available()
    path2 = tmp_path / "mem2" / "journal.jsonl"
    path2.parent.mkdir()
    path2.write_bytes(data + data[:50])
    s2 = Store.open(path2, use_cache=False, fsync=False)
    assert len(used) == 1
    assert same_graph(s.graph, s2.graph) and s.report.as_dict() == s2.report.as_dict()
    assert s.report.quarantined == 5  # four bad lines and the torn tail
    s.close()
    s2.close()


@pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux affinity")
def test_one_core_means_no_worker(monkeypatch):
    monkeypatch.delenv("MINO_GRAPH_REPLAY_WORKER", raising=False)
    monkeypatch.setattr(feed.os, "sched_getaffinity", lambda pid: {0})
    assert not feed.available()
    monkeypatch.setattr(feed.os, "sched_getaffinity", lambda pid: {0, 1})
    assert feed.available()


def test_chunking_does_not_change_the_worker_result(tmp_path, monkeypatch):
    """The in-process fold with tiny chunks, and the worker: one graph."""
    data = mixed_journal()
    path = tmp_path / "journal.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(jmod, "CHUNK", 97)
    ref = replay_here(data)
    g, rep, bad, _, _ = replay_in_worker(path)
    assert outcome(g, rep, bad) == outcome(*ref)
