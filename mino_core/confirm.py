"""Render confirmations so that nothing in a value is invisible.

Printable text (any script) is shown as written; a line break is ``\\n``, a tab ``\\t``, and
every other control, format (zero-width, direction-changing), separator or non-ASCII space
character is ``\\uXXXX`` / ``\\UXXXXXXXX``. A backslash is shown as ``\\\\`` so an escape in
the value cannot pass for one of ours, and a double quote as ``\\"`` so a value cannot
close its own quotes.
"""
from __future__ import annotations

import unicodedata

QUESTION = "Approve this operation? [y/N]"

_NAMED = {"\n": "\\n", "\t": "\\t", "\\": "\\\\", '"': '\\"'}


def _visible(ch: str) -> bool:
    if ch == " ":
        return True
    cat = unicodedata.category(ch)
    # C* = control/format/surrogate/private/unassigned; Z* = separators (spaces, line/para).
    return not (cat[0] == "C" or cat[0] == "Z")


def escape(value: str) -> str:
    """A field value as shown between double quotes."""
    return visible(value, quote=True)


def visible(value: str, quote: bool = False) -> str:
    """``value`` with every invisible or line-breaking character shown as an escape.

    For anything from outside (a file name, a remembered line) printed to a terminal: such
    text must not be able to forge or hide a line. ``quote`` also escapes double quotes.
    """
    out = []
    for ch in value:
        if ch == '"' and not quote:
            out.append(ch)
        elif ch in _NAMED:
            out.append(_NAMED[ch])
        elif _visible(ch):
            out.append(ch)
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def escape_line(value: str) -> str:
    """For notes shown as lines (a diff): same escapes, but quotes and backslashes stay."""
    return "".join(ch if ch in '"\\' else escape(ch) for ch in value)


def render(fields: list[tuple[str, str]], notes: list[str] = ()) -> str:
    """The confirmation text: one quoted field a line, then the notes; no question."""
    lines = [f'{escape(label)}: "{escape(str(value))}"' for label, value in fields]
    lines += [escape_line(note) for note in notes]
    return "\n".join(lines)


def is_yes(answer: str | None) -> bool:
    return (answer or "").strip().lower() in ("y", "yes")
