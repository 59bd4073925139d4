"""Talking to the model, streaming, with bounded retries, over one model API adapter
(``model_api.py``: the core's Responses and chat completions, or a plugin's).

``openai`` is imported on first use (``prewarm`` does it in a background thread while the
person types) and is the transport only: the event stream is read as raw server-sent
events (``stream.py``), with no pydantic model per event. The client's own retry loop is
switched off: a stream that drops half-way must be retried too, and one loop that covers
both is easier to reason about. Nothing from a failed attempt reaches the session log, so
a retry never duplicates history.

What is retried: 429, 408/409, 5xx that do not name the request, timeouts, dropped
connections before any output. What is not: an error that would recur on every attempt
(4xx, a 500 saying the request could not be parsed), and a server that is not there
(connection refused, no such endpoint): those end the turn with the server's own words.
"""
from __future__ import annotations

import os
import random
import re
import threading
import time
import weakref
from typing import Any

from .config import ModelSettings
from .logs import get_logger
from .output import Response
from .request import with_types

__all__ = ["ModelClient", "ModelError", "Response", "prewarm"]
log = get_logger("model")

DEFAULT_MAX_OUTPUT_TOKENS = 8192
# Every client, so prewarm can set up their HTTP clients too.
_CLIENTS: "weakref.WeakSet[ModelClient]" = weakref.WeakSet()
# Base URLs found to lack /responses in this process (``api: auto``): chat from then on.
_CHAT_ONLY: set[str] = set()
# A server error that names the request will be the same on every retry.
_NAMES_REQUEST = re.compile(
    r"pars|invalid|argument|json|schema|template|context|too long|exceed|unsupported|"
    r"missing|expected|validat", re.I)


class ModelError(Exception):
    """The request could not be completed; the message is for the person.

    ``refused``: the server refused this request's content (it would refuse it again),
    so the turn's new content must not be re-sent unchanged.
    """

    def __init__(self, message: str, *, refused: bool = False):
        super().__init__(message)
        self.refused = refused


class ContextOverflow(ModelError):
    """The server refused the request as larger than its context (``context_window.py``
    recognises the error). ``window`` and ``used``: the sizes it named (None where it named
    none)."""

    def __init__(self, message: str, window: int | None, used: int | None):
        super().__init__(message, refused=True)
        self.window, self.used = window, used


class _Retryable(Exception):
    """``tries``: at most this many attempts for this kind of failure (a server that is
    not answering gets one more chance, not three); ``final``: the message then."""

    def __init__(self, message: str, retry_after: float | None = None, *, tries: int | None = None,
                 final: str = ""):
        super().__init__(message)
        self.retry_after = retry_after
        self.tries = tries
        self.final = final


class _NoInclude(Exception):
    """The server refused ``include`` (encrypted reasoning): send without it from now on."""


class _NoEndpoint(Exception):
    """404/405/501 from the endpoint: this server does not speak this API."""


def prewarm(*also) -> threading.Thread:
    """Import openai in the background so the first request does not wait for it.

    ``also``: more callables to run in the same thread first (e.g. collecting tools).
    """

    def work() -> None:
        for task in also:
            try:
                task()
            except Exception:  # noqa: BLE001 - the real use will report it
                pass
        try:
            import openai  # noqa: F401

            for client in list(_CLIENTS):  # the HTTP client's set-up (TLS context): ~100 ms
                client._get()
        except Exception:  # noqa: BLE001 - the real request will report it
            pass

    thread = threading.Thread(target=work, name="mino-prewarm", daemon=True)
    thread.start()
    return thread


def _setting(config: dict[str, Any], model: str, key: str):
    """``models: {MODEL: {key: ...}}`` first, then the top-level ``key``."""
    models = config.get("models")
    per_model = models.get(model) if isinstance(models, dict) else None
    if isinstance(per_model, dict) and per_model.get(key) is not None:
        return per_model[key]
    return config.get(key)


class ModelClient:
    def __init__(self, settings: ModelSettings):
        self.settings = settings
        self._client = None
        self._lock = threading.Lock()
        # False once the server refused ``include: [reasoning.encrypted_content]``.
        self.send_include = True
        _CLIENTS.add(self)
        self.api = "auto"
        self._apis_source = None
        self._unknown_api = ""
        self.max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS
        self.configure({})

    def use_apis(self, source) -> None:
        """``source()``: the adapters by name (the plugin host's ``model_apis``), asked when
        a request is about to be sent. Without one, the core's two."""
        self._apis_source = source

    def configure(self, config: dict[str, Any]) -> None:
        """Read ``api`` (``MINO_API`` wins) and ``max_output_tokens`` from the config."""
        self.api = (os.environ.get("MINO_API") or str(config.get("api") or "auto")).strip().lower()
        value = _setting(config, self.settings.model, "max_output_tokens")
        try:
            self.max_output_tokens = DEFAULT_MAX_OUTPUT_TOKENS if value is None else int(value) or None
        except (TypeError, ValueError):
            self.max_output_tokens = DEFAULT_MAX_OUTPUT_TOKENS
        if self.max_output_tokens is not None and self.max_output_tokens < 16:
            self.max_output_tokens = 16  # the service's own minimum

    @property
    def via(self) -> str:
        """Which model and server wrote a response (reasoning is only valid there)."""
        return f"{self.settings.model} {self.settings.base_url.rstrip('/')}"

    @property
    def adapter(self):
        """The ``ModelAPI`` the next request speaks: ``api`` by name; ``auto`` (and a name no
        plugin registers, as before there were plugin adapters: logged once) is Responses,
        or chat completions once this server was found to have no ``/responses``."""
        from .model_api import CHAT, RESPONSES

        apis = self._apis_source() if self._apis_source is not None else {}
        if self.api != "auto":
            if self.api in apis:
                return apis[self.api]
            if self.api not in ("responses", "chat") and self._unknown_api != self.api:
                self._unknown_api = self.api
                log.warning("unknown_api", api=self.api, known=sorted(apis))
            if self.api == "chat":
                return apis.get("chat", CHAT)
        if self.settings.base_url.rstrip("/") in _CHAT_ONLY:
            return apis.get("chat", CHAT)
        return apis.get("responses", RESPONSES)

    @property
    def falls_back(self) -> bool:
        """Whether a missing endpoint may switch to chat completions: ``api: auto`` (or an
        unknown name, which means auto) still on Responses."""
        apis = self._apis_source() if self._apis_source is not None else {}
        auto = self.api == "auto" or (self.api not in ("responses", "chat") and self.api not in apis)
        return auto and not self.uses_chat

    @property
    def uses_chat(self) -> bool:
        return self.adapter.name == "chat"

    def _get(self):
        with self._lock:  # prewarm may be building it in its thread
            if self._client is None:
                import openai

                extra: dict[str, Any] = {}
                if self.settings.base_url.startswith("http://") and hasattr(openai, "DefaultHttpxClient"):
                    # Plain HTTP (a local server) never uses TLS: skip loading the CA store
                    # (20-30 ms), and follow no redirect, so nothing can lead it to https.
                    extra["http_client"] = openai.DefaultHttpxClient(verify=False, follow_redirects=False)
                self._client = openai.OpenAI(
                    api_key=self.settings.api_key,
                    base_url=self.settings.base_url,
                    timeout=openai.Timeout(self.settings.timeout, connect=5.0),
                    max_retries=0,
                    **extra,
                )
            return self._client

    def respond(self, request: dict[str, Any], ui=None, deadline: float | None = None) -> Response:
        """Send one request (streamed); retry what a retry can fix.

        ``deadline`` (``time.monotonic()``): past it, the answer so far is kept and
        reported as incomplete (``turn_budget``).
        """
        if isinstance(request.get("input"), list):
            request = dict(request, input=with_types(request["input"]))
        if self.max_output_tokens and "max_output_tokens" not in request:
            request = dict(request, max_output_tokens=self.max_output_tokens)
        if not self.send_include and "include" in request:
            request = {k: v for k, v in request.items() if k != "include"}
        attempts = max(1, self.settings.retries + 1)
        for attempt in range(attempts):
            try:
                return self._once(request, ui, deadline)
            except _NoInclude as exc:
                log.warning("include_refused", error=str(exc))
                self.send_include = False
                return self.respond(request, ui, deadline)
            except _NoEndpoint as exc:
                if not self.falls_back:
                    raise ModelError(self._no_endpoint(str(exc))) from None
                _CHAT_ONLY.add(self.settings.base_url.rstrip("/"))
                log.warning("api_fallback", base_url=self.settings.base_url, error=str(exc))
                if ui is not None:
                    ui.notice(f"(the server at {self.settings.base_url} has no Responses API "
                              f"({exc}); using chat completions for the rest of this run)")
                return self.respond(request, ui, deadline)
            except _Retryable as exc:
                if exc.tries is not None and attempt + 1 >= min(attempts, exc.tries):
                    raise ModelError(exc.final or str(exc)) from None
                if attempt + 1 >= attempts:
                    raise ModelError(f"The model service failed {attempts} times ({exc}). "
                                     "Try again in a moment.") from None
                delay = exc.retry_after if exc.retry_after is not None else (
                    self.settings.backoff * (2 ** attempt) * (1 + random.random() / 4))
                delay = min(delay, 30.0)
                if deadline is not None and time.monotonic() + delay > deadline:
                    raise ModelError(f"The model service failed ({exc}) and the turn's time "
                                     "budget is spent.") from None
                log.warning("model_retry", attempt=attempt + 1, error=str(exc), delay=delay)
                if ui is not None:
                    ui.notice(f"(model service: {exc}; retrying in {delay:.1f}s)")
                time.sleep(delay)
        raise ModelError("unreachable")  # pragma: no cover

    def _no_endpoint(self, shown: str) -> str:
        url = self.settings.base_url.rstrip("/")
        adapter = self.adapter
        if adapter.name not in ("responses", "chat"):
            return (f"The server at {url} has no endpoint for model API {adapter.name!r} "
                    f"({url}{adapter.path}: {shown}). Check base_url and api.")
        if self.uses_chat:
            return (f"The server at {url} has no chat completions endpoint "
                    f"({url}/chat/completions: {shown}). Check base_url.")
        return (f"The server at {url} has no Responses API ({url}/responses: {shown}). "
                "For a chat-completions server set api: chat in config.yaml or MINO_API=chat.")

    def _once(self, request: dict[str, Any], ui, deadline: float | None) -> Response:
        import openai

        httpx = _transport()
        client = self._get()
        from .repetition import Watch

        watch = Watch(ui)  # the answer's text on its way to ui, to stop one that loops
        adapter = self.adapter
        reader, path, body = adapter.reader(watch), adapter.path, dict(adapter.body(request), stream=True)

        def open_stream():
            # The client's generic POST with its raw-stream header: the body goes as built and
            # the response is not parsed, so openai's typed resources (and their pydantic
            # event models, ~230 ms to import) are never loaded.
            options: dict[str, Any] = {"headers": {"X-Stainless-Raw-Response": "stream"}}
            if deadline is not None:  # a server silent for longer than the budget left
                left = max(1.0, deadline - time.monotonic())
                if left < self.settings.timeout:
                    options["timeout"] = openai.Timeout(left, connect=min(5.0, left))
            return _Closing(client.post(path, cast_to=object, body=body, options=options))

        from .responses import StreamError
        from .stream import DONE, events

        ended = ""
        try:
            with open_stream() as raw:
                if "json" in (raw.headers.get("content-type") or ""):
                    # A server that ignored stream=True sent the whole answer as JSON.
                    reader.feed_whole(_json_body(raw))
                    return self._checked(request, self._finish(reader, "done"))
                try:
                    for event in events(raw.iter_lines()):
                        if event == DONE:
                            ended = "done"
                            break
                        reader.feed(event)
                        if reader.final is not None and adapter.stop_at_final:
                            ended = "completed"
                            break
                        if deadline is not None and time.monotonic() > deadline:
                            ended = "turn_budget"
                            break
                        if watch.stopped:
                            ended = "repetition"
                            log.warning("answer_repeating", unit=watch.stopped)
                            break
                    else:
                        ended = "eof"
                except httpx.HTTPError as exc:  # dropped mid-stream
                    if not reader.got_output:
                        raise _Retryable(f"connection lost: {type(exc).__name__}") from None
                    log.warning("stream_lost", error=type(exc).__name__)
                    ended = "eof"
        except openai.RateLimitError as exc:
            raise _Retryable(_shown(exc), _retry_after(exc)) from None
        except openai.APIStatusError as exc:
            raise self._status_error(exc, request) from None
        except openai.APITimeoutError:
            url = self.settings.base_url
            raise _Retryable("timed out", tries=2, final=(
                f"The model server at {url} did not answer in time (tried twice; timeout "
                f"{self.settings.timeout:g} s in config.yaml). Is it overloaded, or is base_url "
                "right?")) from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            if isinstance(cause, httpx.ConnectError):
                raise ModelError(f"Cannot connect to the model server at {self.settings.base_url} "
                                 f"({_reason(cause)}). Is it running, and is base_url right?") from None
            raise _Retryable(f"connection failed: {type(cause).__name__}", tries=2, final=(
                f"Cannot connect to the model server at {self.settings.base_url} "
                f"({_reason(cause)}; tried twice). Is it running, and is base_url right?")) from None
        except StreamError as exc:
            raise _Retryable(f"stream error: {exc}") from None
        finally:
            if ui is not None:
                ui.end_text()
        return self._checked(request, self._finish(reader, ended))

    def _checked(self, request: dict[str, Any], response: Response) -> Response:
        cap = request.get("max_output_tokens")
        used = response.usage.get("output_tokens") or response.usage.get("completion_tokens") or 0
        if response.status == "completed" and cap and isinstance(used, int) and used >= cap:
            # llama.cpp's server says "completed" for an answer stopped at the cap.
            log.warning("response_at_output_cap", output_tokens=used, max_output_tokens=cap)
            response.status, response.reason = "incomplete", "max_output_tokens"
        from .context_window import mark_cut

        return mark_cut(self, request, response)

    def _finish(self, reader, ended: str) -> Response:
        if ended in ("turn_budget", "repetition"):
            response = reader.response(status="incomplete", reason=ended)
        elif reader.final is not None:
            response = reader.response()
        elif ended == "done":
            # Some servers end with [DONE] and no response.completed: what arrived is the answer.
            log.warning("stream_ended_without_completed", marker="[DONE]", items=len(reader.items))
            response = reader.response(status="completed")
        elif not reader.got_output:
            raise _Retryable("the stream ended before the response completed")
        else:
            log.warning("stream_ended_without_completed", marker="eof", items=len(reader.items))
            response = reader.response(status="incomplete", reason="stream_ended")
        if response.status == "failed":
            raise ModelError(f"The model failed: {response.reason}")
        if response.status == "incomplete":
            log.warning("response_incomplete", reason=response.reason)
        return response

    def _status_error(self, exc, request: dict[str, Any]) -> Exception:
        status = exc.status_code
        shown = _shown(exc)
        message = _server_message(exc)
        from .context_window import overflow

        too_big = overflow(status, message, getattr(exc, "body", None))
        if too_big is not None:  # learned from, compacted for and sent again by the turn
            return ContextOverflow(f"The model service refused the request ({shown}).", *too_big)
        if status == 400 and request.get("include") and re.search(r"include|encrypted", message, re.I):
            return _NoInclude(shown)
        if status in (404, 405, 501) and "model" not in message.lower():
            return _NoEndpoint(shown)
        if status in (408, 409) or (status >= 500 and not (status == 500 and _NAMES_REQUEST.search(message))):
            return _Retryable(shown, _retry_after(exc))
        refused = status in (400, 413, 422) or status >= 500
        return ModelError(f"The model service refused the request ({shown}).", refused=refused)

    def complete(self, instructions: str, input_items: list[dict[str, Any]]) -> str:
        """A request without tools whose text is the whole point (summaries, reflection)."""
        request = {"model": self.settings.model, "instructions": instructions, "input": input_items}
        return self.respond(request, ui=None).text


def _json_body(raw) -> dict[str, Any]:
    import json

    try:
        body = json.loads(raw.read())
    except ValueError:
        raise _Retryable("the server sent a body that is not JSON") from None
    return body if isinstance(body, dict) else {}


class _Closing:
    def __init__(self, response):
        self.response = response

    def __enter__(self):
        return self.response

    def __exit__(self, *exc) -> None:
        self.response.close()


def _transport():
    """The HTTP package under the installed openai client (httpx, or its httpx2 fork)."""
    try:
        import httpx2

        return httpx2
    except ImportError:
        import httpx

        return httpx


def _retry_after(exc) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _server_message(exc) -> str:
    """The server's own words from an error body (JSON or plain text), one line."""
    body = getattr(exc, "body", None)
    message: Any = None
    if isinstance(body, dict):
        error = body.get("error")
        message = error.get("message") if isinstance(error, dict) else error
        message = message or body.get("message") or body.get("detail")
    elif isinstance(body, str):
        message = body
    if not message:
        try:
            message = exc.response.text
        except Exception:  # noqa: BLE001 - a streamed body may be unreadable
            message = ""
    text = " ".join(str(message or "").split())
    return text[:500] + ("..." if len(text) > 500 else "")


def _shown(exc) -> str:
    message = _server_message(exc)
    return f"HTTP {exc.status_code}: {message}" if message else f"HTTP {exc.status_code}"


def _reason(cause: Exception) -> str:
    text = str(cause).lower()
    if "refused" in text:
        return "connection refused"
    return " ".join(str(cause).split())[:200] or type(cause).__name__
