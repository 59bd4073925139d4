"""The process's open memories: one ``Memory`` (a store and what the loop caches about
it: standing ids, the pain-marker index) per journal path, at most ``_OPEN_MAX`` open; the
``memory.graph`` config section; a session's project identity."""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from . import standing, steer

NAME = "mino-memory-graph"


class Memory:
    """An open store and what the loop caches about it (standing ids, marker index)."""

    def __init__(self, store):
        self.store = store
        # a shared journal: each database role has its own profile (``journal_pg``)
        self.standing = standing.Standing(getattr(store.journal, "profile_is_mine", None))
        self.markers: dict[str, int] = {}   # signature -> pain marker id
        self.markers_scanned = 0            # node ids below this are in ``markers``

    @property
    def graph(self):
        return self.store.graph

    def marker_for(self, sig: str) -> int | None:
        """The pain marker for ``sig`` (call with the lock held and the graph current)."""
        g = self.graph
        if getattr(g, "partial", False):  # the index finds it; nothing to scan
            from ..state.partial import find_fact

            found = find_fact(g, "signature", sig, "Salience")
            return found[0] if found else None
        if self.markers_scanned < g.next_node:
            for nid in range(self.markers_scanned, g.next_node):
                n = g.nodes.get(nid)
                if n is not None and n.area == "Salience" and not n.deleted:
                    f = n.fact("signature")
                    if f is not None:
                        self.markers.setdefault(f.value, nid)
            self.markers_scanned = g.next_node
        nid = self.markers.get(sig)
        if nid is not None:
            n = g.nodes.get(nid)
            f = n.fact("signature") if n is not None and not n.deleted else None
            if f is None or f.value != sig or n.area != "Salience":
                del self.markers[sig]
                nid = steer.find_marker(g, sig)  # rare: the indexed marker changed
                if nid is not None:
                    self.markers[sig] = nid
        return nid


_open: "OrderedDict[str, Memory]" = OrderedDict()
_OPEN_MAX = 8


def memory_for(home, config) -> Memory:
    """The process's Memory for the journal that ``home``/``config`` name."""
    from ..journal.journal import resolve_journal_path
    from ..store import Store

    path = str(resolve_journal_path(home, config))
    mem = _open.get(path)
    if mem is not None:
        _open.move_to_end(path)
        return mem
    mem = Memory(Store.open(home=home, config=config))
    _open[path] = mem
    while len(_open) > _OPEN_MAX:
        _, old = _open.popitem(last=False)
        try:
            old.store.close()
        except Exception:  # noqa: BLE001
            pass
    return mem


def forget_open() -> None:
    """Close every open store (tests; a process that changes homes)."""
    while _open:
        _, mem = _open.popitem()
        try:
            mem.store.close()
        except Exception:  # noqa: BLE001
            pass


def section(config) -> dict:
    mem = (config or {}).get("memory") if isinstance(config, dict) else None
    g = mem.get("graph") if isinstance(mem, dict) else None
    return g if isinstance(g, dict) else {}


def switched_on(config, key: str) -> bool:
    """A ``memory.graph`` on/off setting that is on unless set off (``guard``, ``episodes``)."""
    return section(config).get(key, "on") not in (False, "off", "no", "false", "0")


def identity_of(session) -> str:
    st = session.state.setdefault(NAME, {})
    ident = st.get("identity")
    if ident is None:
        ident = st["identity"] = standing.project_identity(Path(session.project_root))
    return ident
