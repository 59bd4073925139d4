"""``mino memory check --repair``: the journal written again without its quarantined
lines, every operation kept, the old journal beside it (0600), the index rebuilt, and a
process holding the old journal writing to the new one."""
import json
import os
import stat

from mino_memory_graph.store import Store

from graphtest import graph_of, journal, mino


def make_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    return home, home / "graph" / "journal.jsonl"


BAD = [b"not json at all\n", b'{"CreateNode":{"id":1}}\n', b"\xff\xfe not utf-8\n",
       b'{"AddFact":{"node":1,"fact_id":9,"key":"k","key":"twice","value":"v","at":1}}\n']


def test_repair_drops_exactly_the_quarantined_lines_and_keeps_the_old_journal(tmp_path):
    home, jpath = make_home(tmp_path)
    s = Store.open(jpath)
    with s.write() as r:
        a = r.create_node("Aspect", "deploy port")
        r.fact(a, "port", "8081")
    s.close()
    with open(jpath, "ab") as fh:
        fh.write(BAD[0] + BAD[1])
    s = Store.open(jpath)
    with s.write() as r:  # good lines after the bad ones
        r.fact(a, "port", "9090")
        b = r.create_node("Entity", "project git:example")
        r.link(a, b, "PartOf")
    s.close()
    with open(jpath, "ab") as fh:
        fh.write(BAD[2] + BAD[3] + b'{"CommitLog":{"node":1,"kind":"x","det')  # torn tail
    original = jpath.read_bytes()
    before = graph_of(home)
    want = {id: before.state_of(id) for id in before.nodes}
    counters = (before.next_node, before.next_edge, before.next_fact, before.clock)
    check = mino(home, "memory", "check")
    assert check.returncode == 1 and "5 line(s) quarantined" in check.stdout
    assert "check --repair" in check.stdout
    rep = mino(home, "memory", "check", "--repair")
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert "5 bad line(s) removed" in rep.stdout and "\nok" in rep.stdout
    assert "Traceback" not in rep.stderr
    kept = sorted(jpath.parent.glob("journal.before-repair-*.jsonl"))
    assert len(kept) == 1 and kept[0].read_bytes() == original
    assert stat.S_IMODE(os.stat(kept[0]).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(jpath).st_mode) == 0o600
    new = jpath.read_bytes()
    assert all(b.rstrip(b"\n") not in new for b in BAD) and b'"det' not in new
    assert new == b"".join(line for line in original.splitlines(keepends=True)
                           if line not in BAD and not line.startswith(b'{"CommitLog":{"node":1,"kind":"x"'))
    after = graph_of(home)
    assert {id: after.state_of(id) for id in after.nodes} == want
    assert (after.next_node, after.next_edge, after.next_fact, after.clock) == counters
    data = json.loads(mino(home, "memory", "check", "--json").stdout)
    assert data["ok"] and data["index"]["matches_replay"]
    assert "bad journal line" not in mino(home, "memory", "list").stderr


def test_repair_of_a_clean_journal_changes_nothing(tmp_path):
    home, jpath = make_home(tmp_path)
    s = Store.open(jpath)
    with s.write() as r:
        r.create_node("Aspect", "deploy port")
    s.close()
    data = jpath.read_bytes()
    ino = os.stat(jpath).st_ino
    rep = mino(home, "memory", "check", "--repair")
    assert rep.returncode == 0 and "nothing to remove" in rep.stdout
    assert jpath.read_bytes() == data and os.stat(jpath).st_ino == ino
    assert not list(jpath.parent.glob("journal.before-repair-*"))


def test_a_store_open_across_a_repair_writes_to_the_new_journal(tmp_path):
    home, jpath = make_home(tmp_path)
    s = Store.open(jpath)
    with s.write() as r:
        a = r.create_node("Aspect", "deploy port")
    with open(jpath, "ab") as fh:
        fh.write(BAD[0])
    s.refresh()
    assert mino(home, "memory", "check", "--repair").returncode == 0
    with s.write() as r:  # this store still held the old file open
        r.fact(a, "port", "8081")
    s.close()
    text = jpath.read_text()
    assert '"value":"8081"' in text and "not json at all" not in text
    assert graph_of(home).nodes[a].fact("port").value == "8081"
    assert "\nok" in mino(home, "memory", "check").stdout
