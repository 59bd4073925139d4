"""mino's core: the public API that plugins import.

Plugins import only from here (``from mino_core import hookimpl, Tool, ToolResult``).
Nothing here imports openai or numpy, so importing a plugin stays cheap.
"""
from .hookspecs import hookimpl
from .permissions import Decision
from .plugins import PluginContext
from .tools import InvalidArguments, Preview, Status, Tool, ToolCall, ToolContext, ToolResult
from .turns import ToolOutcome, TurnInfo, TurnRecord

__all__ = [
    "Decision", "InvalidArguments", "PluginContext", "Preview", "Status", "Tool", "ToolCall",
    "ToolContext", "ToolOutcome", "ToolResult", "TurnInfo", "TurnRecord", "hookimpl",
]
