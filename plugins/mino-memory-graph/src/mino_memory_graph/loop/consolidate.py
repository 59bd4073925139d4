"""Consolidation (Mnemo's ``consolidate.rs``): recurring themes of episodes and pitfalls
folded into ``lesson:`` nodes, by Mnemo's rule and thresholds.

``plan`` is a pure, deterministic, idempotent planner: it reads the graph and returns
journal ops plus a description of each lesson; a second run right after the first plans
nothing. The rule:

1. Sources: live Episodic and Salience nodes, by id (a session's own node, a container,
   is not one).
2. A source's theme tokens: Mnemo's tokens (ASCII letters and digits, lowercased) of its
   label and its current facts' values (less ``BOOKKEEPING`` ones: ids, dates, counts),
   longer than 2 characters, not a stopword.
3. A token recurs when at least ``min_sources`` sources hold it (2, or
   ``MNEMO_MIN_OCCURRENCES``).
4. For each recurring token, in order: its group is every source holding it; the group's
   signature is what all its members share, recurring tokens only, the first 4 in order;
   fewer than 2 shared tokens is no lesson; of groups with one signature the first wins.
5. Per group: ``lesson: <signature>`` with fact ``sources`` = ``#id #id ...``. A live
   Semantic node of that label with those sources: nothing. With other sources: the
   ``sources`` fact is superseded. Else a new Aspect, moved to Semantic, with facts
   ``recurring_theme`` (``seen in N episodes: ...``) and ``sources``.

Nothing is erased: lessons are new nodes and superseded facts; the journal only grows.
It runs on ``mino memory consolidate`` and when a session ends after at least
``CONSOLIDATE_THRESHOLD`` (3, or ``MNEMO_CONSOLIDATE_THRESHOLD``) new episodes appeared
since it began (other processes' episodes on the shared journal count, as in Mnemo).

What mino adds to Mnemo's rule, for a memory of months (Mnemo's rule over 100,000
agent-like nodes wrote 23,617 lessons on its first pass, nearly every pair of sources
sharing a rare word and a common one, and took 3.7 s of a session's end):

- from ``LARGE`` sources on, a theme needs ``LARGE_MIN_SOURCES`` (3) of them: among
  hundreds, two sharing two words is chance;
- a word in more than ``COMMON_SHARE`` of the sources (and at least ``COMMON_MIN`` of
  them) is a common word there, not a theme: it is left out like a stopword. A small
  memory (fewer than ``COMMON_MIN`` sources holding any word) keeps Mnemo's rule exactly;
- one pass writes at most ``MAX_WRITES`` lessons (new or updated), those with the most
  sources first; what it leaves waits for the next pass;
- a session's end is incremental: it reads only the newest ``WINDOW`` sources, plans
  only the themes of sources newer than its last pass (``MARK``, kept in the index:
  a rebuilt index makes the next pass a first one again, bounded the same way), and
  does nothing at all when no source is new.
"""
from __future__ import annotations

import os
import re


# (embed and memories are imported where used: ``mino memory``'s commands register this
# module's command at every start, and a search must not pay for them)

CONSOLIDATE_THRESHOLD = 3
COMMON_SHARE = 0.05  # a word in more of the sources than this is common, not a theme
COMMON_MIN = 20      # ...and in at least this many (a small memory: Mnemo's rule)
MAX_WRITES = 16      # lessons one pass writes at most (new or updated)
LARGE = 200          # sources from which a theme needs ``LARGE_MIN_SOURCES`` of them
LARGE_MIN_SOURCES = 3
WINDOW = 2000        # the newest sources a session's end reads
MARK = "consolidated"  # index meta: the newest source id the last session-end pass saw
DEFAULT_MIN_SOURCES = 2
MAX_SIGNATURE_TOKENS = 4
MIN_SHARED_TOKENS = 2
SOURCE_AREAS = ("Episodic", "Salience")
LESSON_PREFIX = "lesson: "
# Mnemo's list: words that recur everywhere and carry no theme.
STOPWORDS = frozenset("""
the and for with that this from was were has had not but you our its it is are when what
why how all any out into onto after before again pain failure failed error agent node task
""".split())

# The permission decision for the lessons memory writes on its own at a session's end:
# ``deny: ['memory_*']`` (or ``memory_consolidate``) stops it.
CONSOLIDATE = "memory_consolidate"


def _positive(raw: str | None, default: int) -> int:
    """A positive integer from the environment; anything else keeps ``default`` (Mnemo:
    a mistyped override still consolidates)."""
    try:
        n = int((raw or "").strip())
    except ValueError:
        return default
    return n if n > 0 else default


def min_sources() -> int:
    return _positive(os.environ.get("MNEMO_MIN_OCCURRENCES"), DEFAULT_MIN_SOURCES)


def threshold() -> int:
    return _positive(os.environ.get("MNEMO_CONSOLIDATE_THRESHOLD"), CONSOLIDATE_THRESHOLD)


# Values that say where or when, never what happened: an id, a date, a count, the agent and
# model. Mnemo reads every value; on mino's data these are shared by every episode of a
# session (``session``) or every pitfall (``source``: "observed: tool failure") and made
# lessons such as "lesson: bash observed tool" out of any two failures.
BOOKKEEPING = frozenset(("session", "turn", "started", "source", "signature", "occurrences",
                         "agent", "model", "learned from"))


def theme_tokens(node) -> frozenset[str]:
    return _theme(node.label, [f.value for f in node.facts
                               if f.active and f.key not in BOOKKEEPING])


# Mnemo's tokens (``embed.tokenize``: ASCII letters and digits of the lowered UTF-8
# bytes) longer than 2 characters, in one pass: bytes read as latin-1 map one to one, and
# none at or above 0x80 is a letter or digit here
_THEME_TOKEN = re.compile(r"[a-z0-9]{3,}")


def _theme(label: str, values: list[str]) -> frozenset[str]:
    text = " ".join([label, *values]).encode("utf-8", "surrogatepass").lower()
    return frozenset(_THEME_TOKEN.findall(text.decode("latin-1"))) - STOPWORDS


def _source_tokens(graph, window: int | None = None) -> dict[int, frozenset[str]]:
    """Each source's theme tokens, by id ascending: live Episodic and Salience nodes, less
    the sessions' own nodes (a session's node is the container of its episodes: its label
    and facts are an id and a date); with ``window``, the newest that many. A partial
    graph's sources come from the index in one pass (building each node took two queries
    a node: 3 s of a session's end at 100,000 nodes), the nodes it has loaded as they
    stand in it."""
    container = _session_prefix()

    def source(n) -> bool:
        return (n is not None and not n.deleted and n.area in SOURCE_AREAS
                and not (n.kind == "TaskEpisode" and n.label.startswith(container)))

    if not getattr(graph, "partial", False):
        out = {nid: theme_tokens(n) for nid, n in sorted(graph.nodes.items()) if source(n)}
        if window is not None and len(out) > window:
            out = dict(list(out.items())[-window:])
        return out
    import json

    loaded = dict(graph.nodes.loaded())
    out = {}
    q = ("SELECT id, kind, label, facts FROM nodes WHERE deleted=0 AND area IN (?, ?) "
         "AND NOT (kind='TaskEpisode' AND substr(label, 1, ?) = ?) ORDER BY id DESC")
    args = (*SOURCE_AREAS, len(container), container)
    if window is not None:
        q += " LIMIT ?"
        args += (window,)
    for nid, kind, label, facts in graph.index.db.execute(q, args):
        if nid in loaded:
            continue
        out[nid] = _theme(label, [f[2] for f in json.loads(facts)
                                  if f[4] and f[1] not in BOOKKEEPING])
    low = min(out) if window is not None and len(out) >= window else 0
    out.update((nid, theme_tokens(n)) for nid, n in loaded.items()
               if nid >= low and source(n))
    out = dict(sorted(out.items()))
    if window is not None and len(out) > window:
        out = dict(list(out.items())[-window:])
    return out


def _lesson_nodes(graph) -> dict[str, int]:
    """Each lesson label's live Semantic node (the lowest id), found once per pass."""
    from ..state.partial import find_label

    out: dict[str, int] = {}
    for nid in find_label(graph, LESSON_PREFIX, prefix=True):
        n = graph.nodes.get(nid)
        if n is not None and not n.deleted and n.area == "Semantic":
            out.setdefault(n.label, nid)
    return out


def plan(graph, at: int = 0, min_sources_: int | None = None, *, since: int = 0,
         window: int | None = None, limit: int | None = MAX_WRITES):
    """``(ops, lessons)``: the ops of one consolidation pass, and per lesson ``{label,
    occurrences, sources, node, change}`` (``change``: new, updated or unchanged). Ids are
    allocated from the graph's counters: apply the ops in order in one request.

    ``window``: only the newest that many sources; ``since``: only themes that a source
    with an id of at least ``since`` holds; ``limit``: at most that many lessons written
    (new or updated), the most sources first (None: all)."""
    need = min_sources_ if min_sources_ is not None else min_sources()
    tokens = _source_tokens(graph, window)
    holders: dict[str, list[int]] = {}  # token -> the sources holding it, by id
    for nid, toks in tokens.items():
        for t in toks:
            holders.setdefault(t, []).append(nid)
    # a word in most sources says nothing of any: a stopword here (see the docstring)
    cap = max(COMMON_MIN, COMMON_SHARE * len(tokens))
    common = {t for t, ids in holders.items() if len(ids) > cap}
    if common:
        tokens = {nid: toks - common for nid, toks in tokens.items()}
        for t in common:
            del holders[t]
    if len(tokens) >= LARGE:  # two of hundreds sharing two words is chance, not a theme
        need = max(need, LARGE_MIN_SOURCES)
    recurring = {t for t, ids in holders.items() if len(ids) >= need}
    if since:  # only what is new: themes a new source holds
        fresh = set()
        for nid, toks in tokens.items():
            if nid >= since:
                fresh |= toks
        recurring_new = recurring & fresh
    else:
        recurring_new = recurring
    groups: dict[tuple[str, ...], list[int]] = {}
    for token in sorted(recurring_new):
        members = holders[token]
        shared = frozenset.intersection(*(tokens[m] for m in members))
        sig = tuple(sorted(t for t in shared if t in recurring)[:MAX_SIGNATURE_TOKENS])
        if len(sig) < MIN_SHARED_TOKENS:
            continue
        groups.setdefault(sig, members)
    ops: list[tuple[str, dict]] = []
    lessons: list[dict] = []
    known = _lesson_nodes(graph) if groups else {}
    next_node, next_fact = graph.next_node, graph.next_fact
    written = 0
    order = sorted(groups)
    if limit is not None:  # the most sources first, then as Mnemo orders them
        order.sort(key=lambda sig: -len(groups[sig]))
    for sig in order:
        srcs = groups[sig]
        if limit is not None and written >= limit:
            # the rest waits for the next pass: only an unchanged lesson is reported
            existing = known.get(LESSON_PREFIX + " ".join(sig))
            old = graph.nodes[existing].fact("sources") if existing is not None else None
            if old is not None and old.value == " ".join(f"#{nid}" for nid in srcs):
                lessons.append({"label": LESSON_PREFIX + " ".join(sig),
                                "occurrences": len(srcs), "sources": srcs,
                                "node": existing, "change": "unchanged"})
            continue
        label = LESSON_PREFIX + " ".join(sig)
        sources = " ".join(f"#{nid}" for nid in srcs)
        lesson = {"label": label, "occurrences": len(srcs), "sources": srcs}
        existing = known.get(label)
        if existing is not None:
            old = graph.nodes[existing].fact("sources")
            if old is not None and old.value == sources:
                lessons.append({**lesson, "node": existing, "change": "unchanged"})
                continue
            if old is not None:
                ops.append(("SupersedeFact", {"node": existing, "old_fact": old.id,
                                              "new_key": "sources", "new_value": sources,
                                              "new_fact_id": next_fact, "at": at}))
            else:
                ops.append(("AddFact", {"node": existing, "fact_id": next_fact,
                                        "key": "sources", "value": sources, "at": at}))
            next_fact += 1
            written += 1
            lessons.append({**lesson, "node": existing, "change": "updated"})
            continue
        nid, next_node = next_node, next_node + 1
        ops.append(("CreateNode", {"id": nid, "kind": "Aspect", "label": label, "at": at}))
        ops.append(("SetArea", {"node": nid, "area": "Semantic", "at": at}))
        theme = f"seen in {len(srcs)} episodes: {' '.join(sig)}"
        for key, value in (("recurring_theme", theme), ("sources", sources)):
            ops.append(("AddFact", {"node": nid, "fact_id": next_fact, "key": key,
                                    "value": value, "at": at}))
            next_fact += 1
        written += 1
        lessons.append({**lesson, "node": nid, "change": "new"})
    lessons.sort(key=lambda x: x["label"])
    return ops, lessons


def apply(store) -> list[dict]:
    """Plan and apply one pass under the journal's exclusive lock (the graph is current
    there, so the planner's ids are the journal's). Returns the lessons."""
    with store.write() as req:
        ops, lessons = plan(req.graph, at=req.at)
        for name, body in ops:
            req.apply(name, body)
    return lessons


def _index_of(store):
    """The store's index when its graph is read from it (where the mark is kept)."""
    g = store.graph
    return g.index if getattr(g, "partial", False) else None


def _newest_source(db) -> int:
    container = _session_prefix()
    r = db.execute("SELECT max(id) FROM nodes WHERE deleted=0 AND area IN (?, ?) AND NOT "
                   "(kind='TaskEpisode' AND substr(label, 1, ?) = ?)",
                   (*SOURCE_AREAS, len(container), container)).fetchone()
    return r[0] or 0


def apply_new(store) -> list[dict]:
    """A session's end: one bounded pass over what is new since the last one (see the
    module docstring). Returns the lessons it planned."""
    ix = _index_of(store)
    mark = (ix.meta(MARK) or 0) if ix is not None else 0
    if ix is not None and mark and _newest_source(ix.db) <= mark:
        return []  # no source since the last pass: nothing to read
    with store.write() as req:
        ops, lessons = plan(req.graph, at=req.at, since=mark + 1 if mark else 0,
                            window=WINDOW)
        for name, body in ops:
            req.apply(name, body)
    ix = _index_of(store)
    if ix is not None:
        written = sum(x["change"] != "unchanged" for x in lessons)
        if written < MAX_WRITES:  # a pass cut short reads the same sources again next time
            ix.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)",
                          (MARK, _newest_source(ix.db)))
    return lessons


# -- when a session ends ---------------------------------------------------------------

def _session_prefix() -> str:
    from .standing import SESSION_PREFIX  # standing imports the model: not at registration

    return SESSION_PREFIX


def new_episodes(graph, since: int, sessions: bool = False) -> int:
    """Live episodes with an id of at least ``since`` (ids only grow): the per-message
    episodes, or with ``sessions`` the session nodes (the only episodes recorded when
    ``memory.graph.episodes`` is off, Mnemo's one episode per session)."""
    prefix = _session_prefix()
    if getattr(graph, "partial", False):
        (n,) = graph.index.db.execute(
            "SELECT COUNT(*) FROM nodes WHERE deleted=0 AND kind='TaskEpisode' AND id>=? "
            f"AND (substr(label, 1, ?) = ?) = {1 if sessions else 0}",
            (since, len(prefix), prefix)).fetchone()
        return int(n)
    return sum(1 for nid in range(since, graph.next_node)
               if (n := graph.nodes.get(nid)) is not None and not n.deleted
               and n.kind == "TaskEpisode" and n.label.startswith(prefix) == sessions)


def _began_at(graph, session_id: str, known: int | None = None) -> int | None:
    """The lowest id this session wrote: its session node or its first episode (both
    carry its ``session`` fact). ``known``: the session's node as this process found or
    made it (on the session's first turn, before that turn's episode), which spares a
    scan of every node (36 ms at 100,000)."""
    from ..state.partial import find_fact

    n = graph.live(known) if known is not None else None
    if n is not None and n.label == _session_prefix() + session_id:
        return known
    ids = find_fact(graph, "session", session_id)
    return min(ids) if ids else None


def at_session_end(session) -> list[dict]:
    """``session_end``: consolidate when ``threshold()`` new episodes appeared since this
    session began (its first node; a session that recorded nothing is left alone).
    Lessons are text memory writes on its own, so a deny rule on ``memory_consolidate``
    stops them."""
    from .episodes import records_episodes
    from .memories import NAME, memory_for

    if NAME not in session.state:
        # no turn of it ran in this process (mino left at once, a resume with no message):
        # nothing new to fold, and no journal to open or create on the way out
        return []
    mem = memory_for(session.home, session.config)
    store = mem.store
    store.refresh()
    g = store.graph
    began = _began_at(g, str(session.id), mem.standing.sessions.get(str(session.id)))
    if began is None:
        return []
    if new_episodes(g, began, sessions=not records_episodes(session.config)) < threshold():
        return []
    why = session.denied(CONSOLIDATE, {})
    if why:
        session.notice(f"Memory: recurring themes not folded into lessons (denied by {why}).")
        return []
    try:
        lessons = apply_new(store)
    except OSError as e:  # a shared journal's server away, a full disk: next time
        session.notice(f"Memory: recurring themes not folded into lessons now ({e}).")
        return []
    changed = [x for x in lessons if x["change"] != "unchanged"]
    if changed:
        session.state.setdefault(NAME, {})["consolidated"] = changed
        session.notice(f"Memory: {len(changed)} lesson(s) from recurring themes "
                       "(`mino memory consolidate` lists them).")
    return lessons
