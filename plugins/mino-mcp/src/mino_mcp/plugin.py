"""The hook implementations: this module is the plugin (the entry point in pyproject.toml).

Importing it is cheap: the SDK (``mcp``, with pydantic, httpx and anyio) is imported only
when a server starts or ``mino mcp`` runs. One ``Servers`` per plugin host holds that
host's connections; ``session_start`` starts the ``start: session`` servers,
``session_end`` and ``host_shutdown`` stop them all. Notices (a server that failed, hung
or died) are shown at the next turn start, tool outcome or session start.
"""
from __future__ import annotations

import atexit
import threading

from mino_core import hookimpl

_hosts: dict[int, tuple[object, object]] = {}  # id(context) -> (context, Servers)
_lock = threading.Lock()


def servers_for(context):
    """This host's servers (made on first use). The context is kept with them, so its id
    is not reused while they live."""
    from .servers import Servers

    with _lock:
        found = _hosts.get(id(context))
        if found is None or found[0] is not context:
            found = (context, Servers(context))
            _hosts[id(context)] = found
        return found[1]


def _configured(context) -> bool:
    section = context.config.get("mcp") if isinstance(context.config, dict) else None
    return isinstance(section, dict) and bool(section.get("servers"))


def _flush(session) -> None:
    if not _configured(session.host.context):
        return
    for line in servers_for(session.host.context).drain():
        session.notice(line)


@hookimpl
def register_tools(context):
    if not _configured(context):
        return None
    from .tools import make_tools

    return make_tools(servers_for(context))


@hookimpl
def config_schema(context):
    """``mcp:`` checked loosely at start (a number here, not config.py's import: mino asks
    this of every plugin at every start); each server is checked by config.read, so one
    wrong server is left out with one line and the others stay."""
    return {"mcp": {"type": "object", "additionalProperties": False, "properties": {
        "servers": {"type": "object", "description": "MCP servers by name: {command, args, env} "
                                                     "or {url, headers}"},
        "output_cap": {"type": "integer", "minimum": 1, "default": 30_000},
        "sandbox": {"type": "boolean", "default": True},
    }}}


@hookimpl
def front_input(turn):
    """Contributes nothing to the request: shows the notices of servers that failed."""
    _flush(turn.session)
    return None


@hookimpl
def tool_outcome(outcome, turn):
    _flush(turn.session)


@hookimpl
def session_start(session):
    if _configured(session.host.context):
        servers_for(session.host.context).session_started()
    _flush(session)


@hookimpl
def session_end(session):
    if _configured(session.host.context):
        servers_for(session.host.context).stop_all()


@hookimpl
def host_shutdown(context):
    stop_everything()


@hookimpl
def plugin_notes(context):
    if not _configured(context):
        return ["no MCP servers configured (mcp: {servers: ...} in config.yaml)"]
    servers = servers_for(context)
    notes = [f"MCP server {name}: {conn.spec.transport} {conn.spec.where()}"
             for name, conn in servers.connections.items()]
    return notes + servers.settings.problems


@hookimpl
def register_commands(cli, context):
    from .commands import add_commands

    add_commands(cli, context)


def stop_everything() -> None:
    with _lock:
        found = list(_hosts.values())
        _hosts.clear()
    for _, servers in found:
        servers.stop_all()


# A mino that leaves without host_shutdown (an old core, an error) still stops its servers.
atexit.register(stop_everything)
