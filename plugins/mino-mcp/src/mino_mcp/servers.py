"""Every configured MCP server of one plugin host: their connections, listings and notices.

Starting lazily needs the tools before the server runs: the model must see a tool to call
it. So each server's last listing is kept in ``MINO_HOME/mcp/listings.json``, keyed by a
hash of how the server is launched; a ``lazy`` server with a listing for its launch offers
those tools and starts on the first call; one without (the first run, a changed command)
is started when tools are collected, which mino does once, for the first request. A
``session`` server starts when a session starts. Servers are started in parallel, so
several slow ones cost the slowest, not the sum.

A server that fails to start, hangs or dies is one notice (shown at the next turn or call)
and its tools then answer that it is not available; the session goes on without them.
Every server stops when the session ends and when mino exits.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from . import config
from .connection import Connection, Listing, ServerGone

LISTINGS = "listings.json"


class Servers:
    def __init__(self, context: Any, environ: dict[str, str] | None = None):
        self.settings = config.read(context.config, environ)
        self.home = Path(context.home)
        boxer = getattr(context, "sandbox_command", None)  # the core's, from mino-core 0.x on
        self.connections = {name: Connection(spec, Path(context.project_root), self.home / "logs",
                                             boxer)
                            for name, spec in self.settings.servers.items()}
        self._notices: list[str] = list(self.settings.problems)
        self._reported: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    # -- listings -------------------------------------------------------------

    def listings(self) -> dict[str, Listing]:
        """Each usable server's listing, for ``register_tools``: cached for a lazy server
        whose launch is unchanged, else from the server itself (started, in parallel)."""
        cached = self._read_cache()
        out: dict[str, Listing] = {}
        to_start = []
        for name, conn in self.connections.items():
            entry = cached.get(name)
            if (conn.spec.start == "lazy" and isinstance(entry, dict)
                    and entry.get("key") == conn.spec.fingerprint()):
                out[name] = Listing.from_dict(entry)
            else:
                to_start.append(name)
        out.update(self.start(to_start))
        return out

    def start(self, names: list[str]) -> dict[str, Listing]:
        """Start ``names`` in parallel; the listing of each that came up."""
        got: dict[str, Listing] = {}

        def one(name: str) -> None:
            try:
                got[name] = self.connections[name].start()
            except ServerGone as exc:
                self.report(name, str(exc))
            else:
                self._remember(name, got[name])

        threads = [threading.Thread(target=one, args=(n,), name=f"mino-mcp-start-{n}", daemon=True)
                   for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {n: got[n] for n in names if n in got}

    def use(self, name: str) -> Connection:
        """The running connection to ``name``, started if needed (ServerGone, reported
        once, when it cannot be)."""
        conn = self.connections[name]
        was_ready = conn.state == "ready"
        try:
            listing = conn.start()
        except ServerGone as exc:
            self.report(name, str(exc))
            raise
        if not was_ready:
            self._remember(name, listing)
        return conn

    def _cache_path(self) -> Path:
        return self.home / "mcp" / LISTINGS

    def _read_cache(self) -> dict[str, Any]:
        try:
            data = json.loads(self._cache_path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _remember(self, name: str, listing: Listing) -> None:
        """Keep the listing for the next lazy start; a cache that cannot be written only
        means the server is started at tool collection next time."""
        from mino_core import atomic_write

        with self._lock:
            data = self._read_cache()
            entry = {"key": self.connections[name].spec.fingerprint(), **listing.as_dict()}
            if data.get(name) == entry:
                return
            data[name] = entry
            try:
                atomic_write(self._cache_path(), json.dumps(data, indent=1), root=self.home, mode=0o600,
                             make_parents=True)
            except OSError:
                pass

    # -- notices --------------------------------------------------------------

    def report(self, name: str, why: str) -> None:
        """One notice per server and reason."""
        with self._lock:
            if (name, why) in self._reported:
                return
            self._reported.add((name, why))
            self._notices.append(f"MCP server {name} is not available: {why}. The session goes on "
                                 "without its tools.")

    def drain(self) -> list[str]:
        with self._lock:
            notices, self._notices = self._notices, []
        return notices

    # -- life -----------------------------------------------------------------

    def session_started(self) -> None:
        """Start the ``start: session`` servers in the background (the person can type)."""
        names = [n for n, c in self.connections.items() if c.spec.start == "session"]
        if names:
            threading.Thread(target=self.start, args=(names,), name="mino-mcp-session-start",
                             daemon=True).start()

    def stop_all(self) -> None:
        """Stop every server, in parallel: each may take a few seconds to leave."""
        threads = [threading.Thread(target=c.stop, name=f"mino-mcp-stop-{n}", daemon=True)
                   for n, c in self.connections.items() if c.state != "stopped" or c._task is not None]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        with self._lock:
            self._reported.clear()
