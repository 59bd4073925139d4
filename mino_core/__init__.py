"""mino's core: the public API that plugins import.

Plugins import only from here (``from mino_core import hookimpl, Tool, ToolResult``).
Names resolve on first use (PEP 562), so ``mino --help`` never pays for pluggy, and
nothing here imports openai or numpy.
"""
from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "hookimpl": "hookspecs", "Decision": "permissions", "PluginContext": "plugins",
    "InvalidArguments": "tools", "Preview": "tools", "Status": "tools", "Tool": "tools",
    "ToolCall": "tools", "ToolContext": "tools", "ToolResult": "tools",
    "ToolOutcome": "turn_data", "TurnInfo": "turn_data", "TurnRecord": "turn_data", "visible": "confirm",
    "load_yaml": "yaml_safe",
    "atomic_write": "atomic", "PathChanged": "atomic", "STALE_SECONDS": "atomic", "Session": "session",
    "MemoryBackend": "backends", "ModelAPI": "model_api", "StreamReader": "model_api",
    "plugin_logger": "notices", "notice": "notices", "Response": "output",
    "find_secrets": "secret_scan", "redact_secrets": "secret_scan",
    "AUTHORITY": "memory_filter", "CURL_TO_SHELL": "memory_filter", "EXFILTRATION": "memory_filter", "INSTRUCTION": "memory_filter", "MARKUP": "memory_filter", "escape": "memory_filter", "observed": "memory_filter", "refusal": "memory_filter", "shown": "memory_filter",
    "ProtectedPath": "protected", "Rules": "permissions",
    "MemoryHit": "memory_api", "MemoryService": "memory_api", "command_group": "plugin_commands",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mino_core' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from .hookspecs import hookimpl
    from .permissions import Decision
    from .plugins import PluginContext
    from .tools import InvalidArguments, Preview, Status, Tool, ToolCall, ToolContext, ToolResult
    from .turn_data import ToolOutcome, TurnInfo, TurnRecord
    from .confirm import visible
    from .yaml_safe import load_yaml
    from .atomic import STALE_SECONDS, PathChanged, atomic_write
    from .session import Session
    from .memory_api import MemoryHit, MemoryService
    from .backends import MemoryBackend
    from .model_api import ModelAPI, StreamReader
    from .notices import notice, plugin_logger
    from .output import Response
    from .secret_scan import find_secrets, redact_secrets
    from .memory_filter import AUTHORITY, CURL_TO_SHELL, EXFILTRATION, INSTRUCTION, MARKUP, escape, observed, refusal, shown
    from .protected import ProtectedPath
    from .permissions import Rules
    from .plugin_commands import command_group
