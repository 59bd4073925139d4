"""mino's memory as an MCP server: ``mino mcp serve`` gives other agents (Claude Code, Codex)
``memory_search`` and ``memory_view`` of the active backend, and ``memory_save`` only when
started with ``--allow-save``; every call goes through ``mino_core.MemoryService``, the
same checks a model's call passes. ``tools`` (the MCP tools over the service),
``transport`` (stdio, or HTTP on 127.0.0.1 behind a token), ``plugin`` (the command).
"""
