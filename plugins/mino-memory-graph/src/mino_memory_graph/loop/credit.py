"""Usefulness votes from evidence, never automatic (audit F14, finding M5).

A recalled node's *distinctive* words are those of 4+ characters in its label and current
fact values that are not common words, not numbers, not in the user's message (the query
found the node through those, so reusing them proves nothing), and not shared with another
recalled node (so one answer cannot credit a whole cluster). When the turn's answer or
tool arguments contain at least ``min(2, number of distinctive words)`` of them, the node
gets one ``RecordUsefulness(useful)`` vote. A node with no distinctive words never gets a
vote. Nothing ever votes down here: a recalled node that went unused is not evidence that
it was wrong.
"""
from __future__ import annotations

import re

from ..core.model import Graph
from .steer import STOPWORDS

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9]|[A-Za-z]")
COMMON = STOPWORDS | frozenset("""
this that with from have been were will would could should which their there these those
about into your yours they them then than what when where while because also only just
like make made uses user users project projects memory memories node nodes task episode
preferences prefers prefer answer answers always never please thanks want wants need
needs does done doing good well time path""".split())


def words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text or "")}


def distinctive(graph: Graph, recalled: list[int], prompt: str) -> dict[int, set[str]]:
    """node id -> its distinctive words (see the module docstring)."""
    asked = words(prompt)
    per: dict[int, set[str]] = {}
    for nid in recalled:
        n = graph.nodes.get(nid)
        if n is None:
            continue
        text = " ".join([n.label] + [f.value for f in n.facts if f.active])
        per[nid] = {w for w in words(text)
                    if len(w) >= 4 and w not in COMMON and not w.isdigit() and w not in asked}
    shared: dict[str, int] = {}
    for ws in per.values():
        for w in ws:
            shared[w] = shared.get(w, 0) + 1
    return {nid: {w for w in ws if shared[w] == 1} for nid, ws in per.items()}


def votes(graph: Graph, recalled: list[int], prompt: str, evidence: str) -> list[int]:
    """The recalled nodes the evidence (answer + tool arguments) actually reused."""
    used = words(evidence)
    out = []
    for nid, ws in distinctive(graph, recalled, prompt).items():
        if not ws:
            continue
        if len(ws & used) >= min(2, len(ws)):
            out.append(nid)
    return sorted(out)
