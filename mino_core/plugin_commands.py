"""Commands plugins add: ``mino NAME ...`` (``register_commands``) and ``mino memory ...``
(``register_memory_commands``, the active backend's), loaded only when asked for.

Both print text from plugins, memory files and journals: the core cannot review each
``click.echo`` in every plugin, so their streams pass through ``confirm.visible`` while
they run. The top-level group asks plugins only for a name the core does not have (and for
``mino --help``), so ``mino`` and ``mino -p`` never pay for it.
"""
from __future__ import annotations

import contextlib
import io
import os
import sys

import click

from .headless import PromptGroup


def echo(text: str = "", err: bool = False) -> None:
    from .confirm import visible

    click.echo(visible(str(text), lines=True), err=err)


class _Escaping(io.TextIOBase):
    """A text stream that passes everything written through confirm.visible. No
    ``buffer`` attribute: click then writes text here, never bytes past it."""

    def __init__(self, stream):
        super().__init__()
        self._stream = stream

    @property
    def encoding(self):
        return getattr(self._stream, "encoding", None) or "utf-8"

    @property
    def errors(self):
        return getattr(self._stream, "errors", None)

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        raise io.UnsupportedOperation("fileno")

    def write(self, text) -> int:
        from .confirm import visible

        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        self._stream.write(visible(text, lines=True))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()


@contextlib.contextmanager
def escaped_output():
    """Escaped streams, and plugins' notices (``plugin_logger`` warnings) on stderr at once."""
    from .notices import shown_by

    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Escaping(sys.stdout), _Escaping(sys.stderr)
    try:
        with shown_by(lambda line: echo(line, err=True)):
            yield
    finally:
        sys.stdout, sys.stderr = saved


def host(notice=None):
    """The checked plugin host for a command (no session: its imports, the model client and
    the session log among them, cost ~8 ms of start-up); a config error is one line, exit 2.
    ``notice``: where config warnings go (default: stderr)."""
    from .config import ConfigError, home_dir, project_root
    from .startup import checked_host

    try:
        return checked_host(home_dir(), project_root(), notice or (lambda line: echo(line, err=True)))
    except ConfigError as exc:
        echo(str(exc), err=True)
        sys.exit(2)


def _key() -> tuple[str, ...]:
    """What the loaded commands depend on, so in-process callers with another home or
    plugin choice (tests) get theirs rather than the first caller's."""
    from .config import home_dir, project_root

    return (str(home_dir()), str(project_root()), *(os.environ.get(k, "") for k in (
        "MINO_MEMORY_BACKEND", "MINO_PLUGINS", "MINO_DISABLE_PLUGINS")))


class MemoryGroup(click.Group):
    """``mino memory``: subcommands come from the active memory backend, loaded on demand."""

    def _load(self, ctx: click.Context) -> None:
        key = _key()
        if getattr(self, "_loaded_for", None) == key:
            return
        self._loaded_for = key
        self.commands.clear()
        found, _ = host()
        found.notify("register_memory_commands", group=self, context=found.context)
        for message in found.drain_errors():
            echo(message, err=True)

    def invoke(self, ctx):
        with escaped_output():
            return super().invoke(ctx)

    def list_commands(self, ctx):
        self._load(ctx)
        return super().list_commands(ctx)

    def get_command(self, ctx, name):
        self._load(ctx)
        return super().get_command(ctx, name)


class _PluginGroup(click.Group):
    """What plugins add commands to: a name mino has, or another plugin added first, is
    refused (and said once the person runs a plugin command or asks for help)."""

    def __init__(self, taken, owner_of):
        super().__init__("mino")
        self._taken, self._owner_of, self.refused = taken, owner_of, []

    def add_command(self, cmd, name=None):
        name = name or cmd.name
        owner = self._owner_of(cmd)
        if name in self._taken or name in self.commands:
            what = "mino has a command of that name" if name in self._taken else \
                f"{self._owner_of(self.commands[name])} added one first"
            self.refused.append(f"Plugin {owner}'s command {name!r} is not added: {what}.")
            return
        _escaping(cmd)
        super().add_command(cmd, name)


def command_group(cli: click.Group, name: str, help: str) -> click.Group:
    """The group ``mino NAME`` that is there (another plugin made it), or a new one: how
    plugins share a group without depending on each other or on which hook runs first."""
    group = cli.commands.get(name)
    if isinstance(group, click.Group):
        return group
    group = click.Group(name, help=help)
    cli.add_command(group)
    return group


def _escaping(cmd: click.Command) -> None:
    inner = cmd.invoke

    def invoke(ctx):
        with escaped_output():
            return inner(ctx)

    cmd.invoke = invoke  # type: ignore[method-assign]


class TopLevel(PromptGroup):
    """``mino``: the core's commands, then the active plugins' (``register_commands``)."""

    def _plugins(self, ctx) -> _PluginGroup | None:
        key = _key()
        if getattr(self, "_loaded_for", None) != key:
            self._loaded_for, self._group, self._said = key, None, False
            self._group = self._load()
        return self._group

    def _load(self) -> _PluginGroup | None:
        from .config import ConfigError, home_dir, project_root
        from .startup import checked_host

        warnings: list[str] = []
        try:
            found, _ = checked_host(home_dir(), project_root(), warnings.append)
        except ConfigError:  # no plugin commands; the session this starts says why
            return None
        modules = sorted(((info.module, name) for name, info in found.plugins.items()
                          if info.module), reverse=True)

        def owner_of(cmd) -> str:
            where = getattr(getattr(cmd, "callback", None), "__module__", "") or ""
            for module, name in modules:
                if where == module or where.startswith(module.split(":")[0].rsplit(".", 1)[0] + "."):
                    return name
            return where or "?"

        group = _PluginGroup(set(self.commands), owner_of)
        found.notify("register_commands", cli=group, context=found.context)
        group.refused[:0] = warnings
        group.refused += found.drain_errors()
        return group

    def _say(self) -> None:
        if self._group is not None and not self._said:
            self._said = True
            for line in self._group.refused:
                echo(line, err=True)

    def get_command(self, ctx, name):
        command = super().get_command(ctx, name)
        if command is not None or name.startswith("-") or ctx.params.get("prompt") is not None:
            return command  # with -p, words are the prompt: no plugin host for them
        group = self._plugins(ctx)
        command = group.commands.get(name) if group is not None else None
        if command is not None:
            self._say()
        return command

    def list_commands(self, ctx):
        group = self._plugins(ctx)
        if group is not None:
            self._say()
        return sorted(set(super().list_commands(ctx)) | set(group.commands if group else ()))
