"""The shared journal: the operations in one PostgreSQL table, mirrored on each machine.

One journal interface, two implementations: ``SharedJournal`` is a ``journal.Journal``
over a local *mirror* (``<home>/graph/shared/<db>/journal.jsonl``, a plain file journal
Mnemo reads) that it keeps equal to the table's *applied* lines in ``seq`` order.
Everything above the journal (replay, the index and the derived cache, recall, the loop,
the CLI) reads the mirror exactly as it reads a file journal; only locking and appending
differ.

- The table (``shared_schema``): ``seq``, ``line`` (the operation's exact JSON line, at
  most ``MAX_ROW`` bytes) and who wrote it (the database role and client address, set by
  the database; the client's ``session``) and when. Its trigger gives out ``seq`` under
  the advisory lock held to the commit, so committed rows always form a prefix in
  ``seq`` order, whoever inserted them and however.
- Every row is judged before it reaches the mirror (``shared_check.Rows``: ids the
  counters allow, existing nodes, sizes, a person's profile written by that person only),
  by the same rules on every machine: a refused row is recorded in ``journal.refused``
  and left out of the copy everywhere alike. ``journal.rows`` holds, line for line of the
  mirror, its ``seq`` and author; ``journal.judge`` the judge's state.
- A write (``locked(True)`` ... ``append``): the mirror's flock (exclusive), then one
  transaction that takes ``pg_advisory_xact_lock`` (waiting ``LOCK_WAIT`` s at most,
  then one line naming who holds it), catches the mirror up from the last ``seq`` it
  holds (so the store allocates ids from current counters), INSERTs the request's lines
  and commits; only then are the lines appended to the mirror.
- A read (``locked(False)``): one catch-up query, only when something may have changed:
  the first read, a ``NOTIFY`` from another writer (the connection LISTENs; a readable
  idle socket is the only check, no query), or a reconnect. Then the mirror's shared
  flock, as for a file journal.
- Every query is bounded: ``statement_timeout`` on the server, TCP keepalives on the
  connection, and a client-side deadline (``QUERY_WAIT``) that cuts a connection whose
  server stopped answering (a paused server enforces nothing itself).
- ``journal.seq`` beside the mirror records the last ``seq`` mirrored, the mirror's size
  then, a hash chain over its lines (``check`` finds an edit of the copy), and the
  table's ``IDENTITY``. A table made again by mino (an owner's purge, repair, restore)
  starts every copy over; one emptied by hand (``TRUNCATE``) or dropped and made again
  by hand does too, keeping the old copy beside the new
  (``journal.before-reset-<time>.jsonl``, 0600) for ``mino memory restore``.
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
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import psycopg

from mino_core import plugin_logger

from . import shared_schema as _schema
from . import shared_url as _url
from .journal import Journal, kept_name, sibling
from .shared_check import Rows
from ..core.errors import SharedJournalError

log = plugin_logger("mino.memory.graph")  # the log file and notices, not raw stderr

TABLE = _schema.TABLE
IDENTITY = _schema.IDENTITY  # which table a copy holds (see shared_schema)
CHANNEL = "mino_journal"
LOCK_KEY = _schema.LOCK_KEY
CONNECT_TIMEOUT = 5    # seconds, unless the URL sets connect_timeout
RETRY_READS_AFTER = 15  # seconds between reconnect attempts of reads while offline
BATCH = 10_000         # rows fetched at a time by a catch-up
IDLE_IN_WRITE = 60     # seconds a write request may sit in its transaction doing nothing
LOCK_WAIT = 10         # seconds a write waits for the write lock, then fails in one line
STATEMENT_WAIT = 30    # seconds the server gives one statement (statement_timeout)
QUERY_WAIT = 40        # seconds this side waits for an answer, then cuts the connection
KEEPALIVE = {"keepalives": 1, "keepalives_idle": 15, "keepalives_interval": 5,
             "keepalives_count": 3}  # a dead link is found in about 30 s, idle or not
STATE_V = 2            # journal.seq's format (1: an older mino's unjudged copy)

DDL = _schema.DDL


_TOLD: set[str] = set()  # URLs whose outage this process has told of (once each)


# One round trip each (the simple protocol runs both statements), for push and the owner's
# rewrite: a transaction's start under the advisory lock, and its end (the NOTIFY is
# delivered at the commit, to the others only: see ``_notified``). A write request sends
# the same in pipelines, with its queries (``sync``, ``append``).
BEGIN_LOCKED = f"BEGIN; SELECT pg_advisory_xact_lock({LOCK_KEY})"
NOTIFY_COMMIT = f"SELECT pg_notify('{CHANNEL}', ''); COMMIT"
IDLE = psycopg.pq.TransactionStatus.IDLE
_HOLDERS = ("SELECT a.usename, a.pid, to_char(a.xact_start AT TIME ZONE 'UTC', "
            "'HH24:MI:SS') FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s::bigint::oid "
            "AND l.objid = %s::bigint::oid AND l.objsubid = 1 AND l.pid <> pg_backend_pid()")


class SharedJournal(Journal):
    """A ``Journal`` whose lines live in PostgreSQL (see the module docstring)."""

    shared = True

    def __init__(self, url: str, home: Path | str | None = None):
        self.url = url
        self.shown = _url.masked(url)
        super().__init__(_url.mirror_path(url, home))
        self.state_path = sibling(self.path, ".seq")
        self.rows_path = sibling(self.path, ".rows")      # seq and author per mirror line
        self.judge_path = sibling(self.path, ".judge")    # shared_check.Rows, saved
        self.refused_path = sibling(self.path, ".refused")
        _check_private(self.path.parents[3] / "config.yaml", url)
        self.conn: psycopg.Connection | None = None
        self.table_oid: str | None = None  # IDENTITY
        self.version = 2           # the table's form (shared_schema.VERSION)
        st = self._state()  # the database role, and this machine's address, as last seen
        self.role: str | None = st.get("role")
        self.address: str | None = st.get("address")
        self.stale = True          # a catch-up query is due before the next read
        self.offline = ""          # why the last connection attempt failed
        self.notice_shown = False
        self._retry_at = 0.0
        self._in_write = False
        self._judge: Rows | None = None
        self._judge_mark: dict | None = None
        self.queries = 0           # catch-up queries run (the benches and tests count them)
        try:
            self.user = getpass.getuser()
        except (KeyError, OSError):  # no passwd entry (a container)
            self.user = str(os.getuid())
        self.host = socket.gethostname()
        self.session = os.environ.get("MINO_SESSION_ID") or f"pid {os.getpid()}"

    # --- the connection -----------------------------------------------------------

    def error(self, what: str, e: Exception) -> SharedJournalError:
        """``e`` in one line, without the password; the connection is closed (after an
        error its session is gone or unusable)."""
        self.disconnect()
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return SharedJournalError(_url.scrub(f"{what} ({self.shown}): {msg}", self.url))

    def connect(self) -> psycopg.Connection:
        if self.conn is not None and not self.conn.closed and not self.conn.broken:
            return self.conn
        self.disconnect()
        kw = {"application_name": "mino"}
        if "connect_timeout" not in self.url:
            kw["connect_timeout"] = CONNECT_TIMEOUT
        for k, v in KEEPALIVE.items():
            if k not in self.url:
                kw[k] = v
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
            # until TCP gave up: the server ends such a transaction; a writer waits for
            # another this long at most; and no statement runs longer than STATEMENT_WAIT.
            with _deadline(conn):
                cur = conn.execute(
                    f"LISTEN {CHANNEL}; SET idle_in_transaction_session_timeout = "
                    f"'{IDLE_IN_WRITE}s'; SET lock_timeout = '{LOCK_WAIT}s'; "
                    f"SET statement_timeout = '{STATEMENT_WAIT}s'; "
                    f"SELECT {IDENTITY}, {_schema.VERSION}, current_user::text, "
                    f"coalesce(host(inet_client_addr()), 'local')")
                while cur.nextset():
                    pass
                ident, version, role, address = cur.fetchone()
                self._ensure_table(conn, ident, version)
        except SharedJournalError:
            conn.close()
            raise
        except psycopg.Error as e:
            conn.close()
            raise self.error("the shared memory journal is not usable", e) from None
        self.conn = conn
        self.role, self.address = role, address
        self.stale = True  # what was written while we were away was not notified
        if self.offline:
            log.warning("shared memory journal %s reachable again", self.shown)
        self.offline = ""
        self.notice_shown = False
        _TOLD.discard(self.url)
        return conn

    def _ensure_table(self, conn, ident, version) -> None:
        """The table's IDENTITY; the table is made when missing and this role may make it
        (under the advisory lock: two first uses at once make it once)."""
        if ident is None:
            try:
                conn.execute(BEGIN_LOCKED)
                if conn.execute(f"SELECT to_regclass('{TABLE}')").fetchone()[0] is None:
                    _schema.make(conn)
                conn.execute("COMMIT")
            except psycopg.errors.InsufficientPrivilege:
                conn.execute("ROLLBACK")
                raise SharedJournalError(
                    f"the shared memory journal ({self.shown}) has no table {TABLE} and "
                    f"this role may not create it; the database owner runs: "
                    f"{' '.join('; '.join(_schema.owner_statements()).split())}") from None
            ident, version = conn.execute(
                f"SELECT {IDENTITY}, {_schema.VERSION}").fetchone()
        self.table_oid = str(ident)
        self.version = int(version)
        if self.version < 2 and self.url not in _OLD_TOLD:
            _OLD_TOLD.add(self.url)
            log.warning("the shared memory journal %s has a table made by an older mino: who "
                        "wrote each row is what the clients say; its owner runs `mino memory "
                        "check --repair` to upgrade it", self.shown)

    def _on_connection(self, step):
        """``step(conn)`` on the open connection. One that died while idle (a restarted
        server, an idle link cut) fails on first use: it is replaced once and ``step`` run
        again, which is safe because ``step`` only starts things (a catch-up, a write's
        BEGIN and lock) and the dead session's transaction is gone with it."""
        c = self.conn
        reused = c is not None and not c.closed and not c.broken
        conn = self.connect()
        for retry in (reused, False):
            try:
                with _deadline(conn) as cut:
                    return step(conn)
            except psycopg.OperationalError:
                if cut:  # no answer in time: not a link that died while idle
                    self.disconnect()
                    raise _NoAnswer() from None
                if not retry or not (conn.broken or conn.closed):  # a refusal, not the link
                    raise
            log.info("shared memory journal %s: connection lost while idle; reconnecting",
                     self.shown)
            self.disconnect()
            conn = self.connect()

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
                st.setdefault("v", 1)
                return st
        except (OSError, ValueError):
            pass
        return {"v": STATE_V, "seq": 0, "bytes": 0, "table": None, "rbytes": 0,
                "chain": "", "refused": 0}

    def _save_state(self, seq: int, nbytes: int, rbytes: int = 0, chain: str = "",
                    refused: int = 0) -> None:
        tmp = self.state_path.with_suffix(".seq.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps({"v": STATE_V, "seq": seq, "bytes": nbytes,
                                     "table": self.table_oid, "where": self.shown,
                                     "rbytes": rbytes, "chain": chain, "refused": refused,
                                     "role": self.role, "address": self.address}).encode())
        finally:
            os.close(fd)
        os.replace(tmp, self.state_path)

    def last_seq(self) -> int:
        return self._state()["seq"]

    # --- catching the mirror up (caller holds the mirror's exclusive flock) -------

    def _restart_mirror(self, why: str, keep: bool = False) -> Path | None:
        """An empty mirror in a new file (the store sees it replaced and reloads).
        ``keep``: the old copy (and its authors) stays beside it, for a restore."""
        kept = None
        if keep and os.fstat(self.fd).st_size:
            kept = kept_name(self.path, "reset")
            os.link(self.path, kept)
            os.chmod(kept, 0o600)
            try:
                os.link(self.rows_path, kept.with_suffix(".rows"))
            except OSError:
                pass
            log.warning("shared memory journal %s: %s; this machine's copy starts over and "
                        "the old one is kept as %s (the table's owner restores it with "
                        "`mino memory restore %s`)", self.shown, why, kept, kept)
        else:
            log.warning("shared memory journal %s: local copy started over (%s)",
                        self.shown, why)
        for p in (self.path, self.rows_path):
            tmp = p.with_name(p.name + ".new")
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
            os.replace(tmp, p)
        self._forget_judge()
        os.close(self.fd)
        self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
        # ``ino`` stays the old file's until the store reopens: ``replaced`` tells it
        self._save_state(0, 0)
        return kept

    def _forget_judge(self) -> None:
        """The judge's state, in memory and saved, and the refused rows go (a new copy)."""
        for p in (self.judge_path, self.refused_path):
            p.unlink(missing_ok=True)
        self._judge = self._judge_mark = None

    def _judge_for(self, st: dict) -> Rows:
        """The judge's state after the mirror's lines (``st`` says which): the one in
        memory, the one saved beside the copy, or one rebuilt from the copy."""
        mark = {"table": st.get("table"), "seq": st["seq"], "bytes": st["bytes"]}
        if self._judge is not None and self._judge_mark == mark:
            return self._judge
        judge = Rows.load(self.judge_path, mark)
        if judge is None:  # rebuilt: every line of the copy, with its author
            judge = Rows()
            judge.refused = st.get("refused", 0)
            authors = _read_rows(self.rows_path, st.get("rbytes", 0))
            data = self.read(0, st["bytes"])
            for i, line in enumerate(data.decode("utf-8", "replace").splitlines()):
                _, u, h = authors[i] if i < len(authors) else (0, "", "")
                judge.admit(line, u, h)
        self._judge, self._judge_mark = judge, mark
        return judge

    def sync(self, conn, begin: bool = False) -> int:
        """Append to the mirror every applied row after the last ``seq`` it holds; returns
        how many rows were read. ``begin``: a write's start: its transaction and advisory
        lock are sent with the first query, in one round trip (a pipeline; the server runs
        them in order, so the query sees every commit made before the lock was granted)."""
        if os.stat(self.path).st_ino != os.fstat(self.fd).st_ino:
            # another process started the mirror over: read and append the new file
            # (``ino`` stays, so the store still sees the journal replaced and reloads)
            os.close(self.fd)
            self.fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT
                              | getattr(os, "O_CLOEXEC", 0), 0o600)
        st = self._state()
        if st.get("v") != STATE_V:
            self._restart_mirror("made by an older mino; read again and every row judged")
            st = self._state()
        seq, nbytes = st["seq"], st["bytes"]
        size = os.fstat(self.fd).st_size
        if size < nbytes:
            self._restart_mirror(f"it is shorter ({size} bytes) than recorded ({nbytes})")
            st = self._state()
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
        out = _Out(self, st)
        while True:
            # BATCH rows a query (a big catch-up never holds them all); the first query
            # is usually the only one. The table's IDENTITY rides in it (seq -1 sorts
            # first): a table made again (an owner's purge) or emptied is another journal.
            query = (f"SELECT -1, {IDENTITY}, '', '' UNION ALL "
                     f"(SELECT seq, line, written_by_user, written_by_host FROM {TABLE} "
                     f"WHERE seq > %s ORDER BY seq LIMIT %s) ORDER BY 1")
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
                old = st.get("table")
                if old not in (None, self.table_oid):
                    self._restart_mirror("the table was made again or emptied",
                                         keep=_kept_on_change(old, self.table_oid))
                    return self.sync(conn)
            first = False
            if not rows:
                break
            if out.judge is None:
                out.judge = self._judge_for(st)
            valid = out.admit(rows)
            last = rows[-1][0]
            payload = "".join(r[1] + "\n" for r in valid).encode("utf-8")
            write = payload
            if tail:  # a crash after an append, before its record: keep what matches
                if tail.startswith(payload):
                    tail, write = tail[len(payload):], b""
                elif payload.startswith(tail) and tail.endswith(b"\n"):
                    write, tail = payload[len(tail):], b""
                else:  # not the rows' lines (a torn write): cut them off
                    os.ftruncate(self.fd, nbytes)
                    tail = b""
            out.add(write, valid, payload)
            nbytes += len(payload)
            seq = last
            added += len(rows)
            if len(rows) < BATCH:
                break
        if tail:  # more bytes than the server has rows: cut them off
            os.ftruncate(self.fd, nbytes)
        out.finish(seq, nbytes)
        return added

    def _write(self, payload: bytes, fd: int | None = None) -> None:
        view = memoryview(payload)
        fd = self.fd if fd is None else fd
        while view:
            n = os.write(fd, view)
            view = view[n:]

    def catch_up_now(self) -> int:
        """Catch the mirror up from the server (takes the mirror's flock); returns rows."""
        with super().locked(exclusive=True):
            try:
                return self._on_connection(self.sync)
            except _NoAnswer:
                raise self._no_answer("reading the shared memory journal failed") from None
            except psycopg.Error as e:
                raise self.error("reading the shared memory journal failed", e) from None

    def _no_answer(self, what: str) -> SharedJournalError:
        self.offline = f"no answer within {QUERY_WAIT} s"
        return SharedJournalError(f"{what} ({self.shown}): the server gave no answer within "
                                  f"{QUERY_WAIT} s")

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
                try:
                    self._on_connection(lambda conn: self.sync(conn, begin=True))
                except BaseException:
                    self._rollback()
                    raise
            except _NoAnswer:
                raise self._no_answer("cannot write the shared memory journal; nothing was "
                                      "saved") from None
            except psycopg.errors.LockNotAvailable:
                raise self._lock_refusal() from None
            except psycopg.Error as e:
                raise self.error("cannot write the shared memory journal", e) from None
            self._in_write = True
            try:
                yield
            finally:
                self._in_write = False
                self._rollback()

    def _rollback(self) -> None:
        """End this connection's open transaction, if any (nothing appended: the lock goes)."""
        c = self.conn
        if c is not None and not c.closed and not c.broken and \
                c.info.transaction_status != IDLE:
            try:
                c.execute("ROLLBACK")
            except psycopg.Error:
                self.disconnect()

    def _lock_refusal(self) -> SharedJournalError:
        """The write lock was not granted within LOCK_WAIT: who holds it, in one line."""
        who = ""
        try:
            c = self.conn  # its transaction already rolled back (``_write_lock``)
            k = LOCK_KEY & 0xFFFFFFFFFFFFFFFF
            with _deadline(c, 5):
                rows = c.execute(_HOLDERS, (k >> 32, k & 0xFFFFFFFF)).fetchall()
            who = "; ".join(f"held by role {_url.scrub(str(u), self.url)} (server process "
                            f"{pid}, in a transaction since {t or '?'} UTC)"
                            for u, pid, t in rows[:3])
        except Exception:  # noqa: BLE001 - only the detail of a line already decided
            self.disconnect()
        return SharedJournalError(
            f"cannot write the shared memory journal ({self.shown}): another session held "
            f"its write lock for {LOCK_WAIT} s{': ' + who if who else ''}; nothing was "
            f"saved (try again later)")

    def append(self, payload: bytes, fsync: bool = True) -> int:
        """INSERT the request's lines and commit; only then append them to the mirror."""
        if not self._in_write:
            raise RuntimeError("append outside a write request of the shared journal")
        lines = payload.decode("utf-8").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        conn = self.conn
        if self.version >= 2:  # who wrote it: the database says
            insert = (f"INSERT INTO {TABLE} (line, session) SELECT l, %s FROM "
                      f"unnest(%s::text[]) WITH ORDINALITY AS u(l, i) ORDER BY i "
                      f"RETURNING seq, line, written_by_user, written_by_host")
            args = (_schema.clip(self.session), lines)
        else:  # an older mino's table: the columns are the client's to fill
            insert = (f"INSERT INTO {TABLE} (line, written_by_user, written_by_host, session) "
                      f"SELECT l, current_user, %s, %s FROM unnest(%s::text[]) WITH "
                      f"ORDINALITY AS u(l, i) ORDER BY i "
                      f"RETURNING seq, line, written_by_user, written_by_host")
            args = (self.host, self.session, lines)
        try:
            # INSERT, NOTIFY (delivered at the commit) and COMMIT in one round trip
            with _deadline(conn) as cut:
                with conn.pipeline():
                    cur = conn.execute(insert, args)
                    conn.execute("SELECT pg_notify(%s, '')", (CHANNEL,))
                    conn.execute("COMMIT")
                rows = cur.fetchall()
        except psycopg.OperationalError as e:  # the connection: the commit may have run
            self.disconnect()
            err = self.error("the shared memory journal went away during the write: it "
                             "may or may not be saved (the next read shows which)", e)
            if cut:
                err = SharedJournalError(
                    f"the shared memory journal ({self.shown}) gave no answer within "
                    f"{QUERY_WAIT} s during the write: it may or may not be saved (the next "
                    f"read shows which)")
            err.maybe_saved = True
            raise err from None
        except psycopg.Error as e:  # refused by the server: the transaction is gone
            raise self.error("cannot write the shared memory journal; nothing was saved",
                             e) from None
        rows.sort()
        if [r[1] for r in rows] != lines:  # never expected; the copy follows the table
            self.stale = True
            raise SharedJournalError("the shared journal stored the request's lines in "
                                     "another order; memory is read again from it")
        st = self._state()
        out = _Out(self, st)
        out.judge = self._judge_for(st)
        valid = out.admit(rows)
        data = "".join(r[1] + "\n" for r in valid).encode("utf-8")
        try:
            out.add(data, valid, data, saved=True)
            if fsync:
                os.fsync(self.fd)
        except SharedJournalError:
            raise
        out.finish(rows[-1][0], st["bytes"] + len(data))
        if out.refused:
            self.stale = True
            (r, why), = out.refused[:1]
            raise SharedJournalError(
                f"the shared memory journal took the write but every machine leaves out "
                f"{len(out.refused)} of its operation(s): {why}")
        return os.fstat(self.fd).st_size

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
            st = self._state()
            seqs = [r[0] for r in _read_rows(self.rows_path, st.get("rbytes", 0))]
            oid, rows = shared_rewrite.rewrite_table(conn, lines, seqs,
                                                     (self.user, self.host, self.session))
            conn.execute(NOTIFY_COMMIT)
        except psycopg.Error as e:
            raise self.error("rewriting the shared memory journal failed; nothing changed",
                             e) from None
        except UnicodeDecodeError:
            raise SharedJournalError("the rewritten journal is not UTF-8; nothing changed") \
                from None
        return self.adopt(oid, rows, keep_old)

    def adopt(self, oid: str, rows: list, keep_old=None) -> int:
        """This machine's copy becomes ``rows`` (``(seq, line, user, host)``, the table the
        owner just made, committed): rewritten as a file journal is, judged afresh."""
        from .journal import replace_file

        self.table_oid = oid
        self.version = 2  # made by make_table, in this mino's form
        judge = Rows()
        kept = [r for r in rows if judge.admit(r[1], r[2], r[3]) is None]
        data = "".join(r[1] + "\n" for r in kept).encode("utf-8")
        side = "".join(json.dumps([r[0], r[2], r[3]]) + "\n" for r in kept).encode("utf-8")
        size = super().rewrite([data], keep_old)
        replace_file(self.rows_path, [side])
        self._forget_judge()
        self._save_state(rows[-1][0] if rows else 0, size, len(side),
                         _chain_of(data), 0)
        return size

    # --- the copy checked ---------------------------------------------------------

    def check_copy(self) -> dict:
        """The copy against its record (caller holds a lock): the hash chain over its lines
        (an edit of the same length is found), its authors file, and the rows refused."""
        st = self._state()
        data = self.read(0, st["bytes"])
        info = {"seq": st["seq"], "refused": st.get("refused", 0),
                "refused_file": str(self.refused_path), "role": self.role,
                "table_form": self.version}
        problems = []
        if st.get("chain", "") != _chain_of(data):
            problems.append("this machine's copy differs from the rows it was given (edited "
                            "by hand?): `mino memory check --repair` fetches it again")
        if data.count(b"\n") != len(_read_rows(self.rows_path, st.get("rbytes", 0))):
            problems.append("the copy's authors file does not match it: `mino memory check "
                            "--repair` fetches it again")
        if info["refused"]:
            problems.append(f"{info['refused']} row(s) of the shared table are refused on "
                            f"every machine (kept in {self.refused_path}): the table's owner "
                            f"runs `mino memory check --repair` to remove them")
        if self.version < 2:
            problems.append("the table was made by an older mino (who wrote each row is what "
                            "clients said): its owner runs `mino memory check --repair`")
        info["problems"] = problems
        return info

    def refetch(self) -> None:
        """This machine's copy read again from the table (caller holds the write lock)."""
        self._restart_mirror("fetched again by `mino memory check --repair`")
        self.sync(self.conn)

    # --- who wrote what -----------------------------------------------------------

    def written_by(self, kind: str, id: int) -> dict | None:
        """``{"role", "host", "mine", "here"}``: who made node / fact / edge ``id`` (the
        database said so on a table of this mino's form; ``claimed`` when an older table's
        clients did); ``mine``: this database role; ``here``: this role from this
        machine's address. None when unknown. Caller holds a lock (the copy is current)."""
        st = self._state()
        try:
            who = self._judge_for(st).author_of(kind, id)
        except (OSError, ValueError):
            return None
        if who is None:
            return None
        mine = bool(self.role) and who[0] == self.role
        out = {"role": who[0], "host": who[1], "mine": mine,
               "here": mine and bool(self.address) and who[1] == self.address}
        if self.version < 2:
            out["claimed"] = True
        return out

    def profile_is_mine(self, node: int) -> bool:
        """Whether ``node`` is the profile this database role made (each person's own)."""
        st = self._state()
        try:
            owner = self._judge_for(st).profiles.get(node)
        except (OSError, ValueError):
            return True
        return owner is None or self.role is None or owner == self.role

    def _tell_offline(self, e: SharedJournalError) -> None:
        """One line, once per outage and process (however many stores it opens):
        recall goes on from this machine's copy."""
        if self.notice_shown or self.url in _TOLD:
            return
        self.notice_shown = True
        _TOLD.add(self.url)
        from mino_core import visible

        line = f"mino: {e}; recall uses this machine's copy (up to seq {self.last_seq()})"
        if "cannot grow" not in str(e):  # the server, not this machine's disk
            line += "; memory writes fail until the server is back"
        # a warning of this logger reaches stderr as one plain line unless the process
        # routes its logs elsewhere (as the plugin's other warnings do)
        log.warning("%s", visible(line))

    @property
    def notice(self) -> str:
        return f"shared memory journal unreachable: {self.offline}" if self.offline else ""


_OLD_TOLD: set[str] = set()


class _NoAnswer(Exception):
    """The client-side deadline cut a connection whose server did not answer."""


@contextmanager
def _deadline(conn, seconds: float | None = None):
    """Bound what this side waits on ``conn``: past ``seconds`` (``QUERY_WAIT``) its socket
    is shut down, so the wait ends in an ``OperationalError`` at once. The server's own
    timeouts cannot help when it stopped (a paused container, a frozen host that still
    acknowledges packets). Yields a list that is non-empty when the deadline fired."""
    fired: list = []
    try:
        fd = conn.fileno()
    except Exception:  # noqa: BLE001 - a closed connection: nothing to bound
        yield fired
        return

    def cut():
        fired.append(True)
        try:
            s = socket.socket(fileno=os.dup(fd))
            try:
                s.shutdown(socket.SHUT_RDWR)
            finally:
                s.close()
        except OSError:
            pass

    t = threading.Timer(QUERY_WAIT if seconds is None else seconds, cut)
    t.daemon = True
    t.start()
    try:
        yield fired
    finally:
        t.cancel()


class _Out:
    """What one catch-up or write adds beside the mirror: the lines, their authors, the
    hash chain and the refused rows; ``finish`` records it all. A write that fails (a full
    disk) takes back what it wrote of this step and says so in one line."""

    def __init__(self, journal: SharedJournal, st: dict):
        self.j = journal
        self.st = st
        self.judge: Rows | None = None
        self.refused: list = []
        self.rbytes = st.get("rbytes", 0)
        self.chain = st.get("chain", "")
        # the authors file holds what the record says, no more (a crash after its append)
        fd = os.open(journal.rows_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                     0o600)
        try:
            if os.fstat(fd).st_size != self.rbytes:
                os.ftruncate(fd, self.rbytes)
        finally:
            os.close(fd)

    def admit(self, rows: list) -> list:
        """The rows ``(seq, line, user, host)`` the judge lets through; the others are
        counted and kept in ``refused`` with the reason."""
        valid = []
        for r in rows:
            why = self.judge.admit(r[1], r[2], r[3])
            if why is None:
                valid.append(r)
            else:
                self.judge.refused += 1
                self.refused.append((r, why))
        return valid

    def add(self, write: bytes, valid: list, payload: bytes, saved: bool = False) -> None:
        j = self.j
        side = "".join(json.dumps([r[0], r[2], r[3]]) + "\n" for r in valid).encode("utf-8")
        before = os.fstat(j.fd).st_size
        try:
            j._write(write)
            fd = os.open(j.rows_path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0))
            try:
                j._write(side, fd)
            finally:
                os.close(fd)
        except OSError as e:
            self._undo(before)
            j.stale = True  # the next read fetches what the copy could not take
            why = e.strerror or str(e)
            where = j.path.parent
            if saved:
                err = SharedJournalError(
                    f"saved in the shared memory journal, but this machine's copy could not be "
                    f"written ({why}, under {where}); nothing is lost: the copy catches up "
                    f"once there is room")
                err.saved = True
                raise err from None
            raise SharedJournalError(
                f"this machine's copy of the shared memory journal cannot grow ({why}, under "
                f"{where}); recall goes on from what it holds") from None
        self.rbytes += len(side)
        self.chain = _chain_of(payload, self.chain)

    def _undo(self, size: int) -> None:
        j = self.j
        try:
            os.ftruncate(j.fd, size)
            fd = os.open(j.rows_path, os.O_WRONLY)
            try:
                os.ftruncate(fd, self.rbytes)
            finally:
                os.close(fd)
        except OSError:
            pass
        j._judge = j._judge_mark = None  # it counted rows the copy does not hold

    def finish(self, seq: int, nbytes: int) -> None:
        j, st = self.j, self.st
        judge = self.judge
        refused = judge.refused if judge is not None else st.get("refused", 0)
        if self.refused:
            _record_refused(j, self.refused)
        if (seq != st["seq"] or nbytes != st["bytes"] or st.get("table") != j.table_oid
                or st.get("role") != j.role):
            j._save_state(seq, nbytes, self.rbytes, self.chain, refused)
            if judge is not None:
                mark = {"table": j.table_oid, "seq": seq, "bytes": nbytes}
                j._judge, j._judge_mark = judge, mark
                judge.save(j.judge_path, mark)


def _record_refused(j: SharedJournal, refused: list) -> None:
    """Refused rows beside the copy (one JSON record each, ASCII), and one warning."""
    from .journal import _cap_raw

    lines = [json.dumps({"seq": r[0], "by": r[2], "host": r[3], "reason": why,
                         "raw": _cap_raw(r[1], len(r[1]))}, ensure_ascii=True) + "\n"
             for r, why in refused]
    try:
        fd = os.open(j.refused_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            j._write("".join(lines).encode("ascii"), fd)
        finally:
            os.close(fd)
    except OSError:
        pass
    (r, why) = refused[0]
    log.warning("shared memory journal %s: %d row(s) refused on every machine (first: seq "
                "%s by %s: %s); kept in %s", j.shown, len(refused), r[0], r[2], why,
                j.refused_path)


def _chain_of(data: bytes, chain: str = "") -> str:
    """The hash chain over the lines of ``data``, from ``chain`` (hex, "" at the start)."""
    h = bytes.fromhex(chain) if chain else b""
    for line in data.splitlines(keepends=True):
        h = hashlib.sha256(h + line).digest()
    return h.hex()


def _read_rows(path: Path, nbytes: int) -> list:
    """``[seq, user, host]`` per line of the copy (its first ``nbytes`` bytes)."""
    try:
        with open(path, "rb") as f:
            data = f.read(nbytes)
    except OSError:
        return []
    out = []
    for line in data.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            out.append([0, "", ""])
    return out


def _kept_on_change(old: str, new: str) -> bool:
    """Whether the old copy is kept when the table changed: not after mino made it again
    (a purge must not leave what it removed), but after a TRUNCATE (the same table in a
    new file) or a table dropped and made again by hand."""
    o, n = (old or "").split("/"), (new or "").split("/")
    if len(o) >= 2 and len(n) >= 2 and o[0] == n[0]:
        return True  # the same table, emptied
    return not (len(n) >= 3 and n[2] == "1")


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
