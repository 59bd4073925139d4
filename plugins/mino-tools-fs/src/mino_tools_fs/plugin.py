"""The hook implementations: this module is the plugin (see the entry point in pyproject.toml).

A tool plugin needs one hook, ``register_tools``. The permission decision needs nothing
more from us: the core's default policy reads each tool's ``read_only``, ``targets`` and
``sandboxed`` and decides (read-only runs, project edits ask in manual mode, a sandboxed
Bash runs, an unsandboxed one asks).
"""
from __future__ import annotations

from mino_core import PluginContext, Tool, hookimpl

from . import bash, edits, files, sandbox


@hookimpl
def register_tools(context: PluginContext) -> list[Tool]:
    use_sandbox = context.section("tools-fs").get("sandbox", True) is not False
    box = sandbox.detect() if use_sandbox else None
    return [*files.tools(), *edits.tools(), bash.tool(box)]
