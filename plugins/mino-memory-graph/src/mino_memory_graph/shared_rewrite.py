"""A purge or repair of the shared journal, by the table's owner only.

The role mino uses may only read and add, so rows are never changed in place: the owner's
rewrite makes the table again, in one transaction under the write's advisory lock:

1. the new lines go to a temporary table beside the ``seq`` of the row each replaces
   (line for line when the count is unchanged, as in a purge; a repair that drops lines
   keeps who wrote the rest only when nothing was dropped);
2. who wrote each row and when are copied over from the old rows;
3. the old table (and its sequence) is dropped, the table made again from ``DDL``, the
   rows inserted in order, and the old table's grants given again.

Every other machine's copy then starts over on its next read: the table's oid changed
(``SharedJournal.sync``). Other readers wait on the drop's lock meanwhile.
"""
from __future__ import annotations

from psycopg import sql

from .journal_pg import DDL, IDENTITY, TABLE, SharedJournalError

# the grants on the table and on its sequence, other than the owner's own
_ACL = f"""SELECT c.relkind, a.privilege_type,
       CASE WHEN a.grantee = 0 THEN NULL ELSE pg_get_userbyid(a.grantee) END
FROM pg_class c, aclexplode(c.relacl) a
WHERE c.oid IN (to_regclass('{TABLE}'),
                to_regclass(pg_get_serial_sequence('{TABLE}', 'seq')))
  AND a.grantee <> c.relowner"""


def is_owner(conn) -> bool:
    """Whether this connection's role may act as the table's owner (drop and make it)."""
    row = conn.execute("SELECT pg_has_role(c.relowner, 'USAGE') FROM pg_class c "
                       "WHERE c.oid = to_regclass(%s)", (TABLE,)).fetchone()
    return bool(row and row[0])


def refusal(shown: str) -> SharedJournalError:
    return SharedJournalError(
        f"the shared memory journal ({shown}) is append-only for this role (it may only "
        f"read and add); a purge or repair needs the table's owner: run it again with "
        f"MINO_GRAPH_URL naming the owner's role; every machine's copy then starts over")


def rewrite_table(conn, lines: list[str], who: tuple[str, str, str]) -> tuple[str, int]:
    """Make the table again holding ``lines`` (caller: in the write's transaction, as the
    owner). Returns the new table's ``IDENTITY`` and last ``seq``; the caller commits."""
    seqs = [r[0] for r in conn.execute(f"SELECT seq FROM {TABLE} ORDER BY seq")]
    same = len(seqs) == len(lines)
    grants = conn.execute(_ACL).fetchall()
    conn.execute("CREATE TEMP TABLE mino_rewrite (ord bigint, old bigint, line text, "
                 "u text, h text, s text, at timestamptz) ON COMMIT DROP")
    with conn.cursor().copy("COPY mino_rewrite (ord, old, line) FROM STDIN") as cp:
        for i, line in enumerate(lines):
            cp.write_row((i, seqs[i] if same else None, line))
    conn.execute(f"UPDATE mino_rewrite r SET u = o.written_by_user, h = o.written_by_host, "
                 f"s = o.session, at = o.written_at FROM {TABLE} o WHERE o.seq = r.old")
    conn.execute(f"DROP TABLE {TABLE}")
    conn.execute(DDL)
    conn.execute(f"INSERT INTO {TABLE} (line, written_by_user, written_by_host, session, "
                 f"written_at) SELECT line, coalesce(u, %s), coalesce(h, %s), coalesce(s, %s), "
                 f"coalesce(at, now()) FROM mino_rewrite ORDER BY ord", who)
    for kind, privilege, grantee in grants:
        target = sql.SQL("SEQUENCE {}").format(sql.Identifier(f"{TABLE}_seq_seq")) \
            if kind == "S" else sql.Identifier(TABLE)
        conn.execute(sql.SQL("GRANT {} ON {} TO {}").format(
            sql.SQL(privilege), target,
            sql.SQL("PUBLIC") if grantee is None else sql.Identifier(grantee)))
    ident, last = conn.execute(f"SELECT {IDENTITY}, coalesce(max(seq), 0) "
                               f"FROM {TABLE}").fetchone()
    return str(ident), int(last)
