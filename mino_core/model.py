"""Talking to the model over the Responses API, streaming, with bounded retries.

``openai`` is imported on first use (``prewarm`` does it in a background thread while the
person types). The client's own retry loop is switched off: a stream that drops half-way
must be retried too, and one loop that covers both is easier to reason about. Nothing
from a failed attempt reaches the session log, so a retry never duplicates history.
"""
from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .config import ModelSettings
from .logs import get_logger
from .request import with_types

log = get_logger("model")


class ModelError(Exception):
    """The request could not be completed; the message is for the person."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Response:
    text: str = ""
    calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    status: str = "completed"


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
        except Exception:  # noqa: BLE001 - the real request will report it
            pass

    thread = threading.Thread(target=work, name="mino-prewarm", daemon=True)
    thread.start()
    return thread


class ModelClient:
    def __init__(self, settings: ModelSettings):
        self.settings = settings
        self._client = None

    def _get(self):
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                api_key=self.settings.api_key,
                base_url=self.settings.base_url,
                timeout=openai.Timeout(self.settings.timeout, connect=5.0),
                max_retries=0,
            )
        return self._client

    def respond(self, request: dict[str, Any], ui=None) -> Response:
        """Send one request (streamed); retry dropped streams, 429, 5xx, timeouts."""
        if isinstance(request.get("input"), list):
            request = dict(request, input=with_types(request["input"]))
        attempts = max(1, self.settings.retries + 1)
        for attempt in range(attempts):
            try:
                return self._once(request, ui)
            except _Retryable as exc:
                if attempt + 1 >= attempts:
                    raise ModelError(f"The model service failed {attempts} times ({exc}). "
                                     "Try again in a moment.") from None
                delay = exc.retry_after if exc.retry_after is not None else (
                    self.settings.backoff * (2 ** attempt) * (1 + random.random() / 4))
                delay = min(delay, 30.0)
                log.warning("model_retry", attempt=attempt + 1, error=str(exc), delay=delay)
                if ui is not None:
                    ui.notice(f"(model service: {exc}; retrying in {delay:.1f}s)")
                time.sleep(delay)
        raise ModelError("unreachable")  # pragma: no cover

    def _once(self, request: dict[str, Any], ui) -> Response:
        import openai

        client = self._get()
        started_text = False
        try:
            stream = client.responses.create(**request, stream=True, store=False)
            items: dict[int, dict[str, Any]] = {}
            final = None
            for event in stream:
                kind = getattr(event, "type", "")
                if kind == "response.output_text.delta":
                    if ui is not None:
                        if not started_text:
                            ui.assistant_start()
                            started_text = True
                        ui.text_delta(event.delta)
                elif kind == "response.reasoning_summary_text.delta":
                    if ui is not None:
                        ui.reasoning_delta(event.delta)
                elif kind == "response.output_item.done":
                    items[event.output_index] = event.item.model_dump(exclude_none=True)
                elif kind == "response.completed":
                    final = event.response
                elif kind in ("response.failed", "response.incomplete"):
                    final = event.response
                elif kind == "error":
                    message = getattr(event, "message", "") or "error event"
                    raise _Retryable(f"stream error: {message}")
        except openai.RateLimitError as exc:
            raise _Retryable("429 rate limited", _retry_after(exc)) from None
        except openai.APIStatusError as exc:
            if exc.status_code >= 500 or exc.status_code in (408, 409):
                raise _Retryable(f"HTTP {exc.status_code}", _retry_after(exc)) from None
            raise ModelError(f"The model service refused the request: HTTP {exc.status_code} "
                             f"{_brief(exc)}") from None
        except openai.APITimeoutError:
            raise _Retryable("timed out") from None
        except openai.APIConnectionError as exc:
            raise _Retryable(f"connection failed: {type(exc.__cause__ or exc).__name__}") from None
        finally:
            if started_text and ui is not None:
                ui.end_text()
        if final is None:
            raise _Retryable("the stream ended before the response completed")
        status = getattr(final, "status", "completed") or "completed"
        if status == "failed":
            error = getattr(final, "error", None)
            raise ModelError(f"The model failed: {getattr(error, 'message', '') or 'no reason given'}")
        output = [o.model_dump(exclude_none=True) for o in (final.output or [])] or [
            items[i] for i in sorted(items)]
        response = Response(status=status)
        texts = []
        for item in output:
            if item.get("type") == "message":
                for part in item.get("content") or []:
                    if part.get("type") == "output_text":
                        texts.append(part.get("text", ""))
            elif item.get("type") == "function_call":
                response.calls.append({"call_id": item.get("call_id", ""), "name": item.get("name", ""),
                                       "arguments": item.get("arguments", "")})
        response.text = "".join(texts)
        usage = getattr(final, "usage", None)
        if usage is not None:
            response.usage = usage.model_dump(exclude_none=True)
        return response

    def complete(self, instructions: str, input_items: list[dict[str, Any]]) -> str:
        """A request without tools whose text is the whole point (summaries, reflection)."""
        request = {"model": self.settings.model, "instructions": instructions, "input": input_items}
        return self.respond(request, ui=None).text


def _retry_after(exc) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _brief(exc) -> str:
    try:
        body = exc.response.json()
        message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
        if message:
            return f"({str(message)[:300]})"
    except Exception:  # noqa: BLE001
        pass
    return ""
