"""Esc during a turn means stop: a thread watches the terminal while the model streams and
tools run, and turns a lone Esc into SIGINT, so it ends the turn exactly as Ctrl-C does.

The terminal is in cbreak mode meanwhile (no echo, signals kept), and back as it was before
any question is asked or the prompt is read. Other keys typed during the turn are kept for
the next prompt (``take``), never for a question: typing ahead cannot approve anything.
"""
from __future__ import annotations

import os
import select
import signal
import threading

ESC = b"\x1b"
ALONE = 0.05  # an Esc followed by more bytes this soon is a key sequence (an arrow), not Esc


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
        with self._typed_lock:
            data, self._typed = bytes(self._typed), bytearray()
        out: list[str] = []
        for ch in data.decode("utf-8", "replace").replace("\r\n", "\n"):
            if ch in "\x7f\x08":
                if out and out[-1] != "\n":
                    out.pop()
            elif ch in "\r\n":
                out.append("\n")
            elif ch.isprintable() or ch == "\t":
                out.append(ch)
        return "".join(out)

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
            elif data == ESC:
                try:
                    os.read(self.fd, 1024)  # the rest of a key sequence: dropped
                except OSError:
                    return
            elif ESC not in data:
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
