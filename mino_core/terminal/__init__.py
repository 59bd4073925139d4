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

PASTE_ON, PASTE_OFF = "\x1b[?2004h", "\x1b[?2004l"  # the terminal's bracketed paste mode


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


class Reader:
    """The prompt on a terminal, with prompt_toolkit loaded at the first prompt: ``You> `` is
    written at once and prompt_toolkit (about 70 ms to import) takes the line over when
    ready, so the prompt shows as early as the plain one does. Keys typed meanwhile wait in
    the terminal's buffer and reach prompt_toolkit (see terminal.input for the keys)."""

    prefill = True  # read() takes ``default``: text typed ahead, editable

    def __init__(self, history, commands, sessions, styled: bool = False, out: TextIO | None = None):
        self._history, self._commands, self._sessions = history, commands, sessions
        self._styled = styled
        self._out = out or sys.stdout
        self._impl = None
        self._after: list = []

    def after_load(self, task) -> None:
        """Run ``task`` once prompt_toolkit is loaded (now, if it is): the REPL's prewarm
        (openai, ~0.4 s of CPU) would otherwise share the interpreter with that import and
        hold back the moment the line is live."""
        if self._impl is not None:
            task()
        else:
            self._after.append(task)

    def _load(self):
        if self._impl is None:
            from .input import PromptReader, SlashCompleter

            self._impl = PromptReader(self._history, SlashCompleter(self._commands, self._sessions),
                                      styled=self._styled)
        return self._impl

    def read(self, prompt: str, default: str = "") -> str:
        # Between prompt_toolkit's own reads (before the first, between a Ctrl-C and the
        # next prompt) keys wait unechoed, Enter stays Enter (no ICRNL) and Ctrl-C stays a
        # key (no ISIG), so whatever is typed reaches prompt_toolkit exactly as typed.
        saved = _quiet(sys.stdin)
        try:
            if self._impl is None:
                lead = len(prompt) - len(prompt.lstrip("\n"))
                shown = prompt.lstrip("\n")
                if self._styled:
                    shown = f"\x1b[1;32m{shown.rstrip()}\x1b[0m" + shown[len(shown.rstrip()):]
                # Bracketed paste from the first prompt on (prompt_toolkit turns it on only
                # once loaded): a paste before then is still one message.
                self._out.write(PASTE_ON + "\n" * lead + shown)
                self._out.flush()
                self._load()
                self._out.write("\r\x1b[2K")  # prompt_toolkit draws the line again, with any keys
                self._out.flush()
                prompt = prompt.lstrip("\n")
                tasks, self._after = self._after, []
                for task in tasks:
                    task()
            return self._impl.read(prompt, default)
        finally:
            _restore(sys.stdin, saved)

    def ask(self, question: str) -> str:
        saved = _quiet(sys.stdin)
        try:
            return self._load().ask(question)
        finally:
            _restore(sys.stdin, saved)


def _quiet(stream):
    """No echo, no line buffering, no signals, Enter as typed; returns what to restore
    (None: nothing)."""
    try:
        import termios

        fd = stream.fileno()
        saved = termios.tcgetattr(fd)
        mode = termios.tcgetattr(fd)
        mode[0] &= ~termios.ICRNL
        # ISIG off too: a Ctrl-C now is a key for prompt_toolkit (clear the line), not a
        # KeyboardInterrupt in the middle of an import.
        mode[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG)
        mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
        termios.tcsetattr(fd, termios.TCSANOW, mode)
        return fd, saved
    except (ImportError, OSError, ValueError, AttributeError):
        return None
    except Exception:  # noqa: BLE001 - termios.error: not a terminal after all
        return None


def _restore(stream, saved) -> None:
    if saved is None:
        return
    import termios

    try:
        termios.tcsetattr(saved[0], termios.TCSANOW, saved[1])
    except (OSError, termios.error):
        pass
