"""Mistyped subcommands: ``mino sesions`` is not sent to the model as a prompt.

``mino WORDS...`` starts a session with WORDS as the first message, so a mistyped command
would become a prompt (and a request). A lone word (options aside) close to a command's
name is a usage error naming the command meant; ``mino help`` is ``mino --help``. Longer
prompts, and words close to no command, are still prompts.
"""
from __future__ import annotations

import difflib

CUTOFF = 0.75  # sesions -> sessions, plugin -> plugins, docter -> doctor; hello -> nothing
HELP_WORDS = ("help", "-help", "?")


def check(group, ctx, args: list[str]) -> None:
    """Raise a usage error (click's, exit 2) when ``args`` look like a mistyped command;
    show the help for ``mino help``."""
    words = [a for a in args if not a.startswith("-")]
    if len(words) != 1 or words[0] != args[0]:
        return
    word = words[0]
    if word.lower() in HELP_WORDS:
        import click

        click.echo(ctx.get_help())
        ctx.exit(0)
    names = [n for n in group.list_commands(ctx) if not n.startswith("_")]
    close = difflib.get_close_matches(word.lower(), names, n=1, cutoff=CUTOFF)
    if close:
        from .invocation import command

        ctx.fail(f"No command {word!r}. Did you mean: {command(close[0])}? "
                 f"(To send it as a message, quote it with more words, or use {command('-p')}.)")
