"""The shared journal's module, loaded only by what opens one (the store, the commands):
``journal`` and ``shared_url`` only read URLs, so they import nothing of PostgreSQL."""
from __future__ import annotations


def journal_pg():
    """The shared journal's module (``journal_pg``: psycopg is imported now). Without
    psycopg, an ``OSError`` that says how to install it (every open reports those in one
    line)."""
    try:
        from . import journal_pg
    except ImportError as e:
        raise OSError("a shared memory journal (a postgresql:// URL) needs psycopg: "
                      f"pip install 'mino-memory-graph[postgres]' ({e})") from None
    return journal_pg
