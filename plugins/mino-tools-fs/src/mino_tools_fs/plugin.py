"""The hook implementations: this module is the plugin (see the entry point in pyproject.toml).

A tool plugin needs one hook, ``register_tools``. The permission decision needs nothing
more from us: the core's default policy reads each tool's ``read_only``, ``targets`` and
``sandboxed`` and decides (read-only runs, project edits ask in manual mode, a sandboxed
Bash runs, an unsandboxed one asks). ``plugin_notes`` tells ``mino plugins`` which.
"""
from __future__ import annotations

import threading

from mino_core import PluginContext, Tool, hookimpl

# The tool modules are imported inside the hooks: mino imports every plugin at start-up,
# and only collects tools when the first request needs them.


def _box(context: PluginContext):
    from . import sandbox

    if context.section("tools-fs").get("sandbox", True) is False:
        return None
    return sandbox.detect()


@hookimpl
def register_tools(context: PluginContext) -> list[Tool]:
    from . import bash, edits, files

    # Probing for the sandbox starts a process (about 10 ms): do it in the background; the
    # Bash description asks for the answer when the first request is built.
    threading.Thread(target=_box, args=(context,), name="mino-sandbox-probe", daemon=True).start()
    return [*files.tools(), *edits.tools(), bash.tool(lambda: _box(context))]


@hookimpl
def plugin_notes(context: PluginContext) -> list[str]:
    from . import sandbox

    if context.section("tools-fs").get("sandbox", True) is False:
        return ["sandbox turned off (tools-fs.sandbox: false in config.yaml): every Bash command asks"]
    return [sandbox.status_line(sandbox.detect())]
