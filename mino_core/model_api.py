"""The model API adapter interface: one wire protocol the model client can speak.

The client (``model.py``) owns what every protocol shares: the HTTP client, retries,
deadlines, errors, the event-stream framing. An adapter owns what differs: the path it
posts to, the body built from mino's Responses-shaped request, and the reader that turns
the stream's events back into one :class:`mino_core.output.Response`. The core's two
(``responses``, ``chat``) are registered by the built-in plugin ``mino.apis`` through
``register_model_apis``, the way a third party's are; config ``api`` (or ``MINO_API``)
chooses one by name, and ``auto`` means Responses with a fall-back to chat completions
for a server that has no ``/responses``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from .hookspecs import hookimpl


class StreamReader(Protocol):
    """What an adapter's reader does with one response's stream."""

    final: "dict[str, Any] | None"  # set once the stream said the answer is complete

    @property
    def got_output(self) -> bool: ...  # any content arrived (a retry would duplicate it)

    def feed(self, event: dict[str, Any]) -> None: ...  # one decoded server-sent event

    def feed_whole(self, body: dict[str, Any]) -> None: ...  # a server that ignored stream=True

    def response(self, *, status: str | None = None, reason: str = "") -> Any: ...  # -> Response


@dataclass(frozen=True)
class ModelAPI:
    """One protocol, selected by config ``api: NAME``.

    ``body(request)`` gets mino's request (``model``, ``instructions``, ``input`` items,
    ``tools``, ``max_output_tokens``...; see ``mino_core.request``) and returns the JSON
    body to POST to ``path`` under the configured base URL; ``stream: true`` is added.
    ``reader(ui)`` makes a fresh :class:`StreamReader` per attempt (``ui`` may be None;
    a reader shows the answer as it arrives with ``ui.assistant_start()`` once, then
    ``ui.text_delta(delta)``).
    ``stop_at_final``: stop reading once ``reader.final`` is set (Responses ends there;
    chat completions reads on to ``[DONE]`` for the usage chunk).
    """

    name: str
    path: str
    body: Callable[[dict[str, Any]], dict[str, Any]]
    reader: Callable[[Any], StreamReader]
    stop_at_final: bool = True
    description: str = ""


def _responses_body(request: dict[str, Any]) -> dict[str, Any]:
    return dict(request, store=False)


def _responses_reader(ui: Any) -> StreamReader:
    from .responses import Assembler

    return Assembler(ui)


def _chat_body(request: dict[str, Any]) -> dict[str, Any]:
    from .chat import to_chat

    return to_chat(request)


def _chat_reader(ui: Any) -> StreamReader:
    from .chat import Reader

    return Reader(ui)


RESPONSES = ModelAPI("responses", "/responses", _responses_body, _responses_reader,
                     description="OpenAI Responses API (/responses)")
CHAT = ModelAPI("chat", "/chat/completions", _chat_body, _chat_reader, stop_at_final=False,
                description="chat completions (/chat/completions), as most local servers speak")


class CoreAPIs:
    """The built-in plugin ``mino.apis``: the core's two adapters, offered through the
    same hook a third party implements."""

    @hookimpl
    def register_model_apis(self, context: Any) -> list[ModelAPI]:
        return [RESPONSES, CHAT]


def collect(host: Any) -> dict[str, ModelAPI]:
    """Every active plugin's adapters by name. What is not a ``ModelAPI`` and a name two
    plugins register (neither is used) are one line each in ``host.errors``."""
    owners: dict[str, list[tuple[str, ModelAPI]]] = {}
    for plugin, result in host.call("register_model_apis", context=host.context):
        for api in result if isinstance(result, (list, tuple)) else [result]:
            if not isinstance(api, ModelAPI) or not api.name or not str(api.path).startswith("/"):
                host.errors.append(f"Plugin {plugin} returned {type(api).__name__} from "
                                   "register_model_apis, not a mino_core.ModelAPI with a name and a "
                                   "path starting with /; it was ignored.")
                continue
            owners.setdefault(api.name, []).append((plugin, api))
    out: dict[str, ModelAPI] = {}
    for name, entries in sorted(owners.items()):
        if name == "auto" or len(entries) > 1:
            who = " and ".join(p for p, _ in entries)
            why = "'auto' is mino's own choice between responses and chat" if name == "auto" else \
                f"it is registered by both {who}"
            host.errors.append(f"Model API {name!r} is not used: {why}.")
            continue
        out[name] = entries[0][1]
    return out
