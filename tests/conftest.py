"""Core tests register this in-process plugin the way a third party's plugin would load."""
from __future__ import annotations

from pathlib import Path

import pytest

from mino_core import Preview, Tool, ToolResult, hookimpl


class NotesPlugin:
    """A tiny tool plugin: ``note_read`` (read-only), ``note_write`` (a project edit),
    ``note_shell`` (claims to be sandboxed), ``note_send`` (none of those: asks)."""

    def __init__(self):
        self.validated = 0
        self.outcomes = []
        self.turns = []
        self.front = None

    def _path(self, args, ctx) -> Path:
        return ctx.project_root / args["path"]

    def _validate(self, args, ctx):
        self.validated += 1
        if args.get("path", "").startswith("!"):
            from mino_core import InvalidArguments

            raise InvalidArguments("path must not start with '!'")

    def _write(self, args, ctx):
        target = self._path(args, ctx)
        if ctx.previewed and ctx.seen != (target.read_text() if target.exists() else None):
            return ToolResult.failed("changed after approval; nothing was written")
        target.write_text(args["content"])
        return ToolResult.completed(f"wrote {args['path']}")

    @hookimpl
    def register_tools(self, context):
        schema = {"type": "object", "properties": {"path": {"type": "string"},
                                                   "content": {"type": "string"}},
                  "required": ["path"], "additionalProperties": False}
        return [
            Tool("note_read", "Read a note.", schema, read_only=True, validate=self._validate,
                 run=lambda a, c: ToolResult.completed(self._path(a, c).read_text())),
            Tool("note_write", "Write a note.", schema, validate=self._validate,
                 targets=lambda a, c: [self._path(a, c)],
                 preview=lambda a, c: Preview(
                     [("Path", a["path"]), ("Content", a.get("content", ""))],
                     fingerprint=self._path(a, c).read_text() if self._path(a, c).exists() else None),
                 run=self._write),
            Tool("note_shell", "Run in a pretend sandbox.", schema, sandboxed=lambda a, c: True,
                 run=lambda a, c: ToolResult.completed("ran")),
            Tool("note_send", "Send a note somewhere.", schema,
                 run=lambda a, c: ToolResult.completed("sent")),
            Tool("note_fail", "Always fails.", schema, read_only=True,
                 run=lambda a, c: ToolResult.failed("boom")),
        ]

    @hookimpl
    def front_input(self, turn):
        return self.front

    @hookimpl
    def tool_outcome(self, outcome, turn):
        self.outcomes.append(outcome)

    @hookimpl
    def after_turn(self, turn):
        self.turns.append(turn)


@pytest.fixture
def notes():
    return NotesPlugin()


@pytest.fixture
def harness(make_harness, notes, monkeypatch):
    """An agent with only the core and the notes plugin (installed plugins disabled)."""
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,mino.skills,notes")

    def make(**kwargs):
        kwargs.setdefault("config", {})
        return make_harness(extra_plugins={"notes": notes}, **kwargs)

    return make


def _conversation(harness):
    return [r for r in harness.session.log.records
            if r.get("type") in ("message", "function_call", "function_call_output")]


@pytest.fixture
def conversation():
    """``conversation(h)``: the conversation records of a harness's session log."""
    return _conversation
