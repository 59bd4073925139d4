"""Test helpers every plugin shares: the scripted model server, a temporary home, a runner.

Plugins' tests use the pytest fixtures in ``mino_core.testing.fixtures`` (registered as a
pytest plugin by mino-core's entry point), so they all look alike.
"""
from .harness import Harness
from .server import ScriptedServer, request_text

__all__ = ["Harness", "ScriptedServer", "request_text"]
