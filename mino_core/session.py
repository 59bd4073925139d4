"""A live session: its log, mode, instructions and the services hooks may use."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from . import confirm
from .config import project_root  # noqa: F401 - defined there, imported from here too
from .model import ModelClient
from .permissions import normalise_mode
from .plugins import Host
from .request import record_to_item
from .sessionlog import SessionLog
from .soul import read_soul
from .tools import Preview, ToolContext
from .ui import UI


INTERRUPTED_OUTPUT = "Interrupted by the user."
RESUMED_OUTPUT = ("Interrupted: mino stopped before this call finished (the session was "
                  "resumed later); whether it took effect is unknown, so check before repeating it.")


class Session:
    """What hooks see as ``session``: id, home, project_root, mode, config, and services.

    Services for plugins: ``notice(text)`` (a line on stderr), ``confirm(title, preview)``
    (one question, answered like a tool confirmation), ``show(title, preview)`` (the same
    text, no question), ``authorize(name, arguments, preview)`` (a plugin's own write of
    model-written text through the permission decision) and ``complete(instructions,
    input)`` (one model request without tools, for summaries and reflection).
    """

    def __init__(self, *, home: Path, project_root: Path, config: dict[str, Any], host: Host,
                 ui: UI, client: ModelClient | None, log: SessionLog, mode: str):
        self.home = home
        self.project_root = project_root
        self.config = config
        self.host = host
        self.ui = ui
        self.client = client
        self.log = log
        self.mode = mode
        self.turns = sum(1 for r in log.records if r.get("type") == "message" and r.get("role") == "user")
        self._instructions: str | None = None
        self._items: list[dict[str, Any]] = []
        self._items_seen = 0
        # Per-session scratch for plugins (e.g. which problems were already reported).
        self.state: dict[str, Any] = {}
        # A log left by a crashed or killed mino can end inside a tool call; the service
        # refuses a call without an output (HTTP 400), so close them as Ctrl-C does.
        names = [str(r.get("name", "")) for r in log.open_calls()]
        if names:
            log.close_open_calls(RESUMED_OUTPUT)
            ui.notice(f"This session ended during a tool call ({', '.join(names)}); it is "
                      "recorded as interrupted, so the session can go on.")

    @property
    def id(self) -> str:
        return self.log.id

    # -- services for hooks --------------------------------------------------

    def notice(self, text: str) -> None:
        self.ui.notice(text)

    def confirm(self, title: str, preview: Preview) -> bool:
        self.ui.tool_call(title)
        return self.ui.ask(confirm.render(preview.fields, preview.notes), preview.full,
                           preview.hidden_lines)

    def show(self, title: str, preview: Preview) -> None:
        self.ui.tool_call(title)
        self.ui.show(confirm.render(preview.fields, preview.notes))

    def authorize(self, name: str, arguments: dict[str, Any], preview: Preview,
                  always_ask: bool = False) -> bool:
        """Pass a write a plugin makes on its own (not a model's tool call) through the
        permission decision, as a call named ``name`` that is not read-only, targets no
        project file and is not sandboxed: a deny rule holds in every mode, bypass runs it
        shown, anything else asks. ``always_ask`` asks even where the policy would allow.
        Returns whether to go ahead; the decision is written to the session log.
        """
        from .permissions import ALLOW, DENY, combine
        from .tools import Tool, ToolCall, ToolResult

        tool = Tool(name=name, description="", parameters={"type": "object"},
                    run=lambda args, ctx: ToolResult.failed("not a tool"))
        call = ToolCall(call_id="", name=name, arguments=arguments)
        decision = combine(self.host.votes(call=call, tool=tool, mode=self.mode, session=self))
        self.log.append({"type": "decision", "call_id": "", "name": name,
                         "verdict": decision.verdict, "reason": decision.reason})
        if decision.verdict == DENY:
            self.notice(f"{name}: denied by {decision.reason or 'a permission rule'}; nothing was saved.")
            return False
        if decision.verdict == ALLOW and not always_ask:
            self.show(name, preview)
            return True
        approved = self.confirm(name, preview)
        self.log.append({"type": "approval", "call_id": "", "name": name, "approved": approved})
        return approved

    def denied(self, name: str, arguments: dict[str, Any]) -> str | None:
        """Why the permission decision would deny a call named ``name`` with ``arguments``
        (a deny rule, a plugin's vote), else None; asks nothing, logs nothing. For a
        plugin's own writes that ask no one, such as memory recording a tool call."""
        from .permissions import DENY, combine
        from .tools import Tool, ToolCall, ToolResult

        tool = Tool(name=name, description="", parameters={"type": "object"},
                    run=lambda args, ctx: ToolResult.failed("not a tool"))
        call = ToolCall(call_id="", name=name, arguments=arguments)
        decision = combine(self.host.votes(call=call, tool=tool, mode=self.mode, session=self))
        return (decision.reason or "a permission rule") if decision.verdict == DENY else None

    def complete(self, instructions: str, input_items: list[dict[str, Any]]) -> str:
        if self.client is None:
            raise RuntimeError("no model client in this session")
        return self.client.complete(instructions, input_items)

    # -- state ---------------------------------------------------------------

    def manual_only(self) -> str | None:
        """Why only manual mode is safe now, or None.

        A plugin that failed to load may have been one that denies calls (a policy plugin):
        without it, only the mode that asks before every write is safe.
        """
        failed = self.host.failed_plugins()
        if not failed:
            return None
        names = ", ".join(failed)
        return (f"plugin {names} failed to load, so mino stays in manual mode (it may have been "
                f"a permission plugin); fix it, or set MINO_DISABLE_PLUGINS={failed[0]} to run "
                "without it")

    def set_mode(self, name: str) -> str | None:
        """Set the permission mode; None for an unknown name or a mode that is not safe now."""
        mode = normalise_mode(name)
        if mode is None:
            return None
        reason = self.manual_only()
        if mode != "manual" and reason:
            self.notice(f"Cannot switch to {mode}: {reason}.")
            return None
        self.mode = mode
        self.log.append({"type": "mode", "mode": mode})
        return mode

    def tool_context(self) -> ToolContext:
        return ToolContext(project_root=self.project_root, home=self.home, session_id=self.id,
                           mode=self.mode, config=self.config, progress=self.ui.tool_output,
                           protected=self.protected_paths())

    def protected_paths(self) -> tuple:
        """What plugins declared through ``protected_paths`` (see ``Host.protected_paths``)."""
        find = getattr(self.host, "protected_paths", None)
        return find() if callable(find) else ()

    def record_interruption(self) -> None:
        """The person stopped the turn (Esc, Ctrl-C): what was shown of the answer goes in the
        log as an answer cut off by the interruption, so the next request says what happened
        (and a chat server still sees the roles alternate)."""
        self.log.append({"type": "message", "role": "assistant",
                         "content": self.ui.partial_answer(), "incomplete": "interrupted"})

    def instructions(self) -> str:
        """Base text, then SOUL.md, then plugins' ``instructions``; fixed for the session."""
        if self._instructions is None:
            from importlib import resources

            base = resources.files("mino_core").joinpath("base_instructions.md").read_text("utf-8")
            parts = [base.strip()]
            soul = read_soul(self.home).strip()
            if soul:
                parts.append(soul)
            parts += [t.strip() for _, t in self.host.call("instructions", session=self)
                      if isinstance(t, str) and t.strip()]
            self._instructions = "\n\n".join(parts)
        return self._instructions

    def summary(self) -> str | None:
        record = self.log.latest("compaction")
        return record.get("summary") if record else None

    def history(self) -> list[dict[str, Any]]:
        """The conversation items after the latest compaction, as request input items."""
        records = self.log.records
        if self._items_seen > len(records) or any(
                r.get("type") == "compaction" for r in records[self._items_seen:]):
            self._items, self._items_seen = [], 0
            cut = 0
            compaction = self.log.latest("compaction")
            conversation = [r for r in records if r.get("type") in ("message", "function_call",
                                                                    "function_call_output")]
            if compaction:
                cut = int(compaction.get("cut", 0))
            self._items = [i for i in (record_to_item(r) for r in conversation[cut:]) if i]
            self._items_seen = len(records)
            return self._items
        for record in records[self._items_seen:]:
            item = record_to_item(record)
            if item is not None:
                self._items.append(item)
        self._items_seen = len(records)
        return self._items
