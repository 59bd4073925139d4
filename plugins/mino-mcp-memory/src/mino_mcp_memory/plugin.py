"""The hook: ``mino mcp serve`` (under the ``mino mcp`` group mino-mcp also adds to).

Importing this module is cheap: the SDK loads only when the server starts.
"""
from __future__ import annotations

import click

from mino_core import hookimpl


def _mcp_group(cli: click.Group) -> click.Group:
    """The ``mino mcp`` group that is there (mino-mcp's, when installed), or a new one:
    neither plugin depends on the other or on which hook runs first."""
    group = cli.commands.get("mcp")
    if isinstance(group, click.Group):
        return group

    @cli.group("mcp")
    def mcp():
        """Model Context Protocol: servers mino uses (list) and mino's memory as a server (serve)."""

    return mcp


@hookimpl
def register_commands(cli, context):
    group = _mcp_group(cli)

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
