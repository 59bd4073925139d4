"""The objects hooks receive about a turn: what started it and what happened in it."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .tools import Status, ToolCall, ToolResult

if TYPE_CHECKING:  # pragma: no cover
    from .session import Session


@dataclass
class TurnInfo:
    """A turn as it begins.

    ``scratch`` is shared by every hook call of this turn, keyed by plugin name by
    convention, so a plugin can carry state from ``front_input`` to ``after_turn``
    (an episode id, the recalled nodes) without globals.
    """

    session: "Session"
    user_text: str
    number: int
    scratch: dict[str, Any] = field(default_factory=dict)


@dataclass
class ToolOutcome:
    """One tool call and how it ended, as ``tool_outcome`` receives it."""

    call: ToolCall
    result: ToolResult
    # The decision that gated it: "allow", "ask" (approved), "deny" (refused by policy or user).
    decision: str
    approved_by_user: bool = False

    @property
    def refused(self) -> bool:
        return self.result.status is Status.DENIED


@dataclass
class TurnRecord:
    """A turn as it ended, as ``after_turn`` receives it."""

    info: TurnInfo
    requests: int
    outcomes: list[ToolOutcome]
    answer: str
    # "answer", "request_limit", "tool_limit", "incomplete" (cut off: output limit, content
    # filter, time budget), "error" or "interrupted".
    ended: str
    # Every assistant text of the turn in order, the final answer included.
    texts: list[str] = field(default_factory=list)
    # Why it ended early: the error's message, or why the answer was cut.
    reason: str = ""

    @property
    def clean(self) -> bool:
        """No tool failed and the turn ended with an answer."""
        return self.ended == "answer" and not any(
            o.result.status is Status.FAILED for o in self.outcomes
        )
