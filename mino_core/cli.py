"""The ``mino`` command line. Heavy modules load inside the commands that need them."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .headless import allow_option, output_format_option
from .plugin_commands import MemoryGroup, TopLevel


def echo(text: str = "", err: bool = False, nl: bool = True) -> None:
    """click.echo through confirm.visible: names, rules, titles and plugin errors printed
    here come from files and plugins, so no escape sequence in them reaches the terminal."""
    from .confirm import visible

    click.echo(visible(str(text), lines=True), err=err, nl=nl)


def _fail(message: str, code: int = 2):
    echo(message, err=True)
    sys.exit(code)


def _host():
    from .plugin_commands import host

    return host()


@click.group(cls=TopLevel, invoke_without_command=True,
             context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--mode", "mode", metavar="NAME", help="Permission mode: manual, accept-edits or bypass.")
@click.option("-m", "--model", "model", metavar="NAME", expose_value=False, is_eager=True,
              callback=lambda ctx, param, value: _use_model(value),
              help="The model to use (instead of MINO_MODEL or model in config.yaml).")
@click.option("--resume", "resume_id", metavar="ID", help="Continue the session with this id.")
@click.option("-c", "--continue", "continue_", is_flag=True,
              help="Continue the newest session of this project.")
@click.option("--project", "switch", is_flag=True,
              help="With --resume: work in the session's project folder without asking.")
@click.option("-p", "--prompt", metavar="PROMPT", is_flag=False, flag_value="-",
              help="Run one turn headless and print the answer (-p alone or -p -: the prompt from stdin).")
@output_format_option
@allow_option
@click.option("-v", "--verbose", is_flag=True, help="Mirror the structured logs to stderr.")
@click.version_option(package_name="mino-core", prog_name="mino", message="%(prog)s %(version)s")
@click.pass_context
def cli(ctx: click.Context, mode, resume_id, continue_, switch, prompt, verbose):
    """mino: a terminal coding agent that remembers what you told it.

    Run without a command to start a session. Settings: OPENAI_API_KEY, MINO_BASE_URL
    (or OPENAI_BASE_URL), MINO_MODEL, MINO_HOME (default ~/.mino), or the same keys in
    MINO_HOME/config.yaml.
    """
    if ctx.invoked_subcommand is not None:
        return
    from . import headless

    if headless.wanted(prompt):
        code = headless.main(ctx)
        if _AS_COMMAND:  # the answer is out: leave as the REPL does, without the teardown
            _leave(code)
        sys.exit(code)
    if resume_id and continue_:
        _fail("Use --resume ID or --continue, not both.")
    sys.exit(_run(mode, resume_id, verbose, continue_, switch))


def _command(args: str) -> str:
    from .invocation import command

    return command(args)


def _use_model(name):
    """``-m NAME``: wins over MINO_MODEL and config.yaml, for this run (and what it runs)."""
    if name:
        import os

        os.environ["MINO_MODEL"] = name
    return name


def _terminal_ui(home: Path, holder: list):
    """The UI and prompt reader for an interactive session on whatever the streams are:
    prompt_toolkit and rich only on a terminal that wants them (see mino_core.terminal)."""
    from .terminal import line_editing_wanted, styled_wanted
    from .ui import TerminalUI

    reader = None
    styled = styled_wanted()
    if line_editing_wanted():
        from .repl import COMMANDS, project_sessions
        from .terminal import Reader

        reader = Reader(home / "history", COMMANDS, lambda: project_sessions(holder[0]) if holder else [],
                        styled=styled)
    answer = reader.ask if reader is not None else input
    if styled:
        from .terminal.render import RichUI

        return RichUI(read=answer), reader
    return TerminalUI(read=answer), reader


def _run(mode, resume_id, verbose, continue_=False, switch=False) -> int:
    """The interactive session: the terminal UI here, the session's life in repl/driver."""
    from .permissions import MODES, normalise_mode

    if mode is not None and normalise_mode(mode) is None:
        _fail(f"Unknown mode {mode!r}. Modes: {', '.join(MODES)}.")
    from .agent import SessionNotFound
    from .config import ConfigError, home_dir
    from .session import project_root

    holder: list = []
    ui, reader = _terminal_ui(home_dir(), holder)
    try:
        from .headless import allow
        from .repl import open_session
        from .startup import start_agent

        agent = start_agent(home_dir(), project_root(), ui, verbose, allow=allow(), banner=True)
        holder.append(agent)
        from .trust import check_interactive

        if sys.stdin.isatty() and not check_interactive(
                agent.home, agent.project_root, ui, lambda question: _ask_yes(ui, question)):
            return 2
        if not open_session(agent, normalise_mode(mode) if mode else None, resume_id, continue_, switch):
            return 2
    except (ConfigError, SessionNotFound) as exc:
        _fail(str(exc))
    keys = None
    if reader is None:
        try:
            import readline  # noqa: F401 - line editing for input()
        except ImportError:
            pass
    if sys.stdin.isatty():
        from .terminal.keys import EscWatcher

        _keep_interrupts()

        keys = EscWatcher(sys.stdin.fileno())
        ui.keys = keys
    from .repl import repl

    from .headless import first_message_reader

    code = repl(agent, first_message_reader(reader.read if reader is not None else input), keys)
    if keys is not None:
        from .terminal.keys import bracketed_paste_off

        bracketed_paste_off()
    _leave(code)


def _ask_yes(ui, question: str) -> bool:
    from .repl import ask_yes

    return ask_yes(ui, question)


def _keep_interrupts() -> None:
    """Ctrl-C and Esc stop a turn through SIGINT. A process started in the background by a
    shell without job control (a script's ``&``, some CI runners) inherits SIGINT ignored,
    and Python then installs no handler: at a terminal, the person's keys must still work."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _leave(code: int) -> None:
    """End the interactive process once its work is done: threads that are not daemons (a
    plugin's background write) are waited for and exit handlers run, as on any exit, but
    the interpreter's teardown of every loaded module (openai, httpx, prompt_toolkit:
    0.1-0.2 s of nothing the session needs) is skipped."""
    import atexit
    import os
    import threading

    for thread in threading.enumerate():
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def plugins(as_json):
    """List plugins: distribution, version, hooks, tools, status; the memory backend."""
    host, _ = _host()
    host.collect_tools()  # the listing shows each plugin's tools and any clash
    host.protected_paths()  # what plugins protect, for the sandbox's notes
    for name, notes in host.call("plugin_notes", context=host.context):
        host.plugins[name].notes.extend(str(n) for n in notes)
    infos = list(host.plugins.values())
    if as_json:
        import json

        echo(json.dumps({"plugins": [i.as_dict() for i in infos],
                               "memory_backend": host.backend, "memory_backend_reason": host.backend_reason,
                               "errors": host.errors}, indent=2))
        return
    for info in infos:
        echo(f"{info.name}  ({info.distribution} {info.version})  [{info.status}]")
        echo(f"    module: {info.module}")
        if info.hooks:
            echo(f"    hooks:  {', '.join(info.hooks)}")
        if info.tools:
            echo(f"    tools:  {', '.join(info.tools)}")
        if info.backend:
            echo(f"    memory backend: {info.backend}")
        for note in info.notes:
            echo(f"    note:   {note}")
        if info.error:
            echo(f"    error:  {info.error}")
    echo(f"\nMemory backend: {host.backend or 'none'} ({host.backend_reason}).")
    for error in host.errors:
        echo(f"\n{error}", err=True)


@cli.command()
@click.option("--all", "every", is_flag=True, help="Every project's sessions, with their folder.")
def sessions(every):
    """List this project's sessions, newest first (mino --resume ID continues one)."""
    from .config import ConfigError, ensure_home, home_dir
    from .session import project_root
    from .sessionlog import list_sessions

    try:
        ensure_home(home_dir())
    except ConfigError as exc:
        _fail(str(exc))
    found = list_sessions(home_dir() / "sessions", None if every else project_root(), with_empty=False)
    if not found:
        echo("No sessions yet." if every else
             f"No sessions in this project yet ({_command('sessions --all')} lists every project).")
    import datetime

    for s in found:
        when = datetime.datetime.fromtimestamp(s.modified).strftime("%Y-%m-%d %H:%M")
        title = " ".join(s.title.split())[:60]
        where = f"  [{s.project or 'unknown project'}]" if every else ""
        echo(f"{s.id}  {when}  {s.turns:3} turn(s)  {title}{where}")


@cli.group(invoke_without_command=True)
@click.pass_context
def skills(ctx):
    """List this project's and your skills and whether you approved them as they are now."""
    if ctx.invoked_subcommand is not None:
        return
    from .config import home_dir
    from .session import project_root
    from .skills import skill_statuses

    found = skill_statuses(home_dir(), project_root())
    if not found:
        echo("No skills (folders with a SKILL.md under .mino/skills/ here or skills/ in the home).")
    for entry, status in found:
        hidden = (f"  (not loaded: the {entry['shadowed_by']} copy of the same name wins)"
                  if entry.get("shadowed_by") else "")
        echo(f"{entry['name']}  {status}  {entry['origin']}: {entry['path']}{hidden}")
    if any(status != "approved" for _, status in found):
        echo("\nA skill loads only as you approved it: mino asks at the next session's first "
             f"message, or approve one now with: {_command('skills approve NAME')} (project:NAME or "
             "home:NAME where both folders have one)")


@skills.command("approve")
@click.argument("names", nargs=-1, required=True)
def skills_approve(names):
    """Approve skills as they are now, so sessions (-p included) load them. NAME, or
    project:NAME / home:NAME for one folder's copy when both have a skill of that name."""
    from .config import home_dir
    from .session import project_root
    from .skills import approve_named

    try:
        approved, unknown, ambiguous = approve_named(home_dir(), project_root(), list(names))
    except (OSError, ValueError) as exc:
        _fail(f"Could not record the approval: {exc}")
    if ambiguous:
        lines = []
        for name, found in ambiguous.items():
            lines.append(f"Skill {name} is in both folders; nothing was approved. Say which file:")
            lines += [f"  {_command('skills approve ' + e['origin'] + ':' + name)}   ({e['path']})" for e in found]
        _fail("\n".join(lines))
    for entry in approved:
        echo(f"Approved {entry['name']}: {entry['origin']}: {entry['path']} as it is now "
             "(a later change is asked about again).")
    if unknown:
        _fail(f"No skill named {', '.join(unknown)} here ({_command('skills')} lists them).")


@cli.command()
def permissions():
    """Explain the permission modes, the default policy and your rules."""
    from .config import ConfigError, home_dir, load_config
    from .permissions import Rules
    from .policy import EXPLANATION

    echo(EXPLANATION)
    try:
        rules = Rules.from_config(load_config(home_dir()))
    except ConfigError as exc:
        _fail(str(exc))
    echo("\nYour rules:")
    if not (rules.allow or rules.deny):
        echo("  none (set permissions.allow / permissions.deny in config.yaml)")
    for rule in rules.deny:
        echo(f"  deny   {rule}")
    for rule in rules.allow:
        echo(f"  allow  {rule}")
    for error in rules.errors:
        echo(f"  problem: {error}", err=True)


@cli.command("eval")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--live", is_flag=True, help="Run the cases marked live against the configured model.")
@click.option("-k", "select", metavar="TEXT", help="Only cases whose name contains TEXT.")
@click.option("--api", type=click.Choice(["responses", "chat"]), help="Speak this API in every case.")
def eval_(directory, live, select, api):
    """Run the YAML eval cases in DIRECTORY and print one row per case."""
    from .evals import main as run_evals

    sys.exit(run_evals(directory, live=live, select=select, api=api))


@cli.group(cls=MemoryGroup)
def memory():
    """Read and manage memories (commands come from the active memory backend)."""


from .instructions_command import instructions_command  # noqa: E402 - defined there

cli.add_command(instructions_command)
from .doctor import doctor_command  # noqa: E402 - defined there

cli.add_command(doctor_command)

_AS_COMMAND = False  # set by main(): the process is mino itself (not a test's CliRunner)


def main() -> None:
    global _AS_COMMAND
    _AS_COMMAND = True
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:
        echo("", err=True)
        sys.exit(130)
    except SystemExit:
        raise
    except Exception as exc:  # noqa: BLE001 - people get one line; the log gets the traceback
        from .logs import get_logger

        get_logger("cli").error("crash", error=str(exc), exc_info=True)
        echo(f"mino: unexpected error: {type(exc).__name__}: {exc} (details in the log "
                   "file under MINO_HOME/logs)", err=True)
        sys.exit(1)
