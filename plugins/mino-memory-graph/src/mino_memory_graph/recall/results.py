"""What a search gives back (``Found``, ``Hit``) and the constants every recall path shares.

No numpy here: the index's search path (``search.py``) and the commands import it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

USEFULNESS_BIAS = 0.02
SEED_MIN = 1e-6

AREA_CODE = {"Episodic": 0, "Semantic": 1, "Procedural": 2, "Spatial": 3, "Salience": 4,
             "Executive": 5}


@dataclass
class Hit:
    node: int
    score: float
    via_graph: bool


@dataclass
class Found:
    """What one search found, and how it got there."""

    hits: list[Hit]
    routed: list[str]
    cues: dict[str, list[str]] = field(default_factory=dict)
    why: str = ""
    path: str = "brute"
    scorer: str = ""


def offer(final: dict, nid: int, score: float) -> bool:
    """Expansion's rule for a neighbour reached through the graph: ``final[nid]`` keeps
    the best ``[score, via_graph]`` offered; whether it changed."""
    cur = final.get(nid)
    if cur is None:
        final[nid] = [score, True]
        return True
    if score > cur[0]:
        cur[0] = score
        return True
    return False


def ranked(final: dict, k: int) -> list[Hit]:
    """The ``k`` best of ``final`` (``{node: [score, via_graph]}``), ties by node id."""
    best = sorted(final.items(), key=lambda kv: (-kv[1][0], kv[0]))[:k]
    return [Hit(node=nid, score=v[0], via_graph=v[1]) for nid, v in best]


SAVED_TOP = 50  # the best candidates looked at by ``lift_saved``


def saved_pairs(value: str | None) -> list[tuple[int, int]]:
    """(node, fact) ids of an episode's ``saved`` fact (``episodes._record_saved``)."""
    out = []
    for pair in (value or "").split():
        node, _, fid = pair.partition(":")
        if node.isdigit() and fid.isdigit():
            out.append((int(node), int(fid)))
    return out


def current_fact(facts, fid: int) -> bool:
    """Whether fact ``fid`` of a node's facts (``[id, key, value, _, active]`` rows, or
    None for a node that is gone) is current, or was replaced by a current fact of its
    key (Mnemo keeps one current value per key, the old ones as history)."""
    if not facts:
        return False
    key = next((f[1] for f in facts if f[0] == fid), None)
    return key is not None and any(f[4] and (f[0] == fid or f[1] == key) for f in facts)


def lift_saved(scores: dict, saved: dict, current, weight: float, f32=float) -> None:
    """A saved, current fact outranks the message that saved it (issue 25).

    ``scores``: {node: score} of the best candidates and of the nodes their episodes saved
    facts on (0.0 for one the query did not reach); ``saved``: {episode: [(node, fact)]}
    for the episodes among them; ``current(node, fact)``: that fact is current, or a
    current fact of its key replaced it (a corrected value, a fix that replaced a fix).
    An episode whose message saved such a fact lends that node its score (the message
    matched the query; the node holds what memory kept of it, as it stands now), and
    itself goes just below it (times ``weight``, ``HybridParams.episode``): the block and
    ``mino memory search`` show the fact first, the message after it or not at all (a
    message whose value was replaced is history: ``recall_block``).
    """
    for ep, pairs in sorted(saved.items()):
        s = scores.get(ep)
        if s is None:
            continue
        kept = sorted({n for n, fid in pairs if n in scores and n != ep and current(n, fid)})
        if not kept:
            continue
        for n in kept:
            if s > scores[n]:
                scores[n] = s
        scores[ep] = min(s, f32(min(scores[n] for n in kept) * weight))
