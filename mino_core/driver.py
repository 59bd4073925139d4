"""The session driver both front ends use: which session (new, continued, resumed), the
turn with its crash handling, the session's end and the host's shutdown.

The REPL (``repl.py``) and ``mino -p`` (``headless.py``) only render and read: what a
session's life is, they both ask here. The policies that differ are parameters: whether
to move to a resumed session's project (the REPL asks; ``-p`` needs ``--project``), and
what to say when ``--continue`` finds nothing. The host's end (``host_shutdown``) is
``Host.shutdown``, which the command line registers to run at exit (``startup``).
"""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable

from .agent import Agent, SessionNotFound
from .logs import get_logger
from .session import Session

log = get_logger("driver")

# (the session found, its project folder) -> whether the tools move there; may raise
# ConfigError to refuse with a message.
MoveProject = Callable[[Any, str], bool]


def newest(agent: Agent) -> str | None:
    """The id of this project's newest session with a turn (``--continue``), or None."""
    from .sessionlog import list_sessions

    found = list_sessions(agent.sessions_dir, agent.project_root, with_empty=False)
    return found[0].id if found else None


def find(agent: Agent, session_id: str):
    """The session ``session_id`` names (its id or a unique prefix); SessionNotFound."""
    from .sessionlog import list_sessions

    wanted = session_id.strip().lower()
    every = list_sessions(agent.sessions_dir)
    matches = [s for s in every if s.id == wanted] or \
        [s for s in every if wanted and s.id.startswith(wanted)]
    if len(matches) != 1:
        from .invocation import command

        raise SessionNotFound(f"No session {session_id!r}; `{command('sessions')}` lists them.")
    return matches[0]


def same_folder(a: str, b: Path) -> bool:
    try:
        return Path(a).resolve() == b.resolve()
    except (OSError, ValueError):
        return False


def resume(agent: Agent, session_id: str, mode: str | None, move: MoveProject) -> Session | None:
    """Leave the current session (if any) for ``session_id``. A session of another project
    asks ``move``; None when it was not resumed (``move`` said why)."""
    found = find(agent, session_id)
    from .sessionlog import session_project

    folder = session_project(found.path)
    if folder and not same_folder(folder, agent.project_root):
        if not move(found, folder):
            return None
        agent.project_root = Path(folder).resolve()
        agent.context.project_root = agent.project_root
    end_session(agent.session)  # the one it leaves (none when mino starts with --resume)
    return agent.resume(found.id, mode)


def start(agent: Agent, *, mode: str | None = None, resume_id: str | None = None,
          continue_: bool = False, move: MoveProject, nothing_to_continue: str = "") -> Session | None:
    """The session a run starts with: ``resume_id``, this project's newest (``continue_``;
    ``nothing_to_continue``, when set, is said when there is none) or a new one. None when
    a resume was declined (``move``)."""
    if continue_ and not resume_id:
        resume_id = newest(agent)
        if resume_id is None and nothing_to_continue:
            agent.ui.notice(nothing_to_continue)
    if resume_id:
        return resume(agent, resume_id, mode, move)
    return agent.new_session(mode)


def run_turn(session: Session, text: str):
    """One turn; a bug in it is one line for the person, the traceback goes to the log, and
    the session log is closed so the session still resumes. Returns the turn's record (for
    a crash, one with ``ended="error"``). Ctrl-C after the turn's own handling passes on."""
    from .turn import run_turn as turn

    try:
        return turn(session, text)
    except Exception as exc:  # noqa: BLE001 - a bug must not end the session or lose it
        return _crashed(session, exc)


def _crashed(session: Session, exc: Exception):
    from .turn import close_open_calls

    log.error("turn_crashed", error=str(exc), exc_info=True)
    try:
        close_open_calls(session)
    except Exception:  # noqa: BLE001 - the log may be what failed
        pass
    reason = f"internal error: {type(exc).__name__}: {exc}"
    session.ui.notice(f"mino: internal error in this turn: {type(exc).__name__}: {exc}. The "
                      "session is saved; details are in the log under MINO_HOME/logs.")
    return SimpleNamespace(answer="", ended="error", reason=reason, outcomes=[])


def end_session(session: Session | None) -> None:
    """The session is over (the REPL leaves or moves on, ``mino -p`` has answered):
    ``session_end``, once per session; what a plugin reports is shown, a Ctrl-C there
    only cuts it short."""
    if session is None or session.state.get("_ended"):
        return
    session.state["_ended"] = True
    try:
        session.host.notify("session_end", session=session)
    except KeyboardInterrupt:
        session.ui.notice("Interrupted while ending the session.")
    for message in session.host.drain_errors():
        session.notice(message)
