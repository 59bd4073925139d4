"""Query routing: which areas a query's words point at (a bias, never a filter).

Cue strings are matched as substrings of the lowercased query; areas are ranked by how
many of their cues occur, ties keep table order, and at most two areas are kept. An
empty result means no bias. The alias table rewrites the query only (never node text);
a key fires only as a whole token.
"""
from __future__ import annotations

import re

MAX_ROUTED = 2
CROSS_AREA_DISCOUNT = 0.85

CUES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Salience", ("fail", "failed", "failure", "error", "broke", "broken", "bug", "crash",
                  "regression", "wrong", "hurt")),
    ("Procedural", ("how to", "harness", "skill", "tool", "command", "script", "run ",
                    "build ", "install", "procedure", "steps")),
    ("Spatial", ("repo", "path", "file", "directory", "folder", "service", "package",
                 "module", "endpoint")),
    ("Episodic", ("last time", "previously", "yesterday", "episode", "session", "earlier",
                  "when i", "we did", "history")),
    ("Executive", ("plan", "decide", "decision", "strategy", "steer", "correction",
                   "approach", "policy")),
    ("Semantic", ("what is", "define", "definition", "means", "concept", "fact",
                  "explain")),
)

QUERY_ALIASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("paged", ("page", "on-call")),
)

_SPLIT = re.compile(r"[^A-Za-z0-9]+")


def _ascii_lower(text: str) -> str:
    # Rust's to_ascii_lowercase: only A-Z change (str.lower would also fold e.g. the
    # Kelvin sign into an ASCII "k").
    return text.translate(_ASCII_LOWER) if not text.isascii() else text.lower()


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def route_explained(query: str) -> list[tuple[str, list[str]]]:
    """The routed areas, best first, each with the cues that matched."""
    q = _ascii_lower(query)
    hits = []
    for area, cues in CUES:
        found = [c for c in cues if c in q]
        if found:
            hits.append((area, found))
    hits.sort(key=lambda h: -len(h[1]))  # stable: ties keep table order
    return hits[:MAX_ROUTED]


def expand_query_aliases(query: str) -> str:
    """Lowercase the query and append the aliases of any whole-token alias key."""
    q = _ascii_lower(query)
    tokens = set(_SPLIT.split(q))
    out = q
    for key, aliases in QUERY_ALIASES:
        if key in tokens:
            for a in aliases:
                out += " " + a
    return out


def routing_why(areas, prefer, explained) -> str:
    """The one line ``--explain`` shows of how a search chose its areas."""
    if areas:
        return "areas given: " + ", ".join(areas) + " (filter and preference)"
    if prefer and explained and prefer == [a for a, _ in explained]:
        return "routed by cue words: " + "; ".join(f"{a} ({', '.join(c)})" for a, c in explained)
    if prefer:
        return "preferred areas: " + ", ".join(prefer)
    return "no cue words: every area weighs the same"
