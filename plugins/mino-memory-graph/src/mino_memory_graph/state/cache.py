"""The optional on-disk derived cache: a snapshot of the graph and the scorer's vectors.

It only ever speeds up opening; the journal stays the source of truth. The file sits
beside the journal (``journal.cache``, 0600) and is replaced whole (``atomic_write``). It is used only when all of these hold, else it is ignored and rebuilt:

- magic and ``FORMAT`` match, and every section's CRC-32 matches (damage);
- the journal is at least as long as the offset the cache was taken at, and the SHA-256
  of every journal byte before that offset is the one the cache holds (a journal that
  was replaced, truncated, or edited anywhere, even to the same length: the cache
  would serve text the user had blanked out). The store keeps that hash running as the
  journal grows (``Store._prefix_hash``), so saving costs no re-read; opening re-hashes
  the prefix (about a second per GB of journal);
- the scorer that wrote it is the scorer now configured (vectors are per embedder).

Lines after the cached offset are replayed normally, so a cache taken yesterday is still
useful today. ``check`` compares the cache with a full replay.
"""
from __future__ import annotations

import gc
import hashlib
import json
import marshal
import struct
import threading
import zlib
from pathlib import Path

from mino_core import atomic_write

from ..core.model import (EXPANSION_KINDS, PROJECT_PREFIX, Edge, Fact, Graph, LazyNode, Node,
                    node_body)
from ..core.ops import AREAS, EDGE_KINDS, NODE_KINDS

MAGIC = b"MNEMOGC\x00"
FORMAT = 4  # 4: the whole prefix is hashed (3 hashed its first and last 64 KiB)
HASH = "sha256"  # measured here: sha256 1.3 GB/s, blake2b 1.0, crc32 2.1 (not a proof)
READ = 4 << 20


def new_hash():
    return hashlib.new(HASH)


def hash_range(journal, start: int, end: int, h):
    """Update ``h`` with journal bytes ``[start, end)``, read ``READ`` bytes at a time."""
    pos = start
    while pos < end:
        chunk = journal.read(pos, min(end, pos + READ))
        if not chunk:
            raise CacheInvalid("journal is shorter than when the cache was taken")
        h.update(chunk)
        pos += len(chunk)
    return h


def journal_marks(offset: int, h) -> dict:
    """What the cache records of the journal prefix it was taken from."""
    return {"offset": offset, HASH: h.hexdigest()}


def graph_snapshot(g: Graph) -> tuple:
    """The graph as plain tuples (canonical: equal graphs give equal snapshots)."""
    if getattr(g, "partial", False):
        g = g.whole()
    nodes = tuple(
        (n.id, n.kind, n.area, n.label,
         tuple((f.id, f.key, f.value, f.active, f.created_at, f.superseded_by)
               for f in n.facts),
         tuple(n.log), tuple((c["from"], c["dim"], tuple(c["vec"]), c["note"])
                             for c in n.context),
         n.created_at, n.deleted, n.useful, n.unhelpful)
        for n in g.nodes.values())
    edges = tuple((e.id, e.src, e.dst, e.kind, e.weight, e.valid_from, e.invalid_at,
                   e.success, e.failure) for e in g.edges.values())
    return (g.next_node, g.next_edge, g.next_fact, g.clock, nodes, edges)


def same_graph(a: Graph, b: Graph) -> bool:
    """Equal nodes, edges and counters (the clock is a process's own and may differ)."""
    sa, sb = graph_snapshot(a), graph_snapshot(b)
    return sa[:3] == sb[:3] and sa[4:] == sb[4:]


def graph_from_snapshot(snap) -> Graph:
    g = Graph()
    g.next_node, g.next_edge, g.next_fact, g.clock, nodes, edges = snap
    gn = g.nodes
    projects = g.projects
    for (id, kind, area, label, facts, log, context, created_at, deleted, useful,
         unhelpful) in nodes:
        n = Node(id, kind, label, created_at, area)
        n.facts = [Fact(fid, k, v, ca, act, sb) for fid, k, v, act, ca, sb in facts]
        n.log = list(log)
        n.context = [{"from": c[0], "dim": c[1], "vec": list(c[2]), "note": c[3]}
                     for c in context]
        n.deleted, n.useful, n.unhelpful = deleted, useful, unhelpful
        gn[id] = n
        if kind == "Entity" and label.startswith(PROJECT_PREFIX):
            projects.add(id)
    ge = g.edges
    adj = g.adj
    for id, src, dst, kind, weight, vf, ia, su, fa in edges:
        e = Edge(id, src, dst, kind, vf)
        e.weight, e.invalid_at, e.success, e.failure = weight, ia, su, fa
        ge[id] = e
        if kind in EXPANSION_KINDS:
            adj.setdefault(src, []).append(id)
            if dst != src:
                adj.setdefault(dst, []).append(id)
    return g


ALIGN = 64
_KIND_IX = {k: i for i, k in enumerate(NODE_KINDS)}
_AREA_IX = {a: i for i, a in enumerate(AREAS)}
_EKIND_IX = {k: i for i, k in enumerate(EDGE_KINDS)}


def graph_columns(g: Graph):
    """The graph as columns (plain lists and numpy arrays) plus one blob of node bodies.

    Scalars of every node and edge are columns; each node's facts, log and context are
    one marshal record in ``bodies`` (``boff`` holds the offsets), read back only when
    that node is first used.
    """
    import numpy as np

    nodes = list(g.nodes.values())
    parts = []
    offs = [0]
    pos = 0
    for n in nodes:
        raw = n.raw_body() if n.__class__ is LazyNode else None
        b = bytes(raw) if raw is not None else marshal.dumps(node_body(n))
        parts.append(b)
        pos += len(b)
        offs.append(pos)
    edges = list(g.edges.values())
    cols = {
        "counters": [g.next_node, g.next_edge, g.next_fact, g.clock],
        "nid": [n.id for n in nodes],
        "nkind": np.asarray([_KIND_IX[n.kind] for n in nodes], dtype=np.int8),
        "narea": np.asarray([_AREA_IX[n.area] for n in nodes], dtype=np.int8),
        "nlabel": [n.label for n in nodes],
        "ncreated": [n.created_at for n in nodes],
        "ndeleted": [n.deleted for n in nodes],
        "nuseful": [n.useful for n in nodes],
        "nunhelpful": [n.unhelpful for n in nodes],
        "boff": np.asarray(offs, dtype=np.int64),
        "eid": [e.id for e in edges], "esrc": [e.src for e in edges],
        "edst": [e.dst for e in edges],
        "ekind": np.asarray([_EKIND_IX[e.kind] for e in edges], dtype=np.int8),
        "eweight": [e.weight for e in edges], "evalid": [e.valid_from for e in edges],
        "einvalid": [e.invalid_at for e in edges], "esuccess": [e.success for e in edges],
        "efailure": [e.failure for e in edges],
    }
    return cols, b"".join(parts)


def graph_from_columns(cols: dict, bodies) -> Graph:
    g = Graph()
    g.next_node, g.next_edge, g.next_fact, g.clock = cols["counters"]
    gn = g.nodes
    projects = g.projects
    new = LazyNode.__new__
    boff = cols["boff"].tolist()
    kinds = [NODE_KINDS[i] for i in range(len(NODE_KINDS))]
    areas = [AREAS[i] for i in range(len(AREAS))]
    nkind = cols["nkind"].tolist()
    narea = cols["narea"].tolist()
    for i, (id, label, ca, de, us, un) in enumerate(zip(
            cols["nid"], cols["nlabel"], cols["ncreated"], cols["ndeleted"],
            cols["nuseful"], cols["nunhelpful"])):
        n = new(LazyNode)
        n.id = id
        n.kind = kind = kinds[nkind[i]]
        n.area = areas[narea[i]]
        n.label = label
        n.created_at = ca
        n.deleted = de
        n.useful = us
        n.unhelpful = un
        n._state = None
        n._keys = None
        n._body = (bodies, boff[i], boff[i + 1])
        gn[id] = n
        if kind == "Entity" and label.startswith(PROJECT_PREFIX):
            projects.add(id)
    ge = g.edges
    adjacent = g.adj.setdefault
    enew = Edge.__new__
    ekinds = [EDGE_KINDS[k] for k in cols["ekind"].tolist()]
    expand = EXPANSION_KINDS
    for id, src, dst, kind, w, vf, ia, su, fa in zip(
            cols["eid"], cols["esrc"], cols["edst"], ekinds, cols["eweight"],
            cols["evalid"], cols["einvalid"], cols["esuccess"], cols["efailure"]):
        e = enew(Edge)
        e.id, e.src, e.dst, e.kind, e.weight = id, src, dst, kind, w
        e.valid_from, e.invalid_at, e.success, e.failure = vf, ia, su, fa
        ge[id] = e
        if kind in expand:  # both ends' adjacency lists, once for a self-loop
            adjacent(src, []).append(id)
            if dst != src:
                adjacent(dst, []).append(id)
    return g


def _flatten(obj, arrays: list):
    """Replace numpy arrays in a state (dicts, lists, plain values) by ``{"__nd__": i}``."""
    import numpy as np

    if isinstance(obj, np.ndarray):
        arrays.append(np.ascontiguousarray(obj))
        return {"__nd__": len(arrays) - 1}
    if isinstance(obj, dict):
        return {k: _flatten(v, arrays) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) and obj and any(isinstance(x, (dict, list, tuple))
                                                      or hasattr(x, "dtype") for x in obj[:1]):
        return [_flatten(v, arrays) for v in obj]
    return obj


def _unflatten(obj, arrays: list):
    if isinstance(obj, dict):
        if len(obj) == 1 and "__nd__" in obj:
            return arrays[obj["__nd__"]]
        return {k: _unflatten(v, arrays) for k, v in obj.items()}
    if isinstance(obj, list) and obj and isinstance(obj[0], (dict, list)):
        return [_unflatten(v, arrays) for v in obj]
    return obj


def _engine_state(engine) -> dict:
    n = engine.n
    return {"ids": engine.ids[:n], "kind": engine.kind[:n], "area": engine.area[:n],
            "votes": engine.votes[:n], "live": engine.live[:n], "texts": list(engine.texts[:n])}


def save(path: Path, journal, offset: int, graph: Graph, engine, prefix=None) -> int:
    """Write the cache for the state at journal ``offset``; returns bytes written.

    ``prefix``: the running hash of journal bytes ``[0, offset)`` (hashed here if None).
    """
    if prefix is None:
        prefix = hash_range(journal, 0, offset, new_hash())
    arrays: list = []
    if engine is None:  # the graph alone (recall is served by journal.index)
        n, scorer, est, st = 0, None, None, None
    else:
        engine.sync()
        n = engine.n
        scorer = engine.scorer
        st = scorer.state(n) if hasattr(scorer, "state") else None
        est = _engine_state(engine)
    cols, bodies = graph_columns(graph)
    blobs = {
        "graph": marshal.dumps(_flatten(cols, arrays)),
        "bodies": bodies,
        "engine": marshal.dumps(_flatten(est, arrays)),
        "state": marshal.dumps(_flatten(st, arrays)),
    }
    parts: list = []
    pos = 0

    def place(b) -> list:
        nonlocal pos
        pad = (-pos) % ALIGN if len(b) else 0  # no padding after the last bytes
        if pad:
            parts.append(b"\0" * pad)
            pos += pad
        mv = memoryview(b).cast("B")
        parts.append(mv)
        rec = [pos, mv.nbytes, zlib.crc32(mv)]
        pos += mv.nbytes
        return rec

    sections = {name: place(b) for name, b in blobs.items()}
    arecs = []
    for arr in arrays:
        rec = place(arr.reshape(-1).view("B") if arr.size else b"")
        arecs.append(rec + [arr.dtype.str, list(arr.shape)])
    header = {
        "format": FORMAT, "marks": journal_marks(offset, prefix), "rows": n,
        "scorer": getattr(scorer, "name", ""), "sections": sections, "arrays": arecs,
    }
    hb = json.dumps(header).encode()
    pre = MAGIC + struct.pack("<I", len(hb)) + hb
    pre += b"\0" * ((-len(pre)) % ALIGN)
    # all or nothing, in the journal's folder as checked (the core's one helper)
    atomic_write(path, b"".join([pre, *parts]), mode=0o600)
    return len(pre) + pos


class CacheInvalid(Exception):
    pass


def read_header(path: Path):
    with open(path, "rb") as fh:
        pre = fh.read(12)
        if len(pre) < 12 or pre[:8] != MAGIC:
            raise CacheInvalid("not a derived cache file")
        (hl,) = struct.unpack("<I", pre[8:])
        header = json.loads(fh.read(hl))
    if header.get("format") != FORMAT:
        raise CacheInvalid(f"cache format {header.get('format')} (want {FORMAT})")
    start = 12 + hl
    return header, start + (-start) % ALIGN


def validate_marks(header: dict, journal):
    """The running hash of the prefix the cache claims, or CacheInvalid when the journal
    no longer holds that prefix byte for byte."""
    marks = header["marks"]
    off = marks["offset"]
    if journal.size() < off:
        raise CacheInvalid("journal is shorter than when the cache was taken")
    h = hash_range(journal, 0, off, new_hash())
    if journal_marks(off, h) != marks:
        raise CacheInvalid("journal content differs from when the cache was taken")
    return h


FREEZE_NODES = 50_000  # a loaded graph this big is frozen (see load)


def load(path: Path, journal, engine_factory, scorer_name: str = ""):
    """Return ``(graph, engine, offset, prefix hash)`` from a valid cache, else raise
    CacheInvalid.

    Millions of acyclic objects: the cyclic collector is off meanwhile (it would run
    for nothing), and a graph of ``FREEZE_NODES`` nodes or more is frozen before it
    comes back on, as a big fold is (``journal.bulk``): the store keeps it for good.
    """
    enabled = gc.isenabled()
    gc.disable()
    big = False
    try:
        loaded = _load(path, journal, engine_factory, scorer_name)
        big = len(loaded[0].nodes) >= FREEZE_NODES
        return loaded
    finally:
        if big:
            gc.freeze()
        if enabled:
            gc.enable()


def _read_sections(path: Path, header: dict, start: int):
    """The whole file once; every section and array checked against its CRC-32."""
    import numpy as np

    import mmap

    with open(path, "rb") as fh:
        try:  # mapped, not copied: arrays and node bodies are views of the page cache
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError):
            data = fh.read()
    mv = memoryview(data)
    body = mv[start:]

    def get(rec):
        off, size, crc = rec[0], rec[1], rec[2]
        b = body[off: off + size]
        if len(b) != size or zlib.crc32(b) != crc:
            raise CacheInvalid("cache section damaged")
        return b

    sections = {name: get(rec) for name, rec in header["sections"].items()}
    arrays = []
    for rec in header["arrays"]:
        b = get(rec)
        dt = np.dtype(rec[3])
        arrays.append(np.frombuffer(b, dtype=dt).reshape(rec[4]) if rec[1]
                      else np.zeros(rec[4], dtype=dt))
    return sections, arrays


def _load(path: Path, journal, engine_factory, scorer_name: str):
    import numpy as np

    check = None
    try:
        header, start = read_header(path)
        # hashing the prefix (hashlib and pread let go of the GIL) overlaps the load
        check = _PrefixCheck(header, journal)
        sections, arrays = _read_sections(path, header, start)
        graph = graph_from_columns(_unflatten(marshal.loads(sections["graph"]), arrays),
                                   sections["bodies"])
        est = _unflatten(marshal.loads(sections["engine"]), arrays)
        if est is None:  # a graph-only cache: the engine is built when first needed
            graph.dirty.clear()
            graph.edge_dirty.clear()
            prefix, check = check.result(), None
            return graph, None, header["marks"]["offset"], prefix
        engine = engine_factory(graph)
        n = header["rows"]
        engine._grow(n)
        engine.n = n
        engine.ids[:n] = est["ids"]
        engine.kind[:n] = est["kind"]
        engine.area[:n] = est["area"]
        engine.votes[:n] = est["votes"]
        engine.live[:n] = est["live"]
        engine.texts = list(est["texts"])
        engine.row_of = dict(zip(engine.ids[:n].tolist(), range(n)))
        engine.voted = int(np.count_nonzero(engine.votes[:n]))
        engine.primed = True
        st = _unflatten(marshal.loads(sections["state"]), arrays)
        ok = False
        if st is not None and hasattr(engine.scorer, "load_state"):
            ok = engine.scorer.load_state(st, n)
        if not ok:
            # another scorer (or none saved): the graph is still good; re-index its text
            engine.scorer = engine_factory(graph).scorer
            rows = [r for r in range(n) if engine.live[r]]
            add_many = getattr(engine.scorer, "add_many", None)
            ids = [int(engine.ids[r]) for r in rows]
            texts = [engine.texts[r] for r in rows]
            if add_many is not None:
                add_many(rows, ids, texts)
            else:
                for r, i, t in zip(rows, ids, texts):
                    engine.scorer.add(r, i, t)
        graph.dirty.clear()
        graph.edge_dirty.clear()
        prefix, check = check.result(), None
        return graph, engine, header["marks"]["offset"], prefix
    except CacheInvalid:
        raise
    except Exception as e:  # noqa: BLE001 - any damage means "rebuild from the journal"
        raise CacheInvalid(f"cache unreadable ({type(e).__name__})") from None
    finally:
        if check is not None:  # the load failed first: the thread still ends here
            check.join()


class _PrefixCheck(threading.Thread):
    """``validate_marks`` on another thread; ``result()`` joins and gives its answer."""

    def __init__(self, header: dict, journal):
        super().__init__(name="mnemo-cache-check", daemon=True)
        self.header, self.journal = header, journal
        self.hash = self.error = None
        self.start()

    def run(self) -> None:
        try:
            self.hash = validate_marks(self.header, self.journal)
        except BaseException as e:  # noqa: BLE001 - handed to the caller by result()
            self.error = e

    def result(self):
        self.join()
        if self.error is not None:
            raise self.error
        return self.hash
