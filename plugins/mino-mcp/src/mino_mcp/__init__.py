"""mino as an MCP client: each tool of a configured Model Context Protocol server becomes a
mino tool named ``mcp__SERVER__TOOL``, decided by the same permission decision as mino's own.

Layers, bottom up: ``config`` (the ``mcp:`` section read into server specs), ``names``
(mino tool names), ``runtime`` (the one background event loop the SDK runs on),
``connection`` (one server: start, list, call, stop), ``servers`` (every server of the
process, their state and notices), ``results`` (a server's answer as capped, labelled
data), ``tools`` (mino Tools), ``plugin`` and ``commands`` (the hooks and ``mino mcp``).
"""
