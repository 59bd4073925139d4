"""``mino memory purge``: the text is gone from every file under the graph folder (journal,
index, quarantine records, a journal kept by a repair), ids and every other memory stay,
and a process that held the old journal open sees the purge and keeps writing safely."""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mino_core.testing.harness import isolated_env
from mino_memory_graph.cli.purge import TOMBSTONE
from mino_memory_graph.store import Store

from graphtest import graph_of, journal, mino, ok
from oracle import replay

SECRET = "purple marzipan gondola"
CONFIG = {"memory": {"backend": "graph", "graph": {"reflect": "off"}}}
SRC = str(Path(__file__).resolve().parents[1] / "src")


def files_holding(folder: Path, text: str) -> list[str]:
    """Every file under ``folder`` whose bytes hold ``text`` (as written or JSON-escaped)."""
    forms = {text.encode(), json.dumps(text)[1:-1].encode()}
    out = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            if any(f in data for f in forms):
                out.append(p.name)
    return out


def nodes_holding(home, text: str) -> list[int]:
    data = json.loads(ok(home, "memory", "list", "--episodes", "--all", "--limit", "0",
                         "--json").stdout)
    return [n["node"] for n in data["nodes"]
            if text in n["label"] or any(text in f["value"] for f in n["facts"])]


def test_purge_removes_the_text_from_every_file_under_the_graph_folder(
        make_harness, scripted_server, mino_home, graph_only):
    h = make_harness(config=CONFIG, approve="all")
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "project", "key": "vault phrase", "value": f"the phrase is {SECRET}"}}]},
        {"text": "Saved."})
    h.turn(f"The storage vault phrase is {SECRET}; remember it for this project.")
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "user", "key": "caution", "value": f"never paste 'the phrase is {SECRET}' "
                                                    "into chat"}}]},
        {"text": "Saved."})
    h.turn("Also remember a caution about where that phrase may go.")
    graph = mino_home / "graph"
    jpath = graph / "journal.jsonl"
    # a bad line quoting it, quarantined (.corrupt); then a repair keeps the old journal
    with open(jpath, "ab") as fh:
        fh.write(f'{{"CreateNode": "torn {SECRET}\n'.encode())
    ok(mino_home, "memory", "list")
    rep = ok(mino_home, "memory", "check", "--repair")
    assert "1 bad line(s) removed" in rep.stdout
    with open(jpath, "ab") as fh:  # and one bad line still in the journal at purge time
        fh.write(f"garbage quoting the phrase is {SECRET}\n".encode())
    ok(mino_home, "memory", "list")
    before = files_holding(graph, SECRET)
    assert {"journal.jsonl", "journal.index", "journal.corrupt"} <= set(before)
    assert any(".before-repair-" in name for name in before)
    g = graph_of(mino_home)
    counters = (g.next_node, g.next_edge, g.next_fact)
    unrelated = {id: g.state_of(id) for id, n in replay(g).nodes.items()
                 if SECRET not in g.state_of(id) and not n.deleted}
    g = None
    targets = nodes_holding(mino_home, SECRET)
    # the turn's episode (its label and message), the project's saved fact... but not the
    # user's caution node, which quotes it: that one is only scrubbed
    assert len(targets) >= 2
    user_node = [n for n in targets if "caution" in json.dumps(
        json.loads(ok(mino_home, "memory", "history", str(n), "--json").stdout))]
    for n in targets:
        if n in user_node:
            continue
        out = ok(mino_home, "memory", "purge", str(n), "--yes").stdout
        assert f"purged #{n}" in out and "rebuilt" in out
    assert files_holding(graph, SECRET) == []
    assert "the phrase is" not in "".join(
        x for x in jpath.read_text().splitlines() if '"vault phrase"' in x)
    check = mino(mino_home, "memory", "check")  # the one bad line is still there
    assert "matches replay" in check.stdout and "1 line(s) quarantined" in check.stdout
    assert "bad journal line" not in check.stderr  # already reported before the purge
    g = graph_of(mino_home)
    assert (g.next_node, g.next_edge, g.next_fact)[0] == counters[0]  # ids kept
    for n in targets:
        if n not in user_node:
            assert g.nodes[n].label == TOMBSTONE and g.nodes[n].deleted
            assert all(f.value == TOMBSTONE for f in g.nodes[n].facts)
            assert all(d == TOMBSTONE for _, k, d in g.nodes[n].log
                       if k not in ("created", "fact_added", "fact_superseded", "deleted",
                                    "provenance"))
    for id, state in unrelated.items():  # every other memory replays as before
        if id in g.nodes and id not in targets:
            assert g.state_of(id) == state
    # the quoting node stays, with the quote replaced
    for n in user_node:
        assert f"never paste '{TOMBSTONE}' into chat" in g.state_of(n)


def test_purge_of_an_unknown_or_hard_forgotten_memory(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    s = Store.open(home / "graph" / "journal.jsonl")
    with s.write() as r:
        a = r.create_node("Aspect", f"a label with {SECRET}")
        r.fact(a, "k", "value with the secret words in it")
    s.close()
    bad = mino(home, "memory", "purge", "42", "--yes")
    assert bad.returncode == 1 and "memory 42 does not exist" in bad.stderr
    assert "Traceback" not in bad.stderr
    hard = ok(home, "memory", "forget", str(a), "--hard").stdout
    assert "stays in the journal until" in hard
    assert files_holding(home / "graph", SECRET) == ["journal.jsonl"]
    ok(home, "memory", "purge", str(a), "--yes")
    assert files_holding(home / "graph", SECRET) == []
    assert files_holding(home / "graph", "secret words") == []


def test_purge_of_a_journal_reached_through_a_symlink_purges_the_real_file(tmp_path):
    home = tmp_path / "home"
    (home / "graph").mkdir(parents=True)
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    real = tmp_path / "synced" / "journal.jsonl"
    real.parent.mkdir()
    real.touch()
    link = home / "graph" / "journal.jsonl"
    link.symlink_to(real)
    s = Store.open(link)
    with s.write() as r:
        a = r.create_node("Aspect", f"a label with {SECRET}")
        b = r.create_node("Aspect", "another memory")
    s.close()
    ok(home, "memory", "purge", str(a), "--yes")
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert SECRET not in real.read_text() and "another memory" in real.read_text()
    assert files_holding(home / "graph", SECRET) == []
    assert [p.name for p in real.parent.iterdir()] == ["journal.jsonl"]  # no tmp left
    assert "another memory" in ok(home, "memory", "show", str(b)).stdout


def test_purge_finds_the_node_in_lines_with_any_json_spacing(tmp_path):
    # replay reads a line with spaces (a journal another writer made): so does purge
    home = tmp_path / "home"
    (home / "graph").mkdir(parents=True)
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    ops = [{"CreateNode": {"id": 1, "kind": "Aspect", "label": f"a label with {SECRET}",
                           "at": 1}},
           {"CreateNode": {"id": 2, "kind": "Aspect", "label": "another memory", "at": 2}},
           {"AddFact": {"node": 1, "fact_id": 1, "key": "k",
                        "value": "value with its own words", "at": 3}}]
    jpath = home / "graph" / "journal.jsonl"
    jpath.write_text("".join(json.dumps(op) + "\n" for op in ops))  # ", " and ": "
    shown = ok(home, "memory", "show", "1")
    assert SECRET in shown.stdout and "its own words" in shown.stdout
    assert "bad journal line" not in shown.stderr  # every line is an operation
    ok(home, "memory", "purge", "1", "--yes")
    assert files_holding(home / "graph", SECRET) == []
    assert files_holding(home / "graph", "its own words") == []
    assert "another memory" in ok(home, "memory", "show", "2").stdout


CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from mino_memory_graph.store import Store
mode, path, target, other = sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
s = Store.open(path, fsync=False)
if mode != "lazy":
    s.graph
def view():
    return {"state": s.state(target), "other": s.state(other),
            "hits": [r["label"] for r in s.search_json("purple marzipan gondola", 5)["results"]]}
print(json.dumps(view()), flush=True)
sys.stdin.readline()
s.refresh()
seen = view()
with s.write() as r:
    r.fact(other, "after", "written after the purge")
print(json.dumps(seen), flush=True)
s.close()
"""


@pytest.mark.parametrize("mode", ["lazy", "partial"])
def test_a_process_holding_the_old_journal_sees_the_purge(tmp_path, mode):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    jpath = home / "graph" / "journal.jsonl"
    s = Store.open(jpath)
    with s.write() as r:
        target = r.create_node("Aspect", f"vault phrase {SECRET}")
        r.fact(target, "phrase", f"it is {SECRET}")
        other = r.create_node("Aspect", "deploy port")
        r.fact(other, "port", "8081")
    s.close()
    child = subprocess.Popen([sys.executable, "-c", CHILD, SRC, mode, str(jpath), str(target),
                              str(other)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=isolated_env(home))
    try:
        first = json.loads(child.stdout.readline())
        assert SECRET in first["state"] and first["hits"]
        ok(home, "memory", "purge", str(target), "--yes")
        child.stdin.write("go\n")
        child.stdin.flush()
        seen = json.loads(child.stdout.readline())
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, child.stderr.read()
    assert SECRET not in json.dumps(seen)
    assert TOMBSTONE in seen["state"] and "- port: 8081" in seen["other"]
    assert all(SECRET not in h for h in seen["hits"])
    # its write after the purge went to the new journal, not the replaced file
    text = jpath.read_text()
    assert "written after the purge" in text and SECRET not in text
    assert "- after: written after the purge" in ok(home, "memory", "show", str(other)).stdout
    assert "\nok" in ok(home, "memory", "check").stdout


def test_purges_while_other_processes_write_lose_no_write(tmp_path):
    """Two writers append while purges rewrite
    the journal: every acknowledged request is in the final journal, once."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    jpath = home / "graph" / "journal.jsonl"
    s = Store.open(jpath)
    targets = []
    with s.write() as r:
        for i in range(3):
            t = r.create_node("Aspect", f"vault phrase {i} {SECRET}")
            r.fact(t, "phrase", f"phrase {i} is {SECRET}")
            targets.append(t)
    s.close()
    writer = str(Path(__file__).with_name("writer_proc.py"))
    count = 1500
    acks = [tmp_path / "alpha.ack", tmp_path / "beta.ack"]
    procs = [subprocess.Popen([sys.executable, writer, str(jpath), tag, str(count),
                               str(tmp_path / f"{tag}.ack")])
             for tag in ("alpha", "beta")]

    def acked():
        return [a.stat().st_size if a.exists() else 0 for a in acks]
    try:
        while min(acked()) == 0:  # both writing
            time.sleep(0.01)
        during = []
        for t in targets:
            ok(home, "memory", "purge", str(t), "--yes")
            during.append(acked())
        # the purges ran while both were still writing
        assert any(0 < n < count for n in during[0]), during
        for p in procs:
            assert p.wait(timeout=300) == 0
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    text = jpath.read_text()
    assert SECRET not in text
    g = graph_of(home)
    for tag in ("alpha", "beta"):
        assert (tmp_path / f"{tag}.ack").read_bytes() == b"1" * count
        labels = [n.label for n in replay(g).nodes.values() if n.label.startswith(f"{tag} node")]
        assert len(labels) == len(set(labels)) == count // 5
        values = [f.value for n in replay(g).nodes.values() for f in n.facts
                  if f.value.startswith(f"{tag} value")]
        assert len(values) == len(set(values)) == count - count // 5
    for t in targets:
        assert g.nodes[t].label == TOMBSTONE and g.nodes[t].deleted
    assert "\nok" in ok(home, "memory", "check").stdout
