"""``mino memory list | show NAME | path | doctor``: the memory folder for people."""
from __future__ import annotations

import sys

import click
from mino_core import visible

from . import store
from .names import INDEX_MAX_BYTES, INDEX_MAX_ENTRIES, name_problem


def add_commands(group: click.Group, context) -> None:
    directory = store.memory_dir(context.home)

    @group.command("list")
    def list_():
        """List the memories in the index, in name order."""
        scan = store.scan(directory)
        if not scan.memories:
            click.echo(f"No memories in {directory}.")
        for memory in scan.indexed:
            click.echo(visible(memory.line(filtered=False)))
        if scan.problems:
            click.echo(f"{len(scan.problems)} file(s) skipped; `mino memory doctor` says why.",
                       err=True)

    @group.command("show")
    @click.argument("name")
    def show(name):
        """Print one memory file in full."""
        problem = name_problem(name)
        if problem:
            click.echo(f"{visible(name)!s} is not a memory name: {problem}.", err=True)
            sys.exit(2)
        found = store.load_one(directory, name)
        if found is None:
            click.echo(f"No memory named {name} in {directory}; `mino memory list` shows them.",
                       err=True)
            sys.exit(1)
        if isinstance(found, str):
            click.echo(f"{directory / (name + '.md')} is skipped: {found}.", err=True)
            sys.exit(1)
        # The file as written, but escaped: details may hold any character, and an escape
        # sequence in them must not reach the terminal.
        click.echo(visible(found[1], lines=True), nl=not found[1].endswith("\n"))

    @group.command("path")
    def path():
        """Print the memory folder."""
        click.echo(str(directory))

    @group.command("doctor")
    def doctor():
        """Check every memory file; report each skipped file and why."""
        scan = store.scan(directory)
        count, size = store.index_size(scan.indexed)
        click.echo(f"Memory folder: {directory}")
        click.echo(f"Index: {count} of {INDEX_MAX_ENTRIES} entries, {size} of "
                   f"{INDEX_MAX_BYTES} bytes.")
        if not scan.problems:
            click.echo("Every memory file loads.")
            return
        click.echo(store.notice(directory, scan.problems, limit=len(scan.problems)))
        sys.exit(1)
