"""Steer on a tool failure: a pure planner that returns journal ops (Mnemo's ``steer_with``).

``plan_steer`` reads the graph and returns ``(ops, notes)``; it changes nothing. The caller
applies the ops in order inside one write request, so the ids the planner allocated from
the graph's counters are the ids the journal gets. What it plans, in order:

1. ``CommitLog(episode, "outcome", failure)``.
2. The pain marker, deduplicated by a normalised failure *signature*: a live Salience
   node whose active ``signature`` fact equals it gets ``occurrences`` n+1 and a
   ``recurred`` log line; otherwise a new Aspect ``pain: <failure[:60]>``, moved to the
   Salience area, with facts ``failure``, ``signature``, ``occurrences`` = 1 and
   ``source`` (where the program observed it), linked PartOf the project.
3. ``Link(episode -> marker, DerivedFrom)`` (once per episode). The marker is never a
   feeder, so steering can never blame it (audit F4).
4. Blame: each live SuppliesContext feeder of the episode, heaviest first, whose source
   shares a word with the failure gets ``RecordOutcome(false)`` (weight - 0.10). Sources
   in the Salience area are skipped even if someone linked one as a feeder.

There is no gap node (audit F5/F6: tool errors steer with dedupe on and gap off), and no
correction or switch step: those need a fix the program does not know at failure time.
"""
from __future__ import annotations

import re

from ..core.model import Graph

SIGNATURE_MAX = 160
PAIN_LABEL_CHARS = 60
_TOKEN = re.compile(r"[A-Za-z0-9]+")

# Words too common to count as shared between a failure and a memory.
STOPWORDS = frozenset("""
the and for with that this from into onto have has had not but are was were will would
can could should may might must you your yours our ours their them they its it's there
here what when where which who why how all any each every some such than then also only
just very more most less few many much own same other into over under about after before
again once out off too use used using run ran runs running failed fail fails failure error
errors err tool call called file files line lines exit code status true false none null
""".split())


def signature(failure: str) -> str:
    """Mnemo's ``failure_signature``, character for character: ASCII digit runs to ``#``;
    ``"`` ``'`` and backticks to spaces; whitespace runs to one space (none leading);
    lowercase; trimmed; at most 160 characters. Two failures with one signature are one
    pitfall, whichever program (mino or Mnemo) wrote the first."""
    out: list[str] = []
    digit = space = False
    for ch in failure:
        if "0" <= ch <= "9":
            if not digit:
                out.append("#")
            digit, space = True, False
            continue
        digit = False
        if ch in "\"'`":
            ch = " "
        if _rust_whitespace(ch):
            if not space and out:
                out.append(" ")
            space = True
            continue
        space = False
        out.append(ch.lower())
    return "".join(out).strip(" ")[:SIGNATURE_MAX]


def _rust_whitespace(ch: str) -> bool:
    """Rust's ``char::is_whitespace`` (Unicode White_Space): Python's ``isspace`` less the
    four information separators U+001C..U+001F, which Rust keeps as text."""
    return ch.isspace() and not "\x1c" <= ch <= "\x1f"


def tokens(text: str) -> set[str]:
    """Words of 3+ ASCII letters or digits, lowercased, minus common words."""
    return {t for t in (m.lower() for m in _TOKEN.findall(text))
            if len(t) >= 3 and t not in STOPWORDS and not t.isdigit()}


def node_tokens(graph: Graph, node_id: int) -> set[str]:
    n = graph.nodes.get(node_id)
    if n is None:
        return set()
    parts = [n.label] + [f"{f.key} {f.value}" for f in n.facts if f.active]
    return tokens(" ".join(parts))


def find_marker(graph: Graph, sig: str, candidates=None) -> int | None:
    """The live Salience node whose active ``signature`` is ``sig`` (lowest id), if any.

    ``candidates`` (node ids) limits the scan; the loop keeps an index so a turn never
    walks the whole graph.
    """
    if candidates is None:
        from ..state.partial import find_fact

        found = find_fact(graph, "signature", sig, "Salience")
        return found[0] if found else None
    ids = sorted(candidates)
    for nid in ids:
        n = graph.nodes.get(nid)
        if n is None or n.deleted or n.area != "Salience":
            continue
        f = n.fact("signature")
        if f is not None and f.value == sig:
            return nid
    return None


# Mnemo's session.ts builds the failure text from these (its ``subjectOf`` and
# ``toolEnd``); the same text gives the same signature, so one pitfall is one marker on a
# journal both programs write.
SUBJECT_KEYS = ("command", "path", "file_path", "pattern", "query", "task", "name")
SUBJECT_MAX = 200
SUBJECT_IN_FAILURE = 80
ERROR_KEPT = 400
DETAIL_MAX = 300
_LEADING_CD = re.compile(r"""^cd\s+("[^"]*"|'[^']*'|\S+)\s*&&\s*""")


def failure_subject(arguments) -> str:
    """What a call was about, as Mnemo names it: the first of ``SUBJECT_KEYS`` present,
    its first line, a leading ``cd DIR &&`` dropped (``cd /repo && npm test`` is about
    ``npm test``), at most 200 characters."""
    args = arguments if isinstance(arguments, dict) else {}
    for key in SUBJECT_KEYS:
        v = args.get(key)
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        text = v if isinstance(v, str) else str(v) if isinstance(v, (int, float)) else ""
        first = text.split("\n")[0]
        return _LEADING_CD.sub("", first, count=1)[:SUBJECT_MAX]
    return ""


def failure_text(tool: str, subject: str, output: str) -> str:
    """``<tool>(<subject[:80]>) failed: <first 3 lines of output, joined with a space>``,
    the output cut to 400 characters first and the joined lines to 300: Mnemo's format.
    (Mnemo cuts UTF-16 code units, this cuts code points: equal outside the BMP's edge.)"""
    error = (output or "")[:ERROR_KEPT]
    detail = " ".join(error.split("\n")[:3])[:DETAIL_MAX]
    return f"{tool}({subject[:SUBJECT_IN_FAILURE]}) failed: {detail}"


def plan_steer(graph: Graph, episode: int, failure: str, *, project: int | None = None,
               marker: int | None = None, source: str = "observed: tool failure",
               at: int = 0) -> tuple[list[tuple[str, dict]], dict]:
    """Ops for one failure, and notes ``{marker, occurrences, created, blamed, fix}``.

    ``marker`` is the existing pain marker for this failure's signature (from
    ``find_marker`` or the caller's index), or None to create one. Ids are allocated from
    the graph's counters in order, so the ops must be applied as one request.
    """
    ep = graph.nodes.get(episode)
    if ep is None or ep.kind != "TaskEpisode":
        raise ValueError(f"node {episode} is not a task episode")
    sig = signature(failure)
    next_node, next_edge, next_fact = graph.next_node, graph.next_edge, graph.next_fact
    ops: list[tuple[str, dict]] = [("CommitLog", {"node": episode, "kind": "outcome",
                                                  "detail": failure, "at": at})]
    notes = {"signature": sig, "created": False, "blamed": [], "fix": None}
    existing = graph.nodes.get(marker) if marker is not None else None
    if existing is not None and not existing.deleted and existing.area == "Salience":
        occ = existing.fact("occurrences")
        try:
            n = int(occ.value) + 1 if occ is not None else 2
        except ValueError:
            n = 2
        if occ is not None:
            ops.append(("SupersedeFact", {"node": marker, "old_fact": occ.id,
                                          "new_key": "occurrences", "new_value": str(n),
                                          "new_fact_id": next_fact, "at": at}))
        else:
            ops.append(("AddFact", {"node": marker, "fact_id": next_fact,
                                    "key": "occurrences", "value": str(n), "at": at}))
        next_fact += 1
        ops.append(("CommitLog", {"node": marker, "kind": "recurred",
                                  "detail": f"in episode #{episode}", "at": at}))
        fix = existing.fact("fix")
        notes.update(marker=marker, occurrences=n, fix=fix.value if fix else None)
        already = any(e.kind == "DerivedFrom" and e.src == episode and e.dst == marker
                      and e.invalid_at is None for e in graph.edges_of(episode))
        if not already:
            ops.append(("Link", {"id": next_edge, "src": episode, "dst": marker,
                                 "kind": "DerivedFrom", "at": at}))
            next_edge += 1
    else:
        marker = next_node
        next_node += 1
        # Mnemo's ``truncate``: 60 characters and three dots.
        label = failure[:PAIN_LABEL_CHARS] + ("..." if len(failure) > PAIN_LABEL_CHARS else "")
        ops.append(("CreateNode", {"id": marker, "kind": "Aspect", "label": f"pain: {label}",
                                   "at": at}))
        ops.append(("SetArea", {"node": marker, "area": "Salience", "at": at}))
        for key, value in (("failure", failure), ("signature", sig), ("occurrences", "1"),
                           ("source", source)):
            ops.append(("AddFact", {"node": marker, "fact_id": next_fact, "key": key,
                                    "value": value, "at": at}))
            next_fact += 1
        ops.append(("Link", {"id": next_edge, "src": episode, "dst": marker,
                             "kind": "DerivedFrom", "at": at}))
        next_edge += 1
        if project is not None and project in graph.nodes:
            ops.append(("Link", {"id": next_edge, "src": marker, "dst": project,
                                 "kind": "PartOf", "at": at}))
            next_edge += 1
        notes.update(marker=marker, occurrences=1, created=True)
    notes["blamed"] = blame(graph, episode, failure)
    for edge in notes["blamed"]:
        ops.append(("RecordOutcome", {"edge": edge, "success": False, "at": at}))
    return ops, notes


def blame(graph: Graph, episode: int, failure: str) -> list[int]:
    """Feeder edges of ``episode`` whose source shares a word with ``failure``.

    Heaviest first; pain markers (Salience sources) are never blamed.
    """
    q = tokens(failure)
    if not q:
        return []
    out = []
    for e in graph.feeders_of(episode):
        src = graph.nodes.get(e.src)
        if src is None or src.area == "Salience":
            continue
        if q & node_tokens(graph, e.src):
            out.append(e.id)
    return out


def plan_reinforce(graph: Graph, episode: int, detail: str = "success",
                   at: int = 0) -> list[tuple[str, dict]]:
    """``CommitLog(episode, outcome, detail)`` then ``RecordOutcome(true)`` per live feeder."""
    ops = [("CommitLog", {"node": episode, "kind": "outcome", "detail": detail, "at": at})]
    for e in graph.feeders_of(episode):
        src = graph.nodes.get(e.src)
        if src is not None and src.area != "Salience":
            ops.append(("RecordOutcome", {"edge": e.id, "success": True, "at": at}))
    return ops
