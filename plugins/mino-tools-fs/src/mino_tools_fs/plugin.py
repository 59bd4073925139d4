"""The hook implementations: this module is the plugin (see the entry point in pyproject.toml).

A tool plugin needs one hook, ``register_tools``. The permission decision needs nothing
more from us: the core's default policy reads each tool's ``read_only``, ``targets`` and
``sandboxed`` and decides (read-only runs, project edits ask in manual mode, a sandboxed
Bash runs, an unsandboxed one asks). ``plugin_notes`` tells ``mino plugins`` which, and
what the sandbox lets a command see, write and reach; ``decide_permission`` only abstains, and says once per session
when Bash has no sandbox.
"""
from __future__ import annotations

import threading

from mino_core import PluginContext, Tool, ToolContext, hookimpl

# The tool modules are imported inside the hooks: mino imports every plugin at start-up,
# and only collects tools when the first request needs them.

_NOTICED = "mino-tools-fs.sandbox-notice"


def _tool_context(context: PluginContext) -> ToolContext:
    return ToolContext(project_root=context.project_root, home=context.home, session_id="",
                       mode="manual", config=context.config,
                       protected=getattr(context, "protected", ()))


def _box(context: PluginContext):
    from . import bash

    return bash._box(_tool_context(context))


@hookimpl
def register_tools(context: PluginContext) -> list[Tool]:
    from . import bash, edits, files, sandbox

    # Probing for the sandbox starts a process: do it in the background. The first Bash
    # description or call that needs the answer waits for this same probe.
    threading.Thread(target=sandbox.detect, name="mino-sandbox-probe", daemon=True).start()
    return [*files.tools(), *edits.tools(), bash.tool(lambda: _box(context))]


@hookimpl
def sandbox_command(argv, network, context: PluginContext):
    """Another plugin's long-running program (an MCP server) in the Bash sandbox: None
    where Bash itself would run unsandboxed (no bubblewrap, a bad setting, sandbox off)."""
    from . import bash, sandbox
    from .paths import project_real

    ctx = _tool_context(context)
    if bash.sandbox_problem(ctx):
        return None
    box = sandbox.detect()
    return sandbox.server_command(list(argv), project_real(ctx.project_root), box,
                                  bash.view_for(ctx), network)


@hookimpl
def decide_permission(call, tool, mode, session):
    """Abstains; on the first Bash call without a sandbox, says so in the transcript."""
    if call.name != "Bash" or session.state.get(_NOTICED):
        return None
    from . import bash

    session.state[_NOTICED] = True
    problem = bash.sandbox_problem(session.tool_context())
    if problem:
        session.notice(f"Bash runs without a sandbox ({problem}), so every command asks first.")
    return None


@hookimpl
def plugin_notes(context: PluginContext) -> list[str]:
    from . import bash, sandbox

    ctx = _tool_context(context)
    problem = bash.sandbox_problem(ctx)
    if context.section("tools-fs").get("sandbox", True) is False:
        return ["sandbox turned off (tools-fs.sandbox: false in config.yaml): every Bash command asks"]
    if problem and sandbox.detect() is not None:  # a bad setting, not a missing sandbox
        return [f"sandbox not used because of config.yaml: {problem}; every Bash command asks"]
    notes = [sandbox.status_line(sandbox.detect())]
    if sandbox.detect() is not None:
        settings = bash.Settings.from_context(ctx)
        box_view = bash.view_for(ctx)
        notes += sandbox.notes(box_view, context.home, settings.hide)
        notes += [f"sandbox: {p}" for p in box_view.problems]
    return notes


def _positive(default: int, maximum: int | None = None) -> dict:
    schema = {"type": "integer", "minimum": 1, "default": default}
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


@hookimpl
def config_schema(context: PluginContext) -> dict:
    """``tools-fs:`` in config.yaml, checked when mino starts (a wrong value: its default).
    ``hide`` is checked by the sandbox itself: a bad list turns the sandbox off (every Bash
    command asks), which is safer than dropping the paths the person wanted hidden."""
    # The defaults as numbers, not imported: bash and files load only when tools are
    # collected (mino-core's tests check these equal bash.py's and files.py's).
    return {"tools-fs": {"type": "object", "additionalProperties": False, "properties": {
        "bash_timeout": _positive(120, 600),
        "bash_output_cap": _positive(30_000),
        "sandbox": {"type": "boolean", "default": True},
        "hide": {"description": "a list of paths the sandbox hides"},
        # checked by the sandbox too: a bad list turns it off (Bash asks), like hide
        "env": {"description": "variable names (* allowed) added to the sandbox's environment"},
        "home_read": {"description": "folders or files in a home the sandbox shows, read-only"},
        "home_write": {"description": "folders in a home the sandbox shows, writable"},
        "unix_sockets": {"description": "unix sockets a command may connect to (turns the "
                                        "socket filter off)"},
        "limits": {"type": "object", "additionalProperties": False, "properties": {
            "tmp_mb": _positive(2048), "shm_mb": _positive(256), "home_mb": _positive(512),
            "memory_mb": _positive(8192), "file_mb": _positive(8192), "processes": _positive(4096),
            "cpu_seconds": _positive(1200), "open_files": _positive(4096)}},
        "read_lines": _positive(2000),
        "read_bytes": _positive(100_000),
        "list_cap": _positive(1000),
        "search_cap": _positive(200),
    }}}
