"""Model APIs are adapters a plugin registers (register_model_apis); the core's two come
from its built-in plugin mino.apis, and api chooses among them as before."""
from __future__ import annotations

from pathlib import Path

from mino_core import ModelAPI, hookimpl
from mino_core.model_api import CHAT, RESPONSES
from mino_core.plugins import PluginContext
from mino_core.testing import plugin_host


def _tagged_chat(request):
    return dict(CHAT.body(request), user="tagged")


TAGGED = ModelAPI("tagged-chat", "/chat/completions", _tagged_chat, CHAT.reader, stop_at_final=False)


class Adapters:
    def __init__(self, *apis):
        self.apis = list(apis)

    @hookimpl
    def register_model_apis(self, context):
        return self.apis


def host_of(**plugins):
    context = PluginContext(home=Path("/nonexistent"), project_root=Path("/nonexistent"), config={})
    return plugin_host(plugins, context)


def test_a_plugins_adapter_is_chosen_by_api_and_speaks_its_own_body(make_harness, scripted_server):
    h = make_harness(config={"api": "tagged-chat"}, extra_plugins={"tagged": Adapters(TAGGED)})
    scripted_server.add({"text": "from the tagged adapter"})
    record = h.turn("hello")
    assert record.answer == "from the tagged adapter" and scripted_server.failures == []
    assert scripted_server.paths == ["/v1/chat/completions"]
    assert scripted_server.requests[0]["user"] == "tagged"
    assert set(h.agent.host.model_apis()) >= {"responses", "chat", "tagged-chat"}


def test_the_default_is_still_responses_and_an_unknown_name_means_auto(make_harness, scripted_server):
    h = make_harness(config={})
    scripted_server.add({"text": "one"}, {"text": "two"})
    assert h.turn("a").answer == "one"
    h.agent.config["api"] = "no-such-api"  # as before adapters: logged, and auto is used
    assert h.turn("b").answer == "two"
    assert scripted_server.paths == ["/v1/responses", "/v1/responses"]
    assert h.agent.client.adapter is RESPONSES


def test_two_plugins_registering_one_name_are_both_refused_and_auto_is_reserved():
    host = host_of(a=Adapters(TAGGED), b=Adapters(TAGGED, ModelAPI("auto", "/x", dict, CHAT.reader)),
                   c=Adapters("not an adapter"))
    assert host.model_apis() == {}
    assert "Model API 'tagged-chat' is not used: it is registered by both a and b." in host.errors
    assert any("'auto' is mino's own choice" in e for e in host.errors)
    assert any(e.startswith("Plugin c returned str from register_model_apis") for e in host.errors)


def test_the_core_adapters_are_an_ordinary_plugin(monkeypatch):
    from mino_core.plugins import build_host

    context = PluginContext(home=Path("/nonexistent"), project_root=Path("/nonexistent"), config={})
    monkeypatch.setenv("MINO_PLUGINS", "mino.apis")
    host = build_host(context, entry_points=[])
    assert host.model_apis() == {"responses": RESPONSES, "chat": CHAT}
    assert host.plugins["mino.apis"].hooks == ["register_model_apis"]
