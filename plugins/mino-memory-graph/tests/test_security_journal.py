"""Security issue 12, items 11, 12 and 15 (part): what a journal line may hold, and what
the derived cache may claim about the journal.

- A lone surrogate escape or a key given twice is quarantined, as Mnemo's serde reader
  does, on every path that reads lines (in-process fold, replay worker, derived cache),
  and the real ``mino memory show/search`` keep working and say lines were skipped.
- A line over ``MAX_LINE`` is quarantined without being parsed (or held whole).
- ``.corrupt`` records a bad line once, not again on every open.
- The derived cache is refused after a same-length edit anywhere in the journal.
"""
import json
import os
import subprocess
import sys
import time

import pytest

from mino_core.testing.harness import isolated_env
from mino_memory_graph.core import ops
from oracle import replay, same_graph
from mino_memory_graph.journal.journal import MAX_LINE
from mino_memory_graph.store import Store

AT = 1_700_000_000_000


def good_lines():
    return [ops.encode(*op) for op in (
        ops.create_node(1, "Aspect", "deploy port", AT + 1),
        ops.add_fact(1, 1, "port", "the deploy service listens on 8081", AT + 2),
        ops.create_node(2, "Aspect", "release steps", AT + 3),
        ops.add_fact(2, 2, "steps", "tag then push the release branch", AT + 4))]


# Each applies under Python's json (last key wins; "\ud800" becomes an unencodable str)
# and is refused by Mnemo's serde reader.
BAD = [
    b'{"AddFact":{"node":1,"fact_id":50,"key":"owner","value":"x\\ud800y","at":1700000000010}}\n',
    b'{"CreateNode":{"id":7,"kind":"Aspect","label":"deploy \\udc00 port","at":1700000000011}}\n',
    b'{"AddFact":{"node":1,"fact_id":51,"key":"port","key":"owner","value":"eve",'
    b'"at":1700000000012}}\n',
    b'{"CommitLog":{"node":2,"kind":"note","detail":"a","detail":"b","at":1700000000013}}\n',
    b'{"CreateNode":{"id":8,"kind":"Aspect","label":"one","at":1700000000014},'
    b'"CreateNode":{"id":9,"kind":"Aspect","label":"two","at":1700000000015}}\n',
    b'{"PushContext":{"to":1,"chunk":{"from":2,"from":1,"dim":0,"note":"n"},'
    b'"at":1700000000016}}\n',
]
# Not refused: a valid surrogate pair, and an escaped quote before a colon in a value
# (they only look suspicious to the fast checks).
FINE = [
    b'{"AddFact":{"node":2,"fact_id":60,"key":"emoji","value":"ok \\ud83d\\ude00","at":1700000000020}}\n',
    b'{"AddFact":{"node":2,"fact_id":61,"key":"quote","value":"say \\"hi\\": ok","at":1700000000021}}\n',
    b'{"PushContext":{"to":1,"chunk":{"from":2,"dim":0,"vec":[],"note":"n"},"at":1700000000022}}\n',
]


def write(path, lines):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))


def corrupt(path):
    p = path.with_suffix(".corrupt")
    return [json.loads(x) for x in p.read_text().splitlines()] if p.exists() else []


@pytest.fixture
def jpath(tmp_path):
    return tmp_path / "graph" / "journal.jsonl"


def test_surrogates_and_repeated_keys_are_quarantined_in_process(jpath):
    good = good_lines()
    write(jpath, good[:2] + BAD[:3] + good[2:] + BAD[3:] + FINE)
    s = Store.open(jpath)
    assert s.report.quarantined == len(BAD), s.report.bad
    assert 7 not in s.graph.nodes and 8 not in s.graph.nodes and 9 not in s.graph.nodes
    n1, n2 = s.graph.nodes[1], s.graph.nodes[2]
    assert n1.fact("port").value == "the deploy service listens on 8081"
    assert n1.fact("owner") is None and n1.context[-1]["from"] == 2
    assert n2.fact("emoji").value == "ok \U0001F600"
    assert n2.fact("quote").value == 'say "hi": ok'
    assert [ln[2] for ln in n2.log if ln[1] == "note"] == []
    reasons = [r["reason"] for r in corrupt(jpath)]
    assert sum("surrogate" in r for r in reasons) == 2
    assert sum("given twice" in r for r in reasons) == 4
    # every state is text again (this is what crashed show and search)
    for nid in replay(s).nodes:
        s.state(nid).encode("utf-8")
    assert s.check()["replay"]["quarantined"] == len(BAD)


def _mino(home, *args):
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "mino"), *args],
                          capture_output=True, text=True, timeout=120, cwd=home,
                          env=isolated_env(home))


def test_memory_show_and_search_work_and_report_the_quarantine(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    write(home / "graph" / "journal.jsonl", good_lines() + BAD)
    # before: search hit node 7 (the surrogate label) and died printing it
    found = _mino(home, "memory", "search", "deploy port", "--json")
    assert found.returncode == 0, found.stderr
    assert "Traceback" not in found.stderr
    hits = json.loads(found.stdout)["results"]
    assert [h["node"] for h in hits][:1] == [1] and 7 not in [h["node"] for h in hits]
    assert "6 bad journal line(s) skipped" in found.stderr
    show = _mino(home, "memory", "show", "1")
    assert show.returncode == 0, show.stderr
    assert "deploy port" in show.stdout and "owner" not in show.stdout
    # reported once (issue 16), not on every command; `check` lists them whenever asked
    assert "bad journal line" not in show.stderr and "Traceback" not in show.stderr


# --- item 15: a huge line, and .corrupt once per line ----------------------------------

def test_line_over_the_limit_is_quarantined_unparsed(jpath, monkeypatch):
    good = good_lines()
    huge = (b'{"AddFact":{"node":1,"fact_id":90,"key":"blob","value":"'
            + b"x" * (MAX_LINE + 10) + b'","at":1700000000030}}\n')
    just = (b'{"AddFact":{"node":2,"fact_id":91,"key":"blob","value":"'
            + b"y" * (MAX_LINE - 100) + b'","at":1700000000031}}\n')
    assert len(just) - 1 <= MAX_LINE < len(huge) - 1
    write(jpath, good[:2] + [huge] + good[2:] + [just])
    for lazy in (False, True):  # a replay into memory, then the index's view
        s = Store.open(jpath) if not lazy else Store.open(jpath)
        assert s.graph.nodes[1].fact("blob") is None  # a valid op, but too long to read
        assert len(s.graph.nodes[2].fact("blob").value) == MAX_LINE - 100
        assert s.quarantined_total() == 1
        (rec,) = corrupt(jpath)  # the second open adds no second record
        assert rec["offset"] == len(good[0]) + len(good[1])
        assert f"line over {MAX_LINE} bytes ({len(huge) - 1} bytes)" in rec["reason"]
        assert len(rec["raw"]) < 4200
        s.close()


def test_fifty_megabyte_line_costs_little(jpath):
    """The issue's case: one 50 MB line made every start take a minute."""
    good = good_lines()
    jpath.parent.mkdir(parents=True)
    with open(jpath, "wb") as fh:
        fh.write(b"".join(good[:2]))
        fh.write(b'{"AddFact":{"node":1,"fact_id":90,"key":"blob","value":"')
        block = b"lorem ipsum dolor sit amet " * 40000
        for _ in range(50):
            fh.write(block[: 1 << 20])
        fh.write(b'","at":1700000000030}}\n')
        fh.write(b"".join(good[2:]))
    t = time.perf_counter()
    s = Store.open(jpath)
    s.search("deploy port")
    took = time.perf_counter() - t
    assert s.report.quarantined == 1 and 2 in s.graph.nodes
    assert took < 5, took  # a minute before; about 0.1 s here


def test_corrupt_records_a_bad_line_once(jpath):
    good = good_lines()
    write(jpath, good[:2] + [b"not json\n"] + good[2:] + [BAD[0]])
    for _ in range(3):
        s = Store.open(jpath)
        assert s.quarantined_total() == 2  # still skipped and counted on every open
        s.close()
    assert len(corrupt(jpath)) == 2
    # a new bad line (another offset) is recorded; the old ones are not repeated
    with open(jpath, "ab") as fh:
        fh.write(b"more garbage\n")
    s = Store.open(jpath)
    assert s.quarantined_total() == 3
    recs = corrupt(jpath)
    assert len(recs) == 3 and recs[-1]["raw"] == "more garbage"
    # the same text at an offset never recorded (a rewritten journal) is recorded
    write(jpath, [b"not json\n"] + good)
    Store.open(jpath)
    assert len(corrupt(jpath)) == 4


# --- item 12: the cache proves the whole prefix ----------------------------------------

