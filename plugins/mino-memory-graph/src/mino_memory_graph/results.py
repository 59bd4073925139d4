"""What a search gives back (``Found``, ``Hit``) and the constants every recall path shares.

No numpy here: the index's search path (``search.py``) and the commands import it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

USEFULNESS_BIAS = 0.02
SEED_MIN = 1e-6

KIND_CODE = {"Aspect": 0, "TaskEpisode": 1, "Entity": 2, "Harness": 3, "Outcome": 4}
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


def area_names(areas: list[str]) -> str:
    return ", ".join(areas) if areas else "all"
