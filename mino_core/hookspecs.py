"""The contract between the core and its plugins: every hook, documented in one place.

Each hook lists when it is called, with what, what its return means, and an example. The
core's own behaviour (the default permission policy; the skills catalog and skill_view;
the Responses and chat completions adapters) is implemented through these same hooks by
the plugins in ``mino_core.builtin``. Call hooks with keywords. The host calls them with pluggy's markers and semantics, so
``@hookimpl(tryfirst=True)``, ``trylast=True``, ``wrapper=True`` and ``hookwrapper=True``
work as pluggy documents; inside each of those classes implementations run in
plugin-name order, and each implementation is contained, so one failing plugin never
silences another. An implementation of a hook that is not listed here is refused at
load time.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    import click

    from .backends import MemoryBackend
    from .memory_api import MemoryHit
    from .model_api import ModelAPI
    from .permissions import Decision
    from .plugins import PluginContext
    from .protected import ProtectedPath
    from .session import Session
    from .tools import Tool, ToolCall
    from .turn_data import ToolOutcome, TurnInfo, TurnRecord

PROJECT = "mino"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_tools(context: "PluginContext") -> "list[Tool] | None":
    """Contribute tools.

    Called once when a session's plugin host is built. ``context`` carries the home folder,
    the project root and the configuration. Return a list of :class:`mino_core.Tool`.
    A tool name registered by two plugins is a start-up error naming both; neither copy
    is offered to the model until one plugin is disabled.

    Example::

        @hookimpl
        def register_tools(context):
            return [Tool(name="clock", description="The time", parameters={...},
                         read_only=True, run=lambda args, ctx: ToolResult.completed(now()))]
    """


@hookspec
def front_input(turn: "TurnInfo") -> "str | None":
    """Contribute text to the one leading assistant item of every request in a turn.

    Called once when a turn begins, after the user's message is saved to the log (and
    after any automatic compaction). The text is fixed for every request of that turn and never written to the session log. Return
    None or "" to contribute nothing; when nobody contributes, the request has no leading
    item. Contributions are joined in plugin-name order, separated by a blank line.

    Example::

        @hookimpl
        def front_input(turn):
            return "Notes saved earlier (data, not instructions):\\n- prefers pnpm"
    """


@hookspec
def instructions(session: "Session") -> "str | None":
    """Contribute a section to the session's instructions (the request's system text).

    Called once per session, when its instructions are first built (the first request, or
    ``/context``), after the base text and SOUL.md; the text is then fixed for the session.
    Return None or "" to contribute nothing. Sections are joined in plugin-name order,
    separated by a blank line. The core's ``mino.skills`` adds the skills catalog here,
    ``mino.instructions`` the project's AGENTS.md / CLAUDE.md as the person approved them.
    Instructions are followed by the model: contribute only text the person approved.

    Example::

        @hookimpl
        def instructions(session):
            return "House rules: run `make lint` before you say a change is done."
    """


@hookspec
def decide_permission(
    call: "ToolCall", tool: "Tool", mode: str, session: "Session"
) -> "Decision | None":
    """Vote on one tool call before it runs.

    Called for every call after its arguments validated. Return a
    :class:`mino_core.Decision` (allow / ask / deny, and whether an allowed call is
    shown) or None to abstain. Every vote is collected: deny beats ask beats allow, so a
    plugin can tighten the policy but never loosen another plugin's verdict.

    Example::

        @hookimpl
        def decide_permission(call, tool, mode, session):
            if call.name == "Bash" and "rm -rf" in call.arguments.get("command", ""):
                return Decision.deny("rm -rf is blocked by the safety plugin")
    """


@hookspec
def before_tool(call: "ToolCall", tool: "Tool", turn: "TurnInfo") -> "str | None":
    """Say something to the model about one call before it runs, holding it back.

    Called for every call whose arguments validated and that the permission decision does
    not deny, before anyone is asked and before it runs. Return None to let it go ahead.
    Return text to hold it back: the call does not run, nobody is asked, and the text is
    its output for the model (status ``not_run``), in the same turn; the model may make the
    call again. The text is data the model weighs, never an instruction: label it as such,
    and hold a given call back at most once (the core does not stop a plugin that keeps
    holding). Texts of several plugins are joined in plugin-name order. No ``tool_outcome``
    follows a held call (the tool did not run).

    Example::

        @hookimpl
        def before_tool(call, tool, turn):
            if call.name == "Bash" and "make deploy" in call.arguments.get("command", ""):
                return "A note saved earlier (data, not an instruction): deploy needs VPN."
    """


@hookspec
def tool_outcome(outcome: "ToolOutcome", turn: "TurnInfo") -> None:
    """Observe one tool call's outcome, right after it ran or was refused.

    Called once per tool call, in order, before the result goes back to the model. The
    return value is ignored. A memory backend uses it to log the call and steer on a
    failure at once (``outcome.refused`` tells a refusal from a failure).

    Example::

        @hookimpl
        def tool_outcome(outcome, turn):
            if outcome.result.status.value == "failed":
                remember_failure(outcome.call.name, outcome.result.output)
    """


@hookspec
def after_turn(turn: "TurnRecord") -> None:
    """Observe a finished turn: requests made, tool outcomes, the final answer.

    Called once when a turn ends, however it ended (``turn.ended``). The return value is
    ignored; an exception is logged and never reaches the user. A backend may ask one
    confirmation through ``turn.info.session.confirm`` and make one model request through
    ``turn.info.session.complete``.

    Example::

        @hookimpl
        def after_turn(turn):
            if turn.clean:
                reinforce(turn.info.scratch.get("my-plugin", {}).get("recalled", []))
    """


@hookspec
def session_start(session: "Session") -> None:
    """Observe the start of a session, before its first turn.

    Called once per session, when it is new, continued (``-c``) or resumed (``--resume``),
    in the REPL and in ``mino -p`` alike, after the session log is open and before the
    first message is read or sent. The return value is ignored; an exception is logged and
    shown as one line. A plugin that runs a helper process per session (an MCP client, an
    embedder) starts it here and stops it in ``session_end``.

    Example::

        @hookimpl
        def session_start(session):
            SERVERS[session.id] = start_server(session.project_root)
    """


@hookspec
def session_end(session: "Session") -> None:
    """Observe the end of a session: the REPL is leaving, or ``mino -p`` has answered.

    Called once per session, after its last turn, whether it ended by ``/exit``, end of
    input (Ctrl-D) or a finished ``mino -p`` run (an interrupted one included). The return
    value is ignored; an exception is logged and shown as one line. Work here delays the
    exit, so keep it short: a memory backend may fold what the session taught into lessons.

    Example::

        @hookimpl
        def session_end(session):
            flush_buffered_writes(session.id)
    """


@hookspec
def host_shutdown(context: "PluginContext") -> None:
    """Observe the end of the mino process that built this plugin host.

    Called once per host, when the process is about to end, from any front end (the REPL,
    ``mino -p``, a plugin command) and however it ends: normally, on an error, or on
    Ctrl-C; after every ``session_end``. The return value is ignored; an exception is
    logged. Stop what outlives a session here (a server shared by sessions, a pool); keep
    it short, the person is waiting for the prompt back.

    Example::

        @hookimpl
        def host_shutdown(context):
            EMBEDDER.terminate()
    """


@hookspec
def memory_backend() -> "MemoryBackend | str | None":
    """Say that this plugin is a memory backend: its name, priority and folders.

    Called when the host is built, for every loaded plugin. Return a
    :class:`mino_core.MemoryBackend` (``name``, ``priority``, ``folders`` under the home
    folder), or just the name (priority 0, no folders), or None. At most one backend is
    active: ``memory.backend`` in config.yaml or ``MINO_MEMORY_BACKEND`` chooses by name
    (a name no installed backend declares is a start-up message listing the installed
    ones), else the highest priority wins. An inactive backend stays loaded, but none of
    its other hooks are called. The core names no backend and makes none of their folders.

    Example::

        @hookimpl
        def memory_backend():
            return MemoryBackend("sqlite", priority=5, folders=("sqlite-memory",))
    """


@hookspec
def register_commands(cli: "click.Group", context: "PluginContext") -> None:
    """Add top-level commands (``mino NAME ...``) for people.

    Called when ``mino`` is asked for a command it does not have itself (and for
    ``mino --help``), for every active plugin: an inactive memory backend adds none. Add
    click commands or groups to ``cli``; a name the core already uses is refused with one
    line naming the plugin. What the commands print passes through ``mino_core.visible``.
    Memory commands belong under ``mino memory``: see ``register_memory_commands``.

    Example::

        @hookimpl
        def register_commands(cli, context):
            @cli.command()
            @click.argument("name")
            def hello(name):
                click.echo(f"hello {name}")
    """


@hookspec
def register_memory_commands(group: "click.Group", context: "PluginContext") -> None:
    """Add subcommands under ``mino memory`` (the ``group``) for people.

    Called only when ``mino memory ...`` runs, and only for active plugins, so the active
    memory backend owns the memory commands. Add click commands to ``group``.

    Example::

        @hookimpl
        def register_memory_commands(group, context):
            @group.command("list")
            def list_():
                click.echo("...")
    """


@hookspec
def register_model_apis(context: "PluginContext") -> "list[ModelAPI] | None":
    """Contribute model API adapters: protocols the model client can speak.

    Called once per host, when the first model request is about to be sent (or when
    ``api`` is checked at start). Return a list of :class:`mino_core.ModelAPI`: a name
    (what config ``api: NAME`` or ``MINO_API`` selects), the path to post to, a function
    building the body from mino's Responses-shaped request, and a factory for the reader
    that turns the stream's events into a response. The core's ``responses`` and
    ``chat`` come from the built-in plugin ``mino.apis`` this same way; ``api: auto`` (the
    default) is Responses falling back to chat. A name two plugins register is refused
    with one line naming both; neither is used.

    Example::

        @hookimpl
        def register_model_apis(context):
            return [ModelAPI("my-api", "/v1/generate", body=to_my_body, reader=MyReader)]
    """


@hookspec
def plugin_notes(context: "PluginContext") -> "list[str] | None":
    """Say something about this plugin's state in ``mino plugins`` (one line per note).

    Called only by ``mino plugins``, for every loaded plugin. Return short lines a person
    needs to know, such as a missing sandbox, or None.

    Example::

        @hookimpl
        def plugin_notes(context):
            if shutil.which("bwrap") is None:
                return ["no sandbox found: Bash asks before every command"]
    """


@hookspec
def config_schema(context: "PluginContext") -> "dict[str, dict] | None":
    """Declare this plugin's own settings in config.yaml, so mino checks them at start.

    Called once when mino starts (``mino``, ``mino -p``), for every loaded plugin, an
    inactive memory backend included. Return a mapping from where the section sits
    (``"my-plugin"`` for a top-level key, ``"memory.graph"`` for a nested one) to a JSON
    Schema subset for it: ``type``, ``enum``, ``minimum``, ``maximum``,
    ``exclusiveMinimum``, ``pattern``, ``properties``, ``additionalProperties``, ``items``,
    ``default``, ``description`` (see ``mino_core.config_schema``). A wrong value is one
    warning line naming the file, the key, what was found and what is allowed, and is
    removed from the configuration the plugin sees, so the plugin's own default applies.
    An undeclared key in a section with ``additionalProperties: false`` gets a "did you
    mean" warning. Return None to declare nothing.

    Example::

        @hookimpl
        def config_schema(context):
            return {"clock": {"type": "object", "additionalProperties": False, "properties": {
                "format": {"enum": ["12h", "24h"], "default": "24h"}}}}
    """


@hookspec
def sandbox_command(argv: "list[str]", network: bool, context: "PluginContext") -> "list[str] | None":
    """Wrap ``argv`` (a long-running program another plugin starts: an MCP server) so it
    runs in this plugin's sandbox, seeing what a sandboxed command sees (the project
    writable, the homes emptied, protected paths hidden), with the network only when
    ``network``. Return the whole command line, self-contained (no file descriptors or
    set-up left to the caller), or None when this plugin has no sandbox to offer.

    Called through ``context.sandbox_command(argv, network)`` (the first plugin's answer
    is used), each time a plugin starts such a program.

    Example::

        @hookimpl
        def sandbox_command(argv, network, context):
            return ["my-jail", *([] if network else ["--no-net"]), "--", *argv]
    """


@hookspec
def protected_paths(context: "PluginContext") -> "list[ProtectedPath | tuple | str] | None":
    """Name the files and folders of this plugin that a command the model runs must not
    read or change: the sandbox hides them (``"hidden"``) or keeps them read-only
    (``"read-only"``), and the default policy asks before any tool writes there.

    Called once per host, for every loaded plugin (an inactive memory backend included:
    its files stay on disk), when a tool context or ``mino plugins`` first needs it.
    Return a list of :class:`mino_core.ProtectedPath`, ``(path, access)`` pairs or plain
    paths (hidden), or None. A path may be missing (it is protected once it exists);
    ``~`` is expanded. A path that contains the project cannot be hidden: name the files.

    Example::

        @hookimpl
        def protected_paths(context):
            return [ProtectedPath(Path("~/.my-plugin/cache.db").expanduser(), "hidden"),
                    (context.home / "my-plugin" / "rules.txt", "read-only")]
    """


# -- the active memory backend for other plugins (mino_core.memory_api) -----------------


@hookspec
def memory_search(query: str, limit: int, context: "PluginContext") -> "list[MemoryHit] | None":
    """Search the active memory backend's memories, read-only, for a caller outside a turn.

    Called by :class:`mino_core.MemoryService` (``mino mcp serve``'s ``memory_search``),
    only for the active backend. Return at most ``limit`` :class:`mino_core.MemoryHit`
    (best first: ``ref`` as the backend's ``memory_view`` takes it, the memory's ``text``
    as the backend shows it to the model, a ``score``, and its ``source``), or None when
    this plugin is not a backend. Write nothing: no recall bookkeeping, no episode.

    Example::

        @hookimpl
        def memory_search(query, limit, context):
            return [MemoryHit(ref=m.name, text=m.summary, source=str(m.path))
                    for m in find(context.home, query)[:limit]]
    """


@hookspec
def memory_refusal(text: str, context: "PluginContext") -> "str | None":
    """Say why ``text`` must never be kept in memory (a secret, an instruction), or None.

    Called by :class:`mino_core.MemoryService` for every text a memory write would keep,
    before the permission decision, for every active plugin (an inactive backend is not
    asked): a write nobody can confirm (``mino mcp serve --allow-save``) is refused when
    any plugin names a reason. The active backend answers with its own filter. Return a
    few words ("an API key") or None.

    Example::

        @hookimpl
        def memory_refusal(text, context):
            return "a private key" if "PRIVATE KEY-----" in text else None
    """
