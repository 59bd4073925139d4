"""Test helpers every plugin shares: the scripted model server, a temporary home, a runner.

Plugins' tests use the pytest fixtures in ``mino_core.testing.fixtures`` (registered as a
pytest plugin by mino-core's entry point: ``scripted_server``, ``mino_home``, ``project``,
``make_harness``) and these names, so they all look alike:

- ``Harness``: the real agent in-process against a ``ScriptedServer``;
- ``plugin_host(plugins, context)``: a host holding only the given plugins;
- ``isolated_env(home)`` and ``mino_command()``: run the installed ``mino`` in a
  subprocess that sees neither the real home nor API keys;
- ``request_text(body)``: all the text a request carries, for assertions.
"""
from __future__ import annotations

import os
import shutil
import sys

from .harness import Harness, approver, isolated_env
from .server import ScriptedServer, request_text

__all__ = ["Harness", "ScriptedServer", "approver", "closed_to_others", "isolated_env", "mino_command",
           "plugin_host", "request_text"]


def plugin_host(plugins: dict, context):
    """A fresh host holding only ``plugins`` (name -> module or object): no core plugins,
    no entry points. For a plugin's registration test."""
    from ..plugins import Host

    host = Host(context)
    for name, plugin in plugins.items():
        host.register(name, plugin, distribution="(test)")
    return host.finish()


def closed_to_others(*paths) -> str | None:
    """The first of ``paths`` (or a folder above it) that another user (``nobody``) cannot
    reach: a folder without o+x, a file without o+r. None when all are open. A test that
    runs as ``nobody`` from this checkout skips with it (a clone inside ``mktemp -d``)."""
    import stat
    from pathlib import Path

    for raw in paths:
        path = Path(os.path.abspath(raw))  # as named: a link to a closed folder may still run
        for folder in reversed(path.parents):
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                return str(folder)
        mode = os.stat(path).st_mode
        if not mode & (stat.S_IXOTH if path.is_dir() else stat.S_IROTH):
            return str(path)
    return None


def mino_command() -> list[str]:
    """The installed ``mino`` beside this interpreter (the one this checkout installed),
    else the one on PATH, else ``python -m``-style through the CLI's ``main``."""
    beside = os.path.join(os.path.dirname(sys.executable), "mino")
    if os.path.exists(beside):
        return [beside]
    found = shutil.which("mino")
    if found:
        return [found]
    return [sys.executable, "-c", "from mino_core.cli import main; main()"]
