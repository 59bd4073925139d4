"""Test helpers every plugin shares: the scripted model server, a temporary home, a runner.

Plugins' tests use the pytest fixtures in ``mino_core.testing.fixtures`` (registered as a
pytest plugin by mino-core's entry point), so they all look alike.
"""
from .harness import Harness
from .server import ScriptedServer, request_text

__all__ = ["Harness", "ScriptedServer", "plugin_host", "request_text"]


def plugin_host(plugins: dict, context):
    """A fresh host holding only ``plugins`` (name -> module or object): no core plugins,
    no entry points. For a plugin's registration test."""
    from ..plugins import Host

    host = Host(context)
    for name, plugin in plugins.items():
        host.register(name, plugin, distribution="(test)")
    return host.finish()
