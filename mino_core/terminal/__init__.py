"""The interactive terminal: line editing (prompt_toolkit), rendered output (rich), the
status line while waiting, and the key watcher that turns Esc into an interrupt.

Each part is chosen by what the streams are, so a pipe, ``TERM=dumb`` and ``NO_COLOR``
keep the plain transcript byte for byte; prompt_toolkit and rich are imported only by the
modules that use them, and only when a terminal wants them.
"""
from __future__ import annotations

import os
import sys
from typing import TextIO


def _tty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _dumb() -> bool:
    return os.environ.get("TERM", "") in ("dumb", "")


def line_editing_wanted(stdin=None, stdout=None) -> bool:
    """prompt_toolkit for the prompt: both ends a terminal that can move the cursor."""
    return _tty(stdin or sys.stdin) and _tty(stdout or sys.stdout) and not _dumb()


def styled_wanted(out: TextIO | None = None) -> bool:
    """Rendered, coloured output: a terminal, not dumb, and no NO_COLOR (no-color.org:
    any non-empty value)."""
    return _tty(out or sys.stdout) and not _dumb() and not os.environ.get("NO_COLOR")


def status_wanted(err: TextIO | None = None) -> bool:
    """The spinner: only on a terminal's stderr that can erase a line (never a pipe or log)."""
    return _tty(err or sys.stderr) and not _dumb()
