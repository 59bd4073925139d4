"""The active memory backend, for a plugin that offers it outside a turn (``mino mcp serve``).

A turn reaches memory through the backend's tools, decided by the permission decision and
answered by the person. A plugin that serves memory to another program has no model turn
and nobody at a terminal, so this is the one way it may touch memory:

- ``search(query, limit)``: the backend's ``memory_search`` hook, read-only, each hit with
  the reference its ``memory_view`` takes, its text and where it came from;
- ``call(name, arguments)``: one of the backend's own tools (``memory_view``,
  ``memory_save``), through every check a model's call passes: the tool's JSON schema,
  its ``validate``, the backend's ``memory_refusal`` filter on every text a write would
  keep (secrets, instruction-like text), the permission decision (a deny rule holds;
  a write that would ask is refused, since nobody can be asked), its preview (approval
  binds to what was shown), then ``run``.

Calls are recorded in a session log of their own (``via``: who served them), so a saved
memory's provenance names a session as a turn's would.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, TextIO

from .tools import ToolResult
from .json_strings import strings as _strings


@dataclass(frozen=True)
class MemoryHit:
    """One search result. ``ref``: what the backend's ``memory_view`` takes for it (a node
    number, a name); ``text``: the memory as the backend shows it; ``source``: where it
    came from (a session, a file), for people to judge it."""

    ref: str
    text: str
    score: float = 0.0
    source: str = ""


ASK_REFUSED = ("{name} needs a person's approval, and nobody can be asked here; nothing was "
               "saved. The person who started the server allows saves with its own switch.")


class MemoryService:
    """The active backend of ``host`` for a caller outside a turn. ``allow`` adds allow
    rules for this service only (as ``mino -p --allow`` does), e.g. ``["memory_save"]``:
    a deny rule in config.yaml still wins."""

    def __init__(self, host: Any, *, allow: tuple[str, ...] = (), via: str = "", err: TextIO | None = None):
        self.host = host
        self.allow = tuple(allow)
        self.via = via
        self.err = err or sys.stderr
        self._session = None
        self._tools: dict[str, Any] | None = None

    @classmethod
    def for_context(cls, context: Any, **kwargs: Any) -> "MemoryService":
        """A service on a fresh plugin host for ``context`` (a plugin command's: its
        configuration is the one mino checked at start)."""
        from .plugins import build_host

        return cls(build_host(context), **kwargs)

    @property
    def backend(self) -> str | None:
        return self.host.backend

    def tools(self) -> dict[str, Any]:
        """The active backend's own tools, by name. Only the backend's ``register_tools``
        is called: collecting every plugin's would start what they start to list tools
        (an MCP client's servers, a sandbox probe) for nothing."""
        if self._tools is None:
            from .tools import Tool

            owners = {name for name, info in self.host.plugins.items()
                      if info.backend and info.backend == self.host.backend}
            found: dict[str, Any] = {}
            for impl in self.host.pm.hook.register_tools.get_hookimpls():
                if impl.plugin_name not in owners:
                    continue
                try:
                    made = impl.function(context=self.host.context) or []
                except Exception as exc:  # noqa: BLE001 - one line, as any hook failure
                    self.host.errors.append(f"Plugin {impl.plugin_name} failed in register_tools: "
                                            f"{type(exc).__name__}: {exc}")
                    continue
                for tool in made:
                    if isinstance(tool, Tool):
                        tool.plugin = impl.plugin_name
                        found.setdefault(tool.name, tool)
            self._tools = found
        return self._tools

    def search(self, query: str, limit: int = 5) -> list[MemoryHit]:
        for _, hits in self.host.call("memory_search", query=query, limit=limit,
                                      context=self.host.context):
            if isinstance(hits, list):
                return [h for h in hits if isinstance(h, MemoryHit)][:limit]
        return []

    def refusal(self, text: str) -> str | None:
        for _, why in self.host.call("memory_refusal", text=text, context=self.host.context):
            if isinstance(why, str) and why:
                return why
        return None

    def session(self):
        """The session these calls are recorded in (made on first use)."""
        if self._session is None:
            from .permissions import DEFAULT_MODE
            from .session import Session
            from .sessionlog import SessionLog
            from .ui import HeadlessUI

            context = self.host.context
            config = dict(context.config)
            if self.allow:
                section = dict(config.get("permissions") or {})
                have = section.get("allow") or []
                section["allow"] = ([have] if isinstance(have, str) else list(have)) + list(self.allow)
                config["permissions"] = section
            log = SessionLog.create(context.home / "sessions", {
                "project": str(context.project_root), "mode": DEFAULT_MODE, "via": self.via})
            self._session = Session(home=context.home, project_root=context.project_root,
                                    config=config, host=self.host,
                                    ui=HeadlessUI(out=self.err, err=self.err), client=None,
                                    log=log, mode=DEFAULT_MODE)
        return self._session

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        from . import schema
        from .permissions import ALLOW, DENY, combine
        from .tools import InvalidArguments, ToolCall

        tool = self.tools().get(name)
        if tool is None:
            return ToolResult.invalid(f"The memory backend ({self.backend or 'none'}) has no tool {name}.")
        if not isinstance(arguments, dict):
            return ToolResult.invalid("The arguments must be a JSON object.")
        problems = schema.check(tool.parameters, arguments)
        if problems:
            return ToolResult.invalid("Invalid arguments: " + "; ".join(problems) + ". Fix them and "
                                      "call the tool again.")
        session = self.session()
        ctx = session.tool_context()
        ctx.progress, ctx.via = None, self.via or "a memory service"
        arguments = dict(arguments)
        sent = list(_strings(arguments))  # as the caller wrote them: validate may redact
        try:
            if tool.validate is not None:
                arguments = tool.validate(arguments, ctx) or arguments
        except InvalidArguments as exc:
            return ToolResult.invalid(str(exc))
        if not tool.read_only:
            for text in [*sent, *_strings(arguments)]:
                why = self.refusal(text)
                if why:
                    return ToolResult.denied(f"Refused: the text contains {why}. Memory keeps no "
                                             "such text; nothing was saved.")
        call = ToolCall(call_id="", name=name, arguments=arguments)
        decision = combine(self.host.votes(call=call, tool=tool, mode=session.mode, session=session))
        session.log.append({"type": "decision", "call_id": "", "name": name, "verdict": decision.verdict,
                            "reason": decision.reason, "via": self.via})
        if decision.verdict == DENY:
            return ToolResult.denied(f"Denied by {decision.reason or 'a permission rule'}; nothing "
                                     "was saved.")
        if decision.verdict != ALLOW:
            return ToolResult.denied(ASK_REFUSED.format(name=name))
        try:
            if decision.show and tool.preview is not None:
                preview = tool.preview(arguments, ctx)
                session.show(f"{name} ({self.via or 'served'})", preview)
                ctx.seen, ctx.previewed = preview.fingerprint, True
            result = tool.run(arguments, ctx)
        except InvalidArguments as exc:
            result = ToolResult.invalid(str(exc))
        except Exception as exc:  # noqa: BLE001 - a backend's bug is the call's failure
            from .logs import get_logger

            get_logger("memory_api").warning("served_tool_failed", tool=name, error=str(exc), exc_info=True)
            result = ToolResult.failed(f"The memory tool failed: {type(exc).__name__}: {exc}")
        session.log.append({"type": "served", "name": name, "status": result.status.value,
                            "via": self.via})
        session.log.sync()
        return result
