"""The hook implementations that make this package mino's ``files`` memory backend."""
from __future__ import annotations

from mino_core import MemoryBackend, hookimpl

# store (and yaml) load at the first turn, not when mino imports its plugins at start-up.

NAME = "mino-memory-files"


@hookimpl
def memory_backend():
    # below graph's priority: with both installed and no memory.backend, graph is chosen
    return MemoryBackend("files", priority=10, folders=("memory",))


@hookimpl
def register_tools(context):
    from .tools import make_tools

    return make_tools()


@hookimpl
def front_input(turn):
    """The index, rendered from the folder now; reports skipped files when they change."""
    from . import store

    session = turn.session
    directory = store.memory_dir(session.home)
    scan = store.scan(directory)
    _report(session, directory, scan.problems)
    return scan.text or None


def _report(session, directory, problems) -> None:
    # session.state is per session object, so a new or resumed session reports afresh.
    state = session.state.setdefault(NAME, {})
    current = [(p.file, p.reason) for p in problems]
    if state.get("reported") == current:
        return
    state["reported"] = current
    if current:
        from . import store

        session.notice(store.notice(directory, problems))


@hookimpl
def protected_paths(context):
    """The memory folder: notes recalled into later sessions, hidden from commands the
    model runs (they are written only through memory_save, which asks)."""
    from . import store

    return [(store.memory_dir(context.home), "hidden")]


@hookimpl
def register_memory_commands(group, context):
    from .commands import add_commands

    add_commands(group, context)


@hookimpl
def memory_search(query, limit, context):
    """For a caller outside a turn (``mino mcp serve``): memories sharing the query's words."""
    from .search import search

    return search(context.home, query, limit)


@hookimpl
def memory_refusal(text, context):
    """A save nobody confirms must not keep a secret. In a turn the confirmation is where
    the person catches one (the files backend does not check, as its chapter says); a
    save nobody confirms (``mino mcp serve --allow-save``) has no such person, so the
    core's detector refuses it, the one every backend uses."""
    from mino_core import find_secrets

    found = find_secrets(text or "")
    return f"a secret ({found[0][2]})" if found else None
