"""The shared journal's table, as its owner makes it (``mino`` itself, or the statements
printed for the owner to run), and what a teammate with the role mino uses cannot change:

- ``written_by_user`` (the database role, ``current_user``), ``written_by_host`` (the
  client's address as the server sees it, ``local`` over a socket) and ``written_at``
  are set by the database; a row that gives other values is refused. ``session`` is the
  client's own word (shown as such), bounded.
- ``seq`` is given out by the trigger under the journal's advisory lock, held to the
  commit (``pg_advisory_xact_lock``): a row inserted by hand, lock or no lock, still lands
  after every committed row, never before (copies read ``seq > last``), and a forged
  ``seq`` (2^63-1) is replaced.
- A row's line is at most ``MAX_ROW`` bytes (a CHECK), a session 200.

The table's owner may set the who-wrote-it columns (the owner's repair, purge and restore
copy them over). A table made by an older mino (no trigger) keeps working, its authorship
being whatever clients said, until the owner runs ``mino memory check --repair``, which
makes it again in this form (``shared_rewrite.make_table``).
"""
from __future__ import annotations

import hashlib

from .shared_check import MAX_ROW

TABLE = "mino_journal"
LOCK_KEY = int.from_bytes(hashlib.sha256(b"mino graph journal").digest()[:8], "big",
                          signed=True)
MAX_SESSION = 200
TRIGGER = "mino_journal_row"
MADE_BY_MINO = "mino journal: made again by mino"  # the table's comment after a rewrite

DDL = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    seq bigserial PRIMARY KEY,
    line text NOT NULL CONSTRAINT {TABLE}_line_size CHECK (octet_length(line) <= {MAX_ROW}),
    written_by_user text NOT NULL DEFAULT current_user,
    written_by_host text NOT NULL DEFAULT coalesce(host(inet_client_addr()), 'local'),
    session text NOT NULL DEFAULT ''
        CONSTRAINT {TABLE}_session_size CHECK (octet_length(session) <= {MAX_SESSION}),
    written_at timestamptz NOT NULL DEFAULT now()
)"""

# search_path pinned: a role with CREATE somewhere cannot shadow what the trigger calls
FUNCTION = f"""CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog AS $f$
DECLARE
  host text := coalesce(host(inet_client_addr()), 'local');
BEGIN
  IF NOT pg_has_role((SELECT relowner FROM pg_class WHERE oid = TG_RELID), 'USAGE') THEN
    IF NEW.written_by_user IS DISTINCT FROM current_user::text
       OR NEW.written_by_host IS DISTINCT FROM host THEN
      RAISE EXCEPTION 'who wrote a row of % is set by the database, not by the client',
        TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
    END IF;
    NEW.written_at := now();
  END IF;
  PERFORM pg_advisory_xact_lock({LOCK_KEY});
  NEW.seq := nextval(pg_get_serial_sequence(
    quote_ident(TG_TABLE_SCHEMA) || '.' || quote_ident(TG_TABLE_NAME), 'seq'));
  RETURN NEW;
END $f$"""

TRIGGER_DDL = (f"CREATE TRIGGER {TRIGGER} BEFORE INSERT ON {TABLE} FOR EACH ROW "
               f"EXECUTE FUNCTION {TRIGGER}()")


def grants(role: str = "mino") -> str:
    return (f"GRANT SELECT, INSERT ON {TABLE} TO {role}; "
            f"GRANT USAGE ON SEQUENCE {TABLE}_seq_seq TO {role};")


# ``seq`` has no default: the trigger alone gives it out (a default would spend a number
# before the trigger's own, leaving every other one unused)
NO_DEFAULT = f"ALTER TABLE {TABLE} ALTER COLUMN seq DROP DEFAULT"


def owner_statements(role: str = "mino") -> list[str]:
    """What the owner runs to make the table (mino runs them when its role may)."""
    return [DDL, NO_DEFAULT, FUNCTION, f"DROP TRIGGER IF EXISTS {TRIGGER} ON {TABLE}",
            TRIGGER_DDL, *[g.strip() for g in grants(role).split(";") if g.strip()]]


def make(conn) -> None:
    """Make the table, its trigger and function (the caller may: owner or CREATE)."""
    for stmt in owner_statements()[:5]:
        conn.execute(stmt)


def clip(text: str, nbytes: int = MAX_SESSION) -> str:
    """``text`` cut to at most ``nbytes`` bytes of UTF-8 (a whole character at the end)."""
    return text.encode("utf-8")[:nbytes].decode("utf-8", "ignore")


# One value, read in the connection's first round trip: 2 when the table has the trigger
# (database-set authorship, seq under the lock), 1 for an older mino's table.
VERSION = (f"(SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = "
           f"to_regclass('{TABLE}') AND tgname = '{TRIGGER}') THEN 2 ELSE 1 END)")
