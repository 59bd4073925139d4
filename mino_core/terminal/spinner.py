"""The status line while mino waits: a spinner, what it waits for, and the seconds so far.

It is drawn on stderr only when that is a terminal (``status_wanted``), on one line that is
erased before anything else is written, so it never reaches a pipe, a log or the transcript.
"""
from __future__ import annotations

import threading
import time
from typing import TextIO

FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
DELAY = 0.1  # a wait shorter than this draws nothing (no flicker for fast tools)
TICK = 0.1


class Spinner:
    def __init__(self, err: TextIO):
        self.err = err
        self._lock = threading.RLock()  # a write while paused (a notice ending the text) stops it again
        self._label = ""
        self._since = 0.0
        self._drawn = False
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False

    @property
    def active(self) -> bool:
        return bool(self._label)

    def start(self, label: str) -> None:
        """Show ``label`` (``Waiting for the model``) from now; replaces any earlier label."""
        with self._lock:
            if label != self._label:
                self._label, self._since = label, time.monotonic()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="mino-spinner", daemon=True)
            self._thread.start()
        self._wake.set()

    def stop(self) -> None:
        """Erase the line (if drawn) and stop; safe to call when not running."""
        with self._lock:
            self._label = ""
            self._clear()

    def pause(self):
        """A context: the line is erased while the caller writes, then drawn again."""
        return _Paused(self)

    def _clear(self) -> None:
        if self._drawn:
            try:
                self.err.write("\r\x1b[2K")
                self.err.flush()
            except (OSError, ValueError):
                pass
            self._drawn = False

    def _draw(self) -> None:
        with self._lock:
            if not self._label:
                return
            elapsed = time.monotonic() - self._since
            if elapsed < DELAY:
                return
            frame = FRAMES[int(elapsed / TICK) % len(FRAMES)]
            try:
                self.err.write(f"\r\x1b[2K{frame} {self._label} {elapsed:.0f}s (Esc to interrupt)")
                self.err.flush()
            except (OSError, ValueError):
                return
            self._drawn = True

    def _run(self) -> None:
        while not self._closed:
            if not self._label:
                self._wake.wait()
                self._wake.clear()
                continue
            self._draw()
            time.sleep(TICK)


class _Paused:
    def __init__(self, spinner: Spinner):
        self.spinner = spinner

    def __enter__(self):
        self.spinner._lock.acquire()
        self.spinner._clear()
        return self

    def __exit__(self, *exc):
        self.spinner._lock.release()
        return False
