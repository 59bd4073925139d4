"""Structured logs to a file under the home folder (structlog, imported on first use).

The conversation goes to stdout and people's messages to stderr; logs go to
``MINO_HOME/logs/mino.log`` as JSON lines, and ``-v`` mirrors them to stderr. structlog
is imported lazily so that ``mino --help`` never pays for it.
"""
from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_state: dict[str, Any] = {"configured": False, "path": None, "verbose": False}


def configure(home: Path | None, verbose: bool = False) -> None:
    """Say where logs go; takes effect at the next log call."""
    with _lock:
        _state.update(configured=False, path=(home / "logs" / "mino.log") if home else None,
                      verbose=verbose)


def _open_private(path: Path):
    """The log for appending, readable by its owner only: it holds tracebacks, paths and
    tool arguments. A log an older mino created 0644 is tightened."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    except OSError:
        pass  # not ours to change (another user's file): still log
    return os.fdopen(fd, "a", encoding="utf-8")


def _import_structlog():
    """structlog, imported without rich: when rich is installed (mino's terminal uses it)
    structlog loads rich's traceback and pretty-printer at import, about 25 ms on the path
    of every run; mino writes JSON lines and plain console text, so it needs neither."""
    if "structlog" in sys.modules:
        return sys.modules["structlog"]
    hide = "rich" not in sys.modules
    if hide:
        sys.modules["rich"] = None  # type: ignore[assignment] - makes `import rich` fail
    try:
        import structlog
    finally:
        if hide and sys.modules.get("rich", 0) is None:
            del sys.modules["rich"]
    return structlog


def _emit_factory():
    structlog = _import_structlog()

    path: Path | None = _state["path"]
    verbose: bool = _state["verbose"]
    stream = None
    if path is not None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            stream = _open_private(path)
        except OSError:
            stream = None

    renderer = structlog.processors.JSONRenderer()
    console = structlog.dev.ConsoleRenderer(colors=False) if verbose else None

    def write(logger, method, event_dict):
        exc = event_dict.pop("exc_info", None)
        if exc:
            import traceback

            info = sys.exc_info() if exc is True else exc
            if info and info[0] is not None:
                event_dict["traceback"] = "".join(traceback.format_exception(*info))
        if stream is not None:
            stream.write(renderer(logger, method, dict(event_dict)) + "\n")
            stream.flush()
        if console is not None:
            event_dict.pop("traceback", None)
            sys.stderr.write(console(logger, method, dict(event_dict)) + "\n")
        raise structlog.DropEvent

    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            write,
        ],
        cache_logger_on_first_use=False,
    )


class _LazyLogger:
    """A logger whose first call imports and configures structlog."""

    def __init__(self, name: str):
        self._name = name

    def _log(self, method: str, event: str, **kw: Any) -> None:
        if os.environ.get("MINO_NO_LOG") == "1":
            return
        with _lock:
            if not _state["configured"]:
                _emit_factory()
                _state["configured"] = True
        import structlog

        try:
            getattr(structlog.get_logger(self._name).bind(logger=self._name), method)(event, **kw)
        except Exception:  # noqa: BLE001 - logging must never break the agent
            pass

    def debug(self, event: str, **kw: Any) -> None:
        self._log("debug", event, **kw)

    def info(self, event: str, **kw: Any) -> None:
        self._log("info", event, **kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._log("warning", event, **kw)

    def error(self, event: str, **kw: Any) -> None:
        self._log("error", event, **kw)


def get_logger(name: str) -> _LazyLogger:
    return _LazyLogger(name)
