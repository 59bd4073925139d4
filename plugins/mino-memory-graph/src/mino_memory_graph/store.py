"""``Store``: one journal, opened by this process, kept current with every other process.

Typical use::

    store = Store.open(home=context.home, config=context.config)
    with store.write() as req:          # exclusive lock, catch up, clock + 1
        node = req.create_node("Aspect", "deploy port")
        req.fact(node, "port", "8081")  # supersedes the current value of that key
    found = store.search("which port does deploy use", k=5)
    brief = store.recall_brief("which port does deploy use")
    store.close()

Every write request runs under the exclusive lock for its whole length: it first applies
whatever other processes appended since this store last looked, moves the logical
clock on by one (every op of the request shares that ``at``), allocates ids from the
now-current counters, applies each op to the graph as it is added, and on leaving the
``with`` block appends all the request's lines in one write and fsyncs. A block that
raises appends nothing: all its ops or none. Reads take the shared lock just long enough
to catch up.
"""
from __future__ import annotations

import hashlib
import sqlite3
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from mino_core import plugin_logger

from .core import ops as _ops
from .core.errors import MemoryError_  # noqa: F401 - the store's name for callers
from .journal.journal import Journal, Report, fold_range, resolve_journal_path, _cap_raw
from .core.model import AREA_FOR_KIND, ApplyError, Graph
from .core.safety import redact_op

log = plugin_logger("mino.memory.graph")  # the log file and notices, not raw stderr


def _cache():
    """The in-memory design's derived cache (imported where used: the index's paths,
    a search from the shell among them, never need it)."""
    from .state import cache

    return cache

_HASH = "sha256"  # cache.HASH: the running hash the derived cache is checked by

CACHE_MIN_OPS = 20_000  # below this a replay is faster than worrying about a cache


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


def scorer_factory(spec=None, embedder=None, params=None):
    """A ``factory(graph) -> scorer`` from a scorer setting.

    ``spec`` is a name (``"hybrid-v1"``, the default, or ``"mnemo"``: Mnemo's exact
    ``cosine x area weight + votes x 0.02``), a ready scorer object (used as is), or a
    callable taking the graph and returning a scorer (a class such as ``HybridScorer``
    works). ``embedder`` is the vector embedder of the named scorers (hashing-v1 when
    None).
    """
    if spec is None:
        spec = DEFAULT_SCORER
    if isinstance(spec, str):
        name = SCORER_NAMES.get(spec.strip().lower())
        if name is None:
            raise ValueError(f"unknown memory.graph.scorer {spec!r} "
                             f"(one of: {', '.join(sorted(set(SCORER_NAMES.values())))})")
        # imported when the first recall needs a scorer (numpy comes with them), not
        # while a store opens
        if name == "mnemo":
            def mnemo(graph):
                from .recall.recall import MnemoScorer

                return MnemoScorer(embedder)
            return mnemo

        def hybrid(graph):
            from .recall.hybrid import HybridScorer

            return HybridScorer(graph, params, embedder=embedder)
        return hybrid
    if hasattr(spec, "scores") and not isinstance(spec, type):
        return lambda graph: spec
    if callable(spec):
        return spec
    raise TypeError(f"not a scorer, scorer name or scorer factory: {spec!r}")


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
    """An open Mnemo journal with its graph, recall engine and derived cache."""

    def __init__(self, path: Path, *, scorer=None, embedder=None, fsync: bool = True,
                 use_cache: bool = True, use_index: bool = True, lazy: bool = False,
                 journal: Journal | None = None, params=None):
        self.path = Path(path)
        self.params = params  # hybrid-v1's HybridParams (None: the defaults)
        # the file journal, or another implementation of its interface (journal_pg)
        self.journal = journal if journal is not None else Journal(self.path)
        self.cache_path = self.path.with_suffix(".cache")
        self.fsync = fsync
        self.use_cache = use_cache
        self._scorer_arg = scorer
        self._embedder = embedder
        self.scorer_factory = scorer_factory(scorer, embedder, params)
        self._mutex = threading.RLock()
        self._writing = False
        self.offset = 0
        self._graph: Graph | None = None  # built when first needed (see ``graph``)
        self._held = ""  # "sh" / "ex" while this store holds the journal lock
        self.lazy = lazy
        self._engine = None
        self.report = Report()        # everything this store has read so far
        self.loaded_from_cache = False
        self.cache_note = ""
        self.ops_since_cache = 0
        self._reset_hash()  # of journal bytes [0, _hashed): kept as the journal grows
        self.use_index = use_index
        self.index = None       # ``index.Index``: journal.index, kept in step (below)
        self._index_search = None
        self.index_note = ""

    # --- opening ------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path | str | None = None, *, home=None, config: dict | None = None,
             scorer=None, embedder=None, fsync: bool = True,
             use_cache: bool = True, use_index: bool | None = None,
             lazy: bool = False) -> "Store":
        """Open (creating if needed) the journal and load it, from the cache when valid.

        ``lazy``: open the index alone; the graph is built only when something needs it
        (a write, the ``mnemo`` scorer, ``check``). A search, ``state``, ``history`` or
        ``stats`` then never builds it: what ``mino memory`` commands use."""
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
        if embedder is None and isinstance(scorer, str):
            emb_cfg = gcfg.get("embedder")
            if emb_cfg:
                from .text.embed import embedder_from_config
                embedder = embedder_from_config(emb_cfg, Path(path).parent / "embed")
        if use_index is None:
            use_index = str(gcfg.get("index", "on")).strip().lower() not in (
                "off", "false", "no", "0")
        store = cls(Path(path), scorer=scorer, embedder=embedder, fsync=fsync,
                    use_cache=use_cache, use_index=use_index, lazy=lazy, journal=journal,
                    params=hybrid_params(gcfg))
        try:
            store._load()
        except BaseException:
            store.close()
            raise
        return store

    def _make_engine(self, graph: Graph):
        from .recall.recall import RecallEngine

        return RecallEngine(graph, self.scorer_factory(graph))

    @property
    def engine(self):
        if self._engine is None:
            self._engine = self._make_engine(self.graph)
        return self._engine

    @property
    def scorer(self):
        if self.index_search is not None:
            return self.index_search
        return self.engine.scorer

    @property
    def index_search(self):
        """The index's recall (``search.IndexSearch``) when it serves this store: the
        default scorer over ``hashing-v1``, the index open. Else None (the engine)."""
        name = SCORER_NAMES.get(str(self._scorer_arg).strip().lower())
        if self.index is None or name is None or (
                self._embedder is not None and name != "mnemo"):
            return None
        if self._index_search is None or self._index_search.index is not self.index:
            from .recall.search import IndexSearch, MnemoSearch

            make = MnemoSearch if name == "mnemo" else IndexSearch
            self._index_search = make(self.index, self._embedder, params=self.params)
        return self._index_search

    @property
    def graph(self) -> Graph:
        """The graph in memory, for writes and the loop's planners. With the index
        open it is built on first use (from the derived cache or the journal); a search,
        ``state``, ``history`` or ``stats`` is answered from the index without it."""
        if self._graph is None:
            with self._mutex:
                if self._held:  # this thread holds the journal lock already
                    self._load_graph()
                else:
                    with self._locked(False):
                        self._load_graph()
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

    @graph.setter
    def graph(self, value: Graph) -> None:
        self._graph = value

    @property
    def graph_built(self) -> bool:
        return self._graph is not None

    def _load(self, rebuild_index: bool = False) -> None:
        with self._mutex, self._locked(False):  # (nothing more when a lock is held)
            if self.use_index:
                self._open_index(rebuild_index)
                if self.index is not None and self.lazy:
                    self.offset = self.index.offset
                    self.report = self.index.report
                    return
            self._load_graph()

    @property
    def partial(self) -> bool:
        """The graph is a ``PartialGraph`` over the index (nodes loaded when touched)."""
        return getattr(self._graph, "partial", False)

    def _load_graph(self) -> None:
        """Build the graph (caller holds the mutex and a journal lock): over the index
        when the index serves recall (``partial.PartialGraph``), else in memory."""
        if self.index_search is not None and self.use_cache:
            from .state.partial import PartialGraph

            self.index.catch_up()
            self.graph = PartialGraph(self.index)
            self.offset = self.index.offset
            self.report = self.index.report
            self.cache_note = "not used: the graph is read from the index"
            return
        if True:
            self.graph = Graph()
            self.report = Report()
            self._engine = None
            self.offset = 0
            self.loaded_from_cache = False
            if self.use_cache and self.cache_path.exists():
                try:
                    scorer_name = getattr(self._scorer_arg, "name", None) or ""
                    g, eng, off, h = _cache().load(self.cache_path, self.journal,
                                                 self._make_engine, scorer_name)
                    self.graph, self._engine, self.offset = g, eng, off
                    self._hash, self._hashed = h, off
                    self.loaded_from_cache = True
                    self.cache_note = "valid"
                except _cache().CacheInvalid as e:
                    self.cache_note = f"rebuilt: {e}"
                    log.info("derived cache not used: %s", e)
            before = self.report.ops
            self._catch_up()
            self.ops_since_cache = self.report.ops - before

    # --- the index (journal.index): in step with every append, under the same lock ----

    def quarantined_total(self) -> int:
        """Bad lines in the whole journal as far as known: the index counts them all;
        the graph's report, what this open read."""
        if self.index is not None and (self._graph is None or self.partial):
            return self.index.stat("quarantined")
        return self.report.quarantined

    def _open_index(self, rebuild: bool = False) -> None:
        """Open (rebuilding when needed, or asked) the index; caller holds a journal lock."""
        from .state.index import Index

        try:
            self.index = Index.open(self.journal, rebuild=rebuild, lock=False)
            self.index_note = self.index.note
        except (OSError, sqlite3.Error) as e:
            self.index = None
            self.index_note = f"not available: {e}"
            log.warning("memory index %s not available: %s",
                        self.path.with_suffix(".index"), e)

    def _index_catch_up(self) -> None:
        """Bring the index to the journal's end (caller holds a journal lock). A failure
        costs only the index: it is rebuilt, or left for the next open."""
        if self.index is None:
            return
        from .state.index import IndexInvalid

        try:
            self.index.catch_up()
        except (IndexInvalid, sqlite3.DatabaseError) as e:
            log.warning("memory index out of step (%s): rebuilding it", e)
            try:
                self.index.rebuild()
                self.index_note = f"rebuilt: {e}"
            except (OSError, sqlite3.Error) as e2:
                self.index_note = f"not available: {e2}"
                self.index.close()
                self.index = None
        except (OSError, sqlite3.Error) as e:
            log.warning("memory index not updated: %s", e)

    def _catch_up(self) -> int:
        """Apply lines appended since ``offset`` (caller holds a lock). Returns ops read."""
        j = self.journal
        if self._graph is None:  # the index alone
            if j.replaced():
                j.reopen()
            before = self.index.ops_applied if self.index is not None else 0
            self._index_catch_up()
            if self.index is None:  # it failed for good: the graph takes over
                self._load_graph()
                return self.report.ops
            self.offset = self.index.offset
            self.report = self.index.report
            return self.index.ops_applied - before
        if self.partial:  # the index takes the tail; the graph reads it from there
            replaced = j.replaced()
            if replaced:  # rewritten (purge, repair): same size or not, reload it all
                j.reopen()
            if not replaced and j.size() == self.offset and self.index.offset == self.offset:
                return 0
            before = self.index.ops_applied
            self._index_catch_up()
            if self.index is None:  # it failed for good: the graph in memory takes over
                self._graph = None
                self._load_graph()
                return self.report.ops
            self._graph.reload()
            self.offset = self.index.offset
            self.report = self.index.report
            return self.index.ops_applied - before
        if j.replaced():
            j.reopen()
            self.offset = j.size() + 1  # force the reload below
        size = j.size()
        if size == self.offset:
            return 0
        if size < self.offset:
            log.warning("journal %s shrank or was replaced; reloading it", self.path)
            self.graph.release()
            self.graph = Graph()
            self._engine = None
            self.offset = 0
        if self.offset == 0:
            self._reset_hash()
        report = Report()
        bad: list[dict] = []
        start = self.offset
        whole = j.last_newline(start, size)  # past it: a dead writer's torn line
        # the running hash follows only when it covers everything before ``start``
        seen = self._hash.update if self._hashed == start else None
        fold_range(j.read, start, size, self.graph, report, bad, long_lived=True, seen=seen)
        if seen is not None:
            self._hashed = size
        for b in bad:
            if b["offset"] >= whole:  # under either lock, an unterminated tail is torn
                b["reason"] = "torn last line (a writer died mid-line): " + b["reason"]
        if bad:
            report.quarantined += len(bad)
            report.bad.extend({"offset": b["offset"], "reason": b["reason"]}
                              for b in bad[: Report.KEEP])
            new = j.quarantine(bad)
            log.warning("journal %s: %d bad line(s) skipped (%d newly recorded in %s)",
                        self.path, len(bad), new, j.corrupt_path)
        self.offset = size
        self.report.merge(report)
        self.ops_since_cache += report.ops
        self._index_catch_up()
        return report.ops + report.quarantined

    # --- the running hash of the journal (the derived cache's proof of its prefix) ---

    def _reset_hash(self) -> None:
        # (``cache.new_hash``'s, without importing the cache: an index-backed open never
        # reads it)
        self._hash = hashlib.new(_HASH)
        self._hashed = 0

    def _prefix_hash(self, offset: int):
        """The running hash brought up to ``offset`` (caller holds a lock; ``offset`` is
        at most ``self.offset``): bytes not yet hashed, such as a worker's range, are
        read now."""
        if self._hashed < offset:
            _cache().hash_range(self.journal, self._hashed, offset, self._hash)
            self._hashed = offset
        return self._hash

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
                        # graph they were applied to goes, rebuilt from the journal)
                        if req.lines:
                            self._forget_unsaved()
                        raise
                    else:
                        if req.lines:
                            seen = self._hash.update if self._hashed == self.offset else None
                            try:
                                self.offset = self.journal.append(b"".join(req.lines),
                                                                  self.fsync, seen)
                            except BaseException:
                                self._forget_unsaved()
                                raise
                            if seen is not None:
                                self._hashed = self.offset
                            self.ops_since_cache += len(req.lines)
                            self._index_catch_up()
            finally:
                self._writing = False

    def rewrite(self, make_chunks, keep_old: Path | None = None) -> int:
        """Replace the journal (purge, repair) under the exclusive lock, after catching
        up: ``make_chunks(journal)`` yields the new file's bytes from the current one.
        Everything derived is dropped and rebuilt (the cache file removed, the index
        rebuilt, the graph reloaded); other processes notice the new file under the lock
        (``Journal.replaced``) before their next read or append. Returns the new size."""
        with self._mutex:
            if self._writing:
                raise RuntimeError("a write request is open on this store")
            with self._locked(True):
                self._catch_up()
                size = self.journal.rewrite(make_chunks(self.journal), keep_old)
                self._reload_after_rewrite()
        return size

    def _reload_after_rewrite(self) -> None:
        """Drop what was derived from the old journal and load the new one (caller holds
        the exclusive lock)."""
        try:
            self.cache_path.unlink()
        except FileNotFoundError:
            pass
        if self._engine is not None and hasattr(self._engine.scorer, "release"):
            self._engine.scorer.release()
        self._engine = None
        if self._graph is not None:
            self._graph.release()
            self._graph = None
        self._index_search = None
        self.report = Report()
        self.offset = 0
        self.loaded_from_cache = False
        self._reset_hash()
        if self.index is not None:
            self.index.close()
            self.index = None
        if not self.use_index:  # an index another open left is derived from the old text
            ix = self.path.with_suffix(".index")
            for p in (ix, Path(str(ix) + "-journal")):
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass
        self._load(rebuild_index=True)  # as an open does, the index made afresh

    def _forget_unsaved(self) -> None:
        """The request's lines were not appended (a shared journal's server went away):
        the graph holds ops the journal lacks, so it goes, to be built again from the
        journal when next needed; nothing else changed."""
        if self._graph is not None:
            self._graph.release()
        self._graph = None
        self._engine = None
        self.loaded_from_cache = False
        if self.index is not None:
            self.offset = self.index.offset
            self.report = self.index.report
        else:
            self.offset = 0
            self.report = Report()
            self._reset_hash()

    def apply_ops(self, ops_list) -> int:
        """Apply pre-built ``(name, body)`` ops (a planner's output) as one request.

        The caller allocated ids from the counters it read; ``at`` fields are replaced by
        this request's clock. Returns the request's ``at``.
        """
        with self.write() as req:
            for name, body in ops_list:
                body = dict(body)
                body["at"] = req.at
                req.apply(name, body)
            return req.at

    # --- reading ------------------------------------------------------------------

    def search(self, query: str, k: int = 5, *, kind: str | None = None,
               areas: list[str] | None = None, scope: int | None = None,
               cross_area: float | None = None, refresh: bool = True):
        """Routed brute-force search; returns ``recall.Found`` (hits, routed, why)."""
        if refresh:
            self.refresh()
        with self._mutex:
            fast = self.index_search
            if fast is not None:
                return fast.search(
                    query, k, kind=_parse_kind(kind) if kind else None,
                    areas=[_parse_area(a) for a in areas or []], scope=scope,
                    cross_area=cross_area)
            return self.engine.search(
                query, k, kind=_parse_kind(kind) if kind else None,
                areas=[_parse_area(a) for a in areas or []], scope=scope,
                cross_area=cross_area)

    def search_json(self, query: str, k: int = 5, **kw) -> dict:
        """The documented ``--json`` shape of a search (see README)."""
        t0 = time.perf_counter()
        found = self.search(query, k, **kw)
        results = []
        for h in found.hits:
            n = self._node_facts(h.node)
            results.append({
                "node": h.node, "score": round(float(h.score), 6), "via_graph": h.via_graph,
                "label": n[0] if n else "", "kind": n[1] if n else "",
                "area": n[2] if n else "", "state": self._state_of(h.node) if n else "",
            })
        return {"query": query, "k": k, "routed": found.routed, "cues": found.cues,
                "why": found.why, "path": found.path, "scorer": found.scorer,
                "results": results,
                "elapsed_ms": round((time.perf_counter() - t0) * 1000, 3)}

    def recall_brief(self, query: str, k: int = 5, *, areas: list[str] | None = None,
                     scope: int | None = None) -> dict:
        """``{"block", "routed", "hits", "why"}``: the text block a model reads."""
        from .recall.brief import brief_block

        found = self.search(query, k, areas=areas, scope=scope)
        with self._mutex:
            if self._graph is None:
                block = brief_block(None, query, found, state_of=self.index.state_of,
                                    last_at=self.index.last_at)
            else:
                block = brief_block(self.graph, query, found)
        return {"block": block, "routed": found.routed, "why": found.why,
                "hits": [{"node": h.node, "score": h.score, "via_graph": h.via_graph}
                         for h in found.hits]}

    def _node_facts(self, node: int):
        """``(label, kind, area)`` of a node, None when it does not exist."""
        if self._graph is None:
            r = self.index.row(node)
            return (r[3], r[1], r[2]) if r else None
        n = self._graph.nodes.get(node)
        return (n.label, n.kind, n.area) if n else None

    def _state_of(self, node: int) -> str:
        return (self.index if self._graph is None else self._graph).state_of(node)

    def state(self, node: int) -> str:
        self.refresh()
        try:
            return self._state_of(node)
        except KeyError:
            raise MemoryError_(f"node {node} does not exist") from None

    def history(self, node: int) -> dict:
        self.refresh()
        try:
            return (self.index if self._graph is None else self._graph).history(node)
        except KeyError:
            raise MemoryError_(f"node {node} does not exist") from None

    def stats(self) -> dict:
        self.refresh()
        out = (self.index if self._graph is None or self.partial else self._graph).counts()
        if getattr(self.journal, "shared", False):  # the database (no password); its copy
            out["copy"] = str(self.path)
        out.update({"journal": getattr(self.journal, "shown", None) or str(self.path),
                    "journal_bytes": self.offset,
                    "ops_read": self.report.ops, "quarantined": self.report.quarantined,
                    "skipped": self.report.skipped,
                    "cache": {"path": str(self.cache_path),
                              "exists": self.cache_path.exists(),
                              "used_at_open": self.loaded_from_cache,
                              "note": self.cache_note},
                    "scorer": getattr(self.scorer, "name", "")})
        return out

    # --- the derived cache --------------------------------------------------------

    def save_cache(self) -> int:
        """Write the derived cache for the current state; returns its size in bytes."""
        with self._mutex, self._locked(False):
            self._catch_up()
            if self.partial:  # the in-memory design's cache, from a replay
                graph = Graph()
                fold_range(self.journal.read, 0, self.offset, graph, Report(), [])
                size = _cache().save(self.cache_path, self.journal, self.offset, graph, None,
                                   None)
                graph.release()
                self.ops_since_cache = 0
                return size
            engine = None if self.index_search is not None else self.engine
            size = _cache().save(self.cache_path, self.journal, self.offset, self.graph,
                               engine, self._prefix_hash(self.offset))
            self.ops_since_cache = 0
            return size

    def maybe_save_cache(self, min_ops: int = CACHE_MIN_OPS) -> bool:
        if (self.use_cache and self._graph is not None and not self.partial
                and self.ops_since_cache >= min_ops):
            try:
                self.save_cache()
                return True
            except OSError as e:
                log.warning("could not write the derived cache: %s", e)
        return False

    # --- checking -----------------------------------------------------------------

    def check(self) -> dict:
        """Replay the whole journal afresh; report bad lines, and verify the cache."""
        from .state.cache import same_graph

        with self._mutex, self._locked(False):
            self._catch_up()
            read = self.journal.read
            g = Graph()
            rep = Report()
            bad: list[dict] = []
            fold_range(read, 0, self.offset, g, rep, bad)
            rep.quarantined = len(bad)
            rep.bad = [{"offset": b["offset"], "reason": b["reason"],
                        "raw": _cap_raw(b["raw"], len(b["raw"]))[:200]}
                       for b in bad[: Report.KEEP]]
            index_info = self._check_index(g)
            # a shared journal's copy against its record, and the rows refused everywhere
            shared = self.journal.check_copy() if getattr(self.journal, "shared", False) \
                else None
            # a partial graph is the index's view: the index was just compared
            replay_matches = (index_info.get("matches_replay", False) if self.partial
                              else same_graph(g, self.graph))
            cache_info = {"path": str(self.cache_path), "exists": self.cache_path.exists()}
            if cache_info["exists"]:
                try:
                    cg, _eng, off, _h = _cache().load(self.cache_path, self.journal,
                                                    self._make_engine, "")
                    prefix = Graph()
                    fold_range(read, 0, off, prefix, Report(), [])
                    cache_info.update(valid=True, offset=off,
                                      matches_replay=same_graph(cg, prefix))
                except _cache().CacheInvalid as e:
                    cache_info.update(valid=False, reason=str(e))
        ok = replay_matches and rep.quarantined == 0 and rep.skipped == 0 and (
            not cache_info["exists"] or cache_info.get("matches_replay", True)) and (
            index_info.get("matches_replay", True)) and not (shared and shared["problems"])
        extra = {"shared": shared} if shared is not None else {}
        return {**extra, "ok": ok, "journal": str(self.path), "bytes": self.offset,
                "replay": rep.as_dict(), "replay_matches_live": replay_matches,
                "cache": cache_info, "index": index_info}

    def _check_index(self, replayed: Graph) -> dict:
        """The index against a replay of the whole journal (caller holds a lock)."""
        from .state.index import compare

        info = {"path": str(self.path.with_suffix(".index")), "used": self.index is not None,
                "note": self.index_note}
        if self.index is None:
            return info
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
            if self._engine is not None and hasattr(self._engine.scorer, "release"):
                self._engine.scorer.release()
            if self._graph is not None:
                self._graph.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_store(home=None, config: dict | None = None, **kw) -> Store:
    """Open the store where mino's config says it lives."""
    return Store.open(home=home, config=config, **kw)


__all__ = ["ApplyError", "MemoryError_", "Request", "Store", "open_store"]
