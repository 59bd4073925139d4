"""How ``mino mcp serve`` is reached: stdio (the default: the client starts mino as its
child), or streamable HTTP on 127.0.0.1 only, where every request must carry the bearer
token (``MINO_MCP_TOKEN``, or one made at start and printed once on stderr).

stdout belongs to the protocol on stdio, so everything for people goes to stderr.
"""
from __future__ import annotations

import hmac
import os
import secrets
import socket
import sys

from mino_core import MemoryService

VIA = "mino mcp serve"
TOKEN_ENV = "MINO_MCP_TOKEN"
TOKEN_MIN = 16


def _service(context, allow_save: bool) -> MemoryService:
    allow = ("memory_save",) if allow_save else ()
    return MemoryService.for_context(context, allow=allow, via=VIA, err=sys.stderr)


def _say(text: str) -> None:
    from mino_core import visible

    sys.stderr.write(visible(text, lines=True) + "\n")
    sys.stderr.flush()


def serve_stdio(context, allow_save: bool) -> None:
    import anyio
    from mcp.server.stdio import stdio_server

    from .tools import build_server

    service = _service(context, allow_save)
    server = build_server(service, allow_save)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    _say(f"{VIA}: memory backend {service.backend or 'none'} on stdio"
         f"{'; saving allowed' if allow_save else '; read-only'}")
    # mino escapes what plugin commands print (sys.stdout is its escaping stream); on stdio,
    # stdout is the protocol's: JSON lines the SDK writes to the real descriptor, where no
    # raw control character can appear (JSON escapes them).
    saved, sys.stdout = sys.stdout, sys.__stdout__
    try:
        anyio.run(main)
    except KeyboardInterrupt:
        pass
    finally:
        sys.stdout = saved


class TokenGate:
    """ASGI middleware: an HTTP request without ``Authorization: Bearer TOKEN`` gets 401.
    Other scopes (the lifespan that runs the session manager) pass through."""

    def __init__(self, app, token: str):
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope, receive, send):
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                body = b'{"error": "missing or wrong bearer token"}'
                await send({"type": "http.response.start", "status": 401, "headers": [
                    (b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                    (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def token() -> str:
    given = os.environ.get(TOKEN_ENV, "")
    if given:
        if len(given) < TOKEN_MIN:
            raise SystemExit(f"{VIA}: {TOKEN_ENV} must be at least {TOKEN_MIN} characters.")
        return given
    return secrets.token_urlsafe(32)


def serve_http(context, allow_save: bool, port: int) -> None:
    import anyio
    import uvicorn

    from .tools import build_server

    secret = token()
    service = _service(context, allow_save)
    server = build_server(service, allow_save)
    app = TokenGate(server.streamable_http_app(host="127.0.0.1"), secret)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
    except OSError as exc:
        raise SystemExit(f"{VIA}: cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}. "
                         "Choose another --port.") from None
    bound = sock.getsockname()[1]
    shown = "(from MINO_MCP_TOKEN)" if os.environ.get(TOKEN_ENV) else secret
    _say(f"{VIA}: memory backend {service.backend or 'none'} at http://127.0.0.1:{bound}/mcp"
         f"{'; saving allowed' if allow_save else '; read-only'}")
    _say(f"{VIA}: every request needs the header  Authorization: Bearer {shown}")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    try:
        anyio.run(uvicorn.Server(config).serve, [sock])
    except KeyboardInterrupt:
        pass
