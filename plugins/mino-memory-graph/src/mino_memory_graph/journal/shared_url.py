"""Where a shared (PostgreSQL) journal is configured, and how its address is shown.

Cheap to import (no psycopg): ``Store.open`` asks ``shared_url`` on every open, and a
file journal must start exactly as before.

- ``MINO_GRAPH_URL`` wins, then ``memory.graph.journal`` when it is a ``postgresql://``
  (or ``postgres://``) URL; anything else is a file path (``journal.py``).
- A password may sit in the URL (config.yaml is 0600), in ``PGPASSWORD`` or in
  ``.pgpass``: libpq reads the last two itself. ``masked`` is the only form of the
  address that reaches a message, and ``scrub`` takes the password out of any text
  (libpq's own errors included) before it is shown.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

SCHEMES = ("postgresql://", "postgres://")


def is_url(value) -> bool:
    return isinstance(value, str) and value.strip().lower().startswith(SCHEMES)


def shared_url(config: dict | None = None, mnemo_wins: bool = True) -> str | None:
    """The configured shared journal's URL, or None for a file journal.

    ``mnemo_wins``: ``MNEMO_MEMORY_JOURNAL`` (a file) wins over config, as for every open;
    ``push`` and ``export``, which are about the shared journal and a file, pass False."""
    env = os.environ.get("MINO_GRAPH_URL", "").strip()
    if env:
        return env
    if mnemo_wins and os.environ.get("MNEMO_MEMORY_JOURNAL"):
        return None  # Mnemo's variable names a file, and it wins over config (journal.py)
    mem = (config or {}).get("memory") if isinstance(config, dict) else None
    g = mem.get("graph") if isinstance(mem, dict) else None
    value = g.get("journal") if isinstance(g, dict) else None
    return value.strip() if is_url(value) else None


_NETLOC_PW = re.compile(r"(://[^/@:?#]*:)[^@/]*@")
_PARAM_PW = re.compile(r"((?:^|[?&\s])password=)[^&\s]*", re.IGNORECASE)


def password_of(url: str) -> str:
    try:
        pw = urlsplit(url).password
    except ValueError:
        pw = None
    if pw:
        return unquote(pw)
    m = re.search(r"[?&]password=([^&]*)", url, re.IGNORECASE)
    return unquote(m.group(1)) if m else ""


def masked(url: str) -> str:
    """The URL with any password replaced by ``***``."""
    return _PARAM_PW.sub(r"\1***", _NETLOC_PW.sub(r"\1***@", url))


def scrub(text: str, url: str) -> str:
    """``text`` with the URL's password (and ``PGPASSWORD``'s) replaced by ``***``."""
    text = masked(text)
    # libpq never repeats a password in its errors; this is for text that quotes the URL
    # some other way. A password under 4 characters is left to ``masked``: replacing it
    # everywhere would garble the message and tell its length and letters anyway.
    for pw in {password_of(url), os.environ.get("PGPASSWORD", "")}:
        if len(pw) >= 4:
            text = text.replace(pw, "***")
    return text


def where(url: str) -> dict:
    """Host, port, database and user the URL names (libpq's defaults from ``PG*``)."""
    host = port = user = None
    db, query = "", ""
    try:  # a malformed URL (a bad IPv6 host, a port not a number) names what it can;
        # connecting then says what is wrong with it, in one line
        u = urlsplit(url)
        db, query, user = unquote(u.path.lstrip("/")), u.query, u.username
        host = u.hostname
        port = u.port
    except ValueError:
        pass
    q = dict(p.split("=", 1) for p in (query or "").split("&") if "=" in p)
    return {"host": q.get("host") or host or os.environ.get("PGHOST") or "local",
            "port": str(q.get("port") or port or os.environ.get("PGPORT") or 5432),
            "dbname": q.get("dbname") or db or os.environ.get("PGDATABASE")
            or user or os.environ.get("PGUSER") or "postgres"}


def mirror_path(url: str, home=None) -> Path:
    """This machine's copy of the shared journal ``url`` names, under ``home``."""
    if home is None:
        home = Path(os.environ.get("MINO_HOME") or Path.home() / ".mino")
    return Path(home) / "graph" / "shared" / identity(url) / "journal.jsonl"


def identity(url: str) -> str:
    """A folder name for this database's local mirror: ``<dbname>-<hash of where>``.

    The user and password are left out: whoever connects, the journal is the same."""
    w = where(url)
    h = hashlib.sha256(f"{w['host']}\0{w['port']}\0{w['dbname']}".encode()).hexdigest()[:12]
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", w["dbname"])[:40] or "db"
    return f"{name}-{h}"
