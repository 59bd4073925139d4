"""``mino skills``: list the skills a session would see, and approve one outside a session.

Only click is imported here, so ``mino --help`` stays fast; the skills module loads when
a subcommand runs.
"""
from __future__ import annotations

import click


@click.group()
def skills() -> None:
    """List skills, or approve one before a session asks about it."""


def _where():
    from .config import home_dir
    from .session import project_root

    return home_dir(), project_root()


@skills.command("list")
def list_() -> None:
    """Each skill of this project and the home: name, approved or not, path."""
    from . import skills as catalog

    home, root = _where()
    found, problems = catalog.scan(catalog.folders(home, root))
    seen = catalog.load_seen(home)
    if not found:
        click.echo("No skills (folders with a SKILL.md under .mino/skills/ or ~/.mino/skills/).")
    for entry in found:
        state = ("approved" if seen.get(entry["path"]) == entry["sha256"] else
                 "changed since approved" if entry["path"] in seen else "not approved")
        click.echo(f"{entry['name']}  [{state}]  {entry['path']}")
    for problem in problems:
        click.echo(f"skipped: {problem}", err=True)


@skills.command()
@click.argument("names", nargs=-1, required=True)
def approve(names) -> None:
    """Approve the named skills as their SKILL.md reads now (read it first)."""
    from . import skills as catalog

    home, root = _where()
    done, unknown = catalog.approve_named(home, root, list(names))
    for name in done:
        click.echo(f"Approved {name}: sessions load it until its SKILL.md changes.")
    if unknown:
        click.echo(f"No skill named {', '.join(unknown)} here (mino skills list shows them).", err=True)
        raise SystemExit(1)
