"""The host calls hooks through pluggy: order marks and wrappers work as pluggy documents,
each plain implementation is contained, and what the host does not support is refused."""
from __future__ import annotations

from pathlib import Path

import pytest

from mino_core import hookimpl
from mino_core.plugins import PluginContext
from mino_core.testing import plugin_host


@pytest.fixture(autouse=True)
def _lenient(monkeypatch):
    for key in ("MINO_PLUGINS", "MINO_DISABLE_PLUGINS", "MINO_STRICT_PLUGINS"):
        monkeypatch.delenv(key, raising=False)


def host_of(**plugins):
    context = PluginContext(home=Path("/nonexistent"), project_root=Path("/nonexistent"), config={})
    return plugin_host(plugins, context)


class Text:
    """A front_input implementation returning ``text`` (or raising it when an exception)."""

    def __init__(self, text, **marks):
        self.text = text

        @hookimpl(**marks)
        def front_input(turn):
            if isinstance(self.text, Exception):
                raise self.text
            return self.text

        self.front_input = front_input


def texts(host):
    return [text for _, text in host.call("front_input", turn=None)]


def test_plugin_name_order_then_tryfirst_and_trylast_move_an_implementation():
    host = host_of(b=Text("b"), a=Text("a"), c=Text("c"))
    assert texts(host) == ["a", "b", "c"]
    host = host_of(b=Text("b"), a=Text("a", trylast=True), c=Text("c", tryfirst=True))
    assert texts(host) == ["c", "b", "a"]
    assert [name for name, _ in host.call("front_input", turn=None)] == ["c", "b", "a"]


class NewStyleWrapper:
    def __init__(self):
        self.seen = None

    @hookimpl(wrapper=True)
    def front_input(self, turn):
        results = yield
        self.seen = list(results)
        return [text.upper() for text in results]


def test_a_new_style_wrapper_sees_and_changes_the_results():
    wrapper = NewStyleWrapper()
    host = host_of(a=Text("a"), z=Text("z"), wrap=wrapper)
    assert wrapper.seen is None
    pairs = host.call("front_input", turn=None)
    assert wrapper.seen == ["a", "z"]
    # Changed items belong to the wrapper that put them there.
    assert pairs == [("wrap", "A"), ("wrap", "Z")]
    assert host.plugins["wrap"].hooks == ["front_input"]


class OldStyleWrapper:
    def __init__(self):
        self.log = []

    @hookimpl(hookwrapper=True)
    def front_input(self, turn):
        self.log.append("before")
        outcome = yield
        self.log.append(("after", outcome.get_result()))
        outcome.force_result(outcome.get_result() + ["added"])


def test_an_old_style_hookwrapper_runs_around_the_others():
    wrapper = OldStyleWrapper()
    host = host_of(a=Text("a"), old=wrapper)
    assert host.call("front_input", turn=None) == [("a", "a"), ("old", "added")]
    assert wrapper.log == ["before", ("after", ["a"])]


def test_a_failing_implementation_under_a_wrapper_is_contained_and_named():
    wrapper = NewStyleWrapper()
    host = host_of(a=Text("a"), bad=Text(ValueError("broken")), z=Text("z"), wrap=wrapper)
    assert texts(host) == ["A", "Z"]
    assert wrapper.seen == ["a", "z"]
    assert host.errors == ["Plugin bad failed in front_input: ValueError: broken"]


class FailingWrapper:
    @hookimpl(wrapper=True)
    def front_input(self, turn):
        results = yield
        raise RuntimeError(f"wrapper broke after {len(results)}")


def test_a_failing_wrapper_is_named_and_the_results_are_kept():
    host = host_of(a=Text("a"), shaky=FailingWrapper())
    assert host.call("front_input", turn=None) == [("a", "a")]
    assert host.errors == ["Plugin shaky failed in front_input: RuntimeError: wrapper broke after 1"]


def test_strict_mode_reraises_from_an_implementation_and_from_a_wrapper(monkeypatch):
    monkeypatch.setenv("MINO_STRICT_PLUGINS", "1")
    with pytest.raises(ValueError, match="broken"):
        host_of(bad=Text(ValueError("broken"))).call("front_input", turn=None)
    with pytest.raises(RuntimeError, match="wrapper broke"):
        host_of(a=Text("a"), shaky=FailingWrapper()).call("front_input", turn=None)


def test_a_failing_vote_under_a_wrapper_still_asks():
    from mino_core import Decision

    class Allow:
        @hookimpl
        def decide_permission(self, call, tool, mode, session):
            return Decision.allow("fine")

    class Broken:
        @hookimpl
        def decide_permission(self, call, tool, mode, session):
            raise KeyError("policy")

    class Passthrough:
        @hookimpl(wrapper=True)
        def decide_permission(self, call, tool, mode, session):
            return (yield)

    host = host_of(allow=Allow(), broken=Broken(), wrap=Passthrough())
    votes = host.votes(call=None, tool=None, mode="manual", session=None)
    assert sorted(v.verdict for v in votes) == ["allow", "ask"]
    assert any("plugin broken failed" in v.reason for v in votes)


class Typo:
    @hookimpl
    def front_inptu(self, turn):
        return "never called"


def test_an_implementation_of_an_unknown_hook_is_refused_naming_the_plugin(tmp_path, monkeypatch):
    from importlib.metadata import EntryPoint

    from mino_core.plugins import build_host

    (tmp_path / "typo_plugin_mod.py").write_text(
        "from mino_core import hookimpl\n@hookimpl\ndef front_inptu(turn):\n    return 'x'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    context = PluginContext(home=tmp_path, project_root=tmp_path, config={})
    host = build_host(context, entry_points=[EntryPoint("typo", "typo_plugin_mod", "mino")])
    assert host.plugins["typo"].status == "failed"
    [message] = host.errors
    assert "typo" in message and "front_inptu, which is not a mino hook" in message
    assert "\n" not in message
    # In-process registration refuses it too, and the plugin is not left half-registered.
    with pytest.raises(Exception, match="front_inptu, which is not a mino hook"):
        host_of(typo=Typo())


def test_optional_hooks_of_another_project_are_allowed():
    class Optional:
        @hookimpl(optionalhook=True)
        def some_future_hook(self):
            return 1

    host = host_of(opt=Optional())
    assert host.plugins["opt"].status == "loaded" and host.errors == []


def test_trace_mode_logs_every_implementation_call(tmp_path, monkeypatch):
    import json

    from mino_core import logs

    monkeypatch.setenv("MINO_TRACE_PLUGINS", "1")
    (tmp_path / "logs").mkdir()
    logs.configure(tmp_path)
    try:
        host = host_of(a=Text("a"), b=Text("b"), wrap=NewStyleWrapper())
        host.call("front_input", turn=None)
    finally:
        logs.configure(None)
    events = [json.loads(line) for line in (tmp_path / "logs" / "mino.log").read_text().splitlines()]
    calls = [(e["hook"], e["plugin"]) for e in events if e.get("event") == "hook_call"]
    assert calls == [("front_input", "a"), ("front_input", "b")]
    assert all(isinstance(e["ms"], float) for e in events if e.get("event") == "hook_call")


def test_a_wrapper_that_never_yields_is_named_and_the_others_still_answer():
    class NoYield:
        @hookimpl(wrapper=True)
        def front_input(self, turn):
            if False:  # a generator function that returns before its yield
                yield
            return ["never"]

    host = host_of(a=Text("a"), lazy=NoYield())
    assert host.call("front_input", turn=None) == [("a", "a")]
    [message] = host.errors
    assert message.startswith("Plugin lazy failed in front_input: ")
