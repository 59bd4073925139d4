"""``mino -p``: one turn for scripts, CI jobs and editors, and its output formats.

stdout carries only what a script wants: the final answer (``text``, the default), one
JSON object (``json``) or one JSON event per line as things happen (``stream-json``).
Tool activity and notices go to stderr. Nobody is there to answer a question, so a call
that would ask is denied, and the exit code says so. The formats are documented in the
README and are stable: fields are only ever added.

Exit codes: 0 answered; 1 the turn failed (a service error, a limit reached, an answer cut
off); 2 a usage or configuration error; 3 answered, but a tool call was denied; 130
interrupted.

Kept light at import time (the CLI imports it for ``PromptGroup``): click and the
standard library only.
"""
from __future__ import annotations

import json
import os
import stat
import sys
import time
from typing import Any

import click

FORMATS = ("text", "json", "stream-json")
EXIT_ANSWERED, EXIT_FAILED, EXIT_USAGE, EXIT_DENIED, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
STDIN = "-"  # ``-p -``, and ``-p`` with no prompt after it: the prompt comes from stdin
_WORDS, _FORMAT, _ALLOW = "mino.words", "mino.output_format", "mino.allow"


class Usage(Exception):
    """A usage error: one line for the person, exit 2."""


# -- the command line ---------------------------------------------------------------------

class PromptGroup(click.Group):
    """``mino PROMPT...``: words that name no subcommand are the first message of an
    interactive session (or, with ``-p``, more of the prompt); subcommands still work."""

    def collect_usage_pieces(self, ctx):
        return ["[OPTIONS]", "[PROMPT]... | COMMAND [ARGS]..."]

    def resolve_command(self, ctx, args):
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            from .did_you_mean import check

            check(self, ctx, list(args))  # mino sesions, mino help: not a prompt
            ctx.meta[_WORDS] = list(args)
            return None, _NOTHING, []
        return super().resolve_command(ctx, args)


@click.command(hidden=True)
def _NOTHING():  # noqa: N802 - never reached: the group's callback runs the session and exits
    pass


def _keep(key):
    def store(ctx, param, value):
        ctx.meta[key] = value
        return value

    return store


output_format_option = click.option(
    "--output-format", type=click.Choice(FORMATS), expose_value=False, callback=_keep(_FORMAT),
    help="With -p: text (the answer alone, the default), json (one object) or stream-json "
         "(one JSON event per line).")
allow_option = click.option(
    "--allow", "allow", metavar="RULE", multiple=True, expose_value=False, callback=_keep(_ALLOW),
    help="Allow TOOL or TOOL(pattern) without a question, for this run (repeatable).")


def words() -> list[str]:
    ctx = click.get_current_context(silent=True)
    return list(ctx.meta.get(_WORDS) or ()) if ctx is not None else []


def allow() -> list[str]:
    ctx = click.get_current_context(silent=True)
    return list(ctx.meta.get(_ALLOW) or ()) if ctx is not None else []


def output_format() -> str | None:
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(_FORMAT) if ctx is not None else None


def wanted(prompt: str | None) -> bool:
    """Whether this run is headless: ``-p`` given, or ``--output-format``."""
    return prompt is not None or output_format() is not None


class FirstMessage:
    """The REPL's reader, answering the first prompt with ``mino PROMPT...``'s words as if
    they had been typed; ``prefill`` and the rest pass through to the real reader."""

    def __init__(self, text: str, read):
        self.text, self._read = text, read

    def __getattr__(self, name):  # e.g. ``prefill`` of a prompt_toolkit reader
        return getattr(getattr(self._read, "__self__", None), name)

    def read(self, prompt: str, **kwargs) -> str:
        if self.text:
            text, self.text = self.text, ""
            print(prompt + text, flush=True)
            return text
        return self._read(prompt, **kwargs)


def first_message_reader(read):
    """``read`` itself, or one that gives ``mino PROMPT...``'s words first."""
    text = " ".join(words()).strip()
    return FirstMessage(text, read).read if text else read


# -- the prompt -----------------------------------------------------------------------------

def _piped(stream) -> bool:
    """stdin is a pipe or a file (not a terminal, not /dev/null or a closed descriptor)."""
    try:
        mode = os.fstat(stream.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISREG(mode)


def _read_all(stream) -> str:
    buffer = getattr(stream, "buffer", None)
    data = buffer.read() if buffer is not None else stream.read()
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else data


def compose_prompt(prompt: str | None, extra: list[str], stdin=None) -> str:
    """The message for the turn.

    ``-p -`` (or ``-p`` alone) reads the prompt from stdin. ``-p PROMPT`` (and any words
    after it) with stdin a pipe or a file: stdin follows the prompt as context, in a
    ``<stdin>`` block. An empty prompt is a usage error.
    """
    stdin = sys.stdin if stdin is None else stdin
    typed = " ".join(([] if prompt in (None, STDIN) else [prompt]) + list(extra)).strip()
    if prompt == STDIN and not typed:
        if stdin is None or (stdin.isatty() if hasattr(stdin, "isatty") else False):
            raise Usage("-p without a prompt reads the prompt from stdin, which is a terminal; "
                        "pipe the text in (echo ... | mino -p) or write mino -p \"PROMPT\".")
        text = _read_all(stdin).strip()
        if not text:
            raise Usage("The prompt is empty (stdin gave no text). Write mino -p \"PROMPT\".")
        return text
    if not typed:
        raise Usage("The prompt is empty. Write mino -p \"PROMPT\" (or pipe it: echo ... | mino -p).")
    if prompt == STDIN or _piped(stdin):
        context = _read_all(stdin).rstrip("\n")
        if context.strip():
            return f"{typed}\n\n<stdin>\n{context}\n</stdin>"
    return typed


# -- the output -----------------------------------------------------------------------------

class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _dumps(obj: Any) -> str:
    # ASCII only: no control, bidi or zero-width character of the model's text can reach a
    # terminal that shows the JSON.
    return json.dumps(obj, ensure_ascii=True)


def _make_ui(fmt: str, stdout, stderr):
    from .ui import HeadlessUI

    class ScriptUI(HeadlessUI):
        """Transcript to stderr (text format) or nowhere (json formats); events as they
        happen for stream-json; the answer is printed by ``run`` at the end."""

        def __init__(self):
            super().__init__(out=stderr if fmt == "text" else _Discard(), err=stderr)
            self.fmt, self.stdout = fmt, stdout
            self.session = None
            self.notices: list[str] = []
            self._text: list[str] = []
            self._call = None
            self._early: list[dict[str, Any]] | None = []

        def emit(self, event: dict[str, Any]) -> None:
            if self.fmt != "stream-json":
                return
            if event["type"] != "start" and self._early is not None:
                self._early.append(event)  # notices while starting: after the start event
                return
            for one in [event] + (self._early or []):
                self.stdout.write(_dumps(one) + "\n")
            self._early = None
            self.stdout.flush()

        # The answer is not shown as it streams: only the final one goes to stdout.
        def assistant_start(self) -> None:
            self._in_reasoning = False

        def waiting(self, what: str) -> None:
            self._text = []
            parent = getattr(super(), "waiting", None)
            if parent is not None:
                parent(what)

        def partial_answer(self) -> str:
            return "".join(self._text)

        def text_delta(self, delta: str) -> None:
            self._text.append(delta)
            self.emit({"type": "text", "delta": delta})

        def reasoning_delta(self, delta: str) -> None:
            self.emit({"type": "reasoning", "delta": delta})

        def end_text(self) -> None:
            self._in_text = self._in_reasoning = False

        def call_started(self, call) -> None:
            self._call = call

        def tool_call(self, name: str) -> None:
            said = "".join(self._text).strip()
            self._text = []
            if said:  # text before a call is not the answer: the transcript keeps it
                self._write("Assistant> " + said.replace("\n", "\n  ") + "\n")
            super().tool_call(name)
            call, self._call = getattr(self, "_call", None), None
            if call is None or call.name != name:  # a plugin's own question (session.confirm)
                self.emit({"type": "tool_call", "call_id": "", "name": name, "arguments": {}})
                return
            arguments: Any = call.raw_arguments
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                pass  # as sent: the model's text, which is not JSON
            self.emit({"type": "tool_call", "call_id": call.call_id, "name": name,
                       "arguments": arguments})

        def call_finished(self, call, status: str, output: str, decision=None, approved=None) -> None:
            if decision is not None:
                self.emit({"type": "decision", "call_id": call.call_id, "name": call.name,
                           "verdict": decision.verdict, "reason": decision.reason or "",
                           "approved": approved})
            self.emit({"type": "tool_result", "call_id": call.call_id, "name": call.name,
                       "status": status, "output": output})

        def notice(self, text: str) -> None:
            self.notices.append(text.rstrip("\n"))
            from .ui import _safe

            self.err.write(_safe(text.rstrip("\n")) + "\n")
            self.err.flush()
            self.emit({"type": "notice", "text": text.rstrip("\n")})

        def line(self, text: str) -> None:
            # "[Turn stopped: ...]", "[Answer cut off: ...]": notices, never the answer.
            self.notice(text)

    return ScriptUI()


def _counting_client(settings):
    """The model client, adding up the usage of every request of the run."""
    from .model import ModelClient

    class Counting(ModelClient):
        usage: dict[str, int]
        _depth = 0

        def respond(self, request, ui=None, deadline=None):
            self._depth += 1
            try:
                response = super().respond(request, ui, deadline)
            finally:
                self._depth -= 1
            if self._depth == 0:  # respond calls itself again after a fallback
                totals = self.__dict__.setdefault("usage", {})
                totals["requests"] = totals.get("requests", 0) + 1
                for key, value in (response.usage or {}).items():
                    if isinstance(value, int) and not isinstance(value, bool):
                        totals[key] = totals.get(key, 0) + value
            return response

    return Counting(settings)


def _usage(client) -> dict[str, int]:
    found = dict(getattr(client, "usage", None) or {})
    inp = found.get("input_tokens", found.get("prompt_tokens", 0))
    out = found.get("output_tokens", found.get("completion_tokens", 0))
    return {"input_tokens": inp, "output_tokens": out,
            "total_tokens": found.get("total_tokens", inp + out), "requests": found.get("requests", 0)}


def exit_code(record) -> int:
    if record.ended == "interrupted":
        return EXIT_INTERRUPTED
    if record.ended != "answer":
        return EXIT_FAILED
    if any(o.result.status.value == "denied" for o in record.outcomes):
        return EXIT_DENIED
    return EXIT_ANSWERED


_STATUS = {EXIT_ANSWERED: "answered", EXIT_FAILED: "failed", EXIT_DENIED: "denied",
           EXIT_INTERRUPTED: "interrupted"}


def result_object(record, session, client, started: float, code: int, notices: list[str]) -> dict[str, Any]:
    """The ``json`` output, and the ``result`` event that ends ``stream-json``."""
    settings = client.settings
    return {
        "type": "result",
        "status": _STATUS.get(code, "failed"),
        "exit_code": code,
        "answer": record.answer,
        "ended": record.ended,
        "reason": record.reason,
        "session_id": session.id,
        "model": settings.model,
        "server": settings.base_url,
        "mode": session.mode,
        "tool_calls": [{
            "call_id": o.call.call_id, "name": o.call.name, "arguments": o.call.arguments,
            "status": o.result.status.value, "decision": o.decision, "approved": o.approved_by_user,
        } for o in record.outcomes],
        "usage": _usage(client),
        "duration_ms": int((time.monotonic() - started) * 1000),
        "notices": notices,
    }


# -- the run --------------------------------------------------------------------------------

def _say(text: str) -> None:
    from .confirm import visible

    sys.stderr.write(visible(text, lines=True) + "\n")
    sys.stderr.flush()


def _move_project(switch: bool):
    """A session of another project: the tools move there only with ``--project`` (nobody
    is here to ask, and acting on this folder with that session's history would be wrong)."""
    from pathlib import Path

    from .config import ConfigError, project_root

    def move(found, folder: str) -> bool:
        if not switch:
            raise ConfigError(f"Session {found.id} belongs to the project {folder}, not "
                              f"{project_root()}: run it there, or add --project to work there.")
        if not Path(folder).is_dir():
            raise ConfigError(f"Session {found.id}'s project {folder} is not a folder any more.")
        return True

    return move


def main(ctx: click.Context) -> int:
    """Run ``mino -p``: the group's parameters are in ``ctx.params``, the rest in ``ctx.meta``."""
    started = time.monotonic()
    params = ctx.params
    fmt = output_format() or "text"
    try:
        if params.get("prompt") is None:
            raise Usage("--output-format needs -p (mino -p \"PROMPT\" --output-format json).")
        text = compose_prompt(params["prompt"], words())
    except Usage as exc:
        _say(f"mino: {exc}")
        return EXIT_USAGE
    return run(text, fmt=fmt, mode=params.get("mode"), resume_id=params.get("resume_id"),
               continue_=bool(params.get("continue_")), verbose=bool(params.get("verbose")),
               allow=allow(), started=started, switch=bool(params.get("switch")))


def run(text: str, *, fmt: str = "text", mode: str | None = None, resume_id: str | None = None,
        continue_: bool = False, verbose: bool = False, allow=(), started: float | None = None,
        stdout=None, stderr=None, switch: bool = False) -> int:
    from . import driver
    from .agent import SessionNotFound
    from .config import ConfigError, home_dir
    from .permissions import MODES, normalise_mode
    from .session import project_root

    started = time.monotonic() if started is None else started
    stdout, stderr = stdout or sys.stdout, stderr or sys.stderr
    if mode is not None and normalise_mode(mode) is None:
        _say(f"mino: unknown mode {mode!r}. Modes: {', '.join(MODES)}.")
        return EXIT_USAGE
    ui = _make_ui(fmt, stdout, stderr)
    home = home_dir()
    try:
        from .startup import start_agent

        agent = start_agent(home, project_root(), ui, verbose, allow=allow, make_client=_counting_client)
        session = driver.start(agent, mode=normalise_mode(mode) if mode else None, resume_id=resume_id,
                               continue_=continue_, move=_move_project(switch))
    except (ConfigError, SessionNotFound) as exc:
        _say(str(exc))
        return EXIT_USAGE
    ui.session = session
    from .trust import not_a_project

    if not_a_project(agent.project_root):  # -p never asks about trust; Bash is refused here
        ui.notice(f"(mino is running in {not_a_project(agent.project_root)}, which is not a "
                  "project: Bash is refused here.)")
    for message in agent.host.drain_errors():
        ui.notice(message)
    settings = agent.client.settings
    ui.emit({"type": "start", "session_id": session.id, "model": settings.model,
             "server": settings.base_url, "mode": session.mode, "project": str(agent.project_root)})
    from .model import prewarm

    prewarm()
    record = driver.run_turn(session, text)
    driver.end_session(session)  # before the result, so what it reports is among the notices
    code = exit_code(record)
    result = result_object(record, session, agent.client, started, code, ui.notices)
    try:
        _output(fmt, record, result, code, ui, stdout)
    except BrokenPipeError:  # the reader left (mino -p ... | head -1): nothing more to say
        _quiet(stdout)
    return code


def _quiet(stdout) -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())  # so the interpreter's last flush does not fail
    except (OSError, ValueError, AttributeError):
        pass


def _output(fmt: str, record, result: dict[str, Any], code: int, ui, stdout) -> None:
    if fmt == "text":
        answer = record.answer
        if answer:
            if stdout.isatty():
                from .confirm import visible

                answer = visible(answer, lines=True)
            stdout.write(answer if answer.endswith("\n") else answer + "\n")
            stdout.flush()
        if code == EXIT_DENIED:
            denied = [o.call.name for o in record.outcomes if o.result.status.value == "denied"]
            ui.notice(f"(exit 3: {len(denied)} tool call(s) denied: {', '.join(denied)}; "
                      "--mode or --allow 'TOOL(pattern)' lets them run)")
    elif fmt == "json":
        stdout.write(json.dumps(result, ensure_ascii=True, indent=2) + "\n")
        stdout.flush()
    else:
        ui.emit(result)
