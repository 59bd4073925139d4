"""Esc during a turn means stop: a thread watches the terminal while the model streams and
tools run, and turns a lone Esc into SIGINT, so it ends the turn exactly as Ctrl-C does.

The terminal is in cbreak mode meanwhile (no echo, signals kept), and back as it was before
any question is asked or the prompt is read. Other keys typed during the turn are kept for
the next prompt (``take``), never for a question: typing ahead cannot approve anything.

Bracketed paste stays on during the turn (prompt_toolkit turns it off when its prompt
ends): a paste arrives between ``ESC[200~`` and ``ESC[201~``, so its newlines are text, not
Enter, and everything typed ahead is one message (``take_message``), never one per line.
"""
from __future__ import annotations

import os
import select
import signal
import threading

from . import PASTE_OFF, PASTE_ON, _dumb  # the package's (loaded before any of its modules)

ESC = b"\x1b"
ALONE = 0.05  # an Esc followed by more bytes this soon is a key sequence (an arrow), not Esc
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"


def bracketed_paste(out=None) -> None:
    """Ask the terminal on ``out`` (stdout) to mark pastes; nothing on a pipe or a dumb
    terminal (whose transcript stays free of escape sequences)."""
    import sys

    out = out or sys.stdout
    try:
        if out.isatty() and not _dumb():
            out.write(PASTE_ON)
            out.flush()
    except (AttributeError, OSError, ValueError):
        pass


def bracketed_paste_off(out=None) -> None:
    """The terminal as the shell expects it again (mino leaves; turns kept it on)."""
    import sys

    out = out or sys.stdout
    try:
        if out.isatty() and not _dumb():
            out.write(PASTE_OFF)
            out.flush()
    except (AttributeError, OSError, ValueError):
        pass


def typed_text(data: bytes) -> tuple[str, bool]:
    """What keys typed ahead say: (the text, whether it ended with Enter). Printable text,
    Tab and line breaks, with Backspace applied; key sequences (arrows) dropped; inside a
    bracketed paste, line breaks are text. Enter outside a paste is a line break too: the
    whole of it is one message."""
    text = data.decode("utf-8", "replace")
    out: list[str] = []
    entered = paste = False
    i, n = 0, len(text)
    while i < n:
        if text.startswith(PASTE_START, i) or text.startswith(PASTE_END, i):
            paste = text.startswith(PASTE_START, i)
            entered = False
            i += len(PASTE_START)
            continue
        ch = text[i]
        i += 1
        if ch == "\x1b":  # a key sequence: CSI (ESC [ ... final), SS3 (ESC O x), Alt-x
            if i < n and text[i] == "[":
                i += 1
                while i < n and not ("@" <= text[i] <= "~"):
                    i += 1
                i += 1
            elif i < n and text[i] == "O":
                i += 2
            else:
                i += 1
            continue
        if ch in "\r\n":
            if ch == "\r" and i < n and text[i] == "\n":
                i += 1
            out.append("\n")
            entered = not paste
        elif ch in "\x7f\x08" and not paste:
            if out and out[-1] != "\n":
                out.pop()
            entered = False
        elif ch.isprintable() or ch == "\t":
            out.append(ch)
            entered = False
    return "".join(out), entered


class EscWatcher:
    def __init__(self, fd: int):
        self.fd = fd
        self._saved = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._typed = bytearray()
        self._typed_lock = threading.Lock()

    def take(self) -> str:
        """What was typed during the turn (not Esc, not key sequences), and forget it:
        printable text and line breaks, with Backspace applied."""
        return self.take_message()[0]

    def take_message(self) -> tuple[str, bool]:
        """What was typed during the turn as one message, and whether it ended with Enter
        (then it is sent as it is); forgotten once taken."""
        with self._typed_lock:
            data, self._typed = bytes(self._typed), bytearray()
        text, entered = typed_text(data)
        return (text[:-1] if entered else text), entered

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self) -> None:
        if self._thread is not None:
            return
        import termios

        try:
            self._saved = termios.tcgetattr(self.fd)
            mode = termios.tcgetattr(self.fd)
            mode[3] &= ~(termios.ICANON | termios.ECHO)
            mode[6][termios.VMIN], mode[6][termios.VTIME] = 1, 0
            termios.tcsetattr(self.fd, termios.TCSANOW, mode)
        except (termios.error, OSError):
            self._saved = None
            return
        bracketed_paste()  # a paste during the turn stays one message
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, name="mino-esc", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=1)
        self._thread = None
        if self._saved is not None:
            import termios

            try:
                termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)
            except (termios.error, OSError):
                pass
            self._saved = None

    def paused(self):
        """A context: the terminal as it was (for a question), then watched again."""
        return _Paused(self)

    def _ready(self, timeout: float) -> bool:
        try:
            return bool(select.select([self.fd], [], [], timeout)[0])
        except (OSError, ValueError):
            return False

    def _watch(self) -> None:
        while not self._stop.is_set():
            if not self._ready(0.05):
                continue
            try:
                data = os.read(self.fd, 1024)
            except OSError:
                return
            if not data:
                return
            if data == ESC and not self._ready(ALONE):
                os.kill(os.getpid(), signal.SIGINT)
                continue
            # Key sequences are dropped and pastes kept when the keys are read (typed_text).
            with self._typed_lock:
                self._typed += data


class _Paused:
    def __init__(self, watcher: EscWatcher):
        self.watcher = watcher
        self.was = False

    def __enter__(self):
        self.was = self.watcher._thread is not None
        self.watcher.stop()
        self.watcher.take()  # typed before the question: not an answer to it
        return self

    def __exit__(self, *exc):
        if self.was:
            self.watcher.start()
        return False
