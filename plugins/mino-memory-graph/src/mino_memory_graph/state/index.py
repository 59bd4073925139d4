"""``journal.index``: the graph derived from the journal, in an embedded SQLite database.

The journal stays the source of truth; this file holds what replaying it gives (nodes
with their facts and log, edges, counters, clock, and an FTS5 lexical index of every
live node's text), so that a process can open a store, answer a search or show a node
without replaying the journal or building the graph in Python.

What it records about the journal
---------------------------------
``meta.offset`` is the journal length it reflects. The prefix ``[0, offset)`` is proven
by a list of SHA-256 digests, one per ``BLOCK`` (64 KiB) of it, plus the digest of the
partial last block: the running hash, extended block by block as the journal grows
(``root()`` folds them into one digest). Each update also records the journal's size,
inode, mtime and ctime as it left them. Opening compares those: equal means nothing
wrote the journal since, and the open costs no read of it; different (another program
appended, a process died between its append and its index update, a hand edit) means
every block is checked (``verify``, about 1.3 GB/s here), so an edit anywhere in the
prefix is caught. A journal shorter than ``offset``, a block that disagrees, an unknown
schema or a damaged database means a rebuild.

Keeping up
----------
The index learns only from journal bytes, through the journal module's own reader
(``journal.windows`` / ``journal._fold``), and applies them with the graph's own
appliers (``model._appliers``, over ``RowNode`` objects read from their rows and written
back as rows: ``_Sink``), so its quarantine, skip and apply decisions are the graph's. ``catch_up`` (caller holds a journal lock) applies whatever lies past
``offset``, in one SQLite transaction that first re-reads ``offset`` (another process
may have caught up meanwhile): a store calls it in the same exclusive lock as each
append, and on open for whatever other processes wrote. A crash at any point leaves
either the old transaction or the new one (SQLite's rollback journal), and the journal
tail is applied again on the next open. ``synchronous=OFF``: a power loss may corrupt
the file, which is then rebuilt; the journal itself is fsynced by its writer.

Rebuild reads the journal a window (<= 1 MiB of whole lines) at a time and writes each
window's nodes back before reading the next, so memory stays bounded whatever the
journal's size; on a terminal it draws a progress bar on stderr. It writes a new file
renamed over the index once whole (a crash leaves the old index or none), so it needs
no rollback journal and leaves to the end what only the final graph needs (secondary
indexes, cluster parents and documents, both FTS5 tables: ``_Sink.finish``), the node
texts' words and vectors among them: each live node's are derived once, from its final
text (``text_worker``: every other chunk on a second core for a large journal), however
often the journal came back to it. The nodes a fold read stay for the next window, the
newest ``KEEP_ROWS``, so a node the journal keeps touching is read back rarely; a rebuild
writes a held node's row only when it leaves them or at the end.

Layout (one row per node; ``facts``, ``t3`` as JSON)::

    nodes(id, kind, area, label, deleted, useful, unhelpful, created_at, nlog,
          facts  [[id, key, value, created_at, active, superseded_by], ...],
          vec, context, live, words, wlen, parent, temporal,
          t3     [[kind, detail], ...] its last 3 log entries, oldest first)
                                  -- words: the node's hashing-v1 tokens, FTS5 content
    log(node, seq, at, kind, detail)                  -- the whole log, clustered by node
    edges(id, src, dst, kind, weight, valid_from, invalid_at, success, failure)
    text USING fts5(body, content=nodes)              -- BM25 over node text
    blocks(i, digest), meta(key, value)
"""
from __future__ import annotations

import gc
import hashlib
import itertools
import json
import operator
import os
import sqlite3
import sys
import time
from pathlib import Path

from ..journal import journal as _journal
from ..core import ops as _ops
from ..text import words as _words
from ..text.vectors import _sparse, unpack_vector
from ..core.model import (_FACTS, AREA_FOR_KIND, CLOCK_START, EXPANSION_KINDS, Edge, Node,
                          _appliers, render_state)
from ..core.model import Fact as _Fact

SCHEMA = 8  # 7: words are Snowball stems (issue 25); 8: the last 3 log entries in the node's row (t3)
BLOCK = 1 << 16
COMMIT_BYTES = 8 << 20  # a rebuild commits every this many journal bytes
KEEP_ROWS = 60_000  # nodes a fold holds from one window to the next, newest read
COMMON = 2000  # a term in more documents is left out of a lexical match (see lexical)

_DDL = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
CREATE TABLE blocks(i INTEGER PRIMARY KEY, digest BLOB NOT NULL);
CREATE TABLE nodes(id INTEGER PRIMARY KEY, kind TEXT, area TEXT, label TEXT,
    deleted INTEGER, useful INTEGER, unhelpful INTEGER, created_at INTEGER,
    nlog INTEGER, facts TEXT, vec BLOB, context TEXT, live INTEGER,
    words TEXT, wlen INTEGER, parent INTEGER, temporal INTEGER, t3 TEXT);
CREATE TABLE clusters(id INTEGER PRIMARY KEY, words TEXT, wlen INTEGER);
CREATE TABLE log(node INTEGER, seq INTEGER, at INTEGER, kind TEXT, detail TEXT,
    PRIMARY KEY(node, seq)) WITHOUT ROWID;
CREATE TABLE edges(id INTEGER PRIMARY KEY, src INTEGER, dst INTEGER, kind TEXT,
    weight REAL, valid_from INTEGER, invalid_at INTEGER, success INTEGER, failure INTEGER);
CREATE VIRTUAL TABLE text USING fts5(words, content=nodes, content_rowid=id,
    tokenize='ascii');
CREATE VIRTUAL TABLE terms USING fts5vocab(text, 'row');
CREATE VIRTUAL TABLE ctext USING fts5(words, content=clusters, content_rowid=id,
    tokenize='ascii');
CREATE VIRTUAL TABLE cterms USING fts5vocab(ctext, 'row');
"""

# a rebuild's log lines in the order they come (appended, not placed into the log table's
# node order, which a journal coming back to old nodes made a write at a random page per
# line), and the nodes it hard-deleted with the last staged line they had then: ``finish``
# moves the lines into ``log`` in one sorted pass, less those of the deleted nodes
_STAGE_DDL = """
CREATE TABLE stage.log(node INTEGER, seq INTEGER, at INTEGER, kind TEXT, detail TEXT);
CREATE TABLE stage.purged(node INTEGER PRIMARY KEY, mark INTEGER);
"""
REBUILD_CACHE_KIB = 64 << 10  # a rebuild's page cache: the node rows it goes back to

# secondary indexes: a rebuild into a fresh file makes them at the end, in one pass each
_EDGE_INDEXES = """
CREATE INDEX edges_src ON edges(src);
CREATE INDEX edges_dst ON edges(dst);
"""
_NODE_INDEXES = """
CREATE INDEX nodes_parent ON nodes(parent, id) WHERE parent IS NOT NULL;
CREATE INDEX nodes_label ON nodes(label);
CREATE INDEX nodes_area ON nodes(area);
CREATE INDEX nodes_dated ON nodes(created_at) WHERE kind='TaskEpisode' AND (instr(facts, '"started"') OR instr(facts, '"date"'));
"""
# (nodes_label, nodes_area: partial.find_label / find_fact, e.g. a failure's pain marker
# by its signature among Salience nodes, without a scan of every node;
# nodes_dated: the episodes that record a wall-clock date, which date what people read
# (listing.Reader.date_of); the query must repeat this WHERE clause to use it)
# hybrid-v1's cluster parent of a node: the newest live PartOf edge from it to a live
# node that is not a project
_PARENT = ("SELECT e.dst FROM edges e JOIN nodes n ON n.id = e.dst WHERE e.src={src} "
           "AND e.kind='PartOf' AND e.invalid_at IS NULL AND e.weight > 0 "
           "AND e.valid_from <= ? AND n.deleted=0 AND NOT (n.kind='Entity' AND "
           "substr(n.label, 1, 8)='project ') ORDER BY e.id DESC LIMIT 1")

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_loads = json.loads


class IndexInvalid(Exception):
    """The index cannot be used as it stands (missing, damaged, stale): rebuild it."""


def text_of(kind: str, label: str, facts, t3) -> str:
    """``Graph.node_text`` from a row: kind and label, active facts, last 3 log entries
    newest first."""
    parts = [f"{kind} {label}"]
    parts.extend(f"{f[1]} {f[2]}" for f in facts if f[4])
    parts.extend(f"{k} {d}" for k, d in reversed(t3))
    return " ".join(parts)


class _Tail(list):
    """A node's log as the index's fold holds it: the entries ``(at, kind, detail)``
    applied since it was last written back (the operations append to it as to
    ``Node.log``), after ``seq`` entries already in the log table, the last three of
    them ``t3`` (``[kind, detail]`` lists, or their JSON text until needed)."""

    __slots__ = ("seq", "t3")


class RowNode(Node):
    """A node as the index's fold holds it, for ``model._appliers``: ``Node``'s fields,
    its log a ``_Tail``, its facts the row's JSON text until an operation reads them (a
    log line or a vote never does), and beside them what its row on disk holds for
    ``flush`` (``live``, ``words``, ``wlen``, ``parent``, ``temporal``)."""

    __slots__ = ("_fj", "live", "words", "wlen", "parent", "temporal")

    def __init__(self, id, kind, label, at, area=None):  # a node CreateNode makes
        self.id, self.kind, self.label, self.created_at = id, kind, label, at
        self.area = area or AREA_FOR_KIND[kind]
        _FACTS.__set__(self, [])
        self._fj = None
        log = _Tail()
        log.seq, log.t3 = 0, []
        self.log = log
        self.context = []
        self.deleted = False
        self.useful = self.unhelpful = 0
        self._state = self._keys = None
        self.live = self.words = self.parent = None
        self.wlen = self.temporal = 0

    def _get_facts(self):
        fj = self._fj
        if fj is not None:
            # read by an operation, so about to change: encoded again when written
            self._fj = None
            facts = _FACTS.__get__(self, Node)
            if facts is None:
                facts = [_Fact(f[0], f[1], f[2], f[3], f[4], f[5]) for f in _loads(fj)]
                _FACTS.__set__(self, facts)
                self._keys = None
            return facts
        return _FACTS.__get__(self, Node)

    def _set_facts(self, facts):
        _FACTS.__set__(self, facts)
        self._fj = self._keys = None

    facts = property(_get_facts, _set_facts)

    def facts_json(self) -> str:
        """The facts as the row keeps them (``[id, key, value, created_at, active,
        superseded_by]`` each), kept until an operation reads them again."""
        fj = self._fj
        if fj is None:
            fj = self._fj = _dumps([[f.id, f.key, f.value, f.created_at, 1 if f.active else 0,
                                     f.superseded_by] for f in _FACTS.__get__(self, Node)])
        return fj

    def text(self, t3) -> str:
        """``Graph.node_text`` with ``t3`` as its last three log entries."""
        if self._fj is not None:
            return text_of(self.kind, self.label, _loads(self._fj), t3)
        parts = [f"{self.kind} {self.label}"]
        parts.extend(f"{f.key} {f.value}" for f in _FACTS.__get__(self, Node) if f.active)
        parts.extend(f"{k} {d}" for k, d in reversed(t3))
        return " ".join(parts)


_new_row_node = RowNode.__new__


def _row_node(id: int, r) -> RowNode:
    """A node from its row: ``_Sink._ROW``'s columns."""
    n = _new_row_node(RowNode)
    n.id, n.kind, n.area, n.label = id, r[0], r[1], r[2]
    n.deleted, n.useful, n.unhelpful, n.created_at = r[3], r[4], r[5], r[6]
    _FACTS.__set__(n, None)
    n._fj = r[8]
    log = _Tail()
    log.seq, log.t3 = r[7], r[15] or "[]"
    n.log = log
    n.context = _loads(r[9]) if r[9] else []
    n._state = n._keys = None
    n.live, n.words, n.wlen, n.parent, n.temporal = r[10], r[11], r[12], r[13], r[14]
    return n


def _written(id: int, n: RowNode, logs: list) -> list:
    """Move a node's new log entries to ``logs`` (log table rows) and give its last
    three as they now stand."""
    log = n.log
    seq, t3 = log.seq, log.t3
    k = len(log)
    if k:
        logs.extend([(id, seq + i, e[0], e[1], e[2]) for i, e in enumerate(log)])
        if k >= 3:
            t3 = [[e[1], e[2]] for e in log[-3:]]
        else:
            if t3.__class__ is str:
                t3 = _loads(t3)
            t3 = (t3 + [[e[1], e[2]] for e in log])[-3:]
        log.seq, log.t3 = seq + k, t3
        log.clear()
    elif t3.__class__ is str:
        t3 = log.t3 = _loads(t3)
    return t3


class _Nodes(dict):
    """The fold's nodes by id, each read from its row when first asked for and kept
    (``_Sink._keep_rows`` bounds them). What ``model._appliers`` ask of ``Graph.nodes``:
    ``get`` (a node an operation changes: marked touched), ``in`` (whether it exists,
    without reading it), ``[id] =`` (CreateNode) and ``del`` (a hard delete)."""

    __slots__ = ("sink",)

    def get(self, id, default=None):
        n = _dict_get(self, id)
        if n is None:
            n = self.sink.load(id)
            if n is None:
                return default
        self.sink.touched_add(id)
        return n

    def __contains__(self, id) -> bool:
        return _dict_contains(self, id) or self.sink.exists(id)

    def __setitem__(self, id, n) -> None:
        _dict_set(self, id, n)
        self.sink.made(id)

    def __delitem__(self, id) -> None:
        self.sink.gone(id, self.pop(id))


class _Edges(dict):
    """The fold's edges by id, each read from its row when first asked for; all of
    them are written back at the window's end and dropped."""

    __slots__ = ("sink",)

    def get(self, id, default=None):
        e = _dict_get(self, id)
        if e is None:
            e = self.sink.load_edge(id)
            if e is None:
                return default
        return e

    def __contains__(self, id) -> bool:
        if _dict_contains(self, id):
            return True
        s = self.sink
        return id < s.next_edge and s.db.execute(
            "SELECT 1 FROM edges WHERE id=?", (id,)).fetchone() is not None


class _NoAdjacency:
    """The fold keeps no adjacency lists: the index's edges table answers who touches
    a node, and the fold needs no one's."""

    __slots__ = ()

    def get(self, id, default=None):
        return default

    def __setitem__(self, id, ids) -> None:
        pass


_dict_get, _dict_contains, _dict_set = dict.get, dict.__contains__, dict.__setitem__


class _Sink:
    """What ``journal._fold`` folds into: the index's graph for ``model._appliers`` (the
    twelve operations, the same functions as the in-memory graph's), its nodes and
    edges read from their rows when an operation first asks and written back as rows by
    ``flush``.

    A rebuild into a fresh file keeps the nodes it holds in memory until they leave its
    bounded set (the newest read ``KEEP_ROWS``) or the fold ends, and only then writes
    their rows (their log lines go out every window): a node the journal keeps coming
    back to is written once per stay, not once per window. An update of a live index
    writes every changed row each window (its words and vectors with them)."""

    _ROW = ("SELECT kind, area, label, deleted, useful, unhelpful, created_at, nlog, "
            "facts, context, live, words, wlen, parent, temporal, t3 FROM nodes WHERE id=?")

    def __init__(self, index: "Index"):
        self.ix = index
        self.db = index.db
        self.nodes = _Nodes()
        self.nodes.sink = self
        self.edges = _Edges()
        self.edges.sink = self
        self.adj = _NoAdjacency()
        self.projects: set = set()
        self.dirty: set = set()  # set_area and delete_node mark theirs (``_appliers``)
        self.edge_dirty: set = set()
        self.purged: list[tuple] = []  # hard-deleted rows: (id, live, words, wlen, parent)
        self.created: set[int] = set()  # nodes made in this window
        self.touched: set[int] = set()  # nodes an operation asked for in this window
        self.touched_add = self.touched.add
        self.unsaved: set[int] = set()  # a fresh rebuild's held nodes not yet written
        self.absent: set[int] = set()  # hard-deleted in this window (rows still on disk)
        self.reparent: set[int] = set()  # nodes whose cluster parent may have changed
        # a rebuild into a fresh file: which node ids exist, kept here rather than asked
        # of the database; the lexical tables are filled once at the end (``fill_text``)
        self.known: bytearray | None = bytearray() if index.fresh else None
        self.deferred = None  # a fresh rebuild's text worker (``_derive_all``)
        self.stats = dict(index.db.execute(
            "SELECT key, value FROM meta WHERE key IN ('n_live','w_total','c_live','c_total')"))
        m = index.counters()
        self.next_node, self.next_edge, self.next_fact, self.clock = m
        self.first_new = self.next_node  # ids from here on were never on disk
        self.handlers, self._replay = _ops.bind(
            self, _appliers(self, False, node_class=RowNode))

    def replay_handlers_for(self, track: bool) -> dict:
        return self._replay

    def release(self) -> None:
        """Drop what the fold held and the sink's own cycles (its handlers close over
        it, its maps point back), so reference counting frees it."""
        self.handlers = self._replay = {}
        for m in (self.nodes, self.edges):
            m.clear()
            m.sink = None

    # --- what the maps ask --------------------------------------------------------

    def load(self, id: int) -> RowNode | None:
        known = self.known
        if known is not None:
            if id >= len(known) or not known[id]:
                return None
        elif id in self.absent or id >= self.next_node:
            return None
        r = self.db.execute(self._ROW, (id,)).fetchone()
        if r is None:
            return None
        n = _row_node(id, r)
        _dict_set(self.nodes, id, n)
        return n

    def exists(self, id: int) -> bool:
        """Whether node ``id`` exists (soft-deleted included), without reading its row."""
        known = self.known
        if known is not None:
            return id < len(known) and known[id] == 1
        if id in self.absent or id >= self.next_node:
            return False
        return self.db.execute("SELECT 1 FROM nodes WHERE id=?", (id,)).fetchone() is not None

    def made(self, id: int) -> None:
        """CreateNode put node ``id`` in ``nodes``."""
        self.touched_add(id)
        self.created.add(id)
        self.absent.discard(id)
        known = self.known
        if known is not None:
            if id >= len(known):
                known.extend(bytes(id + 4096 - len(known)))
            known[id] = 1

    def gone(self, id: int, n: RowNode) -> None:
        """A hard DeleteNode took node ``id`` out of ``nodes``: its rows go at flush."""
        if self.known is not None:
            self.known[id] = 0
            self.unsaved.discard(id)
            self.purged.append((id, None, None, 0, None))
        else:
            self.absent.add(id)
            if id not in self.created:  # (made in this window: nothing on disk)
                self.purged.append((id, n.live, n.words, n.wlen, n.parent))
            self.created.discard(id)

    def load_edge(self, id: int) -> Edge | None:
        r = self.db.execute(
            "SELECT src, dst, kind, weight, valid_from, invalid_at, success, failure "
            "FROM edges WHERE id=?", (id,)).fetchone()
        if r is None:
            return None
        e = Edge(id, r[0], r[1], r[2], r[4])
        e.weight, e.invalid_at, e.success, e.failure = r[3], r[5], r[6], r[7]
        _dict_set(self.edges, id, e)
        return e

    # --- writing back -------------------------------------------------------------

    @staticmethod
    def _row(id: int, n: RowNode, t3, vec, live, words, wlen, temporal) -> tuple:
        return (id, n.kind, n.area, n.label, 1 if n.deleted else 0, n.useful, n.unhelpful,
                n.created_at, n.log.seq, n.facts_json(), vec,
                _dumps(n.context) if n.context else None, live, words, wlen, n.parent,
                temporal, t3 if t3.__class__ is str else _dumps(t3))

    def flush(self) -> None:
        if self.known is not None:
            return self._flush_fresh()
        db, st = self.db, self.stats
        fts_del, fts_add, node_rows, logs, texts = [], [], [], [], []
        clusters: set[int] = set()
        orphaned = [id for id, *_ in self.purged]
        for id, live, words, wlen, parent in self.purged:
            db.execute("DELETE FROM nodes WHERE id=?", (id,))
            db.execute("DELETE FROM log WHERE node=?", (id,))
            if live:
                fts_del.append((id, words))
                st["n_live"] -= 1
                st["w_total"] -= wlen
            if parent is not None:
                clusters.add(parent)
        nodes = self.nodes
        for id in sorted(self.touched):
            n = _dict_get(nodes, id)
            if n is None:
                continue
            if id in self.created and id < self.first_new:
                # edges left dangling by an earlier hard delete of this id lead here again
                self.reparent.update(r[0] for r in db.execute(
                    "SELECT src FROM edges WHERE dst=? AND kind='PartOf'", (id,)))
            if n.deleted and id in self.dirty:
                orphaned.append(id)
            text_changed = len(n.log) > 0
            t3 = _written(id, n, logs)
            live, words, wlen, temporal = n.live, n.words, n.wlen, n.temporal
            if text_changed:
                if live:
                    fts_del.append((id, words))
                    st["n_live"] -= 1
                    st["w_total"] -= wlen
                if n.deleted:
                    live = 0
                    words = None
                    wlen = temporal = 0
                    self.reparent.add(id)  # it leaves its cluster
                else:
                    text = n.text(t3)
                    live = 1
                    st["n_live"] += 1
                    toks = _words.tokenize(text)
                    words, wlen = " ".join(toks), len(toks)
                    fts_add.append((id, words))
                    texts.append(text)
                    st["w_total"] += wlen
                    temporal = int(not _words._RELATIVE_TIME_STEMS.isdisjoint(toks))
                if n.parent is not None and n.words != words:
                    clusters.add(n.parent)
                n.words, n.wlen, n.temporal = words, wlen, temporal
            n.live = live
            node_rows.append(self._row(id, n, t3, None if text_changed else _KEEP, live,
                                       words, wlen, temporal))
        if fts_del:
            db.executemany("INSERT INTO text(text, rowid, words) VALUES('delete', ?, ?)",
                           fts_del)
        if node_rows:
            keep = {r[0] for r in node_rows if r[10] is _KEEP}
            old = {}
            for i in range(0, len(keep), 500):
                part = list(keep)[i:i + 500]
                old.update(db.execute(f"SELECT id, vec FROM nodes WHERE id IN "
                                      f"({','.join('?' * len(part))})", part))
            vecs = dict(zip((f[0] for f in fts_add), _sparse(texts)))
            node_rows = [r[:10] + (vecs.get(r[0]) if r[10] is None else old.get(r[0]),)
                         + r[11:] for r in node_rows]
            db.executemany("INSERT OR REPLACE INTO nodes VALUES "
                           "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", node_rows)
        if logs:
            db.executemany("INSERT OR REPLACE INTO log VALUES (?,?,?,?,?)", logs)
        if fts_add:
            db.executemany("INSERT INTO text(rowid, words) VALUES(?, ?)", fts_add)
        self._write_edges()
        for p in orphaned:  # a deleted node's children leave its cluster
            self.reparent.update(r[0] for r in db.execute(
                "SELECT id FROM nodes WHERE parent=?", (p,)))
        if self.reparent:
            self._reparent(clusters)
        if clusters:
            self._clusters(clusters)
        db.executemany("UPDATE meta SET value=? WHERE key=?",
                       [(v, k) for k, v in st.items()])
        self._keep_rows()

    def _write_edges(self) -> None:
        """Every edge an operation read or made in this window (a read one changed, but
        for a Link that found its id taken: written as it was)."""
        edges = self.edges
        if edges:
            self.db.executemany(
                "INSERT OR REPLACE INTO edges VALUES (?,?,?,?,?,?,?,?,?)",
                [(e.id, e.src, e.dst, e.kind, e.weight, e.valid_from, e.invalid_at,
                  e.success, e.failure) for e in edges.values()])
            if self.known is None:
                self.reparent.update(e.src for e in edges.values() if e.kind == "PartOf")

    def _keep_rows(self) -> None:
        """Nodes stay for the next window, the newest read up to ``KEEP_ROWS`` (an
        agent's journal comes back to recent nodes and to hot ones such as its
        projects); of the oldest read, one this window touched stays (moved to the
        newest end) and the others go, a fresh rebuild's written first. Edges do not."""
        nodes = self.nodes
        over = len(nodes) - KEEP_ROWS
        if over > 0:  # the oldest read go (a dict keeps its keys in the order they came)
            touched, unsaved = self.touched, self.unsaved
            out = []
            for id in list(itertools.islice(nodes, over + KEEP_ROWS // 4)):
                n = nodes.pop(id)
                if id in touched:
                    _dict_set(nodes, id, n)
                elif id in unsaved:
                    out.append((id, n))
            if out:
                out.sort(key=_first)
                self._save(out)
        self.touched.clear()
        self.created.clear()
        self.absent.clear()
        self.dirty.clear()
        self.edge_dirty.clear()
        self.edges.clear()
        self.purged.clear()
        self.reparent.clear()
        self.first_new = self.next_node

    def _save(self, held: list) -> None:
        """A fresh rebuild's rows of ``held`` nodes ``(id, node)``, as they stand (no text
        work: ``finish`` derives every live node's words and vector once, from its final
        text)."""
        unsaved = self.unsaved
        rows = []
        for id, n in held:
            unsaved.discard(id)
            t3 = n.log.t3
            rows.append((id, n.kind, n.area, n.label, 1 if n.deleted else 0, n.useful,
                         n.unhelpful, n.created_at, n.log.seq, n.facts_json(), None,
                         _dumps(n.context) if n.context else None,
                         0 if n.deleted else 1, None, 0, None, 0,
                         t3 if t3.__class__ is str else _dumps(t3)))
        self.db.executemany("INSERT OR REPLACE INTO nodes VALUES "
                            "(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)

    def _flush_fresh(self) -> None:
        """A rebuild into a fresh file: the window's log lines, edges and hard deletes;
        its nodes are held (``unsaved``) and written when they leave or at the end. A
        node's words and vector depend on its final text only, so ``finish`` derives each
        live node's once (before, every window re-derived each node it touched: an
        agent's journal that keeps coming back to old nodes paid it many times a node).
        Cluster parents and the lexical tables are also ``finish``'s."""
        logs: list = []
        nodes, unsaved = self.nodes, self.unsaved
        for id in self.touched:
            n = _dict_get(nodes, id)
            if n is not None:
                unsaved.add(id)
                if n.log:
                    _written(id, n, logs)
        db = self.db
        for id, *_ in self.purged:
            db.execute("DELETE FROM nodes WHERE id=?", (id,))
            db.execute("INSERT OR REPLACE INTO stage.purged SELECT ?, coalesce(max(rowid), 0) "
                       "FROM stage.log", (id,))
        if logs:
            db.executemany("INSERT INTO stage.log VALUES (?,?,?,?,?)", logs)
        self._write_edges()
        self._keep_rows()

    def save_all(self) -> None:
        """A fresh rebuild's end: every held node not yet written, in id order."""
        nodes = self.nodes
        self._save([(id, _dict_get(nodes, id)) for id in sorted(self.unsaved)])

    def _derived(self, ids: list, rows: list) -> None:
        """A fresh rebuild's words, lengths, temporal flags and vectors (``finish``)."""
        if ids:
            self.db.executemany(
                "UPDATE nodes SET words=?, wlen=?, temporal=?, vec=? WHERE id=?",
                [(*r, id) for id, r in zip(ids, rows)])

    def _derive_all(self) -> None:
        """Every live node's words and vector from its final text, a chunk at a time (in
        id order: bounded memory); with a text worker (``text_worker.Deferred``) it
        derives every other chunk while this process derives the next."""
        from ..text.text_worker import derive

        db, d = self.db, self.deferred
        last = 0

        def chunk():
            nonlocal last
            got = db.execute("SELECT id, kind, label, facts, t3 FROM nodes WHERE id > ? "
                             "AND live=1 ORDER BY id LIMIT ?", (last, DERIVE_CHUNK)).fetchall()
            if not got:
                return None
            last = got[-1][0]
            return ([r[0] for r in got],
                    [text_of(r[1], r[2], _loads(r[3]), _loads(r[4]) if r[4] else ())
                     for r in got])

        while True:
            a = chunk()
            if a is None:
                break
            if d is not None and d.proc is not None:
                d.submit(*a)  # the worker derives this chunk...
                b = chunk()
                if b is not None:  # ...while this process derives the next
                    self._derived(b[0], derive(b[1]))
                self._derived(*d.collect())
                if b is None:
                    break
            else:
                self._derived(a[0], derive(a[1]))

    def _reparent(self, clusters: set) -> None:
        """hybrid-v1's cluster parent of each node in ``reparent``: the newest live
        PartOf edge from it to a live node that is not a project."""
        db = self.db
        changed = []
        for id in self.reparent:
            r = db.execute("SELECT deleted, parent FROM nodes WHERE id=?", (id,)).fetchone()
            if r is None:
                continue
            new = None
            if not r[0]:
                got = db.execute(_PARENT.format(src="?"), (id, self.clock)).fetchone()
                new = got[0] if got else None
            if new != r[1]:
                changed.append((new, id))
                if r[1] is not None:
                    clusters.add(r[1])
                if new is not None:
                    clusters.add(new)
        if changed:
            db.executemany("UPDATE nodes SET parent=? WHERE id=?", changed)
            nodes = self.nodes
            for new, id in changed:
                n = _dict_get(nodes, id)
                if n is not None:
                    n.parent = new

    def _clusters(self, parents: set) -> None:
        """Rewrite each cluster document: its live members' words, by node id."""
        db, st = self.db, self.stats
        for p in parents:
            old = db.execute("SELECT words, wlen FROM clusters WHERE id=?", (p,)).fetchone()
            if old is not None:
                if self.known is None:
                    db.execute("INSERT INTO ctext(ctext, rowid, words) "
                               "VALUES('delete', ?, ?)", (p, old[0]))
                db.execute("DELETE FROM clusters WHERE id=?", (p,))
                st["c_live"] -= 1
                st["c_total"] -= old[1]
            members = db.execute("SELECT words, wlen FROM nodes WHERE parent=? AND "
                                 "deleted=0 ORDER BY id", (p,)).fetchall()
            if members:
                words = " ".join(w for w, _ in members if w)
                wlen = sum(n for _, n in members)
                db.execute("INSERT INTO clusters VALUES (?, ?, ?)", (p, words, wlen))
                if self.known is None:
                    db.execute("INSERT INTO ctext(rowid, words) VALUES(?, ?)", (p, words))
                st["c_live"] += 1
                st["c_total"] += wlen

    def finish(self) -> None:
        """The end of a rebuild into a fresh file, each in one pass over the final
        state: the secondary indexes, every live node's cluster parent and every
        cluster's words (what ``_reparent`` and ``_clusters`` give, as both are
        functions of the graph as it stands), and both lexical tables."""
        self.save_all()
        db, st = self.db, self.stats
        if db.execute("SELECT 1 FROM stage.purged LIMIT 1").fetchone():
            db.execute("DELETE FROM stage.log WHERE rowid <= coalesce((SELECT mark FROM "
                       "stage.purged p WHERE p.node = stage.log.node), 0)")
        db.execute("INSERT OR REPLACE INTO log SELECT node, seq, at, kind, detail FROM "
                   "stage.log ORDER BY node, seq")
        db.execute("DELETE FROM stage.log")
        self._derive_all()
        # what the lexical scorer counts, from the rows as they now stand (flush's running
        # sums do not know the words it deferred)
        st["n_live"], st["w_total"] = db.execute(
            "SELECT count(*), coalesce(sum(wlen), 0) FROM nodes WHERE live=1").fetchone()
        for ddl in _EDGE_INDEXES.strip().splitlines():  # (executescript would commit)
            db.execute(ddl)
        db.execute(f"UPDATE nodes SET parent=({_PARENT.format(src='nodes.id')}) "
                   "WHERE deleted=0", (self.clock,))
        for ddl in _NODE_INDEXES.strip().splitlines():
            db.execute(ddl)
        out = []
        members = db.execute("SELECT parent, words, wlen FROM nodes WHERE parent IS NOT "
                             "NULL AND deleted=0 ORDER BY parent, id")
        for p, group in itertools.groupby(members, key=lambda r: r[0]):
            group = list(group)
            out.append((p, " ".join(r[1] for r in group if r[1]), sum(r[2] for r in group)))
        db.executemany("INSERT INTO clusters VALUES (?, ?, ?)", out)
        st["c_live"] = len(out)
        st["c_total"] = sum(r[2] for r in out)
        db.execute("INSERT INTO text(rowid, words) SELECT id, words FROM nodes "
                   "WHERE live=1 ORDER BY id")
        db.execute("INSERT INTO ctext(rowid, words) SELECT id, words FROM clusters "
                   "ORDER BY id")
        db.executemany("UPDATE meta SET value=? WHERE key=?",
                       [(v, k) for k, v in st.items()])


_KEEP = object()  # a node row whose vector did not change
_first = operator.itemgetter(0)
DERIVE_CHUNK = 4000  # texts ``finish`` derives at a time
class Index:
    """An open ``journal.index`` (see the module docstring)."""

    def __init__(self, journal, path: Path | None = None):
        self.journal = journal
        self.path = Path(path) if path else journal.path.with_suffix(".index")
        self.db: sqlite3.Connection | None = None
        self.offset = 0
        self.rebuilt = False
        self.fresh = False  # rebuilding into a new file (see ``rebuild``)
        self.ops_applied = 0
        self.report = _journal.Report()
        self.note = ""

    # --- opening ------------------------------------------------------------------

    @classmethod
    def open(cls, journal, path: Path | None = None, *, rebuild: bool = False,
             progress: bool | None = None, lock: bool = True) -> "Index":
        """Open the index of ``journal`` and bring it up to the journal's end (under a
        shared journal lock unless ``lock`` is False: the caller holds one)."""
        ix = cls(journal, path)
        if lock:
            with journal.locked(exclusive=False):
                ix._open(rebuild, progress)
        else:
            ix._open(rebuild, progress)
        return ix

    def _open(self, rebuild: bool, progress) -> None:
        try:
            if rebuild:
                raise IndexInvalid("rebuild asked for")
            self._connect(create=False)
            self._validate()
            self.catch_up(progress=progress)
            self.note = "valid"
        except (IndexInvalid, sqlite3.DatabaseError) as e:
            self.note = f"rebuilt: {e}"
            self.rebuild(progress=progress)

    def _connect(self, create: bool) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None
        if not create and not self.path.exists():
            raise IndexInvalid("no index yet")
        if create:
            for p in (self.path, Path(str(self.path) + "-journal")):
                try:
                    p.unlink()
                except FileNotFoundError:
                    pass
            os.close(_journal.open_private(self.path, os.O_RDWR))
        db = sqlite3.connect(self.path, isolation_level=None, timeout=60,
                             check_same_thread=False)
        db.execute("PRAGMA synchronous=OFF")
        db.execute("PRAGMA cache_size=-16000")
        db.execute("PRAGMA temp_store=MEMORY")
        self.db = db
        self._ino = os.stat(self.path).st_ino
        self._journal_ino = self.journal.ino
        if create:
            db.executescript(_DDL)
            if not self.fresh:
                db.executescript(_EDGE_INDEXES + _NODE_INDEXES)
            db.executemany("INSERT INTO meta VALUES (?, ?)", [
                ("schema", SCHEMA), ("offset", 0), ("tail", b""), ("stat", ""),
                ("next_node", 1), ("next_edge", 1), ("next_fact", 1),
                ("clock", CLOCK_START), ("ops", 0), ("quarantined", 0), ("skipped", 0),
                ("n_live", 0), ("w_total", 0), ("c_live", 0), ("c_total", 0)])

    def meta(self, key: str):
        r = self.db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if r is None else r[0]

    def counters(self) -> tuple[int, int, int, int]:
        m = dict(self.db.execute("SELECT key, value FROM meta WHERE key IN "
                                 "('next_node','next_edge','next_fact','clock')"))
        return m["next_node"], m["next_edge"], m["next_fact"], m["clock"]

    def _validate(self) -> None:
        """Cheap checks that the journal still extends what the index reflects."""
        if self.meta("schema") != SCHEMA:
            raise IndexInvalid(f"schema {self.meta('schema')!r}, not {SCHEMA}")
        off = self.meta("offset")
        size = self.journal.size()
        if size < off:
            raise IndexInvalid(f"the journal is shorter ({size} bytes) than the index "
                               f"saw ({off})")
        full = off // BLOCK
        if self.db.execute("SELECT count(*) FROM blocks").fetchone()[0] != full:
            raise IndexInvalid("block list incomplete")
        if self.meta("stat") != self._stat():
            # someone wrote the journal since this index last saw it (another program,
            # a process that died before its index update, a hand edit): every block of
            # the prefix is checked, so an edit anywhere in it is caught
            why = self.verify()
            if why:
                raise IndexInvalid(why)
        self.offset = off
        self._journal_ino = self.journal.ino

    def _stat(self) -> str:
        """The journal's size, inode and change times: equal to what the last update
        recorded means nothing touched the journal since."""
        st = os.fstat(self.journal.fd)
        return f"{st.st_size} {st.st_ino} {st.st_mtime_ns} {st.st_ctime_ns}"

    def _block(self, i: int) -> bytes:
        r = self.db.execute("SELECT digest FROM blocks WHERE i=?", (i,)).fetchone()
        return r[0] if r else b""

    def _digest(self, a: int, b: int) -> bytes:
        return hashlib.sha256(self.journal.read(a, b)).digest() if b > a else b""

    def verify(self) -> str | None:
        """Every block of the indexed prefix against the journal: None, or what differs."""
        off = self.meta("offset")
        for i, d in self.db.execute("SELECT i, digest FROM blocks ORDER BY i"):
            if self._digest(i * BLOCK, (i + 1) * BLOCK) != d:
                return f"journal block {i} (bytes {i * BLOCK}-{(i + 1) * BLOCK}) changed"
        if self._digest(off // BLOCK * BLOCK, off) != self.meta("tail"):
            return "the journal's last indexed bytes changed"
        return None

    def root(self) -> str:
        """One digest of the whole indexed prefix (its block digests and tail, hashed)."""
        h = hashlib.sha256()
        for (d,) in self.db.execute("SELECT digest FROM blocks ORDER BY i"):
            h.update(d)
        h.update(self.meta("tail") or b"")
        return h.hexdigest()

    # --- keeping up ---------------------------------------------------------------

    def rebuild(self, progress: bool | None = None) -> None:
        """From the journal, afresh (caller holds a journal lock), into a new file
        beside the index that is renamed over it once whole: a crash leaves the old
        index or none, never a half one, so the new file needs no rollback journal
        and its lexical tables are filled once at the end."""
        final = self.path
        tmp = final.with_name(f"{final.name}.new-{os.getpid()}")
        stage = final.with_name(f"{final.name}.new-stage-{os.getpid()}")
        _sweep(final)
        self.path = tmp
        try:
            self.fresh = True
            self._connect(create=True)
            db = self.db
            db.execute("PRAGMA journal_mode=OFF")
            db.execute(f"PRAGMA cache_size=-{REBUILD_CACHE_KIB}")
            db.execute("PRAGMA temp_store=FILE")  # finish's sort of the log: bounded memory
            # the log lines as they come, in a file of their own (``_Sink._flush_fresh``)
            os.close(_journal.open_private(stage, os.O_RDWR | os.O_TRUNC))
            db.execute("ATTACH DATABASE ? AS stage", (str(stage),))
            db.execute("PRAGMA stage.journal_mode=OFF")
            db.execute("PRAGMA stage.synchronous=OFF")
            db.executescript(_STAGE_DDL)
            self.offset = 0
            self.rebuilt = True
            self.catch_up(progress=progress)
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name='edges_src'"
                              ).fetchone():  # an empty journal: nothing folded
                db.executescript(_EDGE_INDEXES + _NODE_INDEXES)
            db.execute("DETACH DATABASE stage")
            self.db.close()
            self.db = None
            hot = Path(str(final) + "-journal")
            if hot.exists():
                # the old file's rollback journal must never meet the new file, nor the
                # old file lose it: both go first (a crash meanwhile leaves no index)
                for p in (final, hot):
                    try:
                        os.unlink(p)
                    except FileNotFoundError:
                        pass
            os.replace(tmp, final)
        except BaseException:
            if self.db is not None:
                self.db.close()
                self.db = None
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        finally:
            self.path = final
            self.fresh = False
            try:
                os.unlink(stage)
            except FileNotFoundError:
                pass
        self._connect(create=False)

    def catch_up(self, progress: bool | None = None) -> int:
        """Apply the journal past ``offset`` (caller holds a journal lock); returns the
        number of operations read. Safe against another process doing the same."""
        j = self.journal
        # The index file first: a process that rewrote the journal (purge, repair) also
        # rebuilt the index, and the new file already describes the new journal.
        try:
            replaced = os.stat(self.path).st_ino != self._ino
        except FileNotFoundError:
            raise IndexInvalid("the index file was removed") from None
        if replaced:  # another process rebuilt it: use the new file
            self._connect(create=False)
            self._validate()
        elif j.ino != self._journal_ino:  # the journal was replaced: does it extend ours?
            self._validate()
        size = j.size()
        if size == self.offset and self.meta("offset") == size:
            return 0
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            start = self.meta("offset")
            if size < start:
                raise IndexInvalid("the journal shrank")
            if start == size:
                if self.meta("stat") != self._stat():
                    db.execute("UPDATE meta SET value=? WHERE key='stat'", (self._stat(),))
                db.execute("COMMIT")
                self.offset = size
                return 0
            ops = self._fold(start, size, progress)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
        self.offset = size
        return ops

    def _fold(self, start: int, end: int, progress) -> int:
        j = self.journal
        sink = _Sink(self)
        whole = j.last_newline(start, end)
        show = _Progress(start, end) if (progress or (
            progress is None and end - start >= (32 << 20) and sys.stderr.isatty())) else None
        if sink.known is not None:  # a fresh rebuild: texts derived a window behind
            from ..text.text_worker import Deferred

            sink.deferred = Deferred(end - start)
        # No collection while folding: the held nodes and what each window makes are
        # not cyclic, and every collection walked the tens of thousands of nodes held
        # (measured: a third of a rebuild's CPU at 100,000 agent-like nodes).
        enabled = gc.isenabled()
        gc.disable()
        try:
            report, bad = self._fold_windows(sink, start, end, show)
            if sink.known is not None:
                sink.finish()
        finally:
            if sink.deferred is not None:
                sink.deferred.close()
            sink.release()
            if enabled:
                gc.enable()
        for b in bad:
            if b["offset"] >= whole:
                b["reason"] = "torn last line (a writer died mid-line): " + b["reason"]
        self._save_meta(sink, report, end, bad)
        if show:
            show.done()
        return self.ops_applied

    def _fold_windows(self, sink: _Sink, start: int, end: int, show):
        """Apply ``[start, end)`` a window at a time (committing every ``COMMIT_BYTES``);
        returns the report and quarantine records since the last commit."""
        j, db = self.journal, self.db
        report = _journal.Report()
        bad: list[dict] = []
        since_commit = 0
        for off, piece in _journal.windows(j.read, start, end, bad):
            _journal._fold(piece, sink, off, report, bad, False)
            sink.flush()
            pos = off + len(piece)
            self._hash_blocks(pos)
            since_commit += len(piece)
            if since_commit >= COMMIT_BYTES and pos < end:
                self._save_meta(sink, report, pos, bad)
                db.execute("COMMIT")
                db.execute("BEGIN IMMEDIATE")
                # the list itself is emptied: ``windows`` appends to it
                report, since_commit = _journal.Report(), 0
                bad.clear()
            if show:
                show.update(pos)
        self._hash_blocks(end)
        return report, bad

    def _save_meta(self, sink: _Sink, report, pos: int, bad: list) -> None:
        report.quarantined += len(bad)
        if bad:
            report.bad.extend({"offset": b["offset"], "reason": b["reason"]}
                              for b in bad[: _journal.Report.KEEP])
            self.journal.quarantine(bad)
        self.report.merge(report)
        self.ops_applied += report.ops
        full = pos // BLOCK
        self.db.executemany("UPDATE meta SET value=? WHERE key=?", [
            (pos, "offset"), (self._digest(full * BLOCK, pos), "tail"),
            (self._stat() if pos == self.journal.size() else "", "stat"),
            (sink.next_node, "next_node"), (sink.next_edge, "next_edge"),
            (sink.next_fact, "next_fact"), (sink.clock, "clock")])
        self.db.execute("UPDATE meta SET value=value+? WHERE key='ops'", (report.ops,))
        self.db.execute("UPDATE meta SET value=value+? WHERE key='quarantined'",
                        (report.quarantined,))
        self.db.execute("UPDATE meta SET value=value+? WHERE key='skipped'",
                        (report.skipped,))

    def _hash_blocks(self, pos: int) -> None:
        have = self.db.execute("SELECT count(*) FROM blocks").fetchone()[0]
        full = pos // BLOCK
        if full > have:
            self.db.executemany("INSERT INTO blocks VALUES (?, ?)", (
                (i, self._digest(i * BLOCK, (i + 1) * BLOCK)) for i in range(have, full)))

    # --- reading ------------------------------------------------------------------

    def row(self, id: int):
        return self.db.execute(
            "SELECT id, kind, area, label, deleted, useful, unhelpful, created_at, nlog, "
            "facts, context FROM nodes WHERE id=?", (id,)).fetchone()

    def parent_of(self, id: int) -> int | None:
        """hybrid-v1's cluster parent of a node (None: in no cluster)."""
        r = self.db.execute("SELECT parent FROM nodes WHERE id=?", (id,)).fetchone()
        return r[0] if r else None

    def exists(self, id: int) -> bool:
        return self.row(id) is not None

    def _last(self, id: int, n: int, facts: bool = True) -> list[tuple]:
        """A node's last ``n`` log entries ``(at, kind, detail)``, oldest first (without
        fact entries unless ``facts``)."""
        q = "SELECT at, kind, detail FROM log WHERE node=? "
        if not facts:
            q += "AND kind NOT IN ('fact_added', 'fact_superseded') "
        out = self.db.execute(q + "ORDER BY seq DESC LIMIT ?", (id, n)).fetchall()
        out.reverse()
        return out

    def node_text(self, id: int) -> str | None:
        r = self.row(id)
        if r is None or r[4]:
            return None
        return text_of(r[1], r[3], _loads(r[9]), [(k, d) for _, k, d in self._last(id, 3)])

    def vector(self, id: int):
        """A live node's stored hashing-v1 vector as ``(slots, values)``."""
        r = self.db.execute("SELECT vec FROM nodes WHERE id=? AND deleted=0",
                            (id,)).fetchone()
        return unpack_vector(r[0] if r else None)

    def state_of(self, id: int) -> str:
        """``Graph.state_of``, from the node's row."""
        r = self.row(id)
        if r is None:
            raise KeyError(f"node {id} missing")
        id, kind, area, label, _deleted, useful, unhelpful = r[:7]
        facts = _loads(r[9])
        context = _loads(r[10]) if r[10] else []
        return render_state(kind, area, label, id, [(f[1], f[2], f[4]) for f in facts],
                            self._last(id, 5, facts=False), context, useful, unhelpful)

    def history(self, id: int) -> dict:
        r = self.row(id)
        if r is None:
            raise KeyError(f"node {id} missing")
        facts = [{"id": f[0], "key": f[1], "value": f[2],
                  "status": "active" if f[4] else "superseded", "created_at": f[3],
                  "superseded_by": f[5]} for f in _loads(r[9])]
        log = [{"at": a, "kind": k, "detail": d} for a, k, d in self.db.execute(
            "SELECT at, kind, detail FROM log WHERE node=? ORDER BY seq", (id,))]
        return {"node": id, "label": r[3], "kind": r[1], "area": r[2],
                "deleted": bool(r[4]), "facts": facts, "log": log}

    def edges_of(self, id: int) -> list[tuple]:
        """Expansion edges touching ``id``: ``(id, src, dst, kind, weight, valid_from,
        invalid_at, success, failure)`` by edge id."""
        kinds = tuple(EXPANSION_KINDS)
        q = ("SELECT * FROM edges WHERE {} = ? AND kind IN (?,?,?,?)")
        rows = {r[0]: r for col in ("src", "dst")
                for r in self.db.execute(q.format(col), (id, *kinds))}
        return [rows[k] for k in sorted(rows)]

    def stat(self, key: str) -> int:
        return self.meta(key) or 0

    def dfs(self, terms, clusters: bool = False) -> dict[str, int]:
        """Documents (nodes, or clusters) holding each of ``terms``."""
        terms = list(terms)
        if not terms:
            return {}
        table = "cterms" if clusters else "terms"
        return dict(self.db.execute(
            f"SELECT term, doc FROM {table} WHERE term IN ({','.join('?' * len(terms))})",
            terms))

    def lexical(self, terms, k: int = 200, *, clusters: bool = False,
                dfs: dict | None = None, common: int = COMMON) -> list[int]:
        """Up to ``k`` live nodes (or clusters) holding any of ``terms`` (hybrid-v1
        words), best FTS5 BM25 first.

        A term in more than ``common`` documents is left out of the match when a rarer
        one remains (a query of common words only takes the newest documents holding
        the rarest of them): it adds little to a score, and reading its postings would be
        most of the query's cost (FTS5 ranks every row the match yields)."""
        dfs = self.dfs(terms, clusters) if dfs is None else dfs
        present = [t for t in terms if dfs.get(t)]
        if not present:
            return []
        rare = [t for t in present if dfs[t] <= common]
        table = "ctext" if clusters else "text"
        if rare:
            match = " OR ".join(f'"{t}"' for t in rare)
            return [r[0] for r in self.db.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT ?",
                (match, k))]
        # only common words: ranking their postings would read them all; the newest
        # documents holding the rarest of them instead (FTS5 walks rowids backwards)
        t = min(present, key=dfs.get)
        return [r[0] for r in self.db.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT ?",
            (f'"{t}"', k))]

    def counts(self) -> dict:
        """``Graph.counts``, from the index."""
        db = self.db
        by_kind = {k: 0 for k in _ops.NODE_KINDS}
        by_area = {a: 0 for a in _ops.AREAS}
        soft = facts = retired = 0
        for kind, area, deleted, fj in db.execute(
                "SELECT kind, area, deleted, facts FROM nodes"):
            if deleted:
                soft += 1
                continue
            by_kind[kind] += 1
            by_area[area] += 1
            if fj != "[]":
                for f in _loads(fj):
                    if f[4]:
                        facts += 1
                    else:
                        retired += 1
        nn, ne, nf, clock = self.counters()
        return {
            "nodes": sum(by_kind.values()), "soft_deleted": soft,
            "edges": db.execute("SELECT count(*) FROM edges").fetchone()[0],
            "live_edges": db.execute(
                "SELECT count(*) FROM edges WHERE invalid_at IS NULL AND weight > 0 "
                "AND valid_from <= ?", (clock,)).fetchone()[0],
            "facts": facts, "retired_facts": retired, "by_kind": by_kind, "by_area": by_area,
            "episodes": by_kind["TaskEpisode"],
            "next_ids": {"node": nn, "edge": ne, "fact": nf}, "clock": clock,
        }

    def last_at(self, id: int) -> int:
        """The newest ``at`` in a node's log (0 when none)."""
        r = self.db.execute("SELECT max(at) FROM log WHERE node=?", (id,)).fetchone()
        return r[0] or 0

    def snapshot(self):
        """Everything derived, in ``graph_snapshot``'s shape (for ``check``: compare
        with a replay). Reads the whole index: a check, not a turn."""
        nodes = {}
        logs: dict[int, list] = {}
        for node, at, kind, detail in self.db.execute(
                "SELECT node, at, kind, detail FROM log ORDER BY node, seq"):
            logs.setdefault(node, []).append((at, kind, detail))
        for r in self.db.execute("SELECT * FROM nodes ORDER BY id"):
            facts = tuple((f[0], f[1], f[2], f[3], bool(f[4]), f[5]) for f in _loads(r[9]))
            ctx = tuple((c["from"], c["dim"], tuple(c["vec"]), c["note"])
                        for c in (_loads(r[11]) if r[11] else []))
            nodes[r[0]] = (r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7], facts,
                           tuple(logs.get(r[0], ())), ctx)
        edges = {r[0]: tuple(r[1:]) for r in self.db.execute("SELECT * FROM edges")}
        return nodes, edges, self.counters()

    def close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def _sweep(path: Path) -> None:
    """Remove the files of rebuilds whose process is gone (``rebuild``'s new files)."""
    from glob import escape as glob_escape

    for p in path.parent.glob(glob_escape(path.name) + ".new-*"):
        try:
            pid = int(p.name.rsplit("-", 1)[1])
            if pid != os.getpid():
                os.kill(pid, 0)
                continue
        except ProcessLookupError:
            pass
        except (ValueError, PermissionError):
            continue
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def graph_snapshot(g):
    """A replayed ``Graph`` in ``Index.snapshot``'s shape."""
    nodes = {}
    for id, n in g.nodes.items():
        facts = tuple((f.id, f.key, f.value, f.created_at, bool(f.active), f.superseded_by)
                      for f in n.facts)
        ctx = tuple((c["from"], c["dim"], tuple(c["vec"]), c["note"]) for c in n.context)
        nodes[id] = (n.kind, n.area, n.label, bool(n.deleted), n.useful, n.unhelpful,
                     n.created_at, facts, tuple(tuple(e) for e in n.log), ctx)
    edges = {id: (e.src, e.dst, e.kind, e.weight, e.valid_from, e.invalid_at, e.success,
                  e.failure) for id, e in g.edges.items()}
    return nodes, edges, (g.next_node, g.next_edge, g.next_fact, g.clock)


def compare(ix: Index, g) -> str | None:
    """None when the index holds exactly what replaying gave ``g``, else the first
    difference, in words."""
    a_nodes, a_edges, a_c = ix.snapshot()
    b_nodes, b_edges, b_c = graph_snapshot(g)
    if a_c != b_c:
        return f"counters and clock {a_c} in the index, {b_c} in a replay"
    for id in sorted(set(a_nodes) | set(b_nodes)):
        if a_nodes.get(id) != b_nodes.get(id):
            return f"node {id} differs"
    for id in sorted(set(a_edges) | set(b_edges)):
        if a_edges.get(id) != b_edges.get(id):
            return f"edge {id} differs"
    for id, n in g.nodes.items():
        if ix.state_of(id) != g.state_of(id):
            return f"node {id}'s state text differs"
    live = sorted(id for id, n in g.nodes.items() if not n.deleted)
    for i in range(0, len(live), 2000):
        part = live[i:i + 2000]
        want = _sparse([g.node_text(id) for id in part])
        got = dict(ix.db.execute(f"SELECT id, vec FROM nodes WHERE id IN "
                                 f"({','.join('?' * len(part))})", part))
        for id, w in zip(part, want):
            if got.get(id) != w:
                return f"node {id}'s hashing-v1 vector differs"
    return None


class _Progress:
    """``indexing memory journal  42% [#####     ] 120 MB`` on stderr, redrawn in place."""

    def __init__(self, start: int, end: int):
        self.start, self.end = start, end
        self.last = 0.0

    def update(self, pos: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        frac = (pos - self.start) / max(1, self.end - self.start)
        bar = "#" * int(frac * 30)
        sys.stderr.write(f"\rindexing memory journal {frac:4.0%} [{bar:<30}] "
                         f"{pos / 2**20:.0f} / {self.end / 2**20:.0f} MB")
        sys.stderr.flush()

    def done(self) -> None:
        sys.stderr.write("\r" + " " * 78 + "\r")
        sys.stderr.flush()


__all__ = ["Index", "IndexInvalid", "compare", "graph_snapshot", "text_of"]
