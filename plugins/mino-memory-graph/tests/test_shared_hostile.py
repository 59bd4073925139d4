"""A teammate playing foul: plain SQL as the role mino uses (SELECT, INSERT and the
sequence's USAGE, nothing else) against the throwaway cluster, and what every other
machine sees. One test per way of breaking, stalling or impersonating the others."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mino_memory_graph.store import Store

from graphtest import mino
from test_shared_journal import cfg, server_lines

FORGED = 2**63 - 1


def sql(url, *statements):
    import psycopg

    out = None
    with psycopg.connect(url, autocommit=True) as c:
        for s in statements:
            cur = c.execute(s)
            out = cur.fetchall() if cur.description else None
    return out


def insert(url, line, **cols):
    import psycopg

    names = ["line", *cols]
    with psycopg.connect(url, autocommit=True) as c:
        c.execute(f"INSERT INTO mino_journal ({', '.join(names)}) VALUES "
                  f"({', '.join(['%s'] * len(names))})", [line, *cols.values()])


def op(name, **body):
    return json.dumps({name: body}, separators=(",", ":"))


def env_for(url):
    return {"MINO_GRAPH_URL": url}


# --- 1. one forged row breaks nobody ------------------------------------------------

def test_a_forged_node_id_is_refused_on_every_machine_and_the_owner_removes_it(pg, tmp_path):
    db = pg.new_database()
    a, b = tmp_path / "a", tmp_path / "b"
    for h in (a, b):
        h.mkdir()
    s = Store.open(home=a, config=cfg(db["mino_url"]))
    with s.write() as r:
        n = r.create_node("Aspect", "deploy port")
        r.fact(n, "port", "8081")
    s.close()
    at = 1_700_000_000_100
    hostile = [op("CreateNode", id=FORGED, kind="Aspect", label="forged", at=at),
               op("AddFact", node=FORGED, fact_id=FORGED, key="k", value="v", at=at),
               op("AddFact", node=n, fact_id=1, key="port", value="reused id", at=at),
               op("CreateNode", id=2, kind="Aspect", label="x" * 300_000, at=at),
               op("Link", id=1, src=n, dst=99, kind="PartOf", at=at)]
    for line in hostile:
        try:
            insert(db["mino_url"], line)
        except Exception as e:  # noqa: BLE001 - the table's CHECK refuses the big one
            assert "mino_journal_line_size" in str(e)
    assert len(server_lines(pg, db)) == 2 + 4  # the 300 kB row never got in
    env = env_for(db["mino_url"])
    for home in (a, b):  # both machines: nothing breaks, the same rows are left out
        for args in (("search", "deploy"), ("check",), ("list",)):
            out = mino(home, "memory", *args, env=env)
            assert "OverflowError" not in out.stderr and "Traceback" not in out.stderr
            assert "unexpected" not in out.stderr, out.stderr
        found = mino(home, "memory", "search", "deploy port", "--json", env=env)
        assert json.loads(found.stdout)["results"][0]["node"] == n
        check = mino(home, "memory", "check", env=env)
        assert check.returncode == 1 and "4 row(s) of the shared table are refused" in check.stdout
        refused = [json.loads(x) for x in
                   (next((home / "graph" / "shared").glob("*/journal.refused"))).read_text()
                   .splitlines()]
        with pg.admin(db["db"]) as c:
            seqs = [r[0] for r in c.execute("SELECT seq FROM mino_journal ORDER BY seq")]
        assert [r["seq"] for r in refused] == seqs[2:]
        assert {r["by"] for r in refused} == {db["mino"]}
    # a save still works, with the next id (not 2^63)
    s = Store.open(home=b, config=cfg(db["mino_url"]))
    with s.write() as r:
        assert r.create_node("Aspect", "after the forgery") == n + 1
    s.close()
    # the mino role cannot repair the table; the owner can, with one command
    out = mino(a, "memory", "check", "--repair", env=env)
    assert out.returncode == 1 and "needs the table's owner" in out.stderr
    (tmp_path / "o").mkdir()
    out = mino(tmp_path / "o", "memory", "check", "--repair", env=env_for(db["owner_url"]))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "without 4 refused row(s)" in out.stdout and "Traceback" not in out.stderr
    lines = server_lines(pg, db)
    assert len(lines) == 3 and not any("forged" in ln or "reused" in ln for ln in lines)
    with pg.admin(db["db"]) as c:  # who wrote the rows kept: still the mino role
        assert {r[0] for r in c.execute("SELECT written_by_user FROM mino_journal")} == \
            {db["mino"]}
    for home in (a, b):
        assert mino(home, "memory", "check", env=env).returncode == 0


def teammate(pg, db, name):
    """Another person's role (SELECT, INSERT, the sequence): a URL for it."""
    role = f"{db['db']}_{name}"
    with pg.admin(db["db"]) as c:
        c.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{name}'")
        c.execute(f"GRANT SELECT, INSERT ON mino_journal TO {role}")
        c.execute(f"GRANT USAGE ON SEQUENCE mino_journal_seq_seq TO {role}")
    return pg.url(role, f"pw-{name}", db["db"]), role


# --- 2. who wrote a row: the database says -------------------------------------------

def test_authorship_is_set_by_the_database_and_shown(pg, tmp_path):
    import psycopg

    db = pg.new_database()
    ann_url, ann = teammate(pg, db, "ann")
    at = 1_700_000_000_001
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="set by the database"):
        insert(db["mino_url"], op("CreateNode", id=1, kind="Aspect", label="x", at=at),
               written_by_user=ann)  # impersonating ann
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        insert(db["mino_url"], op("CreateNode", id=1, kind="Aspect", label="x", at=at),
               written_by_host="10.9.9.9")
    # a forged seq (past every copy's last) is replaced by the next one under the lock
    insert(ann_url, op("CreateNode", id=1, kind="Aspect", label="deploy notes by ann", at=at),
           seq=FORGED, written_at="1999-01-01")
    with pg.admin(db["db"]) as c:
        seq, user, host, when = c.execute("SELECT seq, written_by_user, written_by_host, "
                                          "extract(year FROM written_at) FROM mino_journal").fetchone()
    assert seq < 100 and user == ann and host == "127.0.0.1" and when > 2000
    home = tmp_path / "h"
    home.mkdir()
    s = Store.open(home=home, config=cfg(db["mino_url"]))
    with s.write() as r:
        mine = r.create_node("Aspect", "deploy notes of mine")
    from mino_memory_graph.journal.shared_check import written_by

    with s._locked(False):
        assert written_by(s, 1) == {"role": ann, "host": "127.0.0.1", "mine": False,
                                    "here": False}
        assert written_by(s, mine) == {"role": db["mino"], "host": "127.0.0.1", "mine": True,
                                       "here": True}
    s.close()
    env = env_for(db["mino_url"])
    shown = mino(home, "memory", "show", "1", env=env)
    assert f"written by {ann} (127.0.0.1), a teammate" in shown.stdout, shown.stdout
    assert mino(home, "memory", "show", str(mine), env=env).stdout.splitlines()[-1] == \
        f"written by {db['mino']} (127.0.0.1), you, on this machine"
    found = json.loads(mino(home, "memory", "search", "deploy notes", "--json",
                            env=env).stdout)["results"]
    assert {r["node"]: r["written_by"]["role"] for r in found} == {1: ann, mine: db["mino"]}
    text = mino(home, "memory", "search", "deploy notes", env=env).stdout
    assert f"written by {ann} (127.0.0.1), a teammate" in text


# --- 3. the write lock: held only in a short transaction; a wait ends in one line -----

def test_a_teammate_holding_the_write_lock_stalls_a_save_for_lock_wait_only(
        pg, tmp_path, monkeypatch):
    import psycopg

    from mino_memory_graph.journal import journal_pg

    monkeypatch.setattr(journal_pg, "LOCK_WAIT", 1)
    db = pg.new_database()
    ann_url, ann = teammate(pg, db, "ann")
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with psycopg.connect(ann_url, autocommit=True) as hostile:  # held outside any transaction
        hostile.execute("SELECT pg_advisory_lock(%s)", (journal_pg.LOCK_KEY,))
        t = time.monotonic()
        with pytest.raises(OSError) as err:
            with s.write() as r:
                r.create_node("Aspect", "waits")
        assert time.monotonic() - t < 10  # LOCK_WAIT is 1 s
        msg = str(err.value)
        assert f"held its write lock for 1 s: held by role {ann}" in msg, msg
        assert "nothing was saved" in msg and "\n" not in msg
        # a hand-written INSERT waits for the lock too (the trigger takes it), so rows
        # always land in seq order behind every committed one
        with psycopg.connect(db["mino_url"], autocommit=True) as other:
            other.execute("SET lock_timeout = '200ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute("INSERT INTO mino_journal (line) VALUES ('x')")
    with s.write() as r:  # let go: writes go on, and our own lock went with the transaction
        r.create_node("Aspect", "written")
    with pg.admin(db["db"]) as c:
        held = c.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").fetchone()
    assert held[0] == 0 and len(server_lines(pg, db)) == 1
    s.close()


# --- 4. a paused server: every wait bounded, the copy read ----------------------------

def _server_pids(pg):
    top = int((pg.base / "data" / "postmaster.pid").read_text().split()[0])
    pids = [top]
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if int((p / "stat").read_text().rsplit(")", 1)[1].split()[1]) == top:
                    pids.append(int(p.name))
            except (OSError, IndexError, ValueError):
                pass
    return pids


def signal_all(pids, sig):
    """``sig`` to each server process still there (a backend may exit meanwhile)."""
    for p in pids:
        try:
            os.kill(p, sig)
        except ProcessLookupError:
            pass


def test_a_paused_server_bounds_reads_and_writes_and_recall_goes_on(pg, tmp_path, monkeypatch):
    from mino_memory_graph.journal import journal_pg

    monkeypatch.setattr(journal_pg, "QUERY_WAIT", 1)
    db = pg.new_database()
    s = Store.open(home=tmp_path / "h", config=cfg(db["mino_url"]))
    with s.write() as r:
        n = r.create_node("Aspect", "deploy port")
        r.fact(n, "port", "8081")
    pids = _server_pids(pg)
    signal_all(pids, signal.SIGSTOP)
    try:
        s.journal.stale = True  # as after a NOTIFY: the next read asks the server
        t = time.monotonic()
        assert any("8081" in r["state"] for r in s.search_json("deploy port")["results"])  # from this machine's copy
        assert time.monotonic() - t < 15 and "no answer within 1 s" in s.journal.offline
        t = time.monotonic()
        with pytest.raises(OSError, match="no answer within 1 s|unreachable"):
            with s.write() as r:
                r.fact(n, "port", "9999")
        assert time.monotonic() - t < 30  # the connect_timeout (5 s) then gives up
    finally:
        signal_all(pids, signal.SIGCONT)
    assert "9999" not in s.state(n)
    time.sleep(0.1)
    with s.write() as r:  # the server answers again: the same store writes
        r.fact(n, "port", "9090")
    assert "9090" in s.state(n)
    s.close()


# --- 5. a TRUNCATE by the owner: the old copy kept, one command restores it -----------

def test_a_truncate_keeps_the_old_copy_and_the_owner_restores_it(pg, tmp_path):
    db = pg.new_database()
    a = Store.open(home=tmp_path / "a", config=cfg(db["mino_url"]))
    with a.write() as r:
        old = r.create_node("Aspect", "before the truncate")
        r.fact(old, "port", "8081")
    a.close()
    sql(db["owner_url"], "TRUNCATE mino_journal")
    b = Store.open(home=tmp_path / "b", config=cfg(db["mino_url"]))
    with b.write() as r:  # acknowledged after the truncate: must survive the restore
        new = r.create_node("Aspect", "after the truncate")
        r.fact(new, "port", "9090")
    b.close()
    a = Store.open(home=tmp_path / "a", config=cfg(db["mino_url"]))
    a.refresh()
    kept = list(a.journal.path.parent.glob("journal.before-reset-*.jsonl"))
    assert len(kept) == 1 and (kept[0].stat().st_mode & 0o777) == 0o600
    assert "before the truncate" in kept[0].read_text()
    assert "before the truncate" not in a.journal.path.read_text()
    a.close()
    env = env_for(db["mino_url"])
    out = mino(tmp_path / "a", "memory", "restore", str(kept[0]), "--yes", env=env)
    assert out.returncode == 1 and "needs the table's owner" in out.stderr
    (tmp_path / "o").mkdir()
    out = mino(tmp_path / "o", "memory", "restore", str(kept[0]), "--yes",
               env=env_for(db["owner_url"]))
    assert out.returncode == 0, out.stderr
    assert "Restored 2 operation(s)" in out.stdout and "2 written since" in out.stdout
    lines = server_lines(pg, db)
    assert len(lines) == 4 and "before the truncate" in lines[0] and "after" in lines[2]
    for home in ("a", "b"):
        found = mino(tmp_path / home, "memory", "search", "truncate", "--json", env=env)
        labels = {h["label"] for h in json.loads(found.stdout)["results"]}
        assert labels == {"before the truncate", "after the truncate"}
        assert mino(tmp_path / home, "memory", "check", env=env).returncode == 0
    again = mino(tmp_path / "o", "memory", "restore", str(kept[0]), "--yes",
                 env=env_for(db["owner_url"]))
    assert "Nothing to restore" in again.stdout


# --- 6. a full disk under this machine's copy -----------------------------------------

FULL_DISK = r"""
import resource, signal, sys
from mino_memory_graph.store import Store
url, home = sys.argv[1], sys.argv[2]
s = Store.open(home=home, config={"memory": {"graph": {"journal": url}}})
with s.write() as r:
    n = r.create_node("Aspect", "deploy port")
size = s.journal.path.stat().st_size
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 10, resource.RLIM_INFINITY))
try:
    with s.write() as r:
        r.fact(n, "fix", "a value longer than ten bytes, so the copy cannot take it")
    print("no error")
except OSError as e:
    print("ERROR", type(e).__name__, e)
s.journal.stale = True  # a read still under the limit: the copy cannot take the row
print("READ", "longer than ten" in s.state(n))
resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
print("SIZE", s.journal.path.stat().st_size == size)
s.journal.stale = True
print("STATE", "longer than ten" in s.state(n))
from mino_core.notices import drain  # what a front end shows the person, once
for line in drain():
    print("NOTICE", line)
"""


def test_a_full_disk_under_the_copy_is_one_line_and_loses_nothing(pg, tmp_path):
    """RLIMIT_FSIZE stands for the full disk: it works unprivileged and as root (a tmpfs or
    loop mount needs root, and CI's root may not mount); the write fails with EFBIG where a
    full disk says ENOSPC, on the same path."""
    db = pg.new_database()
    out = subprocess.run([sys.executable, "-c", FULL_DISK, db["mino_url"], str(tmp_path / "h")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    err = [ln for ln in out.stdout.splitlines() if ln.startswith("ERROR")]
    assert len(err) == 1 and "SharedJournalError" in err[0], out.stdout + out.stderr
    assert "saved in the shared memory journal, but this machine's copy could not be " \
           "written (File too large" in err[0] and "nothing is lost" in err[0]
    assert "READ False" in out.stdout  # read from what the copy holds...
    grow = [ln for ln in out.stdout.splitlines() if ln.startswith("NOTICE") and "cannot grow" in ln]
    assert len(grow) == 1 and "recall uses this machine's copy" in grow[0]  # ...said once
    assert "SIZE True" in out.stdout  # the copy holds no torn line
    assert "STATE True" in out.stdout  # the next read caught up from the table
    assert "Traceback" not in out.stderr and "AttributeError" not in out.stdout + out.stderr
    assert any("longer than ten" in ln for ln in server_lines(pg, db))


# --- 7. an edit of the copy is found; the row size is bounded by the table -----------

def test_a_same_length_edit_of_the_copy_is_found_and_fetched_again(pg, tmp_path):
    db = pg.new_database()
    home = tmp_path / "h"
    home.mkdir()
    s = Store.open(home=home, config=cfg(db["mino_url"]))
    with s.write() as r:
        n = r.create_node("Aspect", "deploy port")
        r.fact(n, "port", "8081")
    path = s.journal.path
    s.close()
    path.write_bytes(path.read_bytes().replace(b"8081", b"6666"))  # same length
    env = env_for(db["mino_url"])
    out = mino(home, "memory", "check", env=env)
    assert out.returncode == 1 and "differs from the rows it was given" in out.stdout
    fixed = mino(home, "memory", "check", "--repair", env=env)  # the mino role may do this
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "fetched again" in fixed.stdout and b"8081" in path.read_bytes()
    assert "8081" in mino(home, "memory", "show", str(n), env=env).stdout


# --- 8. each person their own profile; project knowledge shared ----------------------

def test_each_person_has_their_own_profile_and_nobody_writes_anothers(pg, tmp_path):
    from mino_memory_graph.loop.memories import Memory

    db = pg.new_database()
    ann_url, ann = teammate(pg, db, "ann")
    mems = {}
    for who, url in (("mino", db["mino_url"]), ("ann", ann_url)):
        mem = Memory(Store.open(home=tmp_path / who, config=cfg(url)))
        with mem.store.write() as r:
            user, project = mem.standing.ensure(r, "git:example.com/team/app", tmp_path)
            r.fact(user, "editor", f"{who}'s editor")
        mems[who] = (mem, user, project)
    (m1, u1, p1), (m2, u2, p2) = mems["mino"], mems["ann"]
    assert u1 != u2 and p1 == p2  # a profile each; the project is one node for the team
    m1.store.journal.stale = True  # as the NOTIFY will (it may come a moment after the commit)
    m1.store.refresh()
    assert m1.standing.user_id(m1.store.graph) == u1
    assert "ann's editor" in m1.store.state(u2) and "mino's editor" not in m1.store.state(u2)
    # ann, by hand, writes into the other's profile: refused on every machine
    facts = m2.store.graph.next_fact
    at = m2.store.graph.clock + 1
    insert(ann_url, op("AddFact", node=u1, fact_id=facts, key="editor",
                       value="planted by ann", at=at))
    for mem, _, _ in mems.values():
        mem.store.journal.stale = True
        assert "planted by ann" not in mem.store.state(u1)
        assert "planted by ann" in mem.store.journal.refused_path.read_text()
    for mem, _, _ in mems.values():
        mem.store.close()


# --- an older mino's table: it keeps working; the owner's command upgrades it ---------

def test_an_older_table_keeps_working_and_the_owners_repair_upgrades_it(pg, tmp_path):
    db = pg.new_database(make_table="legacy")
    home = tmp_path / "h"
    home.mkdir()
    s = Store.open(home=home, config=cfg(db["mino_url"]))
    with s.write() as r:
        n = r.create_node("Aspect", "written to the old table")
    assert s.journal.version == 1
    s.close()
    env = env_for(db["mino_url"])
    out = mino(home, "memory", "check", env=env)
    assert out.returncode == 1 and "made by an older mino" in out.stdout
    (tmp_path / "o").mkdir()
    out = mino(tmp_path / "o", "memory", "check", "--repair", env=env_for(db["owner_url"]))
    assert out.returncode == 0 and "in this mino's form" in out.stdout, out.stdout + out.stderr
    with pg.admin(db["db"]) as c:
        assert c.execute("SELECT count(*) FROM pg_trigger WHERE tgname = 'mino_journal_row'"
                         ).fetchone()[0] == 1
        assert c.execute("SELECT written_by_user FROM mino_journal").fetchall() == \
            [(db["mino"],)]
    out = mino(home, "memory", "check", env=env)
    assert out.returncode == 0, out.stdout
    s = Store.open(home=home, config=cfg(db["mino_url"]))
    with s.write() as r:
        r.fact(n, "still", "writes")
    assert s.journal.version == 2 and len(server_lines(pg, db)) == 2
    s.close()


# --- 4 (again). a paused server in a running session: the turn recalls, read-only ------

def test_a_turn_with_the_server_paused_recalls_and_says_memory_is_read_only(
        pg, graph_only, make_harness, scripted_server, mino_home, monkeypatch):
    from mino_memory_graph.journal import journal_pg
    from mino_memory_graph.loop.shared_offline import NOTE

    monkeypatch.setattr(journal_pg, "QUERY_WAIT", 1)
    monkeypatch.setattr(journal_pg, "CONNECT_TIMEOUT", 1)
    db = pg.new_database()
    config = {"memory": {"backend": "graph", "graph": {"journal": db["mino_url"]}}}
    h = make_harness(config=config, approve="all")
    scripted_server.add({"calls": [{"name": "memory_save", "arguments": {
        "where": "user", "key": "package manager", "value": "pnpm, never npm"}}]},
        {"text": "Saved."})
    h.turn("Please remember this preference for later.")
    assert any("pnpm, never npm" in ln for ln in server_lines(pg, db))
    pids = _server_pids(pg)
    signal_all(pids, signal.SIGSTOP)
    try:
        scripted_server.add({"text": "Use pnpm."})
        t = time.monotonic()
        h.turn("Which package manager should I use to install dependencies?")
        assert time.monotonic() - t < 30  # bounded (1 s deadlines), not the whole pause
        lead = scripted_server.requests[-1]["input"][0]["content"]
        assert "- package manager: pnpm, never npm" in lead and NOTE in lead
        assert "Traceback" not in h.transcript + h.notices
    finally:
        signal_all(pids, signal.SIGCONT)
