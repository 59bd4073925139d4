"""The hook: ``mino mcp serve`` (under the ``mino mcp`` group mino-mcp also adds to).

Importing this module is cheap: the SDK loads only when the server starts.
"""
from __future__ import annotations

import click

from mino_core import command_group, hookimpl


MCP_HELP = "Model Context Protocol: servers mino uses (list) and mino's memory as a server (serve)."


@hookimpl
def register_commands(cli, context):
    group = command_group(cli, "mcp", MCP_HELP)

    @group.command("serve")
    @click.option("--allow-save", is_flag=True,
                  help="Offer memory_save too; each save still passes mino's filters and deny rules.")
    @click.option("--http", "http", is_flag=True,
                  help="Serve streamable HTTP on 127.0.0.1 (a bearer token is required) instead of stdio.")
    @click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
                  help="With --http: the port (0: any free port).")
    def serve(allow_save, http, port):
        """Serve the active memory backend over MCP (stdio unless --http)."""
        from .transport import serve_http, serve_stdio

        if http:
            serve_http(context, allow_save, port)
        else:
            serve_stdio(context, allow_save)
