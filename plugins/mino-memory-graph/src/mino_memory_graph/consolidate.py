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
"""
from __future__ import annotations

import os
import re

import click

# (embed and memories are imported where used: ``mino memory``'s commands register this
# module's command at every start, and a search must not pay for them)

CONSOLIDATE_THRESHOLD = 3
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


def _source_tokens(graph) -> dict[int, frozenset[str]]:
    """Each source's theme tokens, by id ascending: live Episodic and Salience nodes, less
    the sessions' own nodes (a session's node is the container of its episodes: its label
    and facts are an id and a date). A partial graph's sources come from the index in one
    pass (building each node took two queries a node: 3 s of a session's end at 100,000
    nodes), the nodes it has loaded as they stand in it."""
    container = _session_prefix()

    def source(n) -> bool:
        return (n is not None and not n.deleted and n.area in SOURCE_AREAS
                and not (n.kind == "TaskEpisode" and n.label.startswith(container)))

    if not getattr(graph, "partial", False):
        return {nid: theme_tokens(n) for nid, n in sorted(graph.nodes.items()) if source(n)}
    import json

    loaded = dict(graph.nodes.loaded())
    out = {nid: theme_tokens(n) for nid, n in loaded.items() if source(n)}
    for nid, kind, label, facts in graph.index.db.execute(
            "SELECT id, kind, label, facts FROM nodes WHERE deleted=0 AND area IN (?, ?)",
            SOURCE_AREAS):
        if nid in loaded or (kind == "TaskEpisode" and label.startswith(container)):
            continue
        out[nid] = _theme(label, [f[2] for f in json.loads(facts)
                                  if f[4] and f[1] not in BOOKKEEPING])
    return dict(sorted(out.items()))


def _lesson_nodes(graph) -> dict[str, int]:
    """Each lesson label's live Semantic node (the lowest id), found once per pass."""
    from .partial import find_label

    out: dict[str, int] = {}
    for nid in find_label(graph, LESSON_PREFIX, prefix=True):
        n = graph.nodes.get(nid)
        if n is not None and not n.deleted and n.area == "Semantic":
            out.setdefault(n.label, nid)
    return out


def plan(graph, at: int = 0, min_sources_: int | None = None):
    """``(ops, lessons)``: the ops of one consolidation pass, and per lesson ``{label,
    occurrences, sources, node, change}`` (``change``: new, updated or unchanged). Ids are
    allocated from the graph's counters: apply the ops in order in one request."""
    need = min_sources_ if min_sources_ is not None else min_sources()
    tokens = _source_tokens(graph)
    holders: dict[str, list[int]] = {}  # token -> the sources holding it, by id
    for nid, toks in tokens.items():
        for t in toks:
            holders.setdefault(t, []).append(nid)
    recurring = {t for t, ids in holders.items() if len(ids) >= need}
    groups: dict[tuple[str, ...], list[int]] = {}
    for token in sorted(recurring):
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
    for sig in sorted(groups):
        srcs = groups[sig]
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
        lessons.append({**lesson, "node": nid, "change": "new"})
    return ops, lessons


def apply(store) -> list[dict]:
    """Plan and apply one pass under the journal's exclusive lock (the graph is current
    there, so the planner's ids are the journal's). Returns the lessons."""
    with store.write() as req:
        ops, lessons = plan(req.graph, at=req.at)
        for name, body in ops:
            req.apply(name, body)
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
    from .partial import find_fact

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
        lessons = apply(store)
    except OSError as e:  # a shared journal's server away, a full disk: next time
        session.notice(f"Memory: recurring themes not folded into lessons now ({e}).")
        return []
    changed = [x for x in lessons if x["change"] != "unchanged"]
    if changed:
        session.state.setdefault(NAME, {})["consolidated"] = changed
        session.notice(f"Memory: {len(changed)} lesson(s) from recurring themes "
                       "(`mino memory consolidate` lists them).")
    return lessons


# -- mino memory consolidate -------------------------------------------------------------

def register_command(group, context) -> None:
    @group.command("consolidate")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    def consolidate_cmd(as_json):
        """Fold recurring themes of episodes and pitfalls into lessons (nothing is erased)."""
        from .commands import _echo_json, _open, _one

        from .store import MemoryError_

        store = _open(context)
        try:
            lessons = apply(store)
        except (OSError, MemoryError_) as e:
            raise click.ClickException(_one(f"cannot write the memory journal: {e}")) from None
        finally:
            store.close()
        if as_json:
            _echo_json({"applied": sum(x["change"] != "unchanged" for x in lessons),
                        "lessons": lessons})
            return
        if not lessons:
            click.echo("no recurring themes yet (a lesson needs 2 episodes or pitfalls "
                       "sharing at least 2 words)")
        for x in lessons:
            ids = " ".join(f"#{s}" for s in x["sources"])
            click.echo(f"#{x['node']} {_one(x['label'])}  ({x['change']}; "
                       f"{x['occurrences']} sources: {ids})")
