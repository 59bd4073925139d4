"""The one background event loop every MCP connection of this process runs on.

The SDK is asynchronous and its transports must be entered and left in one task; mino's
turn loop is synchronous. So one daemon thread runs an asyncio loop, each server lives in
a task there, and callers wait on ``run(coro, timeout)``. The thread is a daemon: a mino
that exits without stopping its servers (a crash) does not hang on it, and a stdio server
sees its stdin close when mino's process ends.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any, Coroutine

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            fresh = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(fresh)
                fresh.call_soon(ready.set)
                fresh.run_forever()

            threading.Thread(target=serve, name="mino-mcp-loop", daemon=True).start()
            ready.wait()
            _loop = fresh
        return _loop


def submit(coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future:
    return asyncio.run_coroutine_threadsafe(coro, loop())


def run(coro: Coroutine[Any, Any, Any], timeout: float | None) -> Any:
    """Run ``coro`` on the loop and wait at most ``timeout`` seconds (TimeoutError); on a
    timeout or a Ctrl-C here, the coroutine is cancelled."""
    future = submit(coro)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError from None
    except BaseException:
        future.cancel()
        raise
