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


def area_names(areas: list[str]) -> str:
    return ", ".join(areas) if areas else "all"
