"""The Bash tool: one shell command in the project folder, with a timeout and an output cap.

The command gets its own process group (and, in bubblewrap, its own PID namespace), so a
timeout kills everything it started, not just the shell.
"""
from __future__ import annotations

import codecs
import os
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from mino_core import InvalidArguments, Tool, ToolContext, ToolResult

from . import environment, limits, sandbox, visibility
from .paths import project_real

DEFAULT_TIMEOUT = 120  # seconds
MAX_TIMEOUT = 600
DEFAULT_CAP = 30_000  # bytes of output kept: the first and the last half


@dataclass
class Settings:
    timeout: int = DEFAULT_TIMEOUT
    cap: int = DEFAULT_CAP
    use_sandbox: bool = True
    hide: object = None  # tools-fs.hide as written; sandbox.parse_hide checks it
    env: object = None  # tools-fs.env as written: names added to the allow-list

    @classmethod
    def from_context(cls, ctx: ToolContext) -> "Settings":
        section = ctx.section("tools-fs")

        def positive(key: str, default: int) -> int:
            value = section.get(key, default)
            return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default

        return cls(positive("bash_timeout", DEFAULT_TIMEOUT), positive("bash_output_cap", DEFAULT_CAP),
                   section.get("sandbox", True) is not False, section.get("hide"), section.get("env"))


@dataclass
class Outcome:
    exit_code: int | None  # None when it was killed for the timeout
    output: str
    total_bytes: int
    truncated: bool
    timed_out: bool
    limit: str | None = None  # which sandbox limit stopped it, when one did


class _Collector:
    """Keeps the first and the last ``cap // 2`` bytes of a stream and counts the rest."""

    def __init__(self, cap: int):
        self.head_cap, self.tail_cap = cap - cap // 2, cap // 2
        self.head, self.tail, self.total = bytearray(), bytearray(), 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_cap:
            self.tail += chunk
            del self.tail[:max(0, len(self.tail) - self.tail_cap)]

    def text(self) -> tuple[str, bool]:
        kept = len(self.head) + len(self.tail)
        head = self.head.decode("utf-8", errors="replace")
        if kept == self.total:
            return head + self.tail.decode("utf-8", errors="replace"), False
        tail = self.tail.decode("utf-8", errors="replace")
        left = self.total - kept
        return f"{head}\n[... {left} bytes of output left out ...]\n{tail}", True


def run_command(command: str, cwd: Path, timeout: float, cap: int, box: sandbox.Sandbox | None,
                box_view: "sandbox.View | Callable[[], sandbox.View] | None" = None,
                progress: "Callable[[str], None] | None" = None, env_extra: object = None) -> Outcome:
    """Run ``command`` with /bin/sh in ``cwd`` (inside ``box`` when given, seeing ``box_view``,
    or a callable making it, called once the project's placeholders are held). ``progress``
    gets the output as it arrives, for the screen (the Outcome still holds it, capped).
    The environment is the allow-list of :mod:`.environment` in every case."""
    if box is None:
        return _run(["/bin/sh", "-c", command], cwd, timeout, cap,
                    environment.command_env(env_extra), progress)
    with sandbox.placeholders_held(cwd) as held:
        view = box_view() if callable(box_view) else box_view or sandbox.view(cwd)
        env = environment.command_env(list(view.env_extra) or env_extra, home=view.home)
        if box.kind == "bubblewrap":
            held.append(view)
            with sandbox.launch(box, ["/bin/sh", "-c", command], cwd, view) as (argv, fds, preexec):
                outcome = _run(argv, cwd, timeout, cap, env, progress, fds, preexec)
            outcome.limit = limits.note(outcome.exit_code, outcome.output, view.limits)
            return outcome
    # sandbox-exec: no private /tmp there, so a fresh folder instead
    private_tmp = Path(tempfile.mkdtemp(prefix="mino-bash-"))
    env = {**env, "TMPDIR": str(private_tmp)}
    try:
        return _run(box.wrap(["/bin/sh", "-c", command], cwd, private_tmp, view), cwd, timeout, cap, env,
                    progress)
    finally:
        shutil.rmtree(private_tmp, ignore_errors=True)


def _run(argv: list[str], cwd: Path, timeout: float, cap: int, env: dict[str, str],
         progress: "Callable[[str], None] | None" = None, pass_fds: tuple = (),
         preexec: "Callable[[], None] | None" = None) -> Outcome:
    collector = _Collector(cap)
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True, pass_fds=pass_fds,
                            preexec_fn=preexec)

    def pump() -> None:
        assert proc.stdout is not None
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            collector.feed(chunk)
            if progress is not None:
                try:
                    progress(decoder.decode(chunk))
                except Exception:  # noqa: BLE001 - the screen must not stop the command
                    pass

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    finally:
        # Whatever it left running in its group goes too (also on Ctrl-C in mino).
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
        reader.join(timeout=2)  # a process that left the group may still hold the pipe
        if proc.stdout:
            proc.stdout.close()
    text, truncated = collector.text()
    return Outcome(None if timed_out else proc.returncode, text, collector.total, truncated, timed_out)


def report(outcome: Outcome, timeout: float, cap: int) -> ToolResult:
    """The result the model reads: the output, then what happened."""
    lines = [outcome.output.rstrip("\n")] if outcome.output.strip() else ["(no output)"]
    if outcome.truncated:
        lines.append(f"[Output truncated: {outcome.total_bytes} bytes in all, over the cap of {cap}; "
                     "the first and the last part are shown. Redirect to a file or filter it.]")
    if outcome.timed_out:
        lines.append(f"[Timed out after {timeout:g} s; the command and everything it started were "
                     "killed. Pass a larger timeout or run less at once.]")
        return ToolResult.failed("\n".join(lines))
    if outcome.limit:
        lines.append(outcome.limit)
    lines.append(f"[Exit code: {outcome.exit_code}]")
    if outcome.exit_code != 0:
        return ToolResult.failed("\n".join(lines))
    return ToolResult.completed("\n".join(lines))


def sandbox_problem(ctx: ToolContext) -> str | None:
    """Why Bash runs without a sandbox (so every command asks), or None when it has one."""
    settings = Settings.from_context(ctx)
    if not settings.use_sandbox:
        return "the sandbox is turned off (tools-fs.sandbox: false in config.yaml)"
    _, problems = sandbox.parse_hide(settings.hide, ctx.project_root)
    _, env_problems = environment.parse_names(settings.env)
    problems += env_problems
    section = ctx.section("tools-fs")
    for key in ("home_read", "home_write", "unix_sockets"):
        problems += visibility.parse_paths(section.get(key), key)[1]
    if problems:  # the user meant to hide more: never run with less hidden than asked
        return "; ".join(problems)
    if sandbox.detect() is None:
        return sandbox.status_line(None).rstrip(".")
    return None


def _box(ctx: ToolContext) -> sandbox.Sandbox | None:
    return None if sandbox_problem(ctx) else sandbox.detect()


def view_for(ctx: ToolContext) -> sandbox.View:
    return sandbox.view(project_real(ctx.project_root), ctx.home, Settings.from_context(ctx).hide,
                        ctx.config, protected=getattr(ctx, "protected", ()))


def validate(args: dict, ctx: ToolContext) -> dict:
    command = args.get("command")
    if not isinstance(command, str) or not command.strip():
        raise InvalidArguments("command is empty.")
    timeout = args.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not 0 < timeout <= MAX_TIMEOUT):
        raise InvalidArguments(f"timeout must be a number of seconds between 1 and {MAX_TIMEOUT}.")
    return args


def run(args: dict, ctx: ToolContext) -> ToolResult:
    settings = Settings.from_context(ctx)
    timeout = float(args.get("timeout") or settings.timeout)
    box = _box(ctx)
    outcome = run_command(args["command"], project_real(ctx.project_root), timeout, settings.cap, box,
                          lambda: view_for(ctx), getattr(ctx, "progress", None), settings.env)
    return report(outcome, timeout, settings.cap)


DESCRIPTION = ("Run a shell command (/bin/sh -c) in the project folder and return its output "
               "(stdout and stderr together) and exit code. Default timeout "
               f"{DEFAULT_TIMEOUT} s unless configured; long output is cut in the middle. "
               "The environment holds only PATH, HOME, the locale and build variables. ")


def tool(box: "sandbox.Sandbox | None | Callable[[], sandbox.Sandbox | None]") -> Tool:
    """The Bash tool; its description tells the model whether it runs sandboxed.

    ``box`` may be a callable: the sandbox is then looked up only when the first request
    needs the description, so probing for it never delays start-up.
    """
    find = box if callable(box) else (lambda: box)
    return Tool(
        name="Bash",
        description=lambda: DESCRIPTION + sandbox.status_line(find()),
        parameters={"type": "object", "properties": {
            "command": {"type": "string", "description": "The command line."},
            "timeout": {"type": "number", "description": f"Seconds before it is killed (at most {MAX_TIMEOUT})."}},
            "required": ["command"], "additionalProperties": False},
        run=run, validate=validate,
        sandboxed=lambda args, ctx: _box(ctx) is not None,
    )
