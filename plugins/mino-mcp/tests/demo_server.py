"""A real MCP server written with the SDK, for the tests: tools and a resource.

``python demo_server.py`` serves over stdio; ``python demo_server.py http PORT`` serves
streamable HTTP on 127.0.0.1:PORT. Every tool call is appended to the file named by
``DEMO_CALLS`` (when set), so a test can tell whether a call reached the server.
"""
import asyncio
import json
import os
import sys

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("demo")


def _record(tool, **args):
    path = os.environ.get("DEMO_CALLS")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"tool": tool, "args": args}) + "\n")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    _record("add", a=a, b=b)
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    _record("echo", text=text)
    return text


@server.tool()
def big(size: int) -> str:
    """Return size bytes of text."""
    _record("big", size=size)
    return "A" * (size // 2) + "Z" * (size - size // 2)


@server.tool()
async def slow(seconds: float) -> str:
    """Wait, then answer."""
    _record("slow", seconds=seconds)
    await asyncio.sleep(seconds)
    return "finally"


@server.tool()
def read(path: str) -> str:
    """Read a file: its text, or why it cannot be read (what a sandbox lets it see)."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(1000)
    except OSError as e:
        return f"cannot read: {e.strerror}"


@server.tool()
def connect(port: int) -> str:
    """Open a TCP connection to 127.0.0.1:port: "connected" or why not."""
    import socket

    try:
        socket.create_connection(("127.0.0.1", port), timeout=3).close()
        return "connected"
    except OSError as e:
        return f"cannot connect: {e.strerror or e}"


@server.tool()
def crash() -> str:
    """Kill the server process in the middle of the call."""
    _record("crash")
    os._exit(3)


@server.tool()
def fail() -> str:
    """Answer with a tool error."""
    raise ToolError("the demo tool failed on purpose")


@server.resource("notes://today")
def today() -> str:
    """Today's note."""
    return "Buy milk; the build server is ci-7."


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
