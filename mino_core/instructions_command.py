"""``mino instructions`` and ``mino instructions approve``: the project's AGENTS.md /
CLAUDE.md files (project_instructions.py) and their approvals. Only click at import time:
the CLI imports this for every command."""
from __future__ import annotations

import click


def _echo(text: str, err: bool = False) -> None:
    from .confirm import visible  # paths come from the folder: nothing reaches the terminal raw

    click.echo(visible(text, lines=True), err=err)


@click.group("instructions", invoke_without_command=True)
@click.pass_context
def instructions_command(ctx):
    """List the project's AGENTS.md / CLAUDE.md files and whether you approved them."""
    if ctx.invoked_subcommand is not None:
        return
    from .config import home_dir, project_root

    from .project_instructions import statuses

    found = statuses(home_dir(), project_root())
    if not found:
        _echo("No AGENTS.md or CLAUDE.md here or in the folders above, up to the repository root.")
    for entry, status in found:
        _echo(f"{status:<9} {entry['path']}")
    if any(status != "approved" for _, status in found):
        from .invocation import command

        _echo(f"\nThey load only as you approved them: mino asks at the next session's first "
                   f"message, or approve them now with: {command('instructions approve')}")


@instructions_command.command("approve")
def instructions_approve():
    """Approve the project's instruction files as they are now (-p sessions load them)."""
    from .config import home_dir, project_root

    from .project_instructions import approve, find

    found, _ = find(project_root())
    if not found:
        _echo("No AGENTS.md or CLAUDE.md to approve here.")
        return
    try:
        approve(home_dir(), found)
    except (OSError, ValueError) as exc:
        _echo(f"Could not record the approval: {exc}", err=True)
        raise SystemExit(1) from None
    for entry in found:
        _echo(f"Approved {entry['path']} as it is now (a later change is asked about again).")
