"""A node's state text as the model may read it: each line filtered, redacted and escaped
again (``safety.shown``), whoever wrote it and whenever, with who wrote each kind of line
(``provenance``) marked. Both recall blocks and the memory tools show states this way.
"""
from __future__ import annotations

import re

from . import safety
from .provenance import LOG_WRITER, USER_WORDS

_LOG_LINE = re.compile(r"^(\s*\[\d+\] )([A-Za-z_ -]+): (.*)$")
_FACT_LINE = re.compile(r"^(\s*- )([^:]*): (.*)$")


def _shown(line: str) -> str:
    """A state line as the block shows it: its text filtered, redacted and escaped
    (``safety.shown``), a logged call marked as the assistant's and an outcome as mino's,
    a turn's message as the user's own words."""
    m = _LOG_LINE.match(line)
    if m is not None:
        who = LOG_WRITER.get(m.group(2))
        mark = f" ({who})" if who else ""
        return f"{m.group(1)}{safety.shown(m.group(2))}{mark}: {safety.shown(m.group(3))}"
    m = _FACT_LINE.match(line)
    if m is not None:
        mark = f" ({USER_WORDS})" if m.group(2) == "message" else ""
        return f"{m.group(1)}{safety.shown(m.group(2))}{mark}: {safety.shown(m.group(3))}"
    return safety.shown(line)


def shown_lines(text: str) -> list[str]:
    """A node's state (or any recalled text) line by line as the model may read it: each
    line through ``_shown`` (for the memory tools, which show the same texts)."""
    return [_shown(ln) for ln in text.splitlines()]
