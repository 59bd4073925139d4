"""Render confirmations so that nothing in a value is invisible.

Printable text (any script) is shown as written; a line break is ``\\n``, a tab ``\\t``, and
every other control, format (zero-width, direction-changing), separator or non-ASCII space
character is ``\\uXXXX`` / ``\\UXXXXXXXX``. A backslash is shown as ``\\\\`` so an escape in
the value cannot pass for one of ours, and a double quote as ``\\"`` so a value cannot
close its own quotes. ``visible`` is the one rule; the terminal UI, notices and plugin
commands use it too (``lines=True`` where text is shown as lines).
"""
from __future__ import annotations

QUESTION = "Approve this operation? [y/N]"
VIEW_ANSWERS = ("v", "view")


def question(hidden_lines: int = 0, full: bool = False) -> str:
    """The question; when part of the text is not shown, it says so and how to see it.
    Short enough for one 80-column line."""
    if not full:
        return QUESTION
    if hidden_lines:
        lines = "line" if hidden_lines == 1 else "lines"
        return f"{QUESTION} {hidden_lines} more {lines} not shown (v: view all)"
    return f"{QUESTION} (v: view the whole text)"


def framed(text: str) -> str:
    """``text`` shown whole on request: escaped, every line marked, so no line in it can pass
    for mino's own (a question, a prompt)."""
    body = text.split("\n")
    lines = [f"--- the whole text, {len(body)} line{'s' if len(body) != 1 else ''} ---"]
    lines += ["| " + visible(line, lines=True) for line in body]
    lines.append("--- end of the whole text ---")
    return "\n".join(lines)


_NAMED = {"\n": "\\n", "\t": "\\t", "\\": "\\\\", '"': '\\"'}


def _visible(ch: str) -> bool:
    # Exactly str.isprintable(): C* = control/format/surrogate/private/unassigned and
    # Z* = separators (spaces, line/paragraph) are invisible, the ASCII space is not.
    return ch.isprintable()


def escape(value: str) -> str:
    """A field value as shown between double quotes."""
    return visible(value, quote=True)


_KEEP_IN_LINES = str.maketrans("", "", "\n\t")


def visible(value: str, quote: bool = False, lines: bool = False) -> str:
    """``value`` with every invisible or line-breaking character shown as an escape.

    The one escaping rule for anything from outside mino printed to a terminal (a value in
    a confirmation, a file name, a remembered line, the model's text, a plugin's notice):
    no escape sequence, control, bidi or zero-width character reaches the screen, so such
    text cannot recolour, clear or retitle the terminal, write the clipboard, or hide or
    forge a line. ``quote`` also escapes double quotes (a quoted field).
    ``lines`` is for text shown as lines (the transcript, a notice, a file): line breaks
    and tabs stay, and so do backslashes, since no field boundary needs protecting.
    """
    if lines:
        if value.translate(_KEEP_IN_LINES).isprintable():
            return value
    elif value.isprintable() and "\\" not in value and not (quote and '"' in value):
        return value
    out = []
    for ch in value:
        if lines and ch in "\n\t\\\"":
            out.append(ch)
        elif ch == '"' and not quote:
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
    return "\\n".join(visible(part, lines=True).replace("\t", "\\t") for part in value.split("\n"))


def render(fields: list[tuple[str, str]], notes: list[str] = ()) -> str:
    """The confirmation text: one quoted field a line, then the notes; no question."""
    lines = [f'{escape(label)}: "{escape(str(value))}"' for label, value in fields]
    lines += [escape_line(note) for note in notes]
    return "\n".join(lines)


def is_yes(answer: str | None) -> bool:
    return (answer or "").strip().lower() in ("y", "yes")
