"""What a tool is, what a call is, and what a call returns.

These types are the contract between the core and every tool plugin. They carry no
behaviour of their own beyond small constructors, so a plugin author can read the whole
contract here.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable


class Status(str, enum.Enum):
    """The four ways a tool call can end; the model sees the value."""

    COMPLETED = "completed"
    FAILED = "failed"
    DENIED = "denied"
    INVALID_ARGUMENTS = "invalid_arguments"


@dataclass(frozen=True)
class ToolResult:
    status: Status
    output: str

    @classmethod
    def completed(cls, output: str) -> "ToolResult":
        return cls(Status.COMPLETED, output)

    @classmethod
    def failed(cls, output: str) -> "ToolResult":
        return cls(Status.FAILED, output)

    @classmethod
    def invalid(cls, output: str) -> "ToolResult":
        return cls(Status.INVALID_ARGUMENTS, output)

    @classmethod
    def denied(cls, output: str) -> "ToolResult":
        return cls(Status.DENIED, output)


class InvalidArguments(Exception):
    """Raised by a tool's ``validate`` step; the message goes to the model verbatim."""


@dataclass(frozen=True)
class ToolCall:
    """One function call as the model made it (arguments already parsed from JSON)."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    raw_arguments: str = ""


@dataclass
class Preview:
    """What a confirmation shows, and the state the user saw.

    ``fields`` render as ``Label: "value"`` with every invisible character escaped.
    ``notes`` are lines shown after the fields (a diff, a warning), also escaped.
    ``fingerprint`` is handed back to ``run`` as ``ctx.seen`` so a tool can refuse to act
    when what it would change is no longer what the user approved.
    ``full`` is the whole text behind a field the tool shows bounded (long memory details):
    the question says how many lines (``hidden_lines``) the fields leave out, and the person
    can see all of it, escaped, before answering. Whatever is saved must be seeable.
    """

    fields: list[tuple[str, str]]
    notes: list[str] = field(default_factory=list)
    fingerprint: Any = None
    full: str = ""
    hidden_lines: int = 0


@dataclass
class ToolContext:
    """Everything a tool may consult while validating, previewing or running."""

    project_root: Path
    home: Path
    session_id: str
    mode: str
    config: dict[str, Any]
    # The fingerprint from the Preview the user saw (None when no preview was shown).
    seen: Any = None
    # True when the call was previewed (asked or shown), so `seen` is meaningful.
    previewed: bool = False
    # Output as it arrives, for the screen only (``progress(text)``); the model still gets
    # the result. None where nothing is shown live (a pipe, evals).
    progress: Callable[[str], None] | None = None
    # What plugins declared through ``protected_paths`` (ProtectedPath items): the
    # sandbox hides them or keeps them read-only.
    protected: tuple = ()
    # Who made the call when it is not the model in a turn ("mino mcp serve"), for a tool
    # that records where a write came from; "" in a turn.
    via: str = ""

    def section(self, name: str) -> dict[str, Any]:
        """A plugin's own section of config.yaml (an empty dict when absent)."""
        value = self.config.get(name)
        return value if isinstance(value, dict) else {}


Validator = Callable[[dict, ToolContext], "dict | None"]


@dataclass
class Tool:
    """A tool a plugin contributes through ``register_tools``.

    The permission decision reads ``read_only``, ``targets`` and ``sandboxed``:
    - ``read_only``: the call changes nothing (policy rule 3).
    - ``targets(args, ctx)``: the files the call would write; a call whose targets are all
      inside the project is a project edit (rule 4). ``None`` means "not a file tool".
    - ``sandboxed(args, ctx)``: the call runs inside a sandbox (rule 5).
    ``validate`` is pure: it may read but never write, because history replay repeats it.
    It returns normalised arguments (or None to keep them) and raises InvalidArguments.
    """

    name: str
    # A string, or a callable returning one when the first request is built (a plugin whose
    # description depends on a slow check, such as probing for a sandbox, keeps start-up fast).
    description: "str | Callable[[], str]"
    parameters: dict[str, Any]
    run: Callable[[dict, ToolContext], ToolResult]
    validate: Validator | None = None
    read_only: bool = False
    targets: Callable[[dict, ToolContext], list[Path]] | None = None
    sandboxed: Callable[[dict, ToolContext], bool] | None = None
    preview: Callable[[dict, ToolContext], Preview] | None = None
    # Filled in by the plugin host: the plugin that registered the tool.
    plugin: str = ""

    def schema(self) -> dict[str, Any]:
        """The Responses API function-tool entry for this tool."""
        description = self.description() if callable(self.description) else self.description
        return {
            "type": "function",
            "name": self.name,
            "description": description,
            "parameters": self.parameters,
            "strict": False,
        }
