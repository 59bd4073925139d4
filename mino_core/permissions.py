"""Permission modes, the Decision a policy returns, and user rules from config.

The default policy itself is an ordinary ``decide_permission`` implementation in
``mino_core.builtin``; this module holds the pieces it and other plugins share.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any

MODES = ("manual", "accept-edits", "bypass")
DEFAULT_MODE = "manual"

ALLOW, ASK, DENY = "allow", "ask", "deny"
_RANK = {ALLOW: 0, ASK: 1, DENY: 2}


@dataclass(frozen=True)
class Decision:
    verdict: str  # allow | ask | deny
    reason: str = ""
    # Whether an allowed call is shown to the user (its preview printed) before it runs.
    show: bool = False

    @classmethod
    def allow(cls, reason: str = "", show: bool = False) -> "Decision":
        return cls(ALLOW, reason, show)

    @classmethod
    def ask(cls, reason: str = "") -> "Decision":
        return cls(ASK, reason)

    @classmethod
    def deny(cls, reason: str = "") -> "Decision":
        return cls(DENY, reason)


def combine(votes: list[Decision]) -> Decision:
    """Deny beats ask beats allow; among allows, showing wins. No vote asks."""
    if not votes:
        return Decision.ask("no policy voted")
    worst = max(votes, key=lambda d: _RANK.get(d.verdict, 2))
    if worst.verdict == ALLOW and any(v.show for v in votes):
        return Decision.allow(worst.reason, show=True)
    return worst


def normalise_mode(name: str) -> str | None:
    name = (name or "").strip().lower().replace("_", "-")
    aliases = {"acceptedits": "accept-edits", "accept": "accept-edits", "edits": "accept-edits"}
    name = aliases.get(name, name)
    return name if name in MODES else None


@dataclass(frozen=True)
class Rule:
    """``tool`` plus an optional pattern matched against the call's subject.

    The subject is the command for Bash-like tools, else the path, else the name. A
    pattern ending in ``*`` or containing glob characters is a glob; otherwise it is a
    prefix (``git status`` allows ``git status --short``).
    """

    tool: str
    pattern: str | None = None

    @classmethod
    def parse(cls, text: str) -> "Rule":
        """``Bash(git status*)`` or ``write_file(docs/**)`` or a bare ``memory_save``."""
        text = text.strip()
        if text.endswith(")") and "(" in text:
            tool, _, rest = text.partition("(")
            return cls(tool.strip(), rest[:-1].strip())
        return cls(text)

    def matches(self, tool: str, arguments: dict[str, Any]) -> bool:
        if not fnmatch.fnmatchcase(tool, self.tool):
            return False
        if self.pattern is None or self.pattern == "":
            return True
        subject = call_subject(arguments)
        if subject is None:
            return False
        if any(ch in self.pattern for ch in "*?["):
            return fnmatch.fnmatchcase(subject, self.pattern)
        return subject == self.pattern or subject.startswith(self.pattern + " ") or (
            subject.startswith(self.pattern) and self.pattern.endswith("/")
        )

    def __str__(self) -> str:
        return f"{self.tool}({self.pattern})" if self.pattern else self.tool


def call_subject(arguments: dict[str, Any]) -> str | None:
    """What a call is about, for rules and for logs: a command, a path, a name, a query."""
    for key in ("command", "path", "name", "pattern", "query"):
        value = arguments.get(key)
        if isinstance(value, str):
            return value
    return None


@dataclass(frozen=True)
class Rules:
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    errors: tuple[str, ...] = ()

    @classmethod
    def from_config(cls, config: dict[str, Any]) -> "Rules":
        section = config.get("permissions") or {}
        errors: list[str] = []
        if not isinstance(section, dict):
            return cls(errors=("permissions in config.yaml must be a mapping with allow/deny lists",))

        def parse(key: str) -> tuple[Rule, ...]:
            items = section.get(key) or []
            if isinstance(items, str):
                items = [items]
            if not isinstance(items, list):
                errors.append(f"permissions.{key} must be a list of rules like 'Bash(git status)'")
                return ()
            out = []
            for item in items:
                if isinstance(item, str) and item.strip():
                    out.append(Rule.parse(item))
                else:
                    errors.append(f"permissions.{key}: ignored {item!r} (not a rule string)")
            return tuple(out)

        return cls(parse("allow"), parse("deny"), tuple(errors))

    def first_deny(self, tool: str, arguments: dict[str, Any]) -> Rule | None:
        return next((r for r in self.deny if r.matches(tool, arguments)), None)

    def first_allow(self, tool: str, arguments: dict[str, Any]) -> Rule | None:
        return next((r for r in self.allow if r.matches(tool, arguments)), None)
