"""The shared journal in a real PostgreSQL (a throwaway cluster, ``pg_server.py``):
several machines and processes, a server restart mid-writes, the append-only role,
an unreachable server, push and export, no password printed."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mino_core.testing.harness import isolated_env
from oracle import same_graph
from mino_memory_graph.journal.journal import Report, fold_range, parse_one
from mino_memory_graph.core.model import Graph
from mino_memory_graph.store import Store

from graphtest import mino

WRITER = str(Path(__file__).with_name("shared_writer_proc.py"))


def cfg(url):
    return {"memory": {"graph": {"journal": url}}}


def server_lines(pg, db):
    with pg.admin(db["db"]) as c:
        return [r[0] for r in c.execute("SELECT line FROM mino_journal ORDER BY seq")]


def replay(path: Path) -> Graph:
    g = Graph()
    data = path.read_bytes()
    fold_range(lambda a, b: data[a:b], 0, len(data), g, Report(), [])
    return g


def spawn(url, home, tag, count, ack, pause=0.0):
    return subprocess.Popen([sys.executable, WRITER, url, str(home), tag, str(count),
                             str(ack), str(pause)], stdout=subprocess.PIPE, text=True)


# --- two machines, four processes each ----------------------------------------------

def test_two_homes_four_processes_each_share_one_journal(pg, tmp_path):
    db = pg.new_database()
    homes = [tmp_path / "laptop", tmp_path / "devbox"]
    procs = [spawn(db["mino_url"], homes[m], f"m{m}p{p}", 250, tmp_path / f"ack{m}{p}")
             for m in range(2) for p in range(4)]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0 and "failed 0" in out
    lines = server_lines(pg, db)
    assert len(lines) == 2000 and len(set(lines)) == 2000  # every operation once
    nodes, facts = [], []
    for line in lines:
        name, body = parse_one(line)
        if name == "CreateNode":
            nodes.append(body["id"])
        elif name == "AddFact":
            facts.append(body["fact_id"])
        elif name == "SupersedeFact":
            facts.append(body["new_fact_id"])
    assert len(nodes) == len(set(nodes)) == 8 * 50  # no id shared
    assert len(facts) == len(set(facts)) == 2000 - 400
    for p in range(8):  # each process's operations, all there, in its own order
        tag = f"m{p // 4}p{p % 4}"
        mine = [int(m.group(1)) for ln in lines
                for m in [re.search(f'"{tag} (?:node|value) (\\d+)"', ln)] if m]
        assert mine == list(range(250))
    # each machine catches up, and both replays equal the table's, op for op
    expected = ("\n".join(lines) + "\n").encode()
    graphs = []
    for home in homes:
        s = Store.open(home=home, config=cfg(db["mino_url"]))
        s.refresh()
        assert s.journal.path.read_bytes() == expected
        graphs.append(replay(s.journal.path))
        assert s.stats()["nodes"] == 400
        s.close()
    assert same_graph(graphs[0], graphs[1])


# --- the server restarted in the middle of writes ------------------------------------

def test_server_restart_mid_writes_loses_nothing_acknowledged(pg, tmp_path):
    db = pg.new_database()
    home = tmp_path / "home"
    acks = [tmp_path / f"ack{i}" for i in range(2)]
    procs = [spawn(db["mino_url"], home, f"w{i}", 150, acks[i], pause=0.01) for i in range(2)]
    while sum(a.exists() and len(a.read_text().splitlines()) for a in acks) < 40:
        time.sleep(0.05)
    pg.stop("immediate")
    try:
        # a write during the outage fails cleanly; nothing else changes, recall goes on
        s = Store.open(home=home, config=cfg(db["mino_url"]))
        before = s.journal.path.read_bytes()
        with pytest.raises(OSError) as err:
            with s.write() as r:
                r.create_node("Aspect", "written while the server is down")
        assert "unreachable" in str(err.value) and db["mino_password"] not in str(err.value)
        assert s.journal.path.read_bytes() == before
        assert s.search_json("w0 node")["results"]
        time.sleep(0.5)
    finally:
        pg.serve()
    refused = 0
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        refused += int(out.split()[-1])
    assert refused > 0  # the writers did write into the outage
    lines = server_lines(pg, db)
    assert len(lines) == len(set(lines))  # nothing twice
    acked = [ln.split() for a in acks for ln in a.read_text().splitlines()]
    for tag, i in acked:  # everything acknowledged is there
        i = int(i)
        # a node, or a fact (after a refused write the next request makes a node)
        want = (f'"label":"{tag} node {i}"', f'value":"{tag} value {i}"')
        assert sum(w in ln for ln in lines for w in want) == 1, (tag, i)
    assert "written while the server is down" not in "".join(lines)
    s.refresh()
    assert s.journal.path.read_bytes() == ("\n".join(lines) + "\n").encode()
    s.close()


# --- append-only by the database ----------------------------------------------------

def test_the_mino_role_cannot_update_delete_or_truncate(pg, tmp_path):
    import psycopg

    db = pg.new_database()
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with s.write() as r:
        r.create_node("Aspect", "deploy port")
    s.close()
    with psycopg.connect(db["mino_url"], autocommit=True) as c:
        for sql in ("UPDATE mino_journal SET line = 'x'", "DELETE FROM mino_journal",
                    "TRUNCATE mino_journal", "DROP TABLE mino_journal"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute(sql)
    assert len(server_lines(pg, db)) == 1


def test_a_rewrite_of_the_shared_journal_says_an_owner_is_needed(pg, tmp_path):
    db = pg.new_database()
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with s.write() as r:
        r.create_node("Aspect", "deploy port")
    with s._locked(True):
        with pytest.raises(OSError, match="needs the table's owner"):
            s.journal.rewrite([b""])
    s.close()
    home = tmp_path / "h"
    out = mino(home, "memory", "purge", "1", "--yes", env={"MINO_GRAPH_URL": db["mino_url"]})
    assert out.returncode == 1 and "needs the table's owner" in out.stderr
    assert "Traceback" not in out.stderr and db["mino_password"] not in out.stderr
    assert len(server_lines(pg, db)) == 1 and "deploy port" in server_lines(pg, db)[0]


def test_missing_table_and_no_right_to_make_it_says_what_the_owner_runs(pg, tmp_path):
    db = pg.new_database(make_table=False)
    with pytest.raises(OSError) as err:
        Store.open(home=tmp_path / "h", config=cfg(db["mino_url"])).write().__enter__()
    msg = str(err.value)
    assert "CREATE TABLE" in msg and "GRANT SELECT, INSERT" in msg
    assert db["mino_password"] not in msg and "***" in msg
    # the owner's role makes it on first use
    s = Store.open(home=tmp_path / "o", config=cfg(db["owner_url"]))
    with s.write() as r:
        r.create_node("Aspect", "made by the owner")
    s.close()
    assert len(server_lines(pg, db)) == 1


# --- reads: one query when others wrote, none otherwise -------------------------------

def test_two_machines_making_the_table_at_once_both_go_on(pg, tmp_path):
    """The first use on two machines at the same moment: one makes the table, the other's
    CREATE TABLE IF NOT EXISTS waits for that transaction and then finds the table made:
    it goes on with it, no error (PostgreSQL 15 here)."""
    import threading

    import psycopg

    from mino_memory_graph.journal.journal_pg import DDL

    db = pg.new_database(make_table=False)
    other = psycopg.connect(db["owner_url"])  # the first machine, mid-way through its make
    other.execute(DDL)
    done = threading.Timer(1.0, other.commit)
    done.start()
    try:
        s = Store.open(home=tmp_path / "h", config=cfg(db["owner_url"]))
        with s.write() as r:
            r.create_node("Aspect", "made at the same moment")
        s.close()
    finally:
        done.join()
        other.close()
    assert len(server_lines(pg, db)) == 1


def test_reads_query_only_after_a_notify_and_see_the_other_machine(pg, tmp_path):
    db = pg.new_database()
    a = Store.open(home=tmp_path / "a", config=cfg(db["mino_url"]))
    b = Store.open(home=tmp_path / "b", config=cfg(db["mino_url"]))
    with a.write() as r:
        n = r.create_node("Aspect", "deploy port")
        r.fact(n, "port", "8081")
    while b.journal.last_seq() < 2:  # the NOTIFY may come a moment after the commit
        b.refresh()
    time.sleep(0.3)
    b.refresh()
    q = b.journal.queries
    for _ in range(5):
        b.search_json("deploy port")
    assert b.journal.queries == q  # nothing new, nothing asked
    with a.write() as r:
        r.fact(n, "port", "9090")
    deadline = time.time() + 5
    while "9090" not in b.state(n) and time.time() < deadline:
        time.sleep(0.05)
    assert "9090" in b.state(n) and b.journal.queries == q + 1
    st = b.stats()  # where the journal is: the database, never its password; and the copy
    assert st["journal"].endswith(f"@127.0.0.1:{pg.port}/{db['db']}") and "***" in st["journal"]
    assert st["copy"] == str(b.journal.path) and st["nodes"] == 1
    a.close()
    b.close()


def test_mirror_tail_left_by_a_crash_is_kept_or_cut(pg, tmp_path, monkeypatch):
    from mino_memory_graph.journal import journal_pg

    monkeypatch.setattr(journal_pg, "BATCH", 1)  # a query per row: the paging is used
    db = pg.new_database()
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with s.write() as r:
        r.create_node("Aspect", "one")
    with s.write() as r:
        r.create_node("Aspect", "two")
    path, seq = s.journal.path, s.journal.state_path
    s.close()
    lines = server_lines(pg, db)
    # a crash after the mirror's append, before its record: the record says one line
    # (the hash chain and the authors file's size as they were after it)
    st = json.loads(seq.read_text())
    rows = s.journal.rows_path.read_bytes()
    st.update(chain=journal_pg._chain_of((lines[0] + "\n").encode()),
              rbytes=rows.index(b"\n") + 1)
    seq.write_text(json.dumps(dict(st, seq=1, bytes=len(lines[0]) + 1)))
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    assert path.read_bytes() == ("\n".join(lines) + "\n").encode()
    s.close()
    # a torn tail that is no row: cut, then the rows follow
    seq.write_text(json.dumps(dict(st, seq=1, bytes=len(lines[0]) + 1)))
    with open(path, "r+b") as f:
        f.truncate(len(lines[0]) + 1)
        f.seek(0, 2)
        f.write(b'{"CreateNode":{"id":2,"ki')
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    assert path.read_bytes() == ("\n".join(lines) + "\n").encode()
    assert s.check()["ok"]
    s.close()


def test_a_table_made_again_starts_the_mirror_over(pg, tmp_path):
    import psycopg

    db = pg.new_database()
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with s.write() as r:
        r.create_node("Aspect", "old journal")
    s.close()
    from mino_memory_graph.journal.shared_schema import make

    with psycopg.connect(db["owner_url"], autocommit=True) as c:
        c.execute("DROP TABLE mino_journal")
        make(c)
        c.execute(f"GRANT SELECT, INSERT ON mino_journal TO {db['mino']}")
        c.execute(f"GRANT USAGE ON SEQUENCE mino_journal_seq_seq TO {db['mino']}")
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with s.write() as r:
        r.create_node("Aspect", "new journal")
    assert s.journal.path.read_bytes() == ("\n".join(server_lines(pg, db)) + "\n").encode()
    assert [h["label"] for h in s.search_json("journal")["results"]] == ["new journal"]
    s.close()


def test_a_truncated_table_starts_the_mirror_over(pg, tmp_path):
    """An owner's hand-run TRUNCATE keeps the table's oid: the copies still notice (the
    table's file changed) instead of keeping what it removed, with or without its
    sequence restarted."""
    import psycopg

    for restart in ("", " RESTART IDENTITY"):
        db = pg.new_database()
        home = tmp_path / ("h" + restart.strip().replace(" ", "-"))
        s = Store.open(home=home, config=cfg(db["mino_url"]))
        with s.write() as r:
            for i in range(3):
                r.create_node("Aspect", f"before the truncate {i}")
        s.close()
        with psycopg.connect(db["owner_url"], autocommit=True) as c:
            c.execute(f"TRUNCATE mino_journal{restart}")
        other = Store.open(home=tmp_path / f"other{len(restart)}", config=cfg(db["mino_url"]))
        with other.write() as r:
            r.create_node("Aspect", "after the truncate")
        other.close()
        s = Store.open(home=home, config=cfg(db["mino_url"]))
        assert s.journal.path.read_bytes() == ("\n".join(server_lines(pg, db)) + "\n").encode()
        assert [h["label"] for h in s.search_json("truncate")["results"]] == ["after the truncate"]
        s.close()


# --- the server unreachable ---------------------------------------------------------

def test_unreachable_server_recall_goes_on_writes_fail_cleanly(pg, tmp_path):
    db = pg.new_database()
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(
        f"memory:\n  backend: graph\n  graph:\n    journal: {db['mino_url']}\n")
    os.chmod(home / "config.yaml", 0o600)
    s = Store.open(home=home, config=cfg(db["mino_url"]))
    with s.write() as r:
        n = r.create_node("Aspect", "deploy port")
        r.fact(n, "port", "8081")
    s.close()
    pg.stop("immediate")
    try:
        found = mino(home, "memory", "search", "deploy port", "--json")
        assert found.returncode == 0, found.stderr
        assert [h["node"] for h in json.loads(found.stdout)["results"]] == [n]
        notice = [ln for ln in found.stderr.splitlines() if "unreachable" in ln]
        assert len(notice) == 1 and "this machine's copy" in notice[0]
        forget = mino(home, "memory", "forget", str(n))
        assert forget.returncode == 1
        assert "unreachable" in forget.stderr and "Traceback" not in forget.stderr
        assert "unexpected" not in forget.stderr
        for out in (found, forget):
            assert db["mino_password"] not in out.stdout + out.stderr
        # the loop's own reads: a store opened offline recalls; a write raises OSError
        s = Store.open(home=home, config=cfg(db["mino_url"]))
        assert any("8081" in r["state"] for r in s.search_json("deploy port")["results"])
        mirror = s.journal.path.read_bytes()
        with pytest.raises(OSError):
            with s.write() as r:
                r.fact(n, "port", "9999")
        assert s.journal.path.read_bytes() == mirror and "9999" not in s.state(n)
    finally:
        pg.serve()
    with s.write() as r:  # back: the same store writes again
        r.fact(n, "port", "9090")
    assert "9090" in s.state(n)
    s.close()
    assert mino(home, "memory", "show", str(n)).stdout.count("9090") == 1


def test_a_wrong_password_is_one_line_and_never_printed(pg, tmp_path):
    db = pg.new_database()
    home = tmp_path / "home"
    home.mkdir()
    bad = db["mino_url"].replace(db["mino_password"], "Wr0ng-Secret-pw")
    out = mino(home, "memory", "export", str(tmp_path / "x.jsonl"), env={"MINO_GRAPH_URL": bad})
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert "password authentication failed" in out.stderr and "***" in out.stderr
    search = mino(home, "memory", "search", "deploy", env={"MINO_GRAPH_URL": bad})
    assert search.returncode == 0 and "password authentication failed" in search.stderr
    for o in (out, search):
        assert "Wr0ng-Secret-pw" not in o.stdout + o.stderr


# --- push and export ----------------------------------------------------------------

def test_push_a_file_journal_then_export_it_byte_for_byte(pg, tmp_path):
    db = pg.new_database()
    home = tmp_path / "home"
    f = Store.open(home=home)  # this home's file journal
    with f.write() as r:
        n = r.create_node("Aspect", "deploy 404")
        r.fact(n, "fix", "the base path lost its trailing slash")
        m = r.create_node("Aspect", "tests run with pnpm")
        r.link(m, n, "SuppliesContext")
    f.close()
    source = home / "graph" / "journal.jsonl"
    with open(source, "ab") as fh:
        fh.write(b"not an operation\n\n")
    env = {"MINO_GRAPH_URL": db["mino_url"]}
    asked = mino(home, "memory", "push", env=env)  # nobody to answer: nothing copied
    assert asked.returncode == 1 and "add --yes" in asked.stderr
    assert server_lines(pg, db) == []
    pushed = mino(home, "memory", "push", "--yes", env=env)
    assert pushed.returncode == 0, pushed.stderr
    assert "Copied 4 operation(s)" in pushed.stdout and "left out byte" in pushed.stderr
    assert db["mino_password"] not in pushed.stdout + pushed.stderr
    again = mino(home, "memory", "push", "--yes", env=env)
    assert again.returncode == 1 and "empty one only" in again.stderr
    good = [ln for ln in source.read_bytes().splitlines(keepends=True)
            if ln.startswith(b"{")]
    assert [ln.encode() + b"\n" for ln in server_lines(pg, db)] == good  # ids kept
    out = tmp_path / "exported.jsonl"
    exported = mino(home, "memory", "export", str(out), env=env)
    assert exported.returncode == 0, exported.stderr
    assert out.read_bytes() == b"".join(good) and (out.stat().st_mode & 0o777) == 0o600
    for line in out.read_text().splitlines():  # Mnemo's format, line for line
        parse_one(line)
    assert same_graph(replay(out), replay(source))
    assert mino(home, "memory", "export", str(out), env=env).returncode == 1  # no overwrite
    # another machine reads the pushed memory
    other = tmp_path / "other"
    other.mkdir()
    found = mino(other, "memory", "search", "deploy 404", "--json", env=env)
    assert json.loads(found.stdout)["results"][0]["label"] == "deploy 404"


def test_push_copies_the_file_journal_config_names(tmp_path):
    # with the shared journal from MINO_GRAPH_URL, config's file journal is the one pushed
    pytest.importorskip("psycopg")
    home = tmp_path / "home"
    home.mkdir()
    mine = tmp_path / "work" / "mine.jsonl"
    (home / "config.yaml").write_text(
        f"memory:\n  backend: graph\n  graph:\n    journal: {mine}\n")
    out = mino(home, "memory", "push", "--yes",
               env={"MINO_GRAPH_URL": "postgresql://mino@127.0.0.1:1/team"})
    assert out.returncode == 1 and f"cannot read {mine}" in out.stderr, out.stderr


def test_a_file_journal_never_imports_psycopg(tmp_path):
    code = ("import sys; from mino_memory_graph.store import Store; "
            f"s = Store.open(home={str(tmp_path)!r}); "
            "w = s.write().__enter__(); w.create_node('Aspect', 'x'); "
            "print('psycopg' in sys.modules)")
    env = dict(os.environ)
    env.pop("MINO_GRAPH_URL", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_a_shared_url_without_psycopg_says_how_to_install_it(tmp_path):
    # a Python where psycopg cannot be imported (None in sys.modules: import fails)
    code = ("import sys; sys.modules['psycopg'] = None\n"
            "from mino_core.cli import main\n"
            "sys.argv = ['mino', 'memory', *{!r}]\n"
            "main()")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    env = isolated_env(home)
    env["MINO_GRAPH_URL"] = "postgresql://mino@127.0.0.1:1/team"
    for cmd in (["list"], ["export", "copy.jsonl"]):
        out = subprocess.run([sys.executable, "-c", code.format(cmd)], capture_output=True,
                             text=True, env=env, cwd=home, timeout=60)
        assert out.returncode == 1, out.stderr
        assert "pip install 'mino-memory-graph[postgres]'" in out.stderr, out.stderr
        assert "unexpected error" not in out.stderr and "Traceback" not in out.stderr


def test_shared_url_masking_and_choice(monkeypatch):
    from mino_memory_graph.journal import shared_url as u

    url = "postgresql://mino:s3cr%40t@db.example:5433/team?sslmode=require"
    assert u.masked(url) == "postgresql://mino:***@db.example:5433/team?sslmode=require"
    assert "s3cr" not in u.scrub(f"failed for {url} with s3cr@t", url)
    assert u.masked("postgresql:///team?password=abc&sslmode=verify-full") == \
        "postgresql:///team?password=***&sslmode=verify-full"
    monkeypatch.delenv("MINO_GRAPH_URL", raising=False)
    monkeypatch.delenv("MNEMO_MEMORY_JOURNAL", raising=False)
    assert u.shared_url(cfg(url)) == url
    assert u.shared_url(cfg("/tmp/j.jsonl")) is None
    monkeypatch.setenv("MNEMO_MEMORY_JOURNAL", "/tmp/j.jsonl")  # a file wins over config...
    assert u.shared_url(cfg(url)) is None
    assert u.shared_url(cfg(url), mnemo_wins=False) == url  # ...but not for push/export
    monkeypatch.setenv("MINO_GRAPH_URL", "postgres://x@h/db")
    assert u.shared_url(cfg("/tmp/j.jsonl")) == "postgres://x@h/db"
    # the mirror's folder names the database, never the user or password
    assert u.identity(url) == u.identity(url.replace("mino:s3cr%40t", "ann"))
    assert u.identity(url) != u.identity(url.replace("team", "other"))
    assert u.identity(url).startswith("team-")


def test_a_malformed_shared_url_is_a_line_not_a_traceback(tmp_path):
    from mino_memory_graph.journal import shared_url as u

    # the mirror's folder is named from what the URL names; connecting says what is wrong
    assert u.identity("postgresql://h:abc/team").startswith("team-")
    pytest.importorskip("psycopg")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory:\n  backend: graph\n")
    out = mino(home, "memory", "list", env={"MINO_GRAPH_URL": "postgresql://[abc/team"})
    assert out.returncode == 0 and "unexpected error" not in out.stderr, out.stderr
    assert "shared memory journal is unreachable" in out.stderr
    assert "no memories yet" in out.stdout


# --- the loop through the real agent, server away -----------------------------------

def _lead(body):
    items = body.get("input") or []
    return items[0]["content"] if items and items[0].get("role") == "assistant" else ""


def test_a_turn_with_the_server_away_recalls_and_a_save_fails_cleanly(
        pg, graph_only, make_harness, scripted_server, mino_home):
    from mino_memory_graph.loop.shared_offline import NOTE

    db = pg.new_database()
    config = {"memory": {"backend": "graph", "graph": {"journal": db["mino_url"]}}}
    h = make_harness(config=config, approve="all")
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "user", "key": "package manager", "value": "pnpm, never npm"}}]},
        {"text": "Saved."})
    h.turn("Please remember this preference for later.")
    assert any("pnpm, never npm" in ln for ln in server_lines(pg, db))
    with pg.admin(db["db"]) as c:  # who wrote it: columns beside the line
        who = set(c.execute("SELECT written_by_user, written_by_host, session "
                            "FROM mino_journal").fetchall())
    assert len(who) == 1 and list(who)[0][2] == str(h.session.id)
    # the first-use notice names where messages go: the shared journal, no password
    assert "recorded as an episode in the shared journal postgresql://" in h.notices
    assert db["mino_password"] not in h.notices
    pg.stop("immediate")
    try:
        h.new_session()
        scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
            "where": "user", "key": "editor", "value": "helix"}}]}, {"text": "Use pnpm."})
        h.turn("Which package manager should I use to install dependencies?")
        first, second = scripted_server.requests[-2:]
        assert "- package manager: pnpm, never npm" in _lead(first) and NOTE in _lead(first)
        outputs = [i.get("output", "") for i in second["input"]
                   if i.get("type") == "function_call_output"]
        assert any("Could not write the memory journal" in o and "unreachable" in o
                   and db["mino_password"] not in o for o in outputs)
        assert "Traceback" not in h.transcript + h.notices
    finally:
        pg.serve()
    assert not any("helix" in ln for ln in server_lines(pg, db))
    # what sits beside the journal (the first-use marker) sits beside this machine's
    # copy, never in a folder named after the URL (with its password) where mino ran
    copy = mino_home / "graph" / "shared"
    assert list(copy.glob("*/journal.noticed")) and not Path("postgresql:").exists()


def test_a_password_in_a_config_others_may_read_is_pointed_out(pg, tmp_path):
    db = pg.new_database()
    home = tmp_path / "home"
    home.mkdir()
    conf = home / "config.yaml"
    conf.write_text(f"memory:\n  backend: graph\n  graph:\n    journal: {db['mino_url']}\n")
    os.chmod(conf, 0o644)
    out = mino(home, "memory", "stats")
    assert out.returncode == 0, out.stderr
    assert "others may read it: chmod 600" in out.stderr
    assert db["mino_password"] not in out.stdout + out.stderr and "***" in out.stdout
    os.chmod(conf, 0o600)
    assert "chmod 600" not in mino(home, "memory", "stats").stderr


def test_a_connection_lost_while_idle_is_replaced_without_a_failure(pg, tmp_path):
    db = pg.new_database()
    a = Store.open(home=tmp_path / "a", config=cfg(db["mino_url"]))
    b = Store.open(home=tmp_path / "b", config=cfg(db["mino_url"]))
    with a.write() as r:
        n = r.create_node("Aspect", "deploy port")
    b.refresh()
    pg.restart(mode="fast")  # both stores' connections are dead now, neither knows yet
    with a.write() as r:  # the write reconnects once: no failure
        r.fact(n, "port", "8081")
    assert "8081" in b.state(n)  # and so does the read: it sees the other's write
    assert not b.journal.offline and len(server_lines(pg, db)) == 2
    a.close()
    b.close()


def test_passwords_from_pgpass_or_pgpassword_and_sslmode_pass_through(pg, tmp_path):
    db = pg.new_database()
    home = tmp_path / "home"
    home.mkdir()
    bare = db["mino_url"].replace(":" + db["mino_password"] + "@", "@")  # no password
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"127.0.0.1:{pg.port}:{db['db']}:{db['mino']}:{db['mino_password']}\n")
    os.chmod(passfile, 0o600)
    for env in ({"PGPASSFILE": str(passfile)}, {"PGPASSWORD": db["mino_password"]}):
        out = mino(home, "memory", "stats", env={"MINO_GRAPH_URL": bare, **env})
        assert out.returncode == 0 and "unreachable" not in out.stderr, out.stderr
        assert db["mino_password"] not in out.stdout + out.stderr
    # sslmode reaches libpq: this cluster has no TLS, so require refuses, plainly
    out = mino(home, "memory", "export", str(tmp_path / "x.jsonl"),
               env={"MINO_GRAPH_URL": db["mino_url"] + "?sslmode=require"})
    assert out.returncode == 1 and "SSL" in out.stderr and "Traceback" not in out.stderr
    assert db["mino_password"] not in out.stderr


def test_the_owner_purges_every_machine_forgets_and_the_grants_stay(pg, tmp_path):
    db = pg.new_database()
    a = Store.open(home=tmp_path / "a", config=cfg(db["mino_url"]))
    with a.write() as r:
        n = r.create_node("Aspect", "deploy token")
        r.fact(n, "token", "hunter2-secret-value")
        keep = r.create_node("Aspect", "tests run with pnpm")
    b = Store.open(home=tmp_path / "b", config=cfg(db["mino_url"]))
    assert "hunter2-secret-value" in b.journal.path.read_text()
    with pg.admin(db["db"]) as c:
        before = c.execute("SELECT written_by_user, written_by_host, session, written_at "
                           "FROM mino_journal ORDER BY seq").fetchall()
    (tmp_path / "o").mkdir()
    out = mino(tmp_path / "o", "memory", "purge", str(n), "--yes",
               env={"MINO_GRAPH_URL": db["owner_url"]})
    assert out.returncode == 0, out.stderr
    lines = server_lines(pg, db)
    assert not any("hunter2" in ln or "deploy token" in ln for ln in lines)
    assert any("tests run with pnpm" in ln for ln in lines)
    with pg.admin(db["db"]) as c:  # who wrote each row and when, kept line for line
        after = c.execute("SELECT written_by_user, written_by_host, session, written_at "
                          "FROM mino_journal ORDER BY seq").fetchall()
    assert after[:len(before)] == before and len(after) > len(before)  # + the provenance
    # the other machines' copies start over on their next read, and they still write
    time.sleep(0.3)
    b.refresh()
    assert b.journal.path.read_bytes() == ("\n".join(lines) + "\n").encode()
    assert "hunter2" not in b.state(n) and "pnpm" in b.state(keep)
    with a.write() as r:
        r.fact(keep, "runner", "pnpm test")
    assert "hunter2" not in a.journal.path.read_text() and a.check()["ok"]
    a.close()
    b.close()
    assert len(server_lines(pg, db)) == len(lines) + 1


def test_an_insert_refused_leaves_memory_as_the_journal_is(pg, tmp_path):
    import psycopg

    db = pg.new_database()
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with s.write() as r:
        n = r.create_node("Aspect", "deploy port")
    s.graph  # the graph is built: the refused request's ops are applied to it first
    with psycopg.connect(db["owner_url"], autocommit=True) as c:
        c.execute(f"REVOKE INSERT ON mino_journal FROM {db['mino']}")
    with pytest.raises(OSError, match="nothing was saved"):
        with s.write() as r:
            r.fact(n, "port", "8081")
            m = r.create_node("Aspect", "never saved")
    assert "8081" not in s.state(n) and m not in s.graph.nodes  # read again from the journal
    with psycopg.connect(db["owner_url"], autocommit=True) as c:
        c.execute(f"GRANT INSERT ON mino_journal TO {db['mino']}")
    with s.write() as r:
        assert r.create_node("Aspect", "saved") == m  # the refused id was never given out
    assert s.check()["ok"] and len(server_lines(pg, db)) == 2
    s.close()


def test_a_write_waits_for_another_at_most_lock_wait(pg, tmp_path, monkeypatch):
    import psycopg

    from mino_memory_graph.journal import journal_pg

    monkeypatch.setattr(journal_pg, "LOCK_WAIT", 1)
    db = pg.new_database()
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with psycopg.connect(db["mino_url"]) as other:  # another machine, stuck mid-write
        other.execute("SELECT pg_advisory_xact_lock(%s)", (journal_pg.LOCK_KEY,))
        t = time.monotonic()
        with pytest.raises(OSError, match="cannot write the shared memory journal"):
            with s.write() as r:
                r.create_node("Aspect", "waits")
        assert time.monotonic() - t < 10
    with s.write() as r:  # the other let go: writes go on
        r.create_node("Aspect", "written")
    assert len(server_lines(pg, db)) == 1
    s.close()
