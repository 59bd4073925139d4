"""A purge or repair of the shared journal, by the table's owner only.

The role mino uses may only read and add, so rows are never changed in place: the owner's
rewrite makes the table again, in one transaction under the write's advisory lock:

1. the new lines go to a temporary table with who wrote each and when, copied from the
   row each replaces (``journal.rows`` says which row each line of the copy came from;
   line for line when the count is unchanged, as in a purge);
2. the old table (and its sequence) is dropped, the table made again in this mino's form
   (``shared_schema``: an older mino's table is upgraded so), the rows inserted in order,
   and the old table's grants given again;
3. the owner's repair (``shared_repair``) and restore (``shared_restore``) make the table
   the same way from the rows they keep.

Every other machine's copy then starts over on its next read: the table's oid changed
(``SharedJournal.sync``). Other readers wait on the drop's lock meanwhile.
"""
from __future__ import annotations

from psycopg import sql

from ..core.errors import SharedJournalError
from .shared_schema import IDENTITY, MADE_BY_MINO, TABLE, clip, make

OWNER_WAIT = 600  # seconds one statement of a rewrite, push or restore may take

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


def rewrite_table(conn, lines: list[str], seqs: list[int],
                  who: tuple[str, str, str]) -> tuple[str, list]:
    """Make the table again holding ``lines`` (caller: in the write's transaction, as the
    owner). ``seqs``: the row each line of this machine's copy came from, line for line
    (``journal.rows``): who wrote it and when are kept when the count is unchanged (a
    purge). Returns the new table's ``IDENTITY`` and its ``(seq, line, user, host)``;
    the caller commits."""
    same = len(seqs) == len(lines)
    old = {r[0]: r[1:] for r in conn.execute(
        f"SELECT seq, written_by_user, written_by_host, session, written_at FROM {TABLE}")}
    rows = []
    for i, line in enumerate(lines):
        o = old.get(seqs[i]) if same else None
        rows.append((line, *(o or (who[0], who[1], who[2], None))))
    return make_table(conn, rows, "purge or repair")


def make_table(conn, rows, why: str) -> tuple[str, list]:
    """Drop the table and make it again, in this mino's form (``shared_schema``: the
    trigger, the CHECKs), holding ``rows`` (``(line, user, host, session, written_at or
    None)``) in order, with the old table's grants; the comment says mino made it (every
    copy then starts over without keeping its old self). Caller: the owner, in a
    transaction under the lock. Returns the ``IDENTITY`` and ``(seq, line, user, host)``."""
    # an owner's one-off command over the whole table: not held to a write's bound
    conn.execute(f"SET LOCAL statement_timeout = '{OWNER_WAIT}s'")
    grants = conn.execute(_ACL).fetchall()
    conn.execute("CREATE TEMP TABLE mino_rewrite (ord bigint, line text, u text, h text, "
                 "s text, at timestamptz) ON COMMIT DROP")
    with conn.cursor().copy("COPY mino_rewrite (ord, line, u, h, s, at) FROM STDIN") as cp:
        for i, (line, u, h, s, at) in enumerate(rows):
            cp.write_row((i, line, u, h, clip(s or ""), at))
    conn.execute(f"DROP TABLE {TABLE}")
    make(conn)
    conn.execute(f"INSERT INTO {TABLE} (line, written_by_user, written_by_host, session, "
                 f"written_at) SELECT line, u, h, s, coalesce(at, now()) FROM mino_rewrite "
                 f"ORDER BY ord")
    conn.execute(sql.SQL("COMMENT ON TABLE {} IS {}").format(
        sql.Identifier(TABLE), sql.Literal(MADE_BY_MINO)))
    for kind, privilege, grantee in grants:
        target = sql.SQL("SEQUENCE {}").format(sql.Identifier(f"{TABLE}_seq_seq")) \
            if kind == "S" else sql.Identifier(TABLE)
        conn.execute(sql.SQL("GRANT {} ON {} TO {}").format(
            sql.SQL(privilege), target,
            sql.SQL("PUBLIC") if grantee is None else sql.Identifier(grantee)))
    ident = conn.execute(f"SELECT {IDENTITY}").fetchone()[0]
    out = conn.execute(f"SELECT seq, line, written_by_user, written_by_host FROM {TABLE} "
                       f"ORDER BY seq").fetchall()
    return str(ident), out
