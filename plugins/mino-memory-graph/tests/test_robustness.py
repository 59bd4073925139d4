"""Several processes on one journal, writers killed mid-flight, garbage lines."""
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from mino_memory_graph.core import ops
from oracle import replay, same_graph
from mino_memory_graph.journal.journal import parse_one
from mino_memory_graph.store import Store

WRITER = str(Path(__file__).with_name("writer_proc.py"))


def _spawn(path, tag, count, ack="-"):
    return subprocess.Popen([sys.executable, WRITER, str(path), tag, str(count), ack])


def test_eight_processes_250_ops_each(tmp_path):
    path = tmp_path / "journal.jsonl"
    Store.open(path)  # create it
    procs = [_spawn(path, f"p{i}", 250) for i in range(8)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    lines = path.read_bytes().splitlines()
    assert len(lines) == 2000
    parsed = [parse_one(l.decode()) for l in lines]
    node_ids = [b["id"] for n, b in parsed if n == "CreateNode"]
    fact_ids = [b.get("fact_id", b.get("new_fact_id")) for n, b in parsed if n != "CreateNode"]
    assert len(node_ids) == len(set(node_ids)) == 8 * 50
    assert len(fact_ids) == len(set(fact_ids)) == 8 * 200
    s = Store.open(path)  # its index has every op, none skipped or quarantined
    assert (s.index.stat("ops"), s.index.stat("skipped"), s.quarantined_total()) == (2000, 0, 0)
    # the union: every writer's nodes are all there with their last values
    labels = {n.label for n in replay(s).nodes.values()}
    assert all(f"p{i} node {j}" in labels for i in range(8) for j in range(0, 250, 5))
    ats = [b["at"] for _, b in parsed]
    assert ats == sorted(ats)


def test_writer_killed_at_random_moments(tmp_path):
    path = tmp_path / "journal.jsonl"
    ack = tmp_path / "ack"
    Store.open(path)
    rnd = random.Random(7)
    for round_ in range(30):
        before = Store.open(path)
        n_before = before.index.stat("ops")
        acked_before = ack.stat().st_size if ack.exists() else 0
        p = _spawn(path, f"r{round_}", 10_000, str(ack))
        time.sleep(rnd.uniform(0.08, 0.25))
        p.send_signal(signal.SIGKILL)
        p.wait()
        if round_ % 3 == 0:  # now and then a writer dies mid-line
            with open(path, "ab") as fh:
                fh.write(b'{"AddFact":{"node":1,"fact_id":')
        s = Store.open(path)  # always opens
        acked = (ack.stat().st_size if ack.exists() else 0) - acked_before
        applied = s.index.stat("ops") - n_before
        assert acked <= applied <= acked + 1, (acked, applied)  # at most the op in flight
        assert s.index.stat("skipped") == 0
    corrupt = path.with_suffix(".corrupt").read_text().splitlines()
    # every record is one of our torn lines: first seen torn, later (once the next
    # writer terminated it) as a complete bad line; each (offset, text) is recorded once
    recs = [json.loads(c) for c in corrupt]
    # (two tears with no complete write between them join into one line)
    frag = '{"AddFact":{"node":1,"fact_id":'
    assert recs and all(r["raw"] and not r["raw"].replace(frag, "") for r in recs)
    assert any("torn" in r["reason"] for r in recs)
    final = Store.open(path)
    with final.write() as r:
        r.create_node("Aspect", "still writable")


GOOD = [ops.encode(*op) for op in (
    ops.create_node(1, "Aspect", "alpha", 10), ops.add_fact(1, 1, "k", "v", 11),
    ops.create_node(2, "Entity", "project beta", 12), ops.link(1, 1, 2, "PartOf", 13),
    ops.supersede_fact(1, 1, "k", "w", 2, 14), ops.commit_log(2, "note", "hello", 15),
    ops.record_usefulness(1, True, 16), ops.record_outcome(1, False, 17))]


def _is_garbage(line: bytes) -> bool:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    if not text.strip():
        return False
    try:
        parse_one(text)
        return False
    except ValueError:
        return True


garbage_line = st.one_of(
    st.binary(min_size=1, max_size=80),
    st.text(min_size=1, max_size=80),
    st.builds(lambda g, i: g[:i], st.sampled_from(GOOD), st.integers(1, 60)),
    st.builds(lambda k, v: json.dumps({k: v}), st.sampled_from(list(ops.SPECS) + ["X"]),
              st.dictionaries(st.sampled_from(["node", "id", "at", "kind", "label"]),
                              st.one_of(st.integers(-5, 5), st.text(max_size=5), st.none()))),
).map(lambda x: x.encode() if isinstance(x, str) else x).map(
    lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ")).filter(_is_garbage)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(garbage=st.lists(garbage_line, min_size=1, max_size=6), pos=st.integers(0, len(GOOD)))
def test_garbage_lines_are_quarantined(tmp_path_factory, garbage, pos):
    d = tmp_path_factory.mktemp("g")
    clean = d / "clean.jsonl"
    clean.write_bytes(b"".join(GOOD))
    dirty = d / "journal.jsonl"
    dirty.write_bytes(b"".join(GOOD[:pos]) + b"".join(g + b"\n" for g in garbage)
                      + b"".join(GOOD[pos:]))
    ref = Store.open(clean)
    s = Store.open(dirty)
    assert s.report.quarantined == len(garbage)
    assert same_graph(s.graph, ref.graph)
    recs = dirty.with_suffix(".corrupt").read_text().splitlines()
    assert len(recs) == len(garbage)
    s.search("alpha")  # and the store still works
    assert s.check()["replay"]["quarantined"] == len(garbage)
