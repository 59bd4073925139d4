"""Between a file journal and the shared (PostgreSQL) one: ``push`` copies a file
journal's operation lines, exactly as written (ids kept), into an empty shared journal in
one transaction under the write's advisory lock (COPY); ``export`` writes the shared
journal, in ``seq`` order, to a new file journal that Mnemo reads. ``mino memory push``
and ``export`` (``shared_commands.py``) call them."""
from __future__ import annotations

import os
from pathlib import Path

import psycopg

from .journal import Journal
from .journal_pg import (BATCH, BEGIN_LOCKED, NOTIFY_COMMIT, TABLE, SharedJournal,
                         SharedJournalError)
from .shared_rewrite import OWNER_WAIT


def read_ops(source: Path) -> tuple[list[str], list[str]]:
    """The operation lines of a file journal, exactly as written, and one line per line
    left out (not UTF-8, not an operation). Blank lines are padding, left out silently."""
    from .journal import parse_one

    keep, left = [], []
    offset = 0
    with open(source, "rb") as f:
        for raw in f:
            at, offset = offset, offset + len(raw)
            body = raw[:-1] if raw.endswith(b"\n") else raw
            try:
                line = body.decode("utf-8")
            except UnicodeDecodeError:
                left.append(f"byte {at}: not utf-8")
                continue
            if not line.strip():
                continue
            try:
                parse_one(line)
            except ValueError as e:
                left.append(f"byte {at}: {e}")
                continue
            keep.append(line)
    return keep, left


def push(journal: SharedJournal, lines: list[str]) -> int:
    """Copy ``lines`` into the shared journal, which must be empty (ids are kept as they
    are, so two journals' ids are never mixed); then the local mirror catches up."""
    conn = journal.connect()
    with Journal.locked(journal, exclusive=True):
        try:
            conn.execute(BEGIN_LOCKED)
            conn.execute(f"SET LOCAL statement_timeout = '{OWNER_WAIT}s'")  # one big COPY
            if conn.execute(f"SELECT EXISTS (SELECT 1 FROM {TABLE})").fetchone()[0]:
                conn.execute("ROLLBACK")
                raise SharedJournalError(
                    f"the shared memory journal ({journal.shown}) already holds operations; "
                    "push copies a file journal into an empty one only")
            if journal.version >= 2:  # who pushed it: the database says
                with conn.cursor().copy(f"COPY {TABLE} (line, session) FROM STDIN") as cp:
                    for line in lines:
                        cp.write_row((line, "push"))
            else:
                with conn.cursor().copy(f"COPY {TABLE} (line, written_by_user, "
                                        "written_by_host, session) FROM STDIN") as cp:
                    for line in lines:
                        cp.write_row((line, journal.role or journal.user, journal.host,
                                      "push"))
            conn.execute(NOTIFY_COMMIT)
            journal.sync(conn)
        except psycopg.Error as e:
            raise journal.error("pushing to the shared memory journal failed; nothing was "
                                "saved", e) from None
    return len(lines)


def export(journal: SharedJournal, dest: Path) -> int:
    """Write every line of the shared journal, in ``seq`` order, to a new file journal
    at ``dest`` (0600; never over an existing file). Returns the operations written."""
    conn = journal.connect()
    dest = Path(dest)
    if dest.exists():
        raise SharedJournalError(f"{dest} exists; export writes a new file only")
    tmp = dest.with_name(f".{dest.name}.export-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0),
                 0o600)
    n = 0
    try:
        try:
            buf = []
            with conn.cursor().copy(f"COPY (SELECT line FROM {TABLE} ORDER BY seq) "
                                    "TO STDOUT") as cp:
                for (line,) in cp.rows():
                    buf.append(line)
                    n += 1
                    if len(buf) >= BATCH:
                        _write_all(fd, ("\n".join(buf) + "\n").encode("utf-8"))
                        buf = []
            if buf:
                _write_all(fd, ("\n".join(buf) + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(tmp, dest)  # fails, rather than replaces, when dest appeared meanwhile
    except psycopg.Error as e:
        raise journal.error("reading the shared memory journal failed", e) from None
    except FileExistsError:
        raise SharedJournalError(f"{dest} exists; export writes a new file only") from None
    finally:
        tmp.unlink(missing_ok=True)
    return n


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
