"""Stopping an answer that repeats itself.

A small model at temperature 0 can loop: the same sentence, line or block over and over
until the output limit or the context ends (587 s of it, once, on a 135M model). The
streamed text is watched as it arrives; when its end is one unit of text repeated, the
stream is closed and the answer is kept as cut, with reason ``repetition``.

What counts: a unit of at least ``MIN_UNIT`` characters, holding at least two different
words, repeated back to back at least three times and over at least ``MIN_SPAN``
characters in all (so a short line needs more repeats than a long block). A run of one
character or of a short pattern (a rule of ``=====``, a row of zeros) is not a unit: its
own period is shorter than ``MIN_UNIT``.
"""
from __future__ import annotations

MIN_UNIT = 16        # characters of the repeated unit
MAX_UNIT = 2000
MIN_REPEATS = 3
MIN_SPAN = 600       # characters the repeats cover together
CHECK_EVERY = 64     # new characters between two checks


def repeating(text: str) -> int:
    """The length of the unit that ``text`` ends repeating, or 0."""
    n = len(text)
    for unit in range(MIN_UNIT, min(MAX_UNIT, n // MIN_REPEATS) + 1):
        if text[-1] != text[-1 - unit]:
            continue
        repeats = max(MIN_REPEATS, -(-MIN_SPAN // unit))
        span = repeats * unit
        if span > n:
            continue
        if text[n - span + unit:] != text[n - span:n - unit]:
            continue
        tail = text[-unit:]
        if _period(tail) < MIN_UNIT or len(set(tail.split())) < 2:
            continue
        return unit
    return 0


def _period(text: str) -> int:
    """The shortest period of ``text`` (its own length when it has none shorter)."""
    for p in range(1, MIN_UNIT):
        if p < len(text) and text[p:] == text[:-p]:
            return p
    return len(text)


class Watch:
    """A UI in front of the real one (or of none) that watches the answer's text as it
    streams; ``stopped`` says the text started repeating (the caller ends the stream)."""

    def __init__(self, ui=None):
        self._ui = ui
        self._text: list[str] = []
        self._size = 0
        self._checked = 0
        self.stopped = 0  # the repeated unit's length once it repeats

    def __getattr__(self, name):
        if self._ui is None:
            return lambda *args, **kwargs: None
        return getattr(self._ui, name)

    def text_delta(self, delta: str) -> None:
        if self._ui is not None:
            self._ui.text_delta(delta)
        self._text.append(delta)
        self._size += len(delta)
        if not self.stopped and self._size - self._checked >= CHECK_EVERY:
            self._checked = self._size
            text = "".join(self._text)
            self._text = [text]
            # Only the end can start repeating: a window of the largest span we look for.
            self.stopped = repeating(text[-(MAX_UNIT * MIN_REPEATS):])
