"""MemoryService: the active backend for a caller outside a turn, through every check."""
from __future__ import annotations

from mino_core import (InvalidArguments, MemoryBackend, MemoryHit, MemoryService, Preview, Tool,
                       ToolResult, hookimpl)
from mino_core.plugins import PluginContext, build_host


class Backend:
    """A backend that keeps saves in a list; its preview fingerprints the list's length."""

    def __init__(self):
        self.saved: list[str] = []
        self.seen = []

    @hookimpl
    def memory_backend(self):
        return MemoryBackend("toy", priority=1)

    @hookimpl
    def register_tools(self, context):
        def validate(args, ctx):
            if args["text"].strip() == "":
                raise InvalidArguments("text is empty")

        def run(args, ctx):
            self.seen.append((ctx.seen, ctx.previewed, ctx.via))
            self.saved.append(args["text"])
            return ToolResult.completed("saved")

        schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                  "additionalProperties": False}
        return [Tool("memory_save", "save", schema, run=run, validate=validate,
                     preview=lambda a, c: Preview([("Text", a["text"])], fingerprint=len(self.saved))),
                Tool("memory_view", "view", {"type": "object"}, read_only=True,
                     run=lambda a, c: ToolResult.completed("\n".join(self.saved)))]

    @hookimpl
    def memory_search(self, query, limit, context):
        return [MemoryHit(ref=str(i), text=t, source="toy") for i, t in enumerate(self.saved)
                if query in t][:limit]

    @hookimpl
    def memory_refusal(self, text, context):
        return "a secret" if "sk-" in text else None


def service(tmp_path, allow=(), config=None):
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    backend = Backend()
    context = PluginContext(home=home, project_root=tmp_path, config=config or {})
    host = build_host(context, extra={"toy": backend}, entry_points=[])
    return MemoryService(host, allow=allow, via="a test"), backend


def test_a_write_that_would_ask_is_refused_without_an_allow(tmp_path):
    svc, backend = service(tmp_path)
    result = svc.call("memory_save", {"text": "pnpm"})
    assert result.status.value == "denied" and "nobody can be asked" in result.output
    assert backend.saved == []


def test_allowed_saves_pass_the_preview_binding_and_say_who_allowed_them(tmp_path):
    svc, backend = service(tmp_path, allow=("memory_save",))
    assert svc.call("memory_save", {"text": "uses pnpm"}).output == "saved"
    assert backend.seen == [(0, True, "a test")]
    assert [h.text for h in svc.search("pnpm")] == ["uses pnpm"]
    assert svc.call("memory_view", {}).output == "uses pnpm"
    log = svc.session().log.records
    assert any(r.get("type") == "decision" and r.get("via") == "a test" for r in log)


def test_schema_validate_filter_and_deny_rules(tmp_path):
    svc, backend = service(tmp_path, allow=("memory_save",),
                           config={"permissions": {"deny": ["memory_save"]}})
    assert "missing required field 'text'" in svc.call("memory_save", {}).output
    assert svc.call("memory_save", {"text": " "}).output == "text is empty"
    secret = svc.call("memory_save", {"text": "key sk-abc"})
    assert secret.status.value == "denied" and "a secret" in secret.output
    denied = svc.call("memory_save", {"text": "a thing"})
    assert denied.status.value == "denied" and "deny rule" in denied.output
    assert svc.call("memory_delete", {}).status.value == "invalid_arguments"
    assert backend.saved == []


def test_only_the_backends_tools_are_collected(tmp_path):
    called = []

    class Other:
        @hookimpl
        def register_tools(self, context):
            called.append("other")
            return []

    home = tmp_path / "home"
    home.mkdir()
    context = PluginContext(home=home, project_root=tmp_path, config={})
    host = build_host(context, extra={"toy": Backend(), "other": Other()}, entry_points=[])
    assert sorted(MemoryService(host).tools()) == ["memory_save", "memory_view"] and called == []
