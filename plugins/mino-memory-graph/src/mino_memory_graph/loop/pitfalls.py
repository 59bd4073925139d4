"""A new working fix for a failure that had one: the pitfall's fix is superseded (issue 25).

Mnemo keeps one current value per key and the old ones as history; a pitfall's ``fix`` is
such a value. A reflection's fix joins the pain marker of this run's failure
(``reflect.fix_target``), and when that marker is the pitfall itself (the same command
failed the same way again) the new fix supersedes the old one there. Two shapes escaped
that and left the old fix current beside the new one:

- the fix that stopped working was tried and failed: its own command is a new marker
  (``Bash(<old fix>) failed: <the same error>``), so the new fix joined that one and the
  old pitfall kept recommending what no longer works;
- the command was repeated after a first step (``<old fix step> && <command>``) and
  failed with the same error: again a marker of its own.

``replaced`` finds, among the pitfalls this run was shown (recalled into the block or
held back by the guard: the model saw their fix, the same error came back), the one whose
fix the new one replaces: the same error after ``tool(command) failed:`` (``same_error``:
equal, or one long stretch in common, since a step run first shifts the error), and either
a step of the failed command is named in that pitfall's fix (the old fix was run and
failed) or that pitfall's own command is a step of it (it was run again and failed again).
The fix is then written on that pitfall, superseding its old value; the run's own marker
is left without a fix (a pitfall without a fix is never recalled) and logs which pitfall
it repeats. Only pitfalls the run was shown are looked at: no scan of the graph.
"""
from __future__ import annotations

import re

from ..core.model import Graph
from .steer import signature

_NAMED = re.compile(r"^[A-Za-z0-9_]+\((.+?)\) failed: ?(.*)$", re.S)
_STEPS = re.compile(r"&&|\|\||;|\|")
_SPACE = re.compile(r"\s+")
MIN_STEP = 4  # shorter steps (``ls``, ``cd``) say nothing about a fix


def _normal(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


def split_failure(failure: str) -> tuple[str, str] | None:
    """(command, error signature) of a ``tool(command) failed: error`` failure text; None
    for a failure in words (a reflection's problem)."""
    m = _NAMED.match(failure)
    if m is None:
        return None
    return _normal(m.group(1)), signature(m.group(2))


def steps(command: str) -> list[str]:
    return [s for s in (_normal(x) for x in _STEPS.split(command)) if len(s) >= MIN_STEP]


def _failure(graph: Graph, nid: int) -> str | None:
    n = graph.live(nid)
    if n is None or n.area != "Salience":
        return None
    f = n.fact("failure")
    return f.value if f is not None else None


SAME_ERROR_CHARS = 24  # a shared stretch shorter than this is a coincidence of words
SAME_ERROR_SHARE = 0.6  # ...and it must cover this share of the shorter signature


def same_error(a: str, b: str) -> bool:
    """Whether two error signatures are one error: equal, or one long stretch of the
    shorter is in the longer. A failure's text is the first lines of its output, so a
    step before the failing one (``prepare && build``) shifts the same error behind what
    the step printed, and pushes its tail out of the window."""
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) < SAME_ERROR_CHARS:
        return False
    from difflib import SequenceMatcher

    m = SequenceMatcher(None, short, long_, autojunk=False).find_longest_match(
        0, len(short), 0, len(long_))
    return m.size >= SAME_ERROR_CHARS and m.size >= SAME_ERROR_SHARE * len(short)


def replaced(graph: Graph, target: int, shown) -> int | None:
    """The pitfall among ``shown`` (ids; order kept) whose fix a new fix for ``target``'s
    failure replaces, or None (see the module docstring)."""
    mine = _failure(graph, target)
    parts = split_failure(mine) if mine else None
    if parts is None:
        return None
    command, error = parts
    if not error:
        return None
    my_steps = steps(command)
    for nid in dict.fromkeys(shown):
        if nid == target:
            continue
        theirs = _failure(graph, nid)
        other = split_failure(theirs) if theirs else None
        fix = graph.nodes[nid].fact("fix") if other else None
        if fix is None or not same_error(other[1], error):
            continue
        fix_text = _normal(fix.value)
        if any(s in fix_text for s in my_steps) or other[0] in my_steps:
            return nid
    return None
