"""``mino mcp list``: each configured server, its state and its tools.

``mino mcp`` is a group two plugins share (this one adds ``list``, mino-mcp-memory adds
``serve``): each takes the group that is there or makes it (``mino_core.command_group``),
so neither depends on which plugin's hook runs first.
"""
from __future__ import annotations

import click

from mino_core import command_group


MCP_HELP = "Model Context Protocol: servers mino uses (list) and mino's memory as a server (serve)."


def add_commands(cli: click.Group, context) -> None:
    group = command_group(cli, "mcp", MCP_HELP)

    @group.command("list")
    @click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
    @click.option("--no-start", is_flag=True, help="Show the remembered tools; start no server.")
    def list_(as_json, no_start):
        """Configured MCP servers, their state and tools (starts each to ask it)."""
        from .names import resource_tool_name, tool_name
        from .plugin import servers_for

        servers = servers_for(context)
        if not no_start:
            servers.start(list(servers.connections))
        cached = servers._read_cache()
        rows = []
        for name, conn in servers.connections.items():
            listing = conn.listing
            if listing is None and isinstance(cached.get(name), dict) \
                    and cached[name].get("key") == conn.spec.fingerprint():
                from .connection import Listing

                listing = Listing.from_dict(cached[name])
            tools = [tool_name(name, t["name"]) for t in (listing.tools if listing else [])
                     if conn.spec.offers(t["name"])]
            if listing and listing.resources:
                tools.append(resource_tool_name(name))
            rows.append({"name": name, "transport": conn.spec.transport, "where": conn.spec.where(),
                         "start": conn.spec.start, "state": conn.state, "error": conn.error,
                         "unsandboxed": conn.spec.transport == "stdio" and not conn.spec.sandbox,
                         "tools": tools})
        problems = servers.settings.problems
        servers.stop_all()
        if as_json:
            import json

            click.echo(json.dumps({"servers": rows, "problems": problems}, indent=2))
            return
        if not rows:
            click.echo("No MCP servers configured. Add them to config.yaml:\n"
                       "  mcp:\n    servers:\n      NAME: {command: [program, arg], env: {}}\n"
                       "      OTHER: {url: https://host/mcp}")
        for row in rows:
            click.echo(f"{row['name']}  [{row['state']}]  {row['transport']}: {row['where']}  "
                       f"(starts: {row['start']}{', unsandboxed' if row['unsandboxed'] else ''})")
            if row["error"]:
                click.echo(f"    error: {row['error']}")
            if row["tools"]:
                click.echo(f"    tools: {', '.join(row['tools'])}")
        for line in problems:
            click.echo(line, err=True)
