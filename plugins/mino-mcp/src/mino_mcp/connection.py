"""One MCP server: start it, list its tools and resources, call them, stop it.

The connection lives in one task on the background loop (``runtime``): it enters the SDK's
``Client`` (which starts a stdio server or opens the HTTP session), lists what the server
offers, says it is ready, then waits to be told to stop. Callers on mino's thread wait with
a time-out, so a server that hangs costs at most its ``startup_timeout`` or
``tool_timeout``; a server that dies makes its pending and later calls fail at once
("Connection closed"), and the connection is then ``exited`` until the next session.

States: ``stopped`` (never started, or stopped at a session's end), ``starting``,
``ready``, ``failed`` (did not start; ``error`` says why), ``exited`` (died while in use).
"""
from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import runtime
from .config import ServerSpec

CLIENT_NAME = "mino"
_GROUP = getattr(builtins, "BaseExceptionGroup", None)  # Python 3.11+; anyio's on 3.10
NO_SANDBOX = ("it would run in the sandbox (the default for stdio servers), and no sandbox can "
              "run it here (mino plugins says why: bubblewrap missing, or Bash's sandbox turned "
              "off); to run it as you, unsandboxed, set sandbox: false on it (or mcp.sandbox: "
              "false for every server) in config.yaml")


@dataclass
class Listing:
    """What a server offers: its tools (the SDK's ``Tool`` objects as plain dicts) and
    whether it has resources."""

    tools: list[dict[str, Any]] = field(default_factory=list)
    resources: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"tools": self.tools, "resources": self.resources}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Listing":
        tools = [t for t in data.get("tools") or [] if isinstance(t, dict) and isinstance(t.get("name"), str)]
        return cls(tools, bool(data.get("resources")))


class ServerGone(Exception):
    """The server is not there (failed to start, died, or stopped); the message says why."""


class Connection:
    def __init__(self, spec: ServerSpec, project_root: Path, log_dir: Path,
                 sandbox_command: Any = None):
        self.spec = spec
        self.project_root = project_root
        # argv -> the sandboxed command line, or None (PluginContext.sandbox_command)
        self._sandbox_command = sandbox_command
        self._argv: list[str] = list(spec.command)
        self.log_path = log_dir / f"mcp-{spec.name}.log"
        self.state = "stopped"
        self.error = ""
        self.listing: Listing | None = None
        self._client: Any = None
        self._task: concurrent.futures.Future | None = None
        self._stop: asyncio.Event | None = None
        self._errlog = None
        self._lock = threading.Lock()

    # -- life -----------------------------------------------------------------

    def start(self) -> Listing:
        """Start the server (if it is not running) and return its listing; ServerGone
        when it cannot be started. Blocks at most ``startup_timeout`` seconds."""
        with self._lock:
            if self.state == "ready" and self.listing is not None:
                return self.listing
            if self.state in ("failed", "exited"):
                raise ServerGone(self.error)
            if self.spec.transport == "stdio" and self.spec.sandbox:
                wrapped = (self._sandbox_command(list(self.spec.command), self.spec.network)
                           if self._sandbox_command is not None else None)
                if not wrapped:
                    self._fail(NO_SANDBOX)
                self._argv = wrapped
            self.state = "starting"
            ready: concurrent.futures.Future = concurrent.futures.Future()
            self._task = runtime.submit(self._main(ready))
            try:
                listing = ready.result(self.spec.startup_timeout)
            except concurrent.futures.TimeoutError:
                self._task.cancel()
                self._fail(f"it did not start within {self.spec.startup_timeout:g} s "
                           "(startup_timeout_sec)")
            except Exception as exc:  # noqa: BLE001 - any failure to start is one notice
                self._fail(f"it did not start: {_describe(exc)}{self._stderr_hint()}")
            except BaseException:  # Ctrl-C while waiting: no half-started server is left
                self._task.cancel()
                self._task, self.state = None, "stopped"
                self._close_log()
                raise
            self.listing, self.state = listing, "ready"
            return listing

    def _fail(self, why: str) -> None:
        self.state, self.error = "failed", why
        self._close_log()
        raise ServerGone(why)

    async def _main(self, ready: concurrent.futures.Future) -> None:
        from mcp import Client, Implementation

        self._stop = asyncio.Event()
        try:
            target = self._target()
            async with Client(target, client_info=Implementation(name=CLIENT_NAME, version="1")) as client:
                listing = await _list(client)
                self._client = client
                if not ready.done():
                    ready.set_result(listing)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - reported through ``ready`` or state
            if not ready.done():
                ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))
            if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, SystemExit)):
                raise
        finally:
            self._client = None

    def _target(self):
        if self.spec.transport == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            # The SDK's own defaults: 30 s to connect or write, 300 s to read (a server may
            # hold a stream open); redirects are the transport's to follow, within the origin.
            http = httpx2.AsyncClient(headers=dict(self.spec.headers),
                                      timeout=httpx2.Timeout(30.0, read=300.0))
            return _HttpTransport(streamable_http_client(self.spec.url, http_client=http), http)
        from mcp import StdioServerParameters, stdio_client

        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # The server's stderr goes to a log file, never to the terminal: it is text from
        # outside that mino has not escaped.
        fd = os.open(self.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._errlog = os.fdopen(fd, "a", encoding="utf-8", errors="replace")
        command, *args = self._argv
        params = StdioServerParameters(command=command, args=args, env=dict(self.spec.env) or None,
                                       cwd=self.spec.cwd or str(self.project_root))
        return stdio_client(params, errlog=self._errlog)

    def stop(self) -> None:
        """Stop the server (stdin closed, then terminated) and forget a failure, so the
        next session starts it afresh."""
        with self._lock:
            task, stop = self._task, self._stop
            self._task = None
            if task is not None and not task.done() and stop is not None:
                runtime.loop().call_soon_threadsafe(stop.set)
                try:
                    task.result(10)
                except BaseException:  # noqa: BLE001 - stopping never fails the caller
                    task.cancel()
            self._close_log()
            self.state, self.error, self._client = "stopped", "", None

    def _close_log(self) -> None:
        if self._errlog is not None:
            try:
                self._errlog.close()
            except OSError:
                pass
            self._errlog = None

    def _stderr_hint(self) -> str:
        if self.spec.transport != "stdio":
            return ""
        return f" (its own messages are in {self.log_path})"

    # -- use ------------------------------------------------------------------

    def call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The SDK's CallToolResult. TimeoutError past ``tool_timeout`` (the server stays);
        ServerGone when it is not there or died during the call."""
        client = self._ready()
        timeout = self.spec.tool_timeout
        try:
            return runtime.run(client.call_tool(tool, arguments, read_timeout_seconds=timeout),
                               timeout + 5)
        except Exception as exc:
            raise self._classify(exc) from None

    def read_resource(self, uri: str) -> Any:
        client = self._ready()
        try:
            return runtime.run(client.read_resource(uri), self.spec.tool_timeout)
        except Exception as exc:
            raise self._classify(exc) from None

    def list_resources(self) -> list[Any]:
        client = self._ready()
        try:
            result = runtime.run(client.list_resources(), self.spec.tool_timeout)
        except Exception as exc:
            raise self._classify(exc) from None
        return list(result.resources)

    def _ready(self):
        self.start()
        client = self._client
        if client is None:
            raise ServerGone(self.error or "it stopped")
        return client

    def _classify(self, exc: Exception) -> Exception:
        """A time-out stays a TimeoutError; a closed connection means the server died."""
        from mcp import MCPError

        if isinstance(exc, TimeoutError) or (isinstance(exc, MCPError) and "timed out" in str(exc)):
            return TimeoutError(f"it did not answer within {self.spec.tool_timeout:g} s (tool_timeout_sec)")
        if isinstance(exc, MCPError) and exc.code not in (-32000,):
            return exc  # the server's own error for this call: it is still there
        with self._lock:
            self.state = "exited"
            self.error = f"it stopped while in use ({_describe(exc)}){self._stderr_hint()}"
        return ServerGone(self.error)


class _HttpTransport:
    """The streamable HTTP transport with its own httpx client, closed with it."""

    def __init__(self, transport, http):
        self._transport, self._http = transport, http

    async def __aenter__(self):
        await self._http.__aenter__()
        try:
            return await self._transport.__aenter__()
        except BaseException:
            await self._http.__aexit__(*sys.exc_info())
            raise

    async def __aexit__(self, *exc):
        try:
            return await self._transport.__aexit__(*exc)
        finally:
            await self._http.__aexit__(*exc)


async def _list(client) -> Listing:
    tools: list[dict[str, Any]] = []
    cursor = None
    for _ in range(100):  # a server that pages forever cannot hang the start
        page = await client.list_tools(cursor=cursor)
        tools += [{"name": t.name, "description": t.description or "",
                   "input_schema": dict(t.input_schema or {})} for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    resources = False
    if getattr(client.server_capabilities, "resources", None) is not None:
        try:
            found = await client.list_resources()
            resources = bool(found.resources)
        except Exception:  # noqa: BLE001 - a server without resources after all
            resources = False
    return Listing(tools, resources)


def _describe(exc: BaseException) -> str:
    """One line for people: the innermost useful error of an exception group."""
    while _GROUP is not None and isinstance(exc, _GROUP) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
