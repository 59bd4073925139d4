"""Who wrote a recalled memory, as the recall block says it.

Two questions, each answered from what the journal holds today:

- *where* it came from (``Origins.of``): ``this machine``, ``a teammate`` (a shared
  journal's node that no session of this machine wrote), or ``an import`` (``mino memory
  import-files``, or a node that says it was imported). With a file journal every node is
  this machine's, unless imported. With a shared journal the sessions a node names (its
  ``session`` fact, ``learned from``, its provenance lines, the episodes it derives from)
  are looked up among this home's session logs. ``Origins.authors`` (node id -> a name)
  is the slot for authorship the shared table records (its ``written_by_*`` columns):
  when it names a node, the block says that name.
- *who* wrote each text (``LOG_WRITER``, ``USER_WORDS``): a turn's ``message`` is the user's
  own words; a logged call is what the assistant did; an outcome is what mino observed;
  every other fact was written by the assistant (saved with memory_save or in a
  reflection), and never counts as the user's approval.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Mapping

THIS_MACHINE = "this machine"
TEAMMATE = "a teammate"
IMPORT = "an import"
SHARED = "the shared journal"  # a shared node that names no session: author unknown

USER_WORDS = "the user's own words"
# How each kind of log line was written, as the block marks it.
LOG_WRITER = {"tool_call": "the assistant's call", "tool_refused": "the assistant's call",
              "tool_invalid": "the assistant's call", "tool_error": "the assistant's call",
              "guarded": "observed by mino", "outcome": "observed by mino",
              "recurred": "observed by mino", "reflection": "written by the assistant",
              "provenance": "recorded by mino", "promoted": "recorded by mino"}
_PLAIN_ROLE = re.compile(r"[A-Za-z_][A-Za-z0-9_.@-]{0,62}")
_SESSION = re.compile(r"\bsession ([0-9a-f]{8,64})\b")


@dataclass(frozen=True)
class Origins:
    """Where recalled nodes came from, for one rendering of the block."""

    shared: bool = False
    local_sessions: frozenset = frozenset()
    authors: Mapping[int, str] = field(default_factory=dict)

    def of(self, graph, nid: int) -> str:
        n = graph.nodes.get(nid)
        if n is None:
            return THIS_MACHINE
        if nid in self.authors:
            return self.authors[nid]
        if n.fact("imported from") is not None or any(
                d.startswith("imported") for _, _, d in n.log_of("provenance")):
            return IMPORT
        if not self.shared:
            return THIS_MACHINE
        named = sessions_named(graph, nid)
        if not named:
            return SHARED
        return THIS_MACHINE if named & self.local_sessions else TEAMMATE


def sessions_named(graph, nid: int) -> set[str]:
    """The session ids a node names: its own facts and provenance lines, and for a pitfall
    the episodes it was derived from."""
    n = graph.nodes[nid]
    out = set()
    for f in n.facts:
        if f.key in ("session", "learned from"):
            out.update(_SESSION.findall(f"session {f.value}" if f.key == "session" else f.value))
    for _, _, detail in n.log_of("provenance"):
        out.update(_SESSION.findall(detail))
    if not out and n.area == "Salience":
        for e in graph.edges_of(nid):
            src = graph.nodes.get(e.src)
            if e.kind == "DerivedFrom" and e.dst == nid and src is not None:
                s = src.fact("session")
                if s is not None:
                    out.add(s.value)
    return out


class _Authors(Mapping):
    """Node id -> who wrote it, as the shared table's columns say (the database sets them,
    not the client), asked only for the nodes a block shows."""

    def __init__(self, journal) -> None:
        self._journal = journal
        self._said: dict[int, str | None] = {}

    def _name(self, nid: int) -> str | None:
        if nid not in self._said:
            try:
                who = self._journal.written_by("node", nid)
            except Exception:  # authorship is a label: never worth losing the block over
                who = None
            self._said[nid] = _describe(who)
        return self._said[nid]

    def __contains__(self, nid) -> bool:
        return isinstance(nid, int) and self._name(nid) is not None

    def __getitem__(self, nid: int) -> str:
        name = self._name(nid)
        if name is None:
            raise KeyError(nid)
        return name

    def __iter__(self):
        return iter(k for k, v in self._said.items() if v is not None)

    def __len__(self) -> int:
        return sum(v is not None for v in self._said.values())


def _describe(who: dict | None) -> str | None:
    """``a teammate (role ann)`` for a node another database role wrote; None otherwise.
    The role name is the database's word, shown only when it is a plain identifier (a
    quoted role may hold ``]`` or an order)."""
    if not who or who.get("mine") or who.get("claimed"):
        return None  # this role (or a client's claim): the session logs tell machines apart
    role = str(who.get("role", ""))
    return f"{TEAMMATE} (role {role})" if _PLAIN_ROLE.fullmatch(role) else TEAMMATE


def origins_for(store, home) -> Origins:
    """The origins of a store's nodes as seen from ``home`` (its session logs, and the
    shared table's authorship where it records one)."""
    if not getattr(store.journal, "shared", False):
        return Origins()
    try:
        local = frozenset(p.stem for p in (Path(home) / "sessions").glob("*.jsonl"))
    except OSError:
        local = frozenset()
    authors = _Authors(store.journal) if hasattr(store.journal, "written_by") else {}
    return Origins(shared=True, local_sessions=local, authors=authors)
