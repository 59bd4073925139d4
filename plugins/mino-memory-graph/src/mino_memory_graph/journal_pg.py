"""The shared journal: the operations in one PostgreSQL table, mirrored on each machine.

One journal interface, two implementations: ``SharedJournal`` is a ``journal.Journal``
over a local *mirror* (``<home>/graph/shared/<db>/journal.jsonl``, a plain file journal
Mnemo reads) that it keeps equal to the table's lines in ``seq`` order. Everything above
the journal (replay, the index and the derived cache, recall, the loop, the CLI) reads
the mirror exactly as it reads a file journal; only locking and appending differ.

- The table: ``seq bigserial``, ``line`` (the operation's exact JSON line, no newline),
  who wrote it (``written_by_user``, ``written_by_host``, ``session``) and when, as
  columns outside the line.
- A write (``locked(True)`` ... ``append``): the mirror's flock (exclusive), then one
  transaction that takes ``pg_advisory_xact_lock``, catches the mirror up from the last
  ``seq`` it holds (so the store allocates ids from current counters, as under the flock
  of a file journal), INSERTs the request's lines and commits; only then are the lines
  appended to the mirror. Every writer holds the advisory lock until its commit is
  visible, so committed rows always form a prefix in ``seq`` order and a reader that has
  seen ``seq`` S has seen every row below it.
- A read (``locked(False)``): one catch-up query, only when something may have changed:
  the first read, a ``NOTIFY`` from another writer (the connection LISTENs; a readable
  idle socket is the only check, no query), or a reconnect. Then the mirror's shared
  flock, as for a file journal.
- ``journal.seq`` beside the mirror records the last ``seq`` mirrored, the mirror's size
  then, and the table's ``IDENTITY`` (a table dropped and made again, or emptied by a
  TRUNCATE, is another journal: the mirror starts over). A crash between the mirror's append and that record is found by
  the size: the extra bytes are kept when they are the next rows' lines, else cut.
- A purge or repair (``rewrite``): the table's owner only; the table is made again
  (``shared_rewrite.py``) and every mirror starts over.
- Server unreachable: reads go on from the mirror with a one-line notice (once per
  process, a warning); a write raises ``SharedJournalError`` (an ``OSError``, which every
  write path already reports in one line) and nothing is appended anywhere.
"""
from __future__ import annotations

import getpass
import hashlib
import json
import os
import select
import socket
import time
from contextlib import contextmanager
from pathlib import Path

import psycopg

from mino_core import plugin_logger

from . import shared_url as _url
from .journal import Journal, sibling
from .store import MemoryError_

log = plugin_logger("mino.memory.graph")  # the log file and notices, not raw stderr

TABLE = "mino_journal"
# Which table a copy holds: its oid and its file. A table made again has a new oid, and a
# TRUNCATE gives the table a new file: either way the copy starts over. (VACUUM FULL and
# CLUSTER give a new file too: the copy is then read again for nothing but the time.)
IDENTITY = (f"to_regclass('{TABLE}')::oid::text || '/' || "
            f"pg_relation_filenode(to_regclass('{TABLE}'))::text")
CHANNEL = "mino_journal"
LOCK_KEY = int.from_bytes(hashlib.sha256(b"mino graph journal").digest()[:8], "big",
                          signed=True)
CONNECT_TIMEOUT = 5    # seconds, unless the URL sets connect_timeout
RETRY_READS_AFTER = 15  # seconds between reconnect attempts of reads while offline
BATCH = 10_000         # rows fetched at a time by a catch-up
IDLE_IN_WRITE = 60     # seconds a write request may sit in its transaction doing nothing
LOCK_WAIT = 30         # seconds a write waits for another machine's write, then fails

DDL = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    seq bigserial PRIMARY KEY,
    line text NOT NULL,
    written_by_user text NOT NULL,
    written_by_host text NOT NULL,
    session text NOT NULL DEFAULT '',
    written_at timestamptz NOT NULL DEFAULT now()
)"""

GRANTS = f"""GRANT SELECT, INSERT ON {TABLE} TO mino;
GRANT USAGE ON SEQUENCE {TABLE}_seq_seq TO mino;"""


_TOLD: set[str] = set()  # URLs whose outage this process has told of (once each)


# One round trip each (the simple protocol runs both statements), for push and the owner's
# rewrite: a transaction's start under the advisory lock, and its end (the NOTIFY is
# delivered at the commit, to the others only: see ``_notified``). A write request sends
# the same in pipelines, with its queries (``sync``, ``append``).
BEGIN_LOCKED = f"BEGIN; SELECT pg_advisory_xact_lock({LOCK_KEY})"
NOTIFY_COMMIT = f"SELECT pg_notify('{CHANNEL}', ''); COMMIT"
IDLE = psycopg.pq.TransactionStatus.IDLE


class SharedJournalError(OSError, MemoryError_):
    """The shared journal cannot do what was asked: one line for people, no password.
    An ``OSError`` for the paths that write (the tools say "nothing was saved", unless
    ``maybe_saved``: the connection went during the commit), and a ``MemoryError_`` for
    the ``mino memory`` commands, which print those in one line."""

    maybe_saved = False


class SharedJournal(Journal):
    """A ``Journal`` whose lines live in PostgreSQL (see the module docstring)."""

    shared = True

    def __init__(self, url: str, home: Path | str | None = None):
        self.url = url
        self.shown = _url.masked(url)
        super().__init__(_url.mirror_path(url, home))
        self.state_path = sibling(self.path, ".seq")
        _check_private(self.path.parents[3] / "config.yaml", url)
        self.conn: psycopg.Connection | None = None
        self.table_oid: str | None = None  # IDENTITY
        self.stale = True          # a catch-up query is due before the next read
        self.offline = ""          # why the last connection attempt failed
        self.notice_shown = False
        self._retry_at = 0.0
        self._in_write = False
        self.queries = 0           # catch-up queries run (the benches and tests count them)
        try:
            self.user = getpass.getuser()
        except (KeyError, OSError):  # no passwd entry (a container)
            self.user = str(os.getuid())
        self.host = socket.gethostname()
        self.session = os.environ.get("MINO_SESSION_ID") or f"pid {os.getpid()}"

    # --- the connection -----------------------------------------------------------

    def error(self, what: str, e: Exception) -> SharedJournalError:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return SharedJournalError(_url.scrub(f"{what} ({self.shown}): {msg}", self.url))

    def connect(self) -> psycopg.Connection:
        if self.conn is not None and not self.conn.closed and not self.conn.broken:
            return self.conn
        self.disconnect()
        kw = {"application_name": "mino"}
        if "connect_timeout" not in self.url:
            kw["connect_timeout"] = CONNECT_TIMEOUT
        try:
            # autocommit: a read is one round trip (no BEGIN, no ROLLBACK); a write
            # opens its transaction itself, in the same round trip as its lock
            conn = psycopg.connect(self.url, autocommit=True, **kw)
        except psycopg.Error as e:
            self.offline = _url.scrub(str(e).strip().splitlines()[0] if str(e).strip()
                                      else type(e).__name__, self.url)
            raise self.error("the shared memory journal is unreachable", e) from None
        try:
            conn.add_notify_handler(self._notified)
            # One round trip. A writer that vanished mid-request (a cut link the server
            # cannot see) would hold the advisory lock, and so every machine's writes,
            # until TCP gave up: the server ends such a transaction; and a writer waits
            # for another this long at most.
            cur = conn.execute(f"LISTEN {CHANNEL}; SET idle_in_transaction_session_timeout "
                               f"= '{IDLE_IN_WRITE}s'; SET lock_timeout = '{LOCK_WAIT}s'; "
                               f"SELECT {IDENTITY}")
            while cur.nextset():
                pass
            self._ensure_table(conn, cur.fetchone()[0])
        except SharedJournalError:
            conn.close()
            raise
        except psycopg.Error as e:
            conn.close()
            raise self.error("the shared memory journal is not usable", e) from None
        self.conn = conn
        self.stale = True  # what was written while we were away was not notified
        if self.offline:
            log.warning("shared memory journal %s reachable again", self.shown)
        self.offline = ""
        self.notice_shown = False
        _TOLD.discard(self.url)
        return conn

    def _ensure_table(self, conn, ident) -> None:
        """The table's IDENTITY; the table is made when missing and this role may make it."""
        if ident is None:
            try:
                conn.execute(DDL)
            except psycopg.errors.InsufficientPrivilege:
                raise SharedJournalError(
                    f"the shared memory journal ({self.shown}) has no table {TABLE} and "
                    f"this role may not create it; the database owner runs: "
                    f"{' '.join(DDL.split())}; then {' '.join(GRANTS.split())}") from None
            ident = conn.execute(f"SELECT {IDENTITY}").fetchone()[0]
        self.table_oid = str(ident)

    def _on_connection(self, step):
        """``step(conn)`` on the open connection. One that died while idle (a restarted
        server, an idle link cut) fails on first use: it is replaced once and ``step`` run
        again, which is safe because ``step`` only starts things (a catch-up, a write's
        BEGIN and lock) and the dead session's transaction is gone with it."""
        c = self.conn
        reused = c is not None and not c.closed and not c.broken
        conn = self.connect()
        try:
            return step(conn)
        except psycopg.OperationalError:
            if not reused or not (conn.broken or conn.closed):  # a refusal, not the link
                raise
            log.info("shared memory journal %s: connection lost while idle; reconnecting",
                     self.shown)
            self.disconnect()
            return step(self.connect())

    def _notified(self, n) -> None:
        if self.conn is None or n.pid != self.conn.info.backend_pid:
            self.stale = True

    def disconnect(self) -> None:
        if self.conn is not None:
            try:
                self.conn.close()
            except Exception:  # noqa: BLE001 - a dead connection may fail to close
                pass
        self.conn = None

    def _poll(self) -> None:
        """An idle connection with bytes waiting has a NOTIFY (or the server's goodbye):
        either way the next read catches up. No query is sent."""
        c = self.conn
        if c is None or c.closed or c.broken:
            self.stale = True
            return
        try:
            ready, _, _ = select.select([c.fileno()], [], [], 0)
        except (OSError, ValueError):
            ready = True
        if ready:
            self.stale = True

    def close(self) -> None:
        self.disconnect()
        super().close()

    # --- the local record of what the mirror holds --------------------------------

    def _state(self) -> dict:
        try:
            st = json.loads(self.state_path.read_text())
            if isinstance(st, dict) and isinstance(st.get("seq"), int):
                return st
        except (OSError, ValueError):
            pass
        return {"seq": 0, "bytes": 0, "table": None}

    def _save_state(self, seq: int, nbytes: int) -> None:
        tmp = self.state_path.with_suffix(".seq.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps({"seq": seq, "bytes": nbytes, "table": self.table_oid,
                                     "where": self.shown}).encode())
        finally:
            os.close(fd)
        os.replace(tmp, self.state_path)

    def last_seq(self) -> int:
        return self._state()["seq"]

    # --- catching the mirror up (caller holds the mirror's exclusive flock) -------

    def _restart_mirror(self, why: str) -> None:
        """An empty mirror in a new file (the store sees it replaced and reloads)."""
        log.warning("shared memory journal %s: local copy started over (%s)", self.shown, why)
        tmp = self.path.with_suffix(".jsonl.new")
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        os.replace(tmp, self.path)
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        # ``ino`` stays the old file's until the store reopens: ``replaced`` tells it
        self._save_state(0, 0)

    def sync(self, conn, begin: bool = False) -> int:
        """Append to the mirror every row after the last ``seq`` it holds; returns how
        many. ``begin``: a write's start: its transaction and advisory lock are sent with
        the first query, in one round trip (a pipeline; the server runs them in order, so
        the query sees every commit made before the lock was granted)."""
        if os.stat(self.path).st_ino != os.fstat(self.fd).st_ino:
            # another process started the mirror over: read and append the new file
            # (``ino`` stays, so the store still sees the journal replaced and reloads)
            os.close(self.fd)
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT
                              | getattr(os, "O_CLOEXEC", 0), 0o600)
        st = self._state()
        seq, nbytes = st["seq"], st["bytes"]
        size = os.fstat(self.fd).st_size
        if size < nbytes:
            self._restart_mirror(f"it is shorter ({size} bytes) than recorded ({nbytes})")
            seq, nbytes, size = 0, 0, 0
        tail = self.read(nbytes, size) if size > nbytes else b""
        # NOTIFYs already here are answered by the query below: drained unread. One read
        # during the query may be for a commit after its snapshot: it sets ``stale`` again.
        pgconn = conn.pgconn
        pgconn.consume_input()
        while pgconn.notifies() is not None:
            pass
        self.stale = False
        self.queries += 1
        added = 0
        cur = conn.cursor()
        first = True
        while True:
            # BATCH rows a query (a big catch-up never holds them all); the first query
            # is usually the only one. The table's IDENTITY rides in it (seq -1 sorts
            # first): a table made again (an owner's purge) or emptied is another journal.
            query = (f"SELECT -1, {IDENTITY} UNION ALL "
                     f"(SELECT seq, line FROM {TABLE} WHERE seq > %s ORDER BY seq "
                     f"LIMIT %s) ORDER BY 1")
            if begin:
                with conn.pipeline():
                    conn.execute("BEGIN")
                    conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_KEY,))
                    cur.execute(query, (seq, BATCH))
                begin = False
            else:
                cur.execute(query, (seq, BATCH))
            rows = cur.fetchall()
            oid = rows.pop(0)[1]
            if first and oid is not None:
                # the copy's record, not this connection's memory, says which table it
                # holds: another process here may have rewritten both (an owner's purge)
                self.table_oid = oid
                if st.get("table") not in (None, self.table_oid):
                    self._restart_mirror("the table was made again or emptied")
                    return self.sync(conn)
            first = False
            if not rows:
                break
            last = rows[-1][0]
            payload = "".join(line + "\n" for _, line in rows).encode("utf-8")
            if tail:  # a crash after an append, before its record: keep what matches
                if tail.startswith(payload):
                    tail = tail[len(payload):]
                    nbytes += len(payload)
                    seq = last
                    continue
                if payload.startswith(tail) and tail.endswith(b"\n"):
                    payload = payload[len(tail):]
                    nbytes += len(tail)
                else:  # not the rows' lines (a torn write): cut them off
                    os.ftruncate(self.fd, nbytes)
                tail = b""
            self._write(payload)
            nbytes += len(payload)
            seq = last
            added += len(rows)
            if len(rows) < BATCH:
                break
        if tail:  # more bytes than the server has rows: cut them off
            os.ftruncate(self.fd, nbytes)
        if seq != st["seq"] or nbytes != st["bytes"] or st.get("table") != self.table_oid:
            self._save_state(seq, nbytes)
        return added

    def _write(self, payload: bytes) -> None:
        view = memoryview(payload)
        while view:
            n = os.write(self.fd, view)
            view = view[n:]

    def catch_up_now(self) -> int:
        """Catch the mirror up from the server (takes the mirror's flock); returns rows."""
        with super().locked(exclusive=True):
            try:
                return self._on_connection(self.sync)
            except psycopg.Error as e:
                self.disconnect()
                raise self.error("reading the shared memory journal failed", e) from None

    # --- the journal interface ----------------------------------------------------

    @contextmanager
    def locked(self, exclusive: bool):
        if exclusive:
            with self._write_lock():
                yield
            return
        self._poll()
        if self.stale and (self.conn is not None or time.monotonic() >= self._retry_at):
            try:
                self.catch_up_now()
            except SharedJournalError as e:
                self._retry_at = time.monotonic() + RETRY_READS_AFTER
                self._tell_offline(e)
        with super().locked(exclusive=False):
            yield

    @contextmanager
    def _write_lock(self):
        with super().locked(exclusive=True):
            try:
                self._on_connection(lambda conn: self.sync(conn, begin=True))
            except psycopg.Error as e:
                self.disconnect()
                raise self.error("cannot write the shared memory journal", e) from None
            self._in_write = True
            try:
                yield
            finally:
                self._in_write = False
                c = self.conn
                if c is not None and not c.closed and c.info.transaction_status != IDLE:
                    try:
                        c.execute("ROLLBACK")  # nothing appended: the lock goes
                    except psycopg.Error:
                        self.disconnect()

    def append(self, payload: bytes, fsync: bool = True, seen=None) -> int:
        """INSERT the request's lines and commit; only then append them to the mirror."""
        if not self._in_write:
            raise RuntimeError("append outside a write request of the shared journal")
        lines = payload.decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        conn = self.conn
        try:
            # INSERT, NOTIFY (delivered at the commit) and COMMIT in one round trip
            with conn.pipeline():
                cur = conn.execute(
                    f"INSERT INTO {TABLE} (line, written_by_user, written_by_host, session) "
                    f"SELECT l, %s, %s, %s FROM unnest(%s::text[]) WITH ORDINALITY AS u(l, i) "
                    f"ORDER BY i RETURNING seq, line",
                    (self.user, self.host, self.session, lines))
                conn.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
                conn.execute("COMMIT")
            rows = cur.fetchall()
        except psycopg.OperationalError as e:  # the connection: the commit may have run
            self.disconnect()
            err = self.error("the shared memory journal went away during the write: it "
                             "may or may not be saved (the next read shows which)", e)
            err.maybe_saved = True
            raise err from None
        except psycopg.Error as e:  # refused by the server: the transaction is gone
            self.disconnect()
            raise self.error("cannot write the shared memory journal; nothing was saved",
                             e) from None
        rows.sort()
        payload = "".join(r[1] + "\n" for r in rows).encode("utf-8")
        if [r[1] for r in rows] != lines:  # never expected; the copy follows the table
            self._write(payload)
            self._save_state(rows[-1][0], os.fstat(self.fd).st_size)
            raise SharedJournalError("the shared journal stored the request's lines in "
                                     "another order; memory is read again from it")
        self._write(payload)
        if seen is not None:
            seen(payload)
        if fsync:
            os.fsync(self.fd)
        size = os.fstat(self.fd).st_size
        self._save_state(rows[-1][0], size)
        return size

    def rewrite(self, chunks, keep_old=None) -> int:
        """A purge or repair (``Store.rewrite``, under the write lock): only the table's
        owner may; the role mino uses is refused, plainly. As the owner the table is made
        again with the new lines (``shared_rewrite``), committed, and then this machine's
        copy is rewritten as a file journal is. Returns the copy's new size."""
        from . import shared_rewrite

        if not self._in_write:
            raise RuntimeError("rewrite outside a write request of the shared journal")
        conn = self.conn
        try:
            if not shared_rewrite.is_owner(conn):
                raise shared_rewrite.refusal(self.shown)
            data = b"".join(chunks)
            lines = data.decode("utf-8").split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            oid, last = shared_rewrite.rewrite_table(conn, lines,
                                                     (self.user, self.host, self.session))
            conn.execute(NOTIFY_COMMIT)
        except psycopg.Error as e:
            self.disconnect()
            raise self.error("rewriting the shared memory journal failed; nothing changed",
                             e) from None
        except UnicodeDecodeError:
            raise SharedJournalError("the rewritten journal is not UTF-8; nothing changed") \
                from None
        self.table_oid = oid
        size = super().rewrite([data], keep_old)
        self._save_state(last, size)
        return size

    def _tell_offline(self, e: SharedJournalError) -> None:
        """One line, once per outage and process (however many stores it opens):
        recall goes on from this machine's copy."""
        if self.notice_shown or self.url in _TOLD:
            return
        self.notice_shown = True
        _TOLD.add(self.url)
        from mino_core import visible

        line = (f"mino: {e}; recall uses this machine's copy (up to seq {self.last_seq()}); "
                f"memory writes fail until the server is back")
        # a warning of this logger reaches stderr as one plain line unless the process
        # routes its logs elsewhere (as the plugin's other warnings do)
        log.warning("%s", visible(line))

    @property
    def notice(self) -> str:
        return f"shared memory journal unreachable: {self.offline}" if self.offline else ""


def _check_private(config: Path, url: str) -> None:
    """A password in config.yaml is as safe as the file: say so when others may read it."""
    if not _url.password_of(url) or os.environ.get("MINO_GRAPH_URL"):
        return
    try:
        mode = config.stat().st_mode
    except OSError:
        return
    if mode & 0o077:
        log.warning("%s holds the shared memory journal's password and others may read it: "
                    "chmod 600 %s (or move the password to ~/.pgpass)", config, config)


def open_shared(url: str, home=None) -> SharedJournal:
    """The shared journal ``url`` names, mirrored under ``home`` (no connection yet)."""
    return SharedJournal(url, home)
