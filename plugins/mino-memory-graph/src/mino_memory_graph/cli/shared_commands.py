"""``mino memory push``, ``export`` and ``restore``: between a file journal and the
shared (PostgreSQL) one (``restore``: an old copy kept after a TRUNCATE, by the owner). ``push`` copies a file journal into an empty shared journal, ids
kept; ``export PATH`` writes the shared journal to a new file journal that Mnemo reads.
Errors are one line (no password in them) and exit code 1."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from mino_core import visible


def _pg():
    """``journal_pg``, or one line saying how to install psycopg."""
    from ..journal.shared_open import journal_pg

    try:
        return journal_pg()
    except OSError as e:
        raise click.ClickException(visible(str(e))) from None


def _shared(context):
    from ..journal.shared_url import shared_url

    url = shared_url(context.config, mnemo_wins=False)
    if not url:
        raise click.ClickException(
            "no shared memory journal is configured: set memory.graph.journal to a "
            "postgresql:// URL in config.yaml, or MINO_GRAPH_URL")
    return _pg().open_shared(url, context.home)


def _fail(e: Exception):
    raise click.ClickException(visible(str(e).splitlines()[0] if str(e) else type(e).__name__))


def register(group, context) -> None:
    @group.command("push")
    @click.argument("source", required=False,
                    type=click.Path(dir_okay=False, path_type=Path))
    @click.option("--yes", is_flag=True, help="Do not ask; copy at once.")
    def push_cmd(source, yes):
        """Copy a file journal (default: this home's) into the empty shared journal."""
        SharedJournalError = _pg().SharedJournalError
        from ..journal.shared_transfer import push, read_ops

        from ..journal.journal import file_journal_path

        source = source or file_journal_path(context.home, context.config)
        try:
            lines, left = read_ops(source)
        except OSError as e:
            raise click.ClickException(visible(f"cannot read {source}: {e.strerror or e}"))
        # judged as every machine judges the table's rows: what they would refuse stays out
        from ..journal.shared_check import judge_all

        _, kept, refused = judge_all([(line, "", "") for line in lines])
        lines = [k[0] for k in kept]
        left += [f"an operation every machine would refuse: {why}" for _, why in refused]
        for why in left[:10]:
            click.echo(visible(f"left out {why}"), err=True)
        if len(left) > 10:
            click.echo(f"... and {len(left) - 10} more line(s) left out", err=True)
        if not yes and not sys.stdin.isatty():
            raise click.ClickException(
                f"push copies {len(lines)} operation(s) into the shared journal; add --yes "
                "to confirm where nobody can answer")
        journal = _shared(context)
        try:
            if not yes and not click.confirm(
                    visible(f"Copy {len(lines)} operation(s) from {source} into the shared "
                            f"journal {journal.shown}?"), default=False):
                click.echo("Nothing was copied.")
                return
            n = push(journal, lines)
        except SharedJournalError as e:
            _fail(e)
        finally:
            journal.close()
        click.echo(visible(f"Copied {n} operation(s) into {journal.shown}"
                           + (f"; {len(left)} line(s) left out" if left else "") + "."))

    @group.command("export")
    @click.argument("dest", type=click.Path(dir_okay=False, path_type=Path))
    def export_cmd(dest):
        """Write the shared journal to a new file journal (one Mnemo reads)."""
        SharedJournalError = _pg().SharedJournalError
        from ..journal.shared_transfer import export

        journal = _shared(context)
        try:
            n = export(journal, dest)
        except SharedJournalError as e:
            _fail(e)
        except OSError as e:
            _fail(OSError(f"cannot write {dest}: {e.strerror or e}"))
        finally:
            journal.close()
        click.echo(visible(f"Wrote {n} operation(s) from {journal.shown} to {dest}."))

    @group.command("restore")
    @click.argument("copy", type=click.Path(exists=True, dir_okay=False, path_type=Path))
    @click.option("--yes", is_flag=True, help="Do not ask; restore at once.")
    def restore_cmd(copy, yes):
        """Put back an old copy of the shared journal (after a TRUNCATE): table owner only."""
        SharedJournalError = _pg().SharedJournalError
        from ..journal.shared_restore import restore

        if not yes and not sys.stdin.isatty():
            raise click.ClickException(
                "restore makes the shared table again from the old copy and the rows written "
                "since; add --yes to confirm where nobody can answer")
        journal = _shared(context)
        try:
            if not yes and not click.confirm(
                    visible(f"Restore {copy} into the shared journal {journal.shown}?"),
                    default=False):
                click.echo("Nothing was restored.")
                return
            out = restore(journal, copy)
        except SharedJournalError as e:
            _fail(e)
        except (OSError, ValueError) as e:
            _fail(OSError(f"cannot read {copy}: {getattr(e, 'strerror', None) or e}"))
        finally:
            journal.close()
        if not out["restored"] and not out["moved"]:
            click.echo(visible(f"Nothing to restore: {journal.shown} already starts with it."))
            return
        click.echo(visible(
            f"Restored {out['restored']} operation(s) from {copy} into {journal.shown}; "
            f"{out['moved']} written since kept after them"
            + (f"; {out['refused']} left out (refused)" if out["refused"] else "")
            + "; every machine's copy starts over."))
