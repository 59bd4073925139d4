"""The interactive loop: the prompt, slash commands, and one turn per message. What a
session's life is (which session, a turn's crash, its end) is ``driver.py``'s."""
from __future__ import annotations

import contextlib
from pathlib import Path

from . import confirm
from . import driver
from .agent import Agent, SessionNotFound
from .driver import end_session
from .permissions import MODES, normalise_mode
from .sessionlog import list_sessions, recap

HELP = """\
Commands:
  /new            start a new session
  /resume [ID]    continue a session (without an ID: pick from a list)
  /compact        summarise older turns now
  /context        show how the context window is used
  /mode [NAME]    show or set the permission mode (manual, accept-edits, bypass)
  /model [NAME]   show the model (and the server's list) or switch to another
  /help           this list
  /exit           leave (Ctrl-D works too)
Keys: Enter sends; Alt-Enter, Ctrl-J or a trailing \\ start a new line (a paste is one
message). Esc or Ctrl-C stops a turn, also at a question. Ctrl-C clears the line; twice
on an empty line leaves. Tab completes commands and /resume ids."""

COMMANDS = ("/new", "/resume", "/compact", "/context", "/mode", "/model", "/help", "/exit", "/quit")


def announce(agent: Agent) -> None:
    session = agent.session
    agent.ui.line(f"Session: {session.id}")
    agent.ui.line(f"Permission mode: {session.mode}. Use /mode to change it.")
    for message in agent.host.drain_errors():
        agent.ui.notice(message)


def _read(prompt: str) -> str:
    return input(prompt)


def project_sessions(agent: Agent) -> list[tuple[str, str]]:
    """(id, title) of this project's other sessions with a turn, newest first (completion)."""
    current = agent.session.id if agent.session else ""
    return [(s.id, s.title) for s in list_sessions(agent.sessions_dir, agent.project_root, with_empty=False)
            if s.id != current][:50]


def _typed_ahead(keys, read, prompt: str):
    """The next line, taking what was typed during the last turn first."""
    # One message, whatever it holds (a paste's lines, several Enters): never one per line.
    typed, entered = keys.take_message() if keys is not None else ("", False)
    if not typed:
        return read(prompt)
    if entered:
        print(prompt + typed, flush=True)
        return typed
    if getattr(getattr(read, "__self__", None), "prefill", False):
        return read(prompt, default=typed)  # prompt_toolkit: editable, as if typed there
    print(prompt + typed, end="", flush=True)
    return typed + read("")


def repl(agent: Agent, read=_read, keys=None) -> int:
    """``keys``: the Esc watcher (terminal.keys.EscWatcher) that runs during each turn."""
    announce(agent)
    # openai takes most of a second to import and tool plugins load their modules when
    # tools are first collected: do both while the person types the first line.
    from .model import prewarm

    rich = getattr(agent.ui, "prewarm", None)  # rich, for a rendering UI
    started: list = []

    def warm() -> None:
        if not started:
            started.append(prewarm(agent.host.collect_tools, *([rich] if rich else [])))

    # A terminal reader loads prompt_toolkit at the first prompt: warm up after that.
    defer = getattr(getattr(read, "__self__", None), "after_load", None)
    if callable(defer):
        defer(warm)
    else:
        warm()
    while True:
        try:
            line = _typed_ahead(keys, read, "\nYou> ")
        except EOFError:
            agent.ui.line("")
            return leave(agent)
        except KeyboardInterrupt:
            agent.ui.line("")
            continue
        text = line.strip()
        if not text:
            continue
        if text.startswith("/"):
            if handle_command(agent, text, read) == "exit":
                return leave(agent)
            continue
        warm()  # (already running unless the first message came before any prompt)
        try:
            with keys if keys is not None else contextlib.nullcontext():
                driver.run_turn(agent.session, line)
        except KeyboardInterrupt:  # after the turn's own handling (in after_turn hooks)
            agent.ui.notice("Interrupted.")
        finally:
            agent.ui.idle()


def leave(agent: Agent) -> int:
    end_session(agent.session)
    if agent.session is not None and agent.session.turns:
        from .invocation import command  # as started: .venv/bin/mino is not on PATH

        agent.ui.line(f"Resume with: {command('--resume ' + agent.session.id)}")
    return 0


def ask_yes(ui, question: str) -> bool:
    """One yes/no question outside a tool call; no terminal (or Ctrl-C, Ctrl-D) is a no."""
    from .ui import TerminalUI

    if not isinstance(ui, TerminalUI):
        ui.line(f"{question} n (no terminal to ask)")
        return False
    try:
        return confirm.is_yes(ui._question(question))
    except (EOFError, KeyboardInterrupt):
        ui.line("")
        return False


def _asking(agent: Agent, switch: bool) -> driver.MoveProject:
    """The REPL's answer to a session of another project: say so, and ask before the tools
    move there (``switch``: without asking)."""
    ui = agent.ui

    def move(found, folder: str) -> bool:
        ui.line(f"Session {found.id} belongs to the project {folder}; this folder is "
                f"{agent.project_root}.")
        if not Path(folder).is_dir():
            ui.notice(f"Not resumed: {folder} is not a folder any more.")
            return False
        if not switch and not ask_yes(ui, f"Resume it with the tools working in {folder}? [y/N]"):
            from .invocation import command

            ui.line(f"Not resumed. Run {command('--resume ' + found.id)} there, or add --project to "
                    "start there from here.")
            return False
        ui.line(f"Project: {Path(folder).resolve()}")
        return True

    return move


def open_session(agent: Agent, mode: str | None, resume_id: str | None, continue_: bool,
                 switch: bool) -> bool:
    """The session an interactive mino starts with, and its recap when it is an old one;
    False when a resume was declined (said why); raises SessionNotFound."""
    session = driver.start(agent, mode=mode, resume_id=resume_id, continue_=continue_,
                           move=_asking(agent, switch),
                           nothing_to_continue="No session in this project yet; starting a new one.")
    if session is None:
        return False
    show_recap(agent)
    return True


def resume(agent: Agent, session_id: str, mode: str | None = None, switch: bool = False) -> bool:
    """Resume ``session_id`` (an id or a unique prefix) and print a recap. A session of another
    project says so and asks before the tools move there (``switch``: without asking).
    Returns False when it was not resumed (said why); raises SessionNotFound."""
    if driver.resume(agent, session_id, mode, _asking(agent, switch)) is None:
        return False
    show_recap(agent)
    return True


def show_recap(agent: Agent) -> None:
    shown = recap(agent.session.log.records)
    if not shown:
        return
    turns = sum(1 for role, _ in shown if role == "user")
    agent.ui.line(f"Last {turns} exchange{'s' if turns != 1 else ''}:")
    for role, text in shown:
        agent.ui.line(f"  {'You' if role == 'user' else 'Assistant'}: {text}")


def handle_command(agent: Agent, text: str, read=_read) -> str | None:
    name, _, arg = text.partition(" ")
    arg = arg.strip()
    ui = agent.ui
    if name in ("/exit", "/quit"):
        return "exit"
    if name == "/help":
        ui.line(HELP)
    elif name == "/new":
        end_session(agent.session)
        agent.new_session(agent.session.mode)
        announce(agent)
    elif name == "/resume":
        if not arg:
            sessions = [s for s in list_sessions(agent.sessions_dir, agent.project_root, with_empty=False)
                        if s.id != agent.session.id][:20]
            if not sessions:
                from .invocation import command

                ui.line(f"No other sessions in this project ({command('sessions --all')} lists every project).")
                return None
            for number, s in enumerate(sessions, 1):
                ui.line(f"  {number:2}. {s.id}  {_when(s.modified)}  {s.turns} turn(s)  {_title(s.title)}")
            try:
                choice = _answer(ui, read, "Resume which? (number or id; Enter: 1; n: cancel)").strip()
            except (EOFError, KeyboardInterrupt):
                ui.line("")
                return None
            if choice.lower() in ("n", "no", "q"):
                return None
            choice = choice or "1"
            arg = sessions[int(choice) - 1].id if choice.isdigit() and 0 < int(choice) <= len(sessions) else choice
        try:
            resumed = resume(agent, arg)
        except SessionNotFound as exc:
            ui.notice(str(exc))
            return None
        if resumed:
            announce(agent)
    elif name == "/mode":
        if not arg:
            ui.line(f"Permission mode: {agent.session.mode}. Modes: {', '.join(MODES)}.")
        elif agent.session.set_mode(arg):
            ui.line(f"Permission mode: {agent.session.mode}.")
        elif normalise_mode(arg) is None:
            ui.notice(f"Unknown mode {arg!r}. Modes: {', '.join(MODES)}.")
    elif name == "/model":
        from .model_command import model_command

        model_command(agent, arg)
    elif name == "/compact":
        from .compaction import compact_command

        compact_command(agent.session)
    elif name == "/context":
        from .compaction import context_report

        ui.line(context_report(agent.session))
    else:
        ui.notice(f"Unknown command {name}. /help lists the commands.")
    return None


def _answer(ui, read, question: str) -> str:
    """An answer to mino's own question: through the UI's question reader (never history)."""
    from .ui import TerminalUI

    if isinstance(ui, TerminalUI):
        return ui._question(question)
    return read(question + " ")


def _when(stamp: float) -> str:
    import datetime

    return datetime.datetime.fromtimestamp(stamp).strftime("%Y-%m-%d %H:%M")


def _title(text: str) -> str:
    text = " ".join(text.split())
    return text[:60] + ("..." if len(text) > 60 else "")
