"""How a plugin reports: a logger into mino's own log file, and notices for the person.

A plugin that used ``logging`` printed raw lines on stderr (past the escaping, the stream
the REPL draws on, the stream-json output) and nothing reached ``MINO_HOME/logs``. So a
plugin takes ``plugin_logger(name)``: its ``debug``/``info`` lines go to the log file,
its ``warning``/``error`` lines go there and become notices too. ``notice(text)`` queues
a line for the person; the front end shows queued notices between turns and at the end
of a run (the REPL as a notice line, ``mino -p`` on stderr or as a stream-json event),
always escaped. The calls take ``logging``'s arguments (``log.warning("x %s", y)``), so
a plugin moves over by changing the line that makes its logger.
"""
from __future__ import annotations

import contextlib
import threading
from collections import deque
from typing import Any

from .logs import get_logger

_lock = threading.Lock()
MAX_PENDING = 100  # a plugin in a loop of warnings must not grow memory without bound
_pending: "deque[str]" = deque(maxlen=MAX_PENDING)  # past it, the oldest go first


_sink: list = []  # while a plugin command runs: where notices go at once (stderr)


def notice(text: str) -> None:
    """Queue one line for the person (any thread); shown at the front end's next chance."""
    line = " ".join(str(text).split())
    if not line:
        return
    if _sink:
        _sink[-1](line)
        return
    with _lock:
        _pending.append(line)


@contextlib.contextmanager
def shown_by(sink):
    """While this runs, notices go to ``sink`` at once (a plugin command: nobody drains a
    queue there); what was queued before goes first."""
    for line in drain():
        sink(line)
    _sink.append(sink)
    try:
        yield
    finally:
        _sink.remove(sink)


def drain() -> list[str]:
    """Take every queued notice, oldest first."""
    with _lock:
        out = list(_pending)
        _pending.clear()
    return out


class PluginLogger:
    """``logging.Logger``'s calls, into mino's log (and notices for warnings)."""

    def __init__(self, name: str):
        self.name = name
        self._log = get_logger(name)

    def _emit(self, level: str, msg: Any, args: tuple, exc_info: Any) -> str:
        text = str(msg)
        if args:
            try:
                text = text % args
            except (TypeError, ValueError):
                text = " ".join([text, *map(str, args)])
        fields = {"exc_info": exc_info} if exc_info else {}
        getattr(self._log, level)(text, **fields)
        return text

    def debug(self, msg: Any, *args: Any, exc_info: Any = None) -> None:
        self._emit("debug", msg, args, exc_info)

    def info(self, msg: Any, *args: Any, exc_info: Any = None) -> None:
        self._emit("info", msg, args, exc_info)

    def warning(self, msg: Any, *args: Any, exc_info: Any = None) -> None:
        notice(self._emit("warning", msg, args, exc_info))

    def error(self, msg: Any, *args: Any, exc_info: Any = None) -> None:
        notice(self._emit("error", msg, args, exc_info))

    def exception(self, msg: Any, *args: Any) -> None:
        self.error(msg, *args, exc_info=True)


def plugin_logger(name: str) -> PluginLogger:
    """The logger a plugin reports through (``name``: e.g. ``"mino.memory.graph"``)."""
    return PluginLogger(name)
