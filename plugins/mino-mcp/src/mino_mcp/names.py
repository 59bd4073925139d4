"""mino tool names for server tools: ``mcp__SERVER__TOOL``, as Claude Code names them.

The Responses API takes function names of ``[A-Za-z0-9_-]``, at most 64 characters; MCP
tool names may also hold ``.`` and ``/`` and run to 128. Other characters become ``_``; a
name that would still be too long is cut and ends in a short hash of the original, so two
long names stay two names. Two server tools that come out as one name are a clash the
caller reports, never renamed further.
"""
from __future__ import annotations

import hashlib
import re

PREFIX = "mcp__"
MAX = 64
_BAD = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, tool: str) -> str:
    name = f"{PREFIX}{server}__{_BAD.sub('_', tool)}"
    if len(name) <= MAX:
        return name
    digest = hashlib.sha256(tool.encode()).hexdigest()[:8]
    return name[:MAX - 9] + "_" + digest


def resource_tool_name(server: str) -> str:
    """The tool that reads a server's resources (``mcp__SERVER__resources``)."""
    return f"{PREFIX}{server}__resources"
