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
# Which table a copy holds: its oid, its file, and whether mino made it (the comment a
# rewrite leaves). A table made again has a new oid, and a TRUNCATE gives the table a
# new file: either way the copy starts over. (VACUUM FULL and CLUSTER give a new file
# too: the copy is then read again for nothing but the time, its old self kept.)
IDENTITY = (f"to_regclass('{TABLE}')::oid::text || '/' || "
            f"pg_relation_filenode(to_regclass('{TABLE}'))::text || '/' || "
            f"(coalesce(obj_description(to_regclass('{TABLE}'), 'pg_class'), '') "
            f"= '{MADE_BY_MINO}')::int::text")

DDL = f"""CREATE TABLE IF NOT EXISTS {TABLE} (
    seq bigserial PRIMARY KEY,
    line text NOT NULL CONSTRAINT {TABLE}_line_size CHECK (octet_length(line) <= {MAX_ROW}),
    written_by_user text NOT NULL DEFAULT current_user,
    written_by_host text NOT NULL DEFAULT coalesce(host(inet_client_addr()), 'local'),
    session text NOT NULL DEFAULT ''
        CONSTRAINT {TABLE}_session_size CHECK (octet_length(session) <= {MAX_SESSION}),
    written_at timestamptz NOT NULL DEFAULT now()
)"""

# Every name the trigger calls is pg_catalog's, spelt out: pg_catalog is searched before
# anything a session puts in its search_path, and a role mino uses may create functions
# nowhere (pg_temp is never searched for functions). No ``SET search_path`` clause: it
# would cost every row a configuration save and restore. The owner may set who wrote a
# row (the rewrites copy it); checked only when a row differs from the defaults.
FUNCTION = f"""CREATE OR REPLACE FUNCTION {TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
  -- one row comparison on the usual path (each separate test costs a row ~10 us)
  IF (NEW.written_by_user, NEW.written_by_host, NEW.written_at) IS DISTINCT FROM
     (current_user::text, coalesce(pg_catalog.host(pg_catalog.inet_client_addr()), 'local'),
      pg_catalog.now()) THEN
    -- (a subquery is no simple expression: kept off the usual path)
    IF NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c
                                   WHERE c.oid = TG_RELID), 'USAGE') THEN
      IF (NEW.written_by_user, NEW.written_by_host) IS DISTINCT FROM
         (current_user::text, coalesce(pg_catalog.host(pg_catalog.inet_client_addr()),
                                       'local')) THEN
        RAISE EXCEPTION 'who wrote a row of % is set by the database, not by the client',
          TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
      END IF;
      NEW.written_at := pg_catalog.now();
    END IF;
  END IF;
  PERFORM pg_catalog.pg_advisory_xact_lock({LOCK_KEY});
  NEW.seq := pg_catalog.nextval(TG_ARGV[0]::pg_catalog.regclass);
  RETURN NEW;
END $f$"""

# the sequence is named in full when the trigger is made (the function resolves nothing)
TRIGGER_DDL = (f"DO $d$ BEGIN EXECUTE pg_catalog.format('CREATE TRIGGER {TRIGGER} BEFORE "
               f"INSERT ON {TABLE} FOR EACH ROW EXECUTE FUNCTION {TRIGGER}(%L)', "
               f"pg_catalog.pg_get_serial_sequence('{TABLE}', 'seq')); END $d$")


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
