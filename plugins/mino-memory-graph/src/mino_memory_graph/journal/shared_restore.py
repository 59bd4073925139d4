"""``mino memory restore COPY``: the table's owner puts back what a hand-run ``TRUNCATE``
(or a table dropped and made again by hand) took away, from the old copy a machine kept
(``journal.before-reset-<time>.jsonl``, with its authors in ``.rows`` beside it).

In one transaction under the write lock the table is made again (``make_table``) holding
the old copy's rows, then every row written since (saves acknowledged after the reset are
not lost), their ids and clock moved past the old copy's (``renumber``), each row judged
as every machine judges rows (``shared_check``); who wrote each row is kept. Every copy
then starts over. A copy whose rows the table already starts with is left alone.
"""
from __future__ import annotations

import json
from pathlib import Path

import psycopg

from ..core import ops as _ops
from .journal import Journal, parse_one
from .journal_pg import BEGIN_LOCKED, NOTIFY_COMMIT, TABLE, SharedJournal, SharedJournalError
from ..core.model import CLOCK_START
from .shared_check import Rows
from .shared_rewrite import is_owner, make_table, refusal

# the fields of each operation that hold a node, an edge or a fact id
_NODE = {"CreateNode": ("id",), "AddFact": ("node",), "SupersedeFact": ("node",),
         "SetArea": ("node",), "DeleteNode": ("node",), "Link": ("src", "dst"),
         "PushContext": ("to",), "CommitLog": ("node",), "RecordUsefulness": ("node",)}
_EDGE = {"Link": ("id",), "Unlink": ("edge",), "Reweight": ("edge",),
         "RecordOutcome": ("edge",)}
_FACT = {"AddFact": ("fact_id",), "SupersedeFact": ("old_fact", "new_fact_id")}


def renumber(line: str, node: int, edge: int, fact: int, clock: int) -> str:
    """``line`` with its ids moved up by ``node``/``edge``/``fact`` and ``at`` by ``clock``."""
    name, body = parse_one(line)
    body = dict(body)
    for f in _NODE.get(name, ()):
        body[f] += node
    for f in _EDGE.get(name, ()):
        body[f] += edge
    for f in _FACT.get(name, ()):
        body[f] += fact
    if name == "PushContext":
        body["chunk"] = dict(body["chunk"], **{"from": body["chunk"]["from"] + node})
    body["at"] += clock
    return _ops.encode(name, body).decode("utf-8").rstrip("\n")


def read_copy(path: Path) -> list[tuple]:
    """The old copy's rows: ``(line, user, host, session, written_at)``."""
    lines = Path(path).read_bytes().decode("utf-8", "replace").splitlines()
    try:
        authors = [json.loads(x) for x in
                   Path(path).with_suffix(".rows").read_text().splitlines()]
    except (OSError, ValueError):
        authors = []
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        a = authors[i] if i < len(authors) and len(authors[i]) == 3 else (0, "", "")
        out.append((line, a[1] or "unknown", a[2] or "unknown", "restored", None))
    return out


def restore(journal: SharedJournal, path: Path) -> dict:
    """Put the old copy at ``path`` back in front of the table's rows (see above)."""
    old = read_copy(path)
    conn = journal.connect()
    with Journal.locked(journal, exclusive=True):
        try:
            conn.execute(BEGIN_LOCKED)
            if not is_owner(conn):
                conn.execute("ROLLBACK")
                raise refusal(journal.shown)
            now = conn.execute(f"SELECT line, written_by_user, written_by_host, session, "
                               f"written_at FROM {TABLE} ORDER BY seq").fetchall()
            if [r[0] for r in now[:len(old)]] == [r[0] for r in old]:
                conn.execute("ROLLBACK")
                return {"restored": 0, "moved": 0, "refused": 0}
            judge = Rows()
            kept, refused = [], 0
            for r in old:
                if judge.admit(r[0], r[1], r[2]) is None:
                    kept.append(r)
                else:
                    refused += 1
            n_old = len(kept)
            shift = (judge.next_node - 1, judge.next_edge - 1, judge.next_fact - 1,
                     max(0, judge.clock - CLOCK_START))
            for r in now:
                try:
                    line = renumber(r[0], *shift)
                except (ValueError, KeyError, TypeError):
                    refused += 1
                    continue
                if judge.admit(line, r[1], r[2]) is None:
                    kept.append((line, *r[1:]))
                else:
                    refused += 1
            oid, rows = make_table(conn, kept, "restore")
            conn.execute(NOTIFY_COMMIT)
        except psycopg.Error as e:
            raise journal.error("restoring the shared memory journal failed; nothing "
                                "changed", e) from None
        journal.adopt(oid, rows)
    return {"restored": n_old, "moved": len(kept) - n_old, "refused": refused}


__all__ = ["restore", "renumber", "SharedJournalError"]
