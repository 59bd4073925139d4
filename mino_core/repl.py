"""The interactive loop: the prompt, slash commands, and one turn per message."""
from __future__ import annotations

from .agent import Agent, SessionNotFound
from .permissions import MODES, normalise_mode
from .sessionlog import list_sessions
from .turn import run_turn

HELP = """\
Commands:
  /new            start a new session
  /resume [ID]    continue a session (without an ID: pick from a list)
  /compact        summarise older turns now
  /context        show how the context window is used
  /mode [NAME]    show or set the permission mode (manual, accept-edits, bypass)
  /help           this list
  /exit           leave (Ctrl-D works too)"""


def announce(agent: Agent) -> None:
    session = agent.session
    agent.ui.line(f"Session: {session.id}")
    agent.ui.line(f"Permission mode: {session.mode}. Use /mode to change it.")
    for message in agent.host.drain_errors():
        agent.ui.notice(message)


def _read(prompt: str) -> str:
    return input(prompt)


def repl(agent: Agent, read=_read) -> int:
    announce(agent)
    # openai takes most of a second to import and tool plugins load their modules when
    # tools are first collected: do both while the person types the first line.
    from .model import prewarm

    prewarm(agent.host.collect_tools)
    while True:
        try:
            line = read("\nYou> ")
        except EOFError:
            agent.ui.line("")
            return 0
        except KeyboardInterrupt:
            agent.ui.line("")
            continue
        text = line.strip()
        if not text:
            continue
        if text.startswith("/"):
            if handle_command(agent, text, read) == "exit":
                return 0
            continue
        try:
            run_turn(agent.session, line)
        except Exception as exc:  # noqa: BLE001 - a bug must not end the session or lose it
            from .logs import get_logger
            from .turn import close_open_calls

            get_logger("repl").error("turn_crashed", error=str(exc), exc_info=True)
            close_open_calls(agent.session)
            agent.ui.notice(f"mino: internal error in this turn: {type(exc).__name__}: {exc}. "
                            "The session is saved; details are in the log under MINO_HOME/logs.")


def handle_command(agent: Agent, text: str, read=_read) -> str | None:
    name, _, arg = text.partition(" ")
    arg = arg.strip()
    ui = agent.ui
    if name in ("/exit", "/quit"):
        return "exit"
    if name == "/help":
        ui.line(HELP)
    elif name == "/new":
        agent.new_session(agent.session.mode)
        announce(agent)
    elif name == "/resume":
        if not arg:
            sessions = [s for s in list_sessions(agent.sessions_dir) if s.id != agent.session.id][:20]
            if not sessions:
                ui.line("No other sessions to resume.")
                return None
            for number, s in enumerate(sessions, 1):
                ui.line(f"  {number:2}. {s.id}  {s.turns} turn(s)  {_title(s.title)}")
            try:
                choice = read("Resume which? (number or id, empty to cancel) ").strip()
            except (EOFError, KeyboardInterrupt):
                return None
            if not choice:
                return None
            arg = sessions[int(choice) - 1].id if choice.isdigit() and 0 < int(choice) <= len(sessions) else choice
        try:
            agent.resume(arg)
        except SessionNotFound as exc:
            ui.notice(str(exc))
            return None
        announce(agent)
    elif name == "/mode":
        if not arg:
            ui.line(f"Permission mode: {agent.session.mode}. Modes: {', '.join(MODES)}.")
        elif agent.session.set_mode(arg):
            ui.line(f"Permission mode: {agent.session.mode}.")
        elif normalise_mode(arg) is None:
            ui.notice(f"Unknown mode {arg!r}. Modes: {', '.join(MODES)}.")
    elif name == "/compact":
        from .compaction import compact_command

        compact_command(agent.session)
    elif name == "/context":
        from .compaction import context_report

        ui.line(context_report(agent.session))
    else:
        ui.notice(f"Unknown command {name}. /help lists the commands.")
    return None


def _title(text: str) -> str:
    text = " ".join(text.split())
    return text[:60] + ("..." if len(text) > 60 else "")
