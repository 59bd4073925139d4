"""The turn loop: from the user's message to the model's final text.

Per turn: front input is rendered once (after the user's message is saved) and fixed for
every request; at most MAX_REQUESTS model requests and MAX_TOOL_CALLS tool calls. Every
function call the model made gets an output in the log, even when a limit stops the turn,
so the log always replays into a valid request.
"""
from __future__ import annotations

import json
import time
from typing import Any

from . import confirm, schema
from .logs import get_logger
from .model import ModelError
from .output import reason_text
from .permissions import ASK, DENY, Decision, combine
from .request import build_request, tool_schemas
from .session import INTERRUPTED_OUTPUT, Session
from .tools import InvalidArguments, Preview, Status, Tool, ToolCall, ToolResult
from .turn_data import ToolOutcome, TurnInfo, TurnRecord

MAX_REQUESTS = 8
MAX_TOOL_CALLS = 16
log = get_logger("turn")


def render_front(session: Session, info: TurnInfo) -> str:
    parts = [text.strip() for _, text in session.host.call("front_input", turn=info)
             if isinstance(text, str) and text.strip()]
    for message in session.host.drain_errors():
        session.notice(message)
    return "\n\n".join(parts)


DEFAULT_TURN_BUDGET = 600.0  # seconds of model time per turn (``turn_budget``)


def current_request(session: Session, front_text: str) -> dict[str, Any]:
    client = session.client
    return build_request(
        model=client.settings.model if client else "",
        instructions=session.instructions(), front_text=front_text, summary=session.summary(),
        history=sendable_history(session), tools=tool_schemas(session),
        via=client.via if client else None)


def sendable_history(session: Session) -> list[dict[str, Any]]:
    """The session's history less the turns a server refused (``refused`` records)."""
    items = session.history()
    spans = [(int(r.get("start", 0)), int(r.get("end", 0))) for r in session.log.records
             if r.get("type") == "refused"]
    if not spans:
        return items
    compaction = session.log.latest("compaction")
    cut = int(compaction.get("cut", 0)) if compaction else 0
    return [item for k, item in enumerate(items)
            if not any(start <= cut + k < end for start, end in spans)]


def turn_budget(session: Session) -> float:
    value = session.config.get("turn_budget", DEFAULT_TURN_BUDGET)
    try:
        return max(1.0, float(value))
    except (TypeError, ValueError):
        return DEFAULT_TURN_BUDGET


def run_turn(session: Session, user_text: str) -> TurnRecord:
    session.turns += 1
    first = sum(1 for _ in session.log.conversation())  # this turn's first conversation record
    session.log.append({"type": "message", "role": "user", "content": user_text})
    info = TurnInfo(session=session, user_text=user_text, number=session.turns)
    if session.client is not None:
        session.client.configure(session.config)
    from . import compaction

    compaction.maybe_compact(session, info)
    front = render_front(session, info)
    session.state["front_text"] = front
    outcomes: list[ToolOutcome] = []
    texts: list[str] = []
    requests, answer, ended, reason = 0, "", "answer", ""
    budget, model_time = turn_budget(session), 0.0
    try:
        while True:
            if requests >= MAX_REQUESTS:
                ended = "request_limit"
                session.ui.line(f"[Turn stopped: it reached the limit of {MAX_REQUESTS} model requests. "
                                "Send a message to continue.]")
                break
            if model_time >= budget:
                ended, reason = "incomplete", "turn_budget"
                session.ui.line(f"[Turn stopped: it used its time budget ({budget:g} s of model time, "
                                "turn_budget in config.yaml). Send a message to continue.]")
                break
            request = current_request(session, front)
            requests += 1
            session.state["last_request"] = request
            started = time.monotonic()
            session.ui.waiting("the model")
            try:
                # An overflow: the window is learned, older turns compacted, sent once more.
                response = compaction.respond(session, request, lambda: current_request(session, front),
                                            deadline=started + budget - model_time)
            finally:
                model_time += time.monotonic() - started
            compaction.record_usage(session, response.usage)
            if response.text:
                texts.append(response.text)
            records = response.records(session.client.via)
            for record in records:
                session.log.append(record)
            if response.status == "incomplete":
                ended, reason = "incomplete", response.reason or "unknown"
                answer = response.text
                for raw in response.calls:
                    session.log.append({"type": "function_call_output", "call_id": raw["call_id"],
                                        "status": Status.FAILED.value,
                                        "output": "Not run: the response was cut off before it ended."})
                if not any(r.get("incomplete") for r in records):
                    session.log.append({"type": "message", "role": "assistant", "content": "",
                                        "incomplete": reason})
                session.ui.line(f"[Answer cut off: {reason_text(reason)}.]")
                break
            if not response.calls:
                answer = response.text
                break
            for raw in response.calls:
                if len(outcomes) >= MAX_TOOL_CALLS:
                    # Not run, so no outcome for plugins (it is not the tool's failure); the
                    # log still needs an output for every call the model made.
                    session.log.append({
                        "type": "function_call_output", "call_id": raw["call_id"],
                        "status": Status.FAILED.value,
                        "output": f"Not run: this turn reached its limit of {MAX_TOOL_CALLS} tool calls."})
                    ended = "tool_limit"
                    continue
                execute(session, info, raw, outcomes)
            if ended == "tool_limit":
                session.ui.line(f"[Turn stopped: it reached the limit of {MAX_TOOL_CALLS} tool calls. "
                                "Send a message to continue.]")
                break
    except ModelError as exc:
        ended, reason = "error", str(exc)
        session.ui.notice(f"Error: {exc}")
        if exc.refused:
            drop_refused_turn(session, first, str(exc))
    except KeyboardInterrupt:
        ended = "interrupted"
        close_open_calls(session)
        session.record_interruption()
        session.ui.notice("Interrupted.")
    end = {"type": "turn_end", "ended": ended, "requests": requests}
    if reason:
        end["reason"] = reason
    session.log.append(end)
    session.log.sync()
    record = TurnRecord(info=info, requests=requests, outcomes=outcomes, answer=answer, ended=ended,
                        texts=texts, reason=reason)
    log.info("turn_end", session=session.id, turn=info.number, ended=ended, requests=requests,
             reason=reason or None, tools=[f"{o.call.name}:{o.result.status.value}" for o in outcomes])
    session.host.notify("after_turn", turn=record)
    for message in session.host.drain_errors():
        session.notice(message)
    return record


def drop_refused_turn(session: Session, first: int, error: str) -> None:
    """The server refused this turn's content and would refuse it again: leave the turn's
    records out of every later request (they stay in the log), and say so."""
    end = sum(1 for _ in session.log.conversation())
    session.log.append({"type": "refused", "start": first, "end": end, "error": error[:500]})
    others = end - first - 1
    also = f" and the {others} item(s) after it" if others > 0 else ""
    session.ui.notice(f"(Your message{also} will not be sent again, since the server refused "
                      "them; send it again, changed if needed.)")


def close_open_calls(session: Session) -> None:
    """Give every call in the log an output, so the next request is valid."""
    session.log.close_open_calls(INTERRUPTED_OUTPUT)


def _parse(raw: dict[str, Any]) -> ToolCall:
    text = raw.get("arguments") or ""
    try:
        arguments = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        arguments = None
    return ToolCall(call_id=raw.get("call_id", ""), name=raw.get("name", ""),
                    arguments=arguments if isinstance(arguments, dict) else {"__invalid__": text},
                    raw_arguments=text)


def execute(session: Session, info: TurnInfo, raw: dict[str, Any], outcomes: list[ToolOutcome]) -> None:
    call = _parse(raw)
    ui = session.ui
    ui.call_started(call)
    ui.tool_call(call.name)
    tool = session.host.tools.get(call.name)
    if tool is None:
        names = ", ".join(sorted(session.host.tools)) or "none"
        return _finish(session, info, call, ToolResult.invalid(
            f"There is no tool named {call.name!r}. Available tools: {names}."), "deny", outcomes)
    if "__invalid__" in call.arguments:
        raw_text = call.raw_arguments if len(call.raw_arguments) <= 2000 else \
            call.raw_arguments[:2000] + f"... ({len(call.raw_arguments) - 2000} more characters)"
        return _finish(session, info, call, ToolResult.invalid(
            "The arguments are not a JSON object (they were sent as {} instead); you sent: "
            f"{raw_text}\nSend the arguments as a JSON object matching the tool's schema."),
            "deny", outcomes)
    ctx = session.tool_context()
    problems = schema.check(tool.parameters, call.arguments)
    if problems:
        return _finish(session, info, call, ToolResult.invalid(
            "Invalid arguments: " + "; ".join(problems) + ". Fix them and call the tool again."),
            "deny", outcomes)
    arguments = dict(call.arguments)
    if tool.validate is not None:
        try:
            normalised = tool.validate(arguments, ctx)
        except InvalidArguments as exc:
            return _finish(session, info, call, ToolResult.invalid(str(exc)), "deny", outcomes)
        except Exception as exc:  # noqa: BLE001 - a plugin bug is the tool's failure, not a crash
            log.warning("validate_failed", tool=call.name, error=str(exc), exc_info=True)
            return _finish(session, info, call, ToolResult.failed(
                f"The tool failed while checking its arguments: {type(exc).__name__}: {exc}"),
                "deny", outcomes)
        if isinstance(normalised, dict):
            arguments = normalised
    call = ToolCall(call.call_id, call.name, arguments, call.raw_arguments)
    decision = decide(session, call, tool)
    session.log.append({"type": "decision", "call_id": call.call_id, "verdict": decision.verdict,
                        "reason": decision.reason})
    if decision.verdict == DENY:
        reason = decision.reason or "a permission rule"
        return _finish(session, info, call, ToolResult.denied(
            f"Denied by {reason}. Do not retry this call; continue without it or ask the user."),
            "deny", outcomes, vote=decision)
    note = held_back(session, info, call, tool)
    if note:
        return _hold(session, call, note, decision)
    previewed = decision.verdict == ASK or decision.show
    seen = None
    approved = False
    if previewed:
        try:
            preview = _preview(tool, arguments, ctx)
        except InvalidArguments as exc:
            return _finish(session, info, call, ToolResult.invalid(str(exc)), "deny", outcomes,
                           vote=decision)
        except Exception as exc:  # noqa: BLE001
            log.warning("preview_failed", tool=call.name, error=str(exc), exc_info=True)
            return _finish(session, info, call, ToolResult.failed(
                f"The tool failed while preparing its confirmation: {type(exc).__name__}: {exc}"),
                "deny", outcomes, vote=decision)
        text = confirm.render(preview.fields, preview.notes)
        if decision.verdict == ASK:
            approved = ui.ask(text, preview.full, preview.hidden_lines)
            session.log.append({"type": "approval", "call_id": call.call_id, "approved": approved})
            if not approved:
                return _finish(session, info, call, ToolResult.denied(
                    "The user denied this operation. Do not retry it; ask the user what they want "
                    "instead."), "deny", outcomes, vote=decision)
        else:
            ui.show(text)
        seen = preview.fingerprint
    ctx.seen, ctx.previewed = seen, previewed
    try:
        result = tool.run(arguments, ctx)
        if not isinstance(result, ToolResult):
            raise TypeError(f"run returned {type(result).__name__}, not ToolResult")
    except InvalidArguments as exc:
        result = ToolResult.invalid(str(exc))
    except Exception as exc:  # noqa: BLE001 - contained: the model hears about it, the user sees one line
        log.warning("tool_failed", tool=call.name, error=str(exc), exc_info=True)
        result = ToolResult.failed(f"The tool crashed: {type(exc).__name__}: {exc}")
    _finish(session, info, call, result, ASK if approved else "allow", outcomes, approved=approved,
            vote=decision)


NOT_RUN = "not_run"  # the status of a call a plugin held back (``before_tool``)


def held_back(session: Session, info: TurnInfo, call: ToolCall, tool: Tool) -> str:
    """What plugins said to hold ``call`` back (``before_tool``), or ""."""
    notes = [text.strip() for _, text in session.host.call("before_tool", call=call, tool=tool,
                                                           turn=info)
             if isinstance(text, str) and text.strip()]
    for message in session.host.drain_errors():
        session.notice(message)
    return "\n\n".join(notes)


def _hold(session: Session, call: ToolCall, note: str, vote: Decision) -> None:
    """The call does not run: the note is its output, read by the model in this turn. No
    outcome for plugins (the tool did not run, as with the tool limit)."""
    session.log.append({"type": "function_call_output", "call_id": call.call_id,
                        "status": NOT_RUN, "output": note})
    session.ui.call_finished(call, NOT_RUN, note, vote, None)
    session.ui.tool_result(NOT_RUN, note)


def _preview(tool: Tool, arguments: dict[str, Any], ctx) -> Preview:
    if tool.preview is not None:
        return tool.preview(arguments, ctx)
    fields = [(key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
              for key, value in arguments.items()]
    return Preview(fields=fields)


def decide(session: Session, call: ToolCall, tool: Tool) -> Decision:
    return combine(session.host.votes(call=call, tool=tool, mode=session.mode, session=session))


def _finish(session: Session, info: TurnInfo, call: ToolCall, result: ToolResult, decision: str,
            outcomes: list[ToolOutcome], approved: bool = False, vote: Decision | None = None) -> None:
    """``vote``: the permission decision, when one was made (the UI reports it with the
    result, and whether the person was asked and said yes)."""
    session.log.append({"type": "function_call_output", "call_id": call.call_id,
                        "status": result.status.value, "output": result.output})
    asked = vote is not None and vote.verdict == ASK
    session.ui.call_finished(call, result.status.value, result.output, vote,
                             approved if asked else None)
    session.ui.tool_result(result.status.value, result.output)
    outcome = ToolOutcome(call=call, result=result, decision=decision, approved_by_user=approved)
    outcomes.append(outcome)
    session.host.notify("tool_outcome", outcome=outcome, turn=info)
