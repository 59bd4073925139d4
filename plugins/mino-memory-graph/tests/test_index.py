"""journal.index: the derived graph in SQLite agrees with a replay, keeps up, rebuilds."""
import os
import random
import signal
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mino_memory_graph.state.index import Index, compare
from mino_memory_graph.journal.journal import Journal
from mino_memory_graph.core.model import Graph
from mino_memory_graph.journal.journal import Report, fold_range
from mino_memory_graph.store import Store
from mino_memory_graph.text.words import tokenize
from oracle import replay

HERE = Path(__file__).resolve().parent


def replayed(path: Path) -> Graph:
    j = Journal(path)
    g = Graph()
    fold_range(j.read, 0, j.size(), g, Report(), [])
    j.close()
    return g


def busy_store(path: Path, seed: int = 1, requests: int = 60, **kw) -> Store:
    """A store after every kind of operation, the awkward cases included."""
    s = Store.open(path, fsync=False, **kw)
    rnd = random.Random(seed)
    with s.write() as r:
        proj = r.create_node("Entity", "project dir:/p")
        user = r.create_node("Entity", "user preferences", area="Semantic")
    nodes, edges = [proj, user], []
    for i in range(requests):
        with s.write() as r:
            n = r.create_node(rnd.choice(["Aspect", "TaskEpisode", "Harness"]),
                              f"helm rollback {i} café")
            nodes.append(n)
            r.fact(n, "summary", f"value {i} pnpm deploy")
            r.fact(n, "summary", f"value {i} superseded")      # SupersedeFact
            r.fact(n, "tag", "a", append=True)
            r.fact(n, "tag", "b", append=True)                  # two live 'tag'
            if i % 4 == 0:
                r.fact(n, "tag", "c")                           # retires both
            e = r.link(n, proj, "PartOf")
            edges.append(e)
            f = r.link(rnd.choice(nodes), n, "SuppliesContext")
            r.record_outcome(f, i % 3 != 0)
            r.reweight(e, -0.2)
            r.commit_log(n, "tool_call", f"Bash(ls {i}): ok")
            r.mark_useful(n, i % 2 == 0)
            if i % 7 == 3:
                r.set_area(n, "Salience")
            if i % 9 == 5:
                r.unlink(rnd.choice(edges))
            if i % 11 == 6:
                r.push_context(n, proj, "a note", dim=2, vec=[0.5, 0.25])
            if i % 13 == 7:
                r.delete(rnd.choice(nodes[2:]), hard=False)
            if i % 17 == 9:
                victim = rnd.choice(nodes[2:])
                r.delete(victim, hard=True)
                nodes.remove(victim)
    return s


def test_index_agrees_with_replay_after_every_kind_of_operation(tmp_path):
    path = tmp_path / "journal.jsonl"
    s = busy_store(path)
    assert s.index is not None and s.index.offset == path.stat().st_size
    assert compare(s.index, replayed(path)) is None
    # node by node, what the model reads is the same text
    for id in list(replay(s).nodes)[:40]:
        assert s.index.state_of(id) == s.graph.state_of(id)
        assert s.index.node_text(id) == s.graph.node_text(id)
        assert s.index.history(id) == s.graph.history(id)
    rep = s.check()
    assert rep["ok"] and rep["index"]["matches_replay"], rep["index"]
    s.close()
    # a rebuild from the journal gives the same index
    j = Journal(path)
    ix = Index.open(j, rebuild=True)
    assert ix.rebuilt and compare(ix, replayed(path)) is None
    assert stat.S_IMODE(os.stat(ix.path).st_mode) == 0o600
    ix.close()
    j.close()


def _tables(ix: Index) -> dict:
    """Everything an index holds, table by table (FTS5 through its vocabularies and
    BM25 ranks), for comparing two indexes of one journal."""
    db = ix.db
    out = {t: db.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall()
           for t in ("nodes", "clusters", "log", "edges", "meta", "blocks", "terms",
                     "cterms")}
    for fts in ("text", "ctext"):
        out[fts] = [db.execute(f"SELECT rowid, round(bm25({fts}), 9) FROM {fts} WHERE "
                               f"{fts} MATCH ? ORDER BY rowid", (f'"{t}"',)).fetchall()
                    for (t,) in db.execute(f"SELECT term FROM {fts[:-4]}terms")]
    out["indexes"] = db.execute("SELECT name, sql FROM sqlite_master WHERE type='index' "
                                "AND sql IS NOT NULL ORDER BY name").fetchall()
    return out


def test_a_rebuild_holds_what_the_appends_left(tmp_path):
    """A rebuild (a fresh file, parents, clusters, lexical tables and indexes made at the
    end) gives the same tables as the index kept in step append by append, clusters
    whose parent is deleted, unlinked or re-linked included."""
    path = tmp_path / "journal.jsonl"
    s = busy_store(path, requests=30)
    rnd = random.Random(5)
    with s.write() as r:
        heads = [r.create_node("TaskEpisode", f"task: deploy helm {i}") for i in range(6)]
    links = []
    for i in range(40):
        with s.write() as r:
            n = r.create_node("Aspect", f"turn {i} pnpm rollback {rnd.choice('abc')}")
            r.fact(n, "summary", f"ingress latency {i}")
            links.append(r.link(n, rnd.choice(heads), "PartOf"))
            if i % 6 == 5:
                r.unlink(rnd.choice(links))
            if i % 9 == 8:
                r.reweight(rnd.choice(links), -0.6)
            if i == 20:
                r.delete(heads[0], hard=False)
            if i == 30:
                r.delete(heads.pop(1), hard=True)
    live = _tables(s.index)
    assert live["clusters"] and any(r[15] is not None for r in live["nodes"])
    s.close()
    j = Journal(path)
    ix = Index.open(j, rebuild=True)
    assert ix.rebuilt
    rebuilt = _tables(ix)
    for table in live:
        assert rebuilt[table] == live[table], table
    assert [p.name for p in tmp_path.iterdir() if ".new-" in p.name] == []
    ix.close()
    j.close()


def test_a_rebuild_removes_only_dead_rebuilds_files(tmp_path):
    """A rebuild killed before its rename leaves ``journal.index.new-<pid>``: the next
    rebuild removes it when that process is gone, never a live process's."""
    path = tmp_path / "journal.jsonl"
    busy_store(path, requests=3).close()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    gone = tmp_path / f"journal.index.new-{dead.pid}"
    alive = tmp_path / f"journal.index.new-{os.getppid()}"
    for p in (gone, alive):
        p.write_bytes(b"half a rebuild")
    j = Journal(path)
    ix = Index.open(j, rebuild=True)
    assert not gone.exists() and alive.read_bytes() == b"half a rebuild"
    assert compare(ix, replayed(path)) is None
    ix.close()
    j.close()


def test_a_rebuild_never_leaves_the_old_files_rollback_journal_beside_the_new(tmp_path):
    """A process that died mid-transaction leaves ``journal.index-journal``: a rebuild
    removes it with the old file, so SQLite never rolls it back into the new one."""
    path = tmp_path / "journal.jsonl"
    busy_store(path, requests=5).close()
    hot = tmp_path / "journal.index-journal"
    hot.write_bytes(b"\xd9\xd5\x05\xf9\x20\xa1\x63\xd7" + bytes(4088))
    j = Journal(path)
    ix = Index.open(j, rebuild=True)
    assert not hot.exists()
    assert compare(ix, replayed(path)) is None
    ix.close()
    j.close()


def test_compare_finds_a_difference(tmp_path):
    path = tmp_path / "journal.jsonl"
    s = busy_store(path, requests=5)
    s.index.db.execute("UPDATE nodes SET label='tampered' WHERE id=3")
    assert "node 3" in compare(s.index, replayed(path))
    assert not s.check()["ok"]
    s.close()


def test_bad_lines_and_unappliable_ops_are_the_graphs_decisions(tmp_path):
    path = tmp_path / "journal.jsonl"
    s = busy_store(path, requests=3)
    s.close()
    with open(path, "ab") as fh:
        fh.write(b'garbage\n{"AddFact":{"node":999,"fact_id":5000,"key":"k","value":"v",'
                 b'"at":1}}\n{"CommitLog":{"node":1,"kind":"x","detail":"y","kind":"z",'
                 b'"at":2}}\n')
    j = Journal(path)
    ix = Index.open(j)
    assert ix.report.quarantined == 2 and ix.report.skipped == 1
    assert compare(ix, replayed(path)) is None
    ix.close()
    j.close()


def test_foreign_appends_are_caught_up_from_the_tail(tmp_path):
    path = tmp_path / "journal.jsonl"
    s = busy_store(path, requests=10)
    before = s.index.meta("ops")
    # another program appends without any index (Mnemo itself, or an older mino)
    from mino_memory_graph.core import ops
    from mino_memory_graph.journal.journal import Journal

    n, _, fid, clock = s.index.counters()
    other = Journal(path)
    with other.locked(exclusive=True):
        other.append(ops.encode(*ops.create_node(n, "Aspect", "zanzibar deploy port", clock + 1))
                     + ops.encode(*ops.add_fact(n, fid, "port", "8081", clock + 1)), False)
    other.close()
    s.refresh()
    assert s.index.meta("ops") == before + 2
    assert s.index.lexical(["zanzibar"]) == [n]
    assert compare(s.index, replayed(path)) is None
    s.close()
    # a fresh open finds the index current and reads no journal byte twice
    t = Store.open(path)
    assert t.index.note == "valid" and not t.index.rebuilt and t.index.ops_applied == 0
    t.close()


def test_two_indexes_on_one_file_apply_each_op_once(tmp_path):
    path = tmp_path / "journal.jsonl"
    s = busy_store(path, requests=5)
    j2 = Journal(path)
    ix2 = Index.open(j2)   # the same journal.index, a second connection
    with s.write() as r:
        r.create_node("Aspect", "one more")
    with j2.locked(exclusive=False):
        assert ix2.catch_up() == 0  # the writer's update is already in the file
    assert compare(ix2, replayed(path)) is None
    ix2.close()
    j2.close()
    s.close()


@pytest.mark.parametrize("damage", ["garbage", "truncated", "missing", "schema"])
def test_a_damaged_or_missing_index_is_rebuilt(tmp_path, damage):
    path = tmp_path / "journal.jsonl"
    busy_store(path, requests=8).close()
    ipath = path.with_suffix(".index")
    if damage == "garbage":
        ipath.write_bytes(b"this is not a database" * 100)
    elif damage == "truncated":
        data = ipath.read_bytes()
        ipath.write_bytes(data[: len(data) // 3])
    elif damage == "missing":
        ipath.unlink()
    else:
        db = sqlite3.connect(ipath)
        db.execute("UPDATE meta SET value=99 WHERE key='schema'")
        db.commit()
        db.close()
    s = Store.open(path)
    assert s.index is not None and s.index.rebuilt, s.index_note
    assert s.check()["ok"]
    s.close()


def test_a_same_length_edit_mid_journal_rebuilds_the_index(tmp_path):
    path = tmp_path / "journal.jsonl"
    s = Store.open(path, fsync=False)
    with s.write() as r:
        n = r.create_node("Aspect", "contact")
        r.fact(n, "phone", "555-0100")
    for i in range(3000):  # enough journal for the edit to sit mid-way
        with s.write() as r:
            r.commit_log(n, "tool_call", f"Bash(echo {i} padding padding padding): ok")
    s.close()
    data = path.read_bytes()
    at = data.index(b"555-0100")
    path.write_bytes(data[:at] + b"xxxxxxxx" + data[at + 8:])
    t = Store.open(path)
    assert t.index.rebuilt and "changed" in t.index_note
    assert "555-0100" not in t.index.state_of(n)
    assert t.index.lexical(["555"]) == [] and t.check()["ok"]
    t.close()


def test_a_shorter_journal_rebuilds_the_index(tmp_path):
    path = tmp_path / "journal.jsonl"
    busy_store(path, requests=8).close()
    data = path.read_bytes()
    path.write_bytes(data[: data.rindex(b"\n", 0, len(data) // 2) + 1])
    s = Store.open(path)
    assert s.index.rebuilt and "shorter" in s.index_note
    assert compare(s.index, replayed(path)) is None
    s.close()


def test_lexical_finds_by_rare_word_and_never_a_deleted_node(tmp_path):
    path = tmp_path / "journal.jsonl"
    s = Store.open(path, fsync=False)
    with s.write() as r:
        a = r.create_node("Aspect", "ingress annotation")
        b = r.create_node("Aspect", "ingress controller crash")
        for i in range(20):
            r.create_node("Aspect", f"ingress filler {i}")
    hits = s.index.lexical(tokenize("why does the ingress controller crash"), 5)
    assert hits[0] == b and len(hits) == 5
    assert a not in s.index.lexical(tokenize("controller crash"))
    with s.write() as r:
        r.delete(b)
    assert s.index.lexical(tokenize("controller crash")) == []
    s.close()


def test_rebuild_draws_progress_on_stderr(tmp_path, capsys):
    path = tmp_path / "journal.jsonl"
    busy_store(path, requests=4).close()
    j = Journal(path)
    Index.open(j, rebuild=True, progress=True).close()
    err = capsys.readouterr().err
    assert "indexing memory journal" in err and "100%" in err
    j.close()


def test_sigkill_during_appends_and_index_updates_30_times(tmp_path):
    """A writer killed at a random moment (mid-append, mid-index-transaction, between
    the two): the store always opens, the index agrees with a replay, and every
    request the writer acknowledged is in the journal."""
    path = tmp_path / "journal.jsonl"
    Store.open(path).close()
    rnd = random.Random(11)
    behind = 0  # rounds whose kill left the index behind the journal
    for round_ in range(30):
        ack = tmp_path / f"ack{round_}"
        ack.write_bytes(b"")
        p = subprocess.Popen([sys.executable, str(HERE / "writer_proc.py"), str(path),
                              f"r{round_}", "100000", str(ack)])
        deadline = time.monotonic() + 20
        while ack.stat().st_size < 1 and time.monotonic() < deadline and p.poll() is None:
            time.sleep(0.005)
        time.sleep(rnd.uniform(0.0, 0.05))
        p.send_signal(signal.SIGKILL)
        p.wait()
        acked = ack.stat().st_size
        assert acked >= 1
        db = sqlite3.connect(path.with_suffix(".index"))
        try:
            seen = db.execute("SELECT value FROM meta WHERE key='offset'").fetchone()[0]
        except sqlite3.Error:  # killed while the index was first being made
            seen = -1
        db.close()
        behind += seen < path.stat().st_size
        s = Store.open(path)
        rep = s.check()
        assert rep["index"]["matches_replay"], (round_, rep["index"])
        assert rep["replay"]["skipped"] == 0
        tag = f"r{round_} "
        written = sum(1 for n in replay(s).nodes.values() if n.label.startswith(tag + "node"))
        written += sum(1 for n in replay(s).nodes.values() for f in n.facts
                       if f.value.startswith(tag + "value"))
        assert written >= acked, (round_, written, acked)
        s.close()
    print(f"index behind the journal after {behind} of 30 kills")
    assert behind >= 1  # some kills fell between an append and its index update


def test_four_processes_over_the_index_never_share_an_id(tmp_path):
    """Writers whose graph is read from the index (the default), interleaved: each
    request sees the others' lines (its view reloads), ids stay unique, the index
    agrees with a replay."""
    path = tmp_path / "journal.jsonl"
    Store.open(path).close()
    procs = [subprocess.Popen([sys.executable, str(HERE / "writer_proc.py"), str(path),
                               f"q{i}", "60", "-", "index"]) for i in range(4)]
    for p in procs:
        assert p.wait(timeout=120) == 0
    g = replayed(path)
    created = [n for n in replay(g).nodes.values() if n.label.startswith("q")]
    assert len(created) == 4 * 12
    values = [f.value for n in created for f in n.facts]
    assert len(values) == 4 * 48 and len({f.id for n in created for f in n.facts}) == 4 * 48
    s = Store.open(path)
    rep = s.check()
    assert rep["ok"] and rep["index"]["matches_replay"] and rep["replay"]["skipped"] == 0
    s.close()


@pytest.mark.parametrize("worker_dies", [False, True])
def test_a_rebuild_with_its_text_worker_holds_what_the_appends_left(tmp_path, monkeypatch,
                                                                    worker_dies):
    """A large rebuild derives words and vectors at its end, every other chunk in a
    second process: the tables are the same as the index kept in step, and the same
    again when that process dies mid-way (the rest is derived in-process)."""
    from mino_memory_graph.state import index as index_mod
    from mino_memory_graph.journal import journal as journal_mod
    from mino_memory_graph.text import text_worker

    path = tmp_path / "journal.jsonl"
    s = busy_store(path, requests=80)
    live = _tables(s.index)
    s.close()
    monkeypatch.setattr(text_worker, "WORKER_BYTES", 0)
    monkeypatch.setattr(text_worker, "_cores", lambda: 2)
    monkeypatch.setattr(journal_mod, "WINDOW", 4096)  # many windows, rows carried over
    monkeypatch.setattr(index_mod, "DERIVE_CHUNK", 8)  # many chunks for the worker
    monkeypatch.setattr(index_mod, "KEEP_ROWS", 10)  # rows read back from the file
    monkeypatch.setenv("MINO_GRAPH_REBUILD_WORKER", "1")
    started, submits = [], []
    real_submit = text_worker.Deferred.submit

    def submit(self, ids, texts):
        if self.proc is not None and self.proc not in started:
            started.append(self.proc)
        real_submit(self, ids, texts)
        submits.append(len(texts))
        if worker_dies and len(submits) == 3 and self.proc is not None:
            self.proc.kill()  # its answer to this window never comes
            self.proc.wait()

    monkeypatch.setattr(text_worker.Deferred, "submit", submit)
    j = Journal(path)
    ix = Index.open(j, rebuild=True)
    assert ix.rebuilt and len(started) == 1 and len(submits) >= 3
    assert all(p.poll() is not None for p in started)  # no worker outlives the rebuild
    rebuilt = _tables(ix)
    for table in live:
        assert rebuilt[table] == live[table], table
    ix.close()
    j.close()


def test_a_rebuild_drops_the_log_of_a_hard_deleted_node_whose_id_comes_back(tmp_path,
                                                                            monkeypatch):
    """A rebuild stages log lines as they come and sorts them in at its end: the lines of
    a node deleted for good go, those of a node made again under its id stay, across
    windows and with rows read back from the file, as a replay has them."""
    import json as _json
    from mino_memory_graph.state import index as index_mod
    from mino_memory_graph.journal import journal as journal_mod

    def op(name, **body):
        return _json.dumps({name: body}, separators=(",", ":")) + "\n"

    lines, at = [], 1_700_000_000_001
    for n in range(1, 41):
        lines.append(op("CreateNode", id=n, kind="Aspect", label=f"memory {n}", at=at))
        for k in range(6):
            lines.append(op("CommitLog", node=n, kind="tool_call", detail=f"run {n}.{k}", at=at))
    for n in (5, 17, 33):
        lines.append(op("DeleteNode", node=n, hard=True, at=at))
    lines.append(op("CreateNode", id=17, kind="Aspect", label="memory 17 again", at=at))
    lines.append(op("CommitLog", node=17, kind="tool_call", detail="once more", at=at))
    for n in [*range(1, 41, 3), 17]:  # old nodes again, read back from the file
        if n not in (5, 33):
            lines.append(op("AddFact", node=n, fact_id=100 + n, key="note", value=f"n{n}",
                            at=at))
    path = tmp_path / "journal.jsonl"
    path.write_text("".join(lines))
    monkeypatch.setattr(journal_mod, "WINDOW", 2048)
    monkeypatch.setattr(index_mod, "KEEP_ROWS", 4)
    j = Journal(path)
    ix = Index.open(j, rebuild=True)
    assert compare(ix, replayed(path)) is None
    assert [d for (d,) in ix.db.execute("SELECT detail FROM log WHERE node=17 ORDER BY seq")
            ] == ["node created as memory 17 again", "once more", "note: n17"]
    assert ix.db.execute("SELECT count(*) FROM log WHERE node IN (5, 33)").fetchone() == (0,)
    assert not list(tmp_path.glob("*.new-*"))  # the staged lines' file is gone
    ix.close()
    j.close()


def test_a_node_read_from_the_index_reads_its_log_when_first_used(tmp_path):
    """A partial graph's node comes without its log; the log read later is the one the
    row was read with (and an append first reads it), as a replay has it."""
    from mino_memory_graph.state.partial import IndexNode

    path = tmp_path / "journal.jsonl"
    s = Store.open(path)
    with s.write() as r:
        n = r.create_node("Aspect", "a hot memory")
        for i in range(30):
            r.commit_log(n, "tool_call", f"Bash(step {i}): ok")
    s.close()
    s = Store.open(path)
    node = s.graph.nodes[n]
    assert isinstance(node, IndexNode) and node._ix is not None  # not read yet
    other = Store.open(path)  # another process appends meanwhile
    with other.write() as r:
        r.commit_log(n, "tool_call", "from elsewhere")
    other.close()
    assert [d for _, _, d in node.log][-1] == "Bash(step 29): ok"  # as the row was read
    s.refresh()
    node = s.graph.nodes[n]  # read again: the other process's line is there
    with s.write() as r:
        r.commit_log(n, "tool_call", "here")
    want = replayed(path).nodes[n].log
    assert node.log == want and [d for _, _, d in want][-2:] == ["from elsewhere", "here"]
    s.close()


def test_a_damaged_index_is_made_again_and_one_that_cannot_be_is_one_line(tmp_path):
    """No replay takes over from a failing index: garbage in its file is rebuilt from the
    journal (nothing saved is lost); an index that cannot be made is a one-line error."""
    from graphtest import mino

    home = tmp_path / "home"
    home.mkdir()
    path = home / "graph" / "journal.jsonl"
    s = Store.open(path)
    with s.write() as r:
        n = r.create_node("Aspect", "deploy port")
        r.fact(n, "port", "8081")
    s.close()
    path.with_suffix(".index").write_bytes(b"not a database at all" * 100)
    s = Store.open(path)
    assert "8081" in s.state(n) and s.check()["ok"]
    s.close()
    ix = path.with_suffix(".index")
    ix.unlink()
    ix.mkdir()  # nothing can be made there
    (ix / "keep").write_text("x")
    out = mino(home, "memory", "stats")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "memory index" in out.stderr and len(out.stderr.strip().splitlines()) <= 2
    assert path.read_text().count("8081") == 1  # the journal is untouched
