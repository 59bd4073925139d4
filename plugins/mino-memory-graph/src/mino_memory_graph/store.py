"""``Store``: one journal, opened by this process, kept current with every other process.

Typical use::

    store = Store.open(home=context.home, config=context.config)
    with store.write() as req:          # exclusive lock, catch up, clock + 1
        node = req.create_node("Aspect", "deploy port")
        req.fact(node, "port", "8081")  # supersedes the current value of that key
    found = store.search("which port does deploy use", k=5)
    store.close()

Everything is read from the on-disk index (``state/index.py``), kept at the journal's end
under the journal's lock: recall (``recall/search.py``), state, history, counts, and the
graph a write request applies its ops to (``state/partial.PartialGraph``, nodes read from
the index when first touched). Every write request runs under the exclusive lock for its
whole length: it first lets the index apply whatever other processes appended, moves the
logical clock on by one (every op of the request shares that ``at``), allocates ids from
the now-current counters, applies each op to the graph as it is added, and on leaving the
``with`` block appends all the request's lines in one write, fsyncs, and lets the index
apply them. A block that raises appends nothing: all its ops or none. Reads take the shared
lock just long enough to catch up.
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from mino_core import plugin_logger

from .core import ops as _ops
from .core.errors import IndexUnavailable, MemoryError_
from .journal.journal import Journal, Report, fold_range, resolve_journal_path, _cap_raw
from .core.model import AREA_FOR_KIND, ApplyError, Graph
from .core.safety import redact_op

log = plugin_logger("mino.memory.graph")  # the log file and notices, not raw stderr


DEFAULT_SCORER = "hybrid-v1"
SCORER_NAMES = {"hybrid-v1": "hybrid-v1", "hybrid": "hybrid-v1", "default": "hybrid-v1",
                "mnemo": "mnemo", "mnemo-cosine": "mnemo", "hashing-v1": "mnemo"}


def hybrid_params(gcfg: dict | None):
    """hybrid-v1's parameters from ``memory.graph`` (``episode_weight``, ``vector_weight``);
    None: the defaults."""
    from .text.words import HybridParams

    def number(key, top):
        v = (gcfg or {}).get(key)
        ok = isinstance(v, (int, float)) and not isinstance(v, bool) and 0.0 <= v <= top
        return float(v) if ok else None
    kw = {}
    if number("episode_weight", 1.0) is not None:
        kw["episode"] = number("episode_weight", 1.0)
    if number("vector_weight", 5.0) is not None:
        kw["hashing"] = number("vector_weight", 5.0)
    return HybridParams(**kw) if kw else None


def scorer_name(spec=None) -> str:
    """``"hybrid-v1"`` (the default) or ``"mnemo"`` (Mnemo's exact ``cosine x area weight +
    votes x 0.02``) from a ``memory.graph.scorer`` setting; ValueError for another."""
    name = SCORER_NAMES.get(str(spec or DEFAULT_SCORER).strip().lower())
    if name is None:
        raise ValueError(f"unknown memory.graph.scorer {spec!r} "
                         f"(one of: {', '.join(sorted(set(SCORER_NAMES.values())))})")
    return name


def _parse_name(value: str, names, what: str) -> str:
    """``names``' spelling of ``value``, ignoring case, '_' and '-' (``part_of`` -> PartOf)."""
    k = str(value).replace("_", "").replace("-", "").lower()
    for name in names:
        if name.lower() == k:
            return name
    raise MemoryError_(f"unknown {what} {value!r} (one of: {', '.join(names)})")


def _parse_area(area: str) -> str:
    return _parse_name(area, _ops.AREAS, "area")


def _parse_kind(kind: str) -> str:
    return _parse_name(kind, _ops.NODE_KINDS, "node kind")


def _parse_edge_kind(kind: str) -> str:
    return _parse_name(kind, _ops.EDGE_KINDS, "edge kind")


class Request:
    """One write request: ops applied as they are added, appended together at the end."""

    def __init__(self, store: "Store", at: int):
        self.store = store
        self.graph = store.graph
        self.at = at
        self.lines: list[bytes] = []
        self.ops: list[tuple[str, dict]] = []

    # --- the primitive ------------------------------------------------------------

    def apply(self, name: str, body: dict) -> None:
        """Validate, apply and queue one op; raises ValueError / ApplyError untouched.
        Every text the op carries is redacted first (``safety.redact_op``): the one filter
        before every write, whoever planned the op."""
        body = redact_op(body)
        why = _ops.validate({name: body})
        if why:
            raise ValueError(why)
        try:
            line = _ops.encode(name, body)
        except UnicodeEncodeError:
            raise ValueError("text is not valid unicode (lone surrogate)") from None
        # Own ops do not move the clock: the request's ``at`` is the clock (as Mnemo).
        self.graph.handlers[name](body)
        self.lines.append(line)
        self.ops.append((name, body))

    # --- ids ----------------------------------------------------------------------

    def _node(self, id: int):
        n = self.graph.nodes.get(id)
        if n is None:
            raise MemoryError_(f"node {id} does not exist")
        return n

    # --- helpers mirroring Mnemo's requests --------------------------------------

    def create_node(self, kind: str, label: str, area: str | None = None) -> int:
        kind = _parse_kind(kind)
        id = self.graph.next_node
        self.apply(*_ops.create_node(id, kind, label, self.at))
        if area is not None and _parse_area(area) != AREA_FOR_KIND[kind]:
            self.apply(*_ops.set_area(id, _parse_area(area), self.at))
        return id

    def episode(self, label: str, area: str | None = None) -> int:
        return self.create_node("TaskEpisode", label, area)

    def add_fact(self, node: int, key: str, value: str) -> int:
        fid = self.graph.next_fact
        self.apply(*_ops.add_fact(node, fid, key, value, self.at))
        return fid

    def supersede(self, node: int, old_fact: int, new_key: str, new_value: str) -> int:
        fid = self.graph.next_fact
        self.apply(*_ops.supersede_fact(node, old_fact, new_key, new_value, fid, self.at))
        return fid

    def fact(self, node: int, key: str, value: str, append: bool = False):
        """Set ``key`` to ``value``: supersedes the current value unless ``append``.

        Returns ``(fact_id, superseded_fact_id_or_None)``.
        """
        n = self._node(node)
        cur = None if append else n.fact(key)
        if cur is not None:
            return self.supersede(node, cur.id, key, value), cur.id
        return self.add_fact(node, key, value), None

    def set_area(self, node: int, area: str) -> None:
        self.apply(*_ops.set_area(node, _parse_area(area), self.at))

    def delete(self, node: int, hard: bool = False) -> None:
        self.apply(*_ops.delete_node(node, bool(hard), self.at))

    def link(self, src: int, dst: int, kind: str = "SuppliesContext") -> int:
        kind = _parse_edge_kind(kind)
        if kind == "Supersedes":
            raise MemoryError_("Supersedes edges are declared by Mnemo but never linked")
        id = self.graph.next_edge
        self.apply(*_ops.link(id, src, dst, kind, self.at))
        return id

    def unlink(self, edge: int) -> None:
        self.apply(*_ops.unlink(edge, self.at))

    def reweight(self, edge: int, delta: float) -> float:
        self.apply(*_ops.reweight(edge, float(delta), self.at))
        return self.graph.edges[edge].weight

    def record_outcome(self, edge: int, success: bool) -> float:
        self.apply(*_ops.record_outcome(edge, bool(success), self.at))
        return self.graph.edges[edge].weight

    def commit_log(self, node: int, kind: str, detail: str) -> None:
        self.apply(*_ops.commit_log(node, kind, detail, self.at))

    def mark_useful(self, node: int, useful: bool = True) -> tuple[int, int]:
        self.apply(*_ops.record_usefulness(node, bool(useful), self.at))
        n = self.graph.nodes[node]
        return n.useful, n.unhelpful

    def push_context(self, to: int, from_: int, note: str, dim: int = 0,
                     vec=()) -> None:
        chunk = {"from": from_, "dim": dim, "vec": [float(x) for x in vec], "note": note}
        self.apply(*_ops.push_context(to, chunk, self.at))


class Store:
    """An open Mnemo journal with its on-disk index and recall."""

    def __init__(self, path: Path, *, scorer=None, embedder=None, fsync: bool = True,
                 journal: Journal | None = None, params=None):
        self.path = Path(path)
        self.params = params  # hybrid-v1's HybridParams (None: the defaults)
        # the file journal, or another implementation of its interface (journal_pg)
        self.journal = journal if journal is not None else Journal(self.path)
        self.fsync = fsync
        self.scorer_name = scorer_name(scorer)
        self._embedder = embedder  # memory.graph.embedder (None: hashing-v1)
        self._mutex = threading.RLock()
        self._writing = False
        self.offset = 0
        self._graph = None  # the PartialGraph, made when first needed (see ``graph``)
        self._held = ""  # "sh" / "ex" while this store holds the journal lock
        self.report = Report()        # everything the index has read
        self.index = None       # ``index.Index``: journal.index, kept in step (below)
        self._search = None
        self.index_note = ""

    # --- opening ------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str | None = None, *, home=None, config: dict | None = None,
             scorer=None, embedder=None, fsync: bool = True) -> "Store":
        """Open (creating if needed) the journal and its index, brought to its end."""
        journal = None
        if path is None:
            from .journal.shared_open import journal_pg
            from .journal.shared_url import shared_url

            url = shared_url(config)
            if url:  # the shared journal: psycopg is imported only here
                journal = journal_pg().open_shared(url, home)
                path = journal.path  # its local mirror: everything above reads that
            else:
                path = resolve_journal_path(home, config)
        gcfg = ((config or {}).get("memory") or {}).get("graph") if config else None
        gcfg = gcfg if isinstance(gcfg, dict) else {}
        if scorer is None:
            scorer = gcfg.get("scorer") or DEFAULT_SCORER
        if embedder is None and gcfg.get("embedder"):
            from .text.embed import embedder_from_config
            embedder = embedder_from_config(gcfg["embedder"], Path(path).parent / "embed")
        store = cls(Path(path), scorer=scorer, embedder=embedder, fsync=fsync,
                    journal=journal, params=hybrid_params(gcfg))
        try:
            with store._mutex, store._locked(False):
                store._open_index()
        except BaseException:
            store.close()
            raise
        return store

    @property
    def scorer(self):
        """The recall of this store over its index: ``search.IndexSearch`` (hybrid-v1)
        or ``search.MnemoSearch`` (Mnemo's rule)."""
        if self._search is None or self._search.index is not self.index:
            from .recall.search import IndexSearch, MnemoSearch

            make = MnemoSearch if self.scorer_name == "mnemo" else IndexSearch
            self._search = make(self.index, self._embedder, params=self.params)
        return self._search

    @property
    def graph(self):
        """The graph a write request applies its ops to and the loop's planners read:
        a ``PartialGraph`` over the index, made when first needed."""
        if self._graph is None:
            from .state.partial import PartialGraph

            with self._mutex:
                self._graph = PartialGraph(self.index)
        return self._graph

    @contextmanager
    def _locked(self, exclusive: bool):
        """The journal lock, once per store (flock converts, and a nested unlock would
        release the outer lock): an inner use under a held lock takes nothing."""
        if self._held:
            if exclusive and self._held != "ex":
                raise RuntimeError("a write under a shared journal lock")
            yield
            return
        with self.journal.locked(exclusive=exclusive):
            self._held = "ex" if exclusive else "sh"
            try:
                yield
            finally:
                self._held = ""

    # --- the index (journal.index): in step with every append, under the same lock ----

    def quarantined_total(self) -> int:
        """Bad lines in the whole journal as far as known (the index counts them all)."""
        return self.index.stat("quarantined")

    def _index_path(self) -> Path:
        return self.path.with_suffix(".index")

    def _open_index(self, rebuild: bool = False) -> None:
        """Open (rebuilding when needed, or asked) the index; caller holds a journal lock.
        An index that cannot be opened is made afresh from the journal (nothing saved is
        in it alone); one that cannot be made either is a one-line error."""
        from .state.index import Index

        try:
            self.index = Index.open(self.journal, rebuild=rebuild, lock=False)
            self.index_note = self.index.note
        except (OSError, sqlite3.Error) as e:
            log.warning("memory index %s not usable (%s): making it again",
                        self._index_path(), e)
            self._remove_index()
            try:
                self.index = Index.open(self.journal, rebuild=True, lock=False)
            except (OSError, sqlite3.Error) as e2:
                self.index = None
                raise IndexUnavailable(
                    f"the memory index {self._index_path()} cannot be made: {e2}") from None
            self.index_note = f"rebuilt: {e}"
        self.offset = self.index.offset
        self.report = self.index.report

    def _remove_index(self) -> None:
        if self.index is not None:
            self.index.close()
            self.index = None
        ix = self._index_path()
        for p in (ix, Path(str(ix) + "-journal")):
            try:
                os.unlink(p)
            except OSError:
                pass

    def _catch_up(self) -> int:
        """Bring the index, and the graph over it, to the journal's end (caller holds a
        lock). Returns ops read. A failing index is made again from the journal."""
        j = self.journal
        replaced = j.replaced()
        if replaced:  # rewritten (purge, repair): same size or not, reload it all
            j.reopen()
        ix = self.index
        if not replaced and j.size() == self.offset and ix.offset == self.offset:
            return 0
        before = ix.ops_applied
        read = self._index_step() or self.index.ops_applied - before
        if self._graph is not None:  # what it loaded is older than the index now
            self._graph.reload()
        return read

    def _index_step(self) -> int:
        """Let the index apply the journal's new lines (caller holds a lock). One out of
        step or failing is made again from the journal (the graph over it goes): returns
        the ops the new one read, else 0."""
        from .state.index import IndexInvalid

        try:
            self.index.catch_up()
            rebuilt = 0
        except (IndexInvalid, sqlite3.Error, OSError) as e:
            log.warning("memory index out of step (%s): rebuilding it", e)
            self._open_index(rebuild=True)
            self._graph = None
            rebuilt = self.index.ops_applied
        self.offset = self.index.offset
        self.report = self.index.report
        return rebuilt

    def refresh(self) -> int:
        """See other processes' writes now (shared lock). Returns lines read."""
        with self._mutex, self._locked(False):
            return self._catch_up()

    # --- writing ------------------------------------------------------------------

    @contextmanager
    def write(self):
        """One write request under the exclusive lock; see the module docstring."""
        with self._mutex:
            if self._writing:
                raise RuntimeError("a write request is already open on this store")
            self._writing = True
            try:
                with self._locked(True):
                    self._catch_up()
                    self.graph.clock += 1
                    req = Request(self, self.graph.clock)
                    try:
                        yield req
                    except BaseException:
                        # all or nothing: a block that raises keeps none of its ops (the
                        # graph they were applied to is read again from the index)
                        if req.lines:
                            self._forget_unsaved()
                        raise
                    else:
                        if req.lines:
                            try:
                                self.offset = self.journal.append(b"".join(req.lines),
                                                                  self.fsync)
                            except BaseException:
                                self._forget_unsaved()
                                raise
                            self._index_step()
            finally:
                self._writing = False

    def rewrite(self, make_chunks, keep_old: Path | None = None) -> int:
        """Replace the journal (purge, repair) under the exclusive lock, after catching
        up: ``make_chunks(journal)`` yields the new file's bytes from the current one.
        The index is rebuilt and the graph read again; other processes notice the new
        file under the lock (``Journal.replaced``) before their next read or append.
        Returns the new size."""
        with self._mutex:
            if self._writing:
                raise RuntimeError("a write request is open on this store")
            with self._locked(True):
                self._catch_up()
                size = self.journal.rewrite(make_chunks(self.journal), keep_old)
                self._reload_after_rewrite()
        return size

    def _reload_after_rewrite(self) -> None:
        """Drop what was derived from the old journal and make the index afresh."""
        with self._mutex, self._locked(False):  # (nothing more when a lock is held)
            self._graph = None
            self._search = None
            if self.index is not None:
                self.index.close()
                self.index = None
            self._open_index(rebuild=True)

    def _forget_unsaved(self) -> None:
        """The request's lines were not appended (a block raised, or a shared journal's
        server went away): the graph holds ops the journal lacks, so what it loaded goes,
        read again from the index when next needed; nothing else changed."""
        if self._graph is not None:
            self._graph.reload()

    # --- reading ------------------------------------------------------------------

    def search(self, query: str, k: int = 5, *, kind: str | None = None,
               areas: list[str] | None = None, scope: int | None = None,
               cross_area: float | None = None, refresh: bool = True):
        """Routed search; returns ``recall.Found`` (hits, routed, why)."""
        if refresh:
            self.refresh()
        with self._mutex:
            return self.scorer.search(
                query, k, kind=_parse_kind(kind) if kind else None,
                areas=[_parse_area(a) for a in areas or []], scope=scope,
                cross_area=cross_area)

    def search_json(self, query: str, k: int = 5, **kw) -> dict:
        """The documented ``--json`` shape of a search (see README)."""
        t0 = time.perf_counter()
        found = self.search(query, k, **kw)
        results = []
        for h in found.hits:
            r = self.index.row(h.node)
            results.append({
                "node": h.node, "score": round(float(h.score), 6), "via_graph": h.via_graph,
                "label": r[3] if r else "", "kind": r[1] if r else "",
                "area": r[2] if r else "", "state": self.index.state_of(h.node) if r else "",
            })
        return {"query": query, "k": k, "routed": found.routed, "cues": found.cues,
                "why": found.why, "path": found.path, "scorer": found.scorer,
                "results": results,
                "elapsed_ms": round((time.perf_counter() - t0) * 1000, 3)}

    def state(self, node: int) -> str:
        self.refresh()
        try:
            return self.index.state_of(node)
        except KeyError:
            raise MemoryError_(f"node {node} does not exist") from None

    def history(self, node: int) -> dict:
        self.refresh()
        try:
            return self.index.history(node)
        except KeyError:
            raise MemoryError_(f"node {node} does not exist") from None

    def stats(self) -> dict:
        self.refresh()
        out = self.index.counts()
        if getattr(self.journal, "shared", False):  # the database (no password); its copy
            out["copy"] = str(self.path)
        out.update({"journal": getattr(self.journal, "shown", None) or str(self.path),
                    "journal_bytes": self.offset,
                    "ops_read": self.report.ops, "quarantined": self.report.quarantined,
                    "skipped": self.report.skipped,
                    "scorer": self.scorer.name})
        return out

    # --- checking -----------------------------------------------------------------

    def check(self) -> dict:
        """Replay the whole journal afresh (the oracle: ``model.Graph``); report bad
        lines, and compare the index with the replay."""
        with self._mutex, self._locked(False):
            self._catch_up()
            g = Graph()
            rep = Report()
            bad: list[dict] = []
            fold_range(self.journal.read, 0, self.offset, g, rep, bad)
            rep.quarantined = len(bad)
            rep.bad = [{"offset": b["offset"], "reason": b["reason"],
                        "raw": _cap_raw(b["raw"], len(b["raw"]))[:200]}
                       for b in bad[: Report.KEEP]]
            index_info = self._check_index(g)
            g.release()
            # a shared journal's copy against its record, and the rows refused everywhere
            shared = self.journal.check_copy() if getattr(self.journal, "shared", False) \
                else None
        ok = (index_info["matches_replay"] and rep.quarantined == 0 and rep.skipped == 0
              and not (shared and shared["problems"]))
        extra = {"shared": shared} if shared is not None else {}
        return {**extra, "ok": ok, "journal": str(self.path), "bytes": self.offset,
                "replay": rep.as_dict(), "index": index_info}

    def _check_index(self, replayed: Graph) -> dict:
        """The index against a replay of the whole journal (caller holds a lock)."""
        from .state.index import compare

        info = {"path": str(self._index_path()), "note": self.index_note}
        try:
            self.index.catch_up()
            info["offset"] = self.index.offset
            why = self.index.verify() or compare(self.index, replayed)
        except Exception as e:  # noqa: BLE001 - a damaged index is a finding, not a crash
            why = f"unreadable: {type(e).__name__}: {e}"
        info["matches_replay"] = why is None
        if why:
            info["difference"] = why
        return info

    def close(self) -> None:
        with self._mutex:
            if self.index is not None:
                self.index.close()
                self.index = None
            self.journal.close()
            self._graph = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_store(home=None, config: dict | None = None, **kw) -> Store:
    """Open the store where mino's config says it lives."""
    return Store.open(home=home, config=config, **kw)


__all__ = ["ApplyError", "Request", "Store", "open_store"]
