"""``mino memory check --repair``: a journal without its quarantined lines.

A bad line (not UTF-8, not an operation, a torn last line) is skipped by every replay
and recorded in ``.corrupt``; it costs nothing but a warning. A repair writes the journal
again without those lines, exactly the ones replay quarantines (the same reader decides),
so every operation replays as before. The old journal stays beside it
(``journal.before-repair-<time>.jsonl``, 0600): nothing saved is lost. The shared
journal's repair (``shared_repair``) works on the table: rows refused by every machine
removed (by its owner), an older mino's table upgraded, an edited copy fetched again.
"""
from __future__ import annotations

from ..journal.journal import Report, fold_range, kept_name
from ..core.model import Graph

STEP = 1 << 20


def _ranges(journal, bad_offsets: list[int], size: int):
    """Bytes ``[0, size)`` of the journal without the lines starting at ``bad_offsets``."""
    pos = 0
    for b in sorted(set(bad_offsets)):
        yield from _copy(journal, pos, b)
        end = _line_end(journal, b, size)
        pos = end
    yield from _copy(journal, pos, size)


def _copy(journal, a: int, b: int):
    while a < b:
        chunk = journal.read(a, min(b, a + STEP))
        if not chunk:
            return
        yield chunk
        a += len(chunk)


def _line_end(journal, start: int, size: int) -> int:
    pos = start
    while pos < size:
        chunk = journal.read(pos, min(size, pos + STEP))
        i = chunk.find(b"\n")
        if i >= 0:
            return pos + i + 1
        pos += len(chunk)
    return size


def repair(store) -> dict:
    """Rewrite ``store``'s journal without its quarantined lines; returns what it did
    (``removed``: 0 means the journal was left alone, nothing kept)."""
    if getattr(store.journal, "shared", False):
        return shared_repair(store)
    info = {"removed": 0, "kept": None, "bytes_before": 0, "bytes_after": 0}

    def make_chunks(journal):
        size = journal.size()
        bad: list[dict] = []
        fold_range(journal.read, 0, size, Graph(), Report(), bad)
        info["bytes_before"] = size
        info["removed"] = len(bad)
        yield from _ranges(journal, [b["offset"] for b in bad], size)

    # a first look: a clean journal is not rewritten (the index counts every bad line it
    # ever read)
    store.refresh()
    if not store.quarantined_total():
        return info
    kept = kept_name(store.path, "repair")
    info["bytes_after"] = store.rewrite(make_chunks, keep_old=kept)
    info["kept"] = str(kept)
    return info


def shared_repair(store) -> dict:
    """``check --repair`` with the shared journal. As the table's owner: the table is made
    again without the rows every machine refuses (``shared_check``), in this mino's form
    (an older mino's table is upgraded: the trigger, the CHECKs), who wrote each row kept;
    every copy then starts over. As anyone: this machine's copy is fetched again when it
    differs from its record (an edit), and refused rows are left to the owner, said so."""
    import psycopg

    from ..journal.journal_pg import NOTIFY_COMMIT, TABLE
    from ..journal.shared_check import judge_all
    from ..journal.shared_rewrite import is_owner, make_table, refusal

    j = store.journal
    info = {"removed": 0, "kept": None, "bytes_before": 0, "bytes_after": 0,
            "refetched": False, "upgraded": False, "message": ""}
    with store._mutex, store._locked(True):
        info["bytes_before"] = j.size()
        state = j.check_copy()
        damaged = any("fetches it again" in p for p in state["problems"])
        conn = j.conn
        try:
            owner = is_owner(conn)
            if owner:
                rows = conn.execute(f"SELECT line, written_by_user, written_by_host, session, "
                                    f"written_at FROM {TABLE} ORDER BY seq").fetchall()
                _, kept, refused = judge_all(rows)
                if refused or j.version < 2:
                    info["upgraded"] = j.version < 2
                    oid, new = make_table(conn, kept, "repair")
                    conn.execute(NOTIFY_COMMIT)
                    name = kept_name(store.path, "repair")
                    info["bytes_after"] = j.adopt(oid, new, keep_old=name)
                    info.update(removed=len(refused), kept=str(name))
                    damaged = False
        except psycopg.Error as e:
            raise j.error("repairing the shared memory journal failed; nothing changed",
                          e) from None
        if damaged:
            j.refetch()
            info["refetched"] = True
            info["bytes_after"] = j.size()
        if info["removed"] or info["upgraded"] or info["refetched"]:
            store._reload_after_rewrite()
    parts = []
    if info["removed"] or info["upgraded"]:
        parts.append(f"the shared table made again without {info['removed']} refused row(s)"
                     + (", in this mino's form (authorship set by the database)"
                        if info["upgraded"] else "")
                     + f"; every machine's copy starts over (this one's old copy: "
                       f"{info['kept']})")
    if info["refetched"]:
        parts.append("this machine's copy fetched again from the table")
    if not owner and (state["refused"] or j.version < 2):
        if not parts:
            raise refusal(j.shown)
        parts.append(str(refusal(j.shown)))
    info["message"] = "; ".join(parts) or "nothing to repair"
    return info
