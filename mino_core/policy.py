"""The core's default permission policy, an ordinary ``decide_permission`` plugin.

In order: (1) a matching deny rule denies in every mode; (2) bypass runs everything,
shown; then a matching allow rule runs it, shown; (3) a read-only call runs; (4) a call
whose targets are all project files asks in manual and runs, shown, in accept-edits;
(5) a sandboxed call runs, shown; (6) everything else asks.
"""
from __future__ import annotations

import os
from pathlib import Path

from .hookspecs import hookimpl
from .permissions import Decision, Rules


def inside(path: Path, root: Path) -> bool:
    """Whether ``path`` (symbolic links resolved) lies inside ``root``."""
    try:
        real = Path(os.path.realpath(path))
        base = Path(os.path.realpath(root))
    except (OSError, ValueError):
        return False
    return real == base or base in real.parents


class DefaultPolicy:
    """Registered as the internal plugin ``mino.policy``."""

    def __init__(self) -> None:
        self._parsed: tuple[dict, Rules] | None = None

    def _rules(self, config: dict) -> Rules:
        # Parsed once per configuration, not once per tool call.
        if self._parsed is None or self._parsed[0] is not config:
            self._parsed = (config, Rules.from_config(config))
        return self._parsed[1]

    @hookimpl
    def decide_permission(self, call, tool, mode, session):
        rules = self._rules(session.config)
        rule = rules.first_deny(call.name, call.arguments)
        if rule is not None:
            return Decision.deny(f"the deny rule {rule} in config.yaml")
        if mode == "bypass":
            return Decision.allow("bypass mode", show=True)
        rule = rules.first_allow(call.name, call.arguments)
        if rule is not None:
            return Decision.allow(f"the allow rule {rule} in config.yaml", show=True)
        if tool.read_only:
            return Decision.allow("read-only")
        ctx = session.tool_context()
        targets = tool.targets(call.arguments, ctx) if tool.targets is not None else None
        if targets and all(inside(Path(t), session.project_root) for t in targets):
            if mode == "accept-edits":
                return Decision.allow("project edit in accept-edits mode", show=True)
            return Decision.ask("project edit in manual mode")
        if tool.sandboxed is not None and tool.sandboxed(call.arguments, ctx):
            return Decision.allow("runs inside the sandbox", show=True)
        return Decision.ask("not read-only, not a project edit, not sandboxed")


EXPLANATION = """\
Permission modes: manual (default), accept-edits, bypass. Change with /mode or --mode.

The default policy decides each tool call in this order:
  1. A deny rule that matches denies, in every mode.
  2. bypass: everything else runs, and is shown.
     An allow rule that matches runs the call, shown.
  3. A read-only call runs without a question (read_file, list_files, search, skill_view,
     memory_view, memory_search).
  4. A call whose targets are all project files asks in manual and runs, shown, in
     accept-edits (write_file, edit_file).
  5. A call that runs inside the sandbox runs, shown (Bash where a sandbox exists).
  6. Everything else asks (memory_save, Bash without a sandbox).
Any plugin may vote too: deny beats ask beats allow.

Rules live in config.yaml:
  permissions:
    allow: ["Bash(git status)", "write_file(docs/*)"]
    deny:  ["Bash(rm *)", "memory_save"]
A rule is a tool name (glob) with an optional pattern matched against the call's subject
(the command, else the path, else the name): a glob when it has * ? [, else a prefix of
whole words."""
