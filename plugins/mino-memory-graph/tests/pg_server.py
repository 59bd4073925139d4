"""A throwaway PostgreSQL cluster for the shared-journal tests: real ``initdb`` and
``pg_ctl`` in a temporary folder, a unix socket there and a free loopback port.

PostgreSQL refuses to run as root and CI runs as root: there the cluster belongs to
``nobody`` (its folder is chowned to it and each server command runs under ``runuser``).
``PgServer.start`` raises ``Unavailable`` with the reason when it cannot start (no
PostgreSQL installed: ``scripts/postgres.sh`` installs it), and the tests that need it
skip with that reason while the rest of the suite runs.

Roles: ``postgres`` (superuser, trusted over the socket only), and per database from
``new_database``: an owner role (``<db>_owner``, owns the table) and the role mino
uses (``<db>_mino``: SELECT and INSERT, and USAGE on the sequence), both with passwords
over TCP (scram-sha-256).
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path


# The table as mino made it before its trigger and CHECKs (the upgrade tests start there).
LEGACY_DDL = """CREATE TABLE IF NOT EXISTS mino_journal (
    seq bigserial PRIMARY KEY,
    line text NOT NULL,
    written_by_user text NOT NULL,
    written_by_host text NOT NULL,
    session text NOT NULL DEFAULT '',
    written_at timestamptz NOT NULL DEFAULT now()
)"""


class Unavailable(Exception):
    pass


def bindir() -> Path | None:
    """The newest installed PostgreSQL's programs (Debian's layout, else PATH)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                   key=lambda p: int(p.split("/")[4]) if p.split("/")[4].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PgServer:
    def __init__(self, durable: bool = False):
        self.durable = durable  # fsync as a real server does (the benches); tests need not
        self.bin = bindir()
        self.base: Path | None = None
        self.port = 0
        self.running = False
        self.runas: list[str] = []
        self.n = 0

    # --- the cluster --------------------------------------------------------------

    def _run(self, *args, check=True, timeout=60):
        p = subprocess.run([*self.runas, *args], capture_output=True, text=True,
                           timeout=timeout, cwd=str(self.base), stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise Unavailable(f"{Path(args[0]).name} failed: {(p.stderr or p.stdout).strip()[-400:]}")
        return p

    def start(self) -> "PgServer":
        if self.bin is None:
            raise Unavailable("PostgreSQL is not installed (bash scripts/postgres.sh installs it)")
        root = os.geteuid() == 0
        # as root, in /tmp itself: nobody must be able to reach the folder, and a TMPDIR
        # may sit inside a private one
        self.base = Path(tempfile.mkdtemp(prefix="mino-pg-",
                                          dir="/tmp" if root and os.path.isdir("/tmp") else None))
        if root:
            try:
                nobody = pwd.getpwnam("nobody")
            except KeyError:
                raise Unavailable("running as root and there is no 'nobody' user to run "
                                  "PostgreSQL as") from None
            os.chown(self.base, nobody.pw_uid, nobody.pw_gid)
            runuser = shutil.which("runuser") or shutil.which("setpriv")
            if runuser is None:
                raise Unavailable("running as root without runuser or setpriv")
            self.runas = ([runuser, "-u", "nobody", "--"] if runuser.endswith("runuser")
                          else [runuser, f"--reuid={nobody.pw_uid}",
                                f"--regid={nobody.pw_gid}", "--clear-groups"])
        os.chmod(self.base, 0o755)
        self._run(str(self.bin / "initdb"), "-D", str(self.base / "data"), "-U", "postgres",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8",
                  "--no-sync", "--no-instructions", timeout=120)
        self._run("mkdir", "-p", str(self.base / "sock"))
        self.port = free_port()
        self.serve()
        return self

    def serve(self) -> None:
        """Start the server of the cluster (again, after ``stop``), on the same port."""
        opts = (f"-k {self.base / 'sock'} -p {self.port} -c listen_addresses=127.0.0.1 "
                "-c max_connections=60")
        if not self.durable:
            opts += " -c fsync=off -c full_page_writes=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.base / "data"), "-l",
                  str(self.base / "log"), "-o", opts, "-w", "-t", "60", "start", timeout=90)
        self.running = True

    def stop(self, mode: str = "fast") -> None:
        if self.running:
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.base / "data"), "-m", mode,
                      "-w", "stop", check=False)
            self.running = False

    def restart(self, down_for: float = 0.0, mode: str = "immediate") -> None:
        self.stop(mode)
        time.sleep(down_for)
        self.serve()

    def close(self) -> None:
        self.stop("immediate")
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)

    # --- databases and roles ------------------------------------------------------

    def admin(self, dbname: str = "postgres"):
        import psycopg

        return psycopg.connect(host=str(self.base / "sock"), port=self.port, user="postgres",
                               dbname=dbname, autocommit=True)

    def url(self, user: str, password: str, dbname: str, **params) -> str:
        q = "&".join(f"{k}={v}" for k, v in params.items())
        return (f"postgresql://{user}:{password}@127.0.0.1:{self.port}/{dbname}"
                + (f"?{q}" if q else ""))

    def new_database(self, make_table: bool = True) -> dict:
        """A fresh database with its owner and mino roles: their URLs."""
        self.n += 1
        db = f"t{os.getpid()}_{self.n}"
        owner, mino = f"{db}_owner", f"{db}_mino"
        with self.admin() as c:
            c.execute(f"CREATE ROLE {owner} LOGIN PASSWORD 'owner-secret-{self.n}'")
            c.execute(f"CREATE ROLE {mino} LOGIN PASSWORD 'mino-secret-{self.n}'")
            c.execute(f"CREATE DATABASE {db} OWNER {owner}")
        with self.admin(db) as c:
            c.execute(f"REVOKE CREATE ON SCHEMA public FROM PUBLIC")
            c.execute(f"GRANT CREATE ON SCHEMA public TO {owner}")
        out = {"db": db, "owner": owner, "mino": mino,
               "owner_url": self.url(owner, f"owner-secret-{self.n}", db),
               "mino_url": self.url(mino, f"mino-secret-{self.n}", db),
               "mino_password": f"mino-secret-{self.n}"}
        if make_table:
            import psycopg

            from mino_memory_graph.journal.shared_schema import TABLE, make

            with psycopg.connect(out["owner_url"], autocommit=True) as c:
                if make_table == "legacy":  # the table as an older mino made it
                    c.execute(LEGACY_DDL)
                else:
                    make(c)
                c.execute(f"GRANT SELECT, INSERT ON {TABLE} TO {mino}")
                c.execute(f"GRANT USAGE ON SEQUENCE {TABLE}_seq_seq TO {mino}")
        return out
