"""Finding a sandbox and wrapping a command in it.

Linux: bubblewrap (``bwrap``), built from what may be seen rather than from a list of
what to hide (docs/security.md has the whole model):

- the file system is mounted read-only, the project folder read-write on top; the home
  folders (the person's, /root, /home) are empty, except the folders opted in and what
  mino and the PATH run from, read-only (:mod:`.visibility`); /tmp, /dev/shm and the
  empty homes are bounded tmpfs (:mod:`.limits`); /run, /var/run and $XDG_RUNTIME_DIR
  are emptied;
- inside the project, the git dir (also what a ``.git`` file or ``commondir`` points to),
  ``.mino/``, mino's own code and what a write deny rule names are read-only; mino's
  home, what a read deny rule names (:mod:`.denied`) and what plugins declare through
  ``protected_paths`` are hidden;
- no network, PID, IPC or UTS of the host; no unix socket can be made (:mod:`.seccomp`);
  every capability dropped; a user namespace where the machine allows one, and when
  mino runs as root bubblewrap itself runs as an unprivileged host user
  (:mod:`.rootdrop`), so the command's uid is never 0 outside; rlimits on memory, file
  size, processes and CPU; the environment is an allow-list (:mod:`.environment`).

macOS: ``sandbox-exec`` with a profile that denies the network, every write outside the
project and a private temporary folder, writes to the git dir and ``.mino/``, and reads of
the hidden paths.

Detection runs a probe once per process (an installed bwrap can still be unusable: user
namespaces disabled, as in many containers), and it checks that a remount fails inside
and that a root-only file is not readable; every caller waits for that one probe.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

from . import denied, environment, seccomp, visibility
from .limits import Limits

# The home folders are empty inside the sandbox; this list matters only when the project
# contains the home (``cd ~ && mino``), where the home is the project: these are hidden
# there too, and ``tools-fs: {hide: [...]}`` adds to them. mino's home is always hidden.
DEFAULT_HIDE = ("~/.mino", "~/.ssh", "~/.aws", "~/.config/gh", "~/.netrc", "~/.pgpass",
                "~/.docker/config.json", "~/.docker/run", "~/.gnupg", "~/.git-credentials",
                "~/.config/git/credentials", "~/.npmrc", "~/.pypirc", "~/.kube",
                "~/.cargo/credentials", "~/.cargo/credentials.toml", "~/.config/gcloud",
                "~/.azure", "~/.bash_history", "~/.zsh_history", "~/.python_history",
                "~/.psql_history", "~/.mysql_history", "~/.local/share/fish/fish_history")
# Read-only when the project contains them (``cd ~ && mino``): git reads them at the
# user's next git command anywhere (core.fsmonitor, core.hooksPath run programs).
HOME_READ_ONLY = ("~/.gitconfig", "~/.config/git")
# Where host unix sockets live (docker.sock, the session bus, gpg-agent): emptied.
SOCKET_DIRS = ("/run", "/var/run")
FRESH_TMPFS = ("/tmp",)  # a fresh tmpfs inside: what lies there outside is not seen
# An unprivileged user for the command when mino runs as root.
NOBODY = 65534
# The probe starts a process; under heavy load that can take long, and giving up early
# would silently make every Bash command ask.
PROBE_TIMEOUT = 120


@dataclass(frozen=True)
class View:
    """What one command sees besides the read-only root, computed per call (.git may change).

    Every protected path inside the project is a mount point, so it cannot be renamed
    away; the folders between the project and it are bound onto themselves (``pins``) for
    the same reason. A protected path that is missing gets an empty read-only folder as
    a ``placeholder`` (git ignores an empty ``.git``), removed again after the command.
    """

    project: Path
    read_only: tuple[Path, ...] = ()
    placeholders: tuple[Path, ...] = ()
    pins: tuple[Path, ...] = ()
    hidden: tuple[Path, ...] = ()
    emptied: tuple[Path, ...] = ()  # socket folders and homes, mounted over before the project
    # visible again in an emptied folder, before the project: read-only, and writable
    shown: tuple[Path, ...] = ()
    shown_writable: tuple[Path, ...] = ()
    home: str | None = None  # HOME for the command
    limits: Limits = field(default_factory=Limits)
    env_extra: tuple[str, ...] = ()  # tools-fs.env
    sockets: tuple[Path, ...] = ()  # tools-fs.unix_sockets: allowed, so no socket filter
    problems: tuple[str, ...] = field(default=(), compare=False)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def git_dirs(project: Path) -> list[Path]:
    """The project's git dir and what a ``.git`` file or ``commondir`` points to."""
    entry = project / ".git"
    found = [entry]
    gitdir = entry
    if entry.is_file() and not entry.is_symlink():
        try:
            text = entry.read_text("utf-8", errors="replace")
        except OSError:
            text = ""
        match = re.match(r"gitdir:\s*(.+?)\s*$", text, re.M)
        if match:
            gitdir = _real(entry.parent / match.group(1))
            found.append(gitdir)
    try:
        common = (gitdir / "commondir").read_text("utf-8", errors="replace").strip()
    except OSError:
        common = ""
    if common:
        found.append(_real(gitdir / common))
    return found


def submodules(project: Path) -> list[Path]:
    """The submodule folders ``.gitmodules`` names: git status in the project runs git in
    each, with the git dir its ``.git`` file names."""
    try:
        text = (project / ".gitmodules").read_text("utf-8", errors="replace")
    except OSError:
        return []
    found = []
    for rel in re.findall(r"^\s*path\s*=\s*(.+?)\s*$", text, re.M):
        path = Path(os.path.normpath(project / rel.strip('"')))
        if path != project and _inside(path, project):
            found.append(path)
    return found


def parse_hide(value: object, project: Path) -> tuple[list[Path], list[str]]:
    """The user's extra hidden paths from ``tools-fs.hide``, and what was wrong with it."""
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [f"tools-fs.hide must be a list of paths, not {type(value).__name__}"]
    paths, problems = [], []
    for item in value:
        if not isinstance(item, str) or not item.strip() or "\0" in item:
            problems.append(f"tools-fs.hide: {item!r} is not a path")
            continue
        path = Path(item.strip()).expanduser()
        paths.append(path if path.is_absolute() else project / path)
    return paths, problems


def _stray_placeholder(path: Path, project: Path) -> bool:
    """An empty .git folder, or .mino in the project's top folder: git and mino ignore it,
    so it is taken for another sandbox's placeholder (the last command on the project
    removes it)."""
    if path.name != ".git" and (path.parent != project or path.name != ".mino") or path.is_symlink():
        return False
    try:
        if not path.is_dir():
            return False
        with os.scandir(path) as entries:
            return not any(entries)
    except OSError:
        return False


class _Builder:
    def __init__(self, project: Path):
        self.project = project
        self.read_only: list[Path] = []
        self.placeholders: list[Path] = []
        self.pins: list[Path] = []
        self.hidden: list[Path] = []
        self.problems: list[str] = []

    def _pin(self, path: Path) -> None:
        for folder in reversed(path.parents):
            if folder != self.project and _inside(folder, self.project) and folder not in self.pins:
                self.pins.append(folder)

    def _placeholder(self, path: Path) -> None:
        """An empty read-only folder at the first missing part of ``path``."""
        first = path
        while not first.parent.exists() and first.parent != self.project:
            first = first.parent
        if first.parent.is_dir() and not first.parent.is_symlink() and first not in self.placeholders:
            self._pin(first)
            self.placeholders.append(first)

    def add(self, raw: Path, kind: str, must_exist: bool = False, quiet: bool = False) -> None:
        """kind: "read_only" or "hidden"; ``must_exist``: a missing one is not creatable;
        ``quiet``: a path that contains the project is skipped without a problem."""
        try:
            path = _real(raw)
        except (OSError, ValueError):
            self.problems.append(f"{raw} is not a usable path")
            return
        if _inside(self.project, path):
            if not quiet:
                self.problems.append(f"{raw} is not hidden or read-only: it contains the project")
            return
        inside = _inside(path, self.project)
        if inside and must_exist and _stray_placeholder(path, self.project):
            self.placeholders.append(path)  # made by a sandbox still running, or left by a crash
        elif os.path.lexists(path):
            (self.read_only if kind == "read_only" else self.hidden).append(path)
            if inside:
                self._pin(path)
        elif inside and must_exist:
            self._placeholder(path)

    def build(self, emptied: list[Path], **extra) -> View:
        # a hidden path wins over a read-only one (a file both denied to read and write)
        self.read_only = [p for p in self.read_only if not any(_inside(p, h) for h in self.hidden)]
        shut = self.read_only + self.hidden + self.placeholders
        # A missing path under a read-only one cannot be created anyway (nor its mount point).
        placeholders = [p for p in self.placeholders if not any(_inside(p, c) and p != c for c in shut)]
        covered = self.read_only + self.hidden + placeholders
        # A pin inside another mount would re-open a read-only folder; keep only outer ones.
        pins = [p for p in self.pins if not any(_inside(p, c) for c in covered)]
        # nothing is mounted inside a hidden folder (its tmpfs is read-only)
        hidden = _outer(self.hidden)
        hidden = [p for p in hidden if not any(_inside(p, h) and p != h for h in hidden)]
        read_only = [p for p in _outer(self.read_only) if not any(_inside(p, h) for h in hidden)]
        return View(self.project, tuple(read_only), tuple(placeholders),
                    tuple(pins), tuple(hidden), tuple(emptied), problems=tuple(self.problems), **extra)


def _outer(paths: list[Path]) -> list[Path]:
    """Without duplicates, in order, so that a nested path is mounted after its parent."""
    return sorted(set(paths), key=lambda p: len(p.parts))


def _socket_dirs(project: Path, environ: dict[str, str]) -> list[Path]:
    candidates = [Path(p) for p in SOCKET_DIRS]
    if environ.get("XDG_RUNTIME_DIR"):
        candidates.append(Path(environ["XDG_RUNTIME_DIR"]))
    found: list[Path] = []
    for path in candidates:
        if path.is_symlink() or not path.is_dir():  # /var/run -> /run is covered by /run
            continue
        real = _real(path)
        if not any(_inside(real, f) for f in found):  # a project inside is bound back on top
            found.append(real)
    return found


def view(project: Path, home: Path | None = None, hide: object = None, config: dict | None = None,
         environ: dict[str, str] | None = None, protected: tuple = ()) -> View:
    """What a command in ``project`` sees: see :class:`View`.

    ``home`` is mino's home (hidden, and not creatable inside the project), ``hide`` the
    raw ``tools-fs.hide`` setting, ``config`` the whole configuration (deny rules, the
    tools-fs section), ``protected`` what plugins declared (ProtectedPath items).
    """
    environ = os.environ if environ is None else environ
    config = config or {}
    section = config.get("tools-fs") if isinstance(config.get("tools-fs"), dict) else {}
    project = _real(project)
    builder = _Builder(project)
    for path in git_dirs(project):
        builder.add(path, "read_only", must_exist=True)
    builder.add(project / ".gitmodules", "read_only")
    for sub in submodules(project):
        for path in git_dirs(sub):
            builder.add(path, "read_only", must_exist=True)
    builder.add(project / ".mino", "read_only", must_exist=True)
    # mino's own code: read-only in the project, and visible (read-only) in an emptied
    # home or under a fresh /tmp (a checkout in /tmp, as CI may make); elsewhere the
    # read-only root already holds it
    homes = [h for h in visibility.homes() if not _inside(project, h)]
    covered = homes + [_real(Path(p)) for p in FRESH_TMPFS]
    for path in visibility.own_code():
        if _inside(path, project) or any(_inside(path, c) for c in covered):
            builder.add(path, "read_only", quiet=True)
    if home is not None:
        builder.add(Path(home), "hidden", must_exist=True)
    for item in protected:
        builder.add(Path(item.path), "hidden" if item.access == "hidden" else "read_only")
    hidden, read_only, problems = denied.denied_paths(config, project)
    builder.problems.extend(problems)
    for path in hidden:
        builder.add(path, "hidden")
    for path in read_only:
        builder.add(path, "read_only")
    # The homes are emptied, unless one contains the project: then it is the project, and
    # the credential stores and git's own files in it are protected one by one.
    if _inside(project, _real(Path.home())) or _inside(_real(Path.home()), project):
        for name in HOME_READ_ONLY:
            builder.add(Path(name).expanduser(), "read_only")
    extra, problems = parse_hide(hide, project)
    builder.problems.extend(problems)
    for path in [Path(p).expanduser() for p in DEFAULT_HIDE] + extra:
        builder.add(path, "hidden")
    shown, problems = visibility.parse_paths(section.get("home_read"), "home_read")
    builder.problems.extend(problems)
    writable, problems = visibility.parse_paths(section.get("home_write"), "home_write")
    builder.problems.extend(problems)
    sockets, problems = visibility.parse_paths(section.get("unix_sockets"), "unix_sockets")
    builder.problems.extend(problems)
    shown += visibility.path_entries_in(homes, environ)
    names, problems = environment.parse_names(section.get("env"))
    builder.problems.extend(problems)
    emptied = _socket_dirs(project, environ)
    emptied += [h for h in homes if not any(_inside(h, e) for e in emptied)]
    exists = [p for p in (_real(p) for p in shown + sockets) if os.path.lexists(p)]
    # A hidden path in an emptied folder is not there anyway (no mount point is made for
    # it), unless a folder shown again holds it.
    again = exists + [_real(p) for p in writable]
    builder.hidden = [p for p in builder.hidden if _inside(p, project)
                      or not any(_inside(p, e) for e in emptied) or any(_inside(p, s) for s in again)]
    return builder.build(
        emptied, shown=tuple(dict.fromkeys(p for p in exists if not _inside(project, p))),
        shown_writable=tuple(dict.fromkeys(p for p in (_real(p) for p in writable)
                                           if p.is_dir() and not _inside(project, p))),
        home=str(Path.home()), limits=Limits.from_config(section.get("limits")),
        env_extra=tuple(names), sockets=tuple(_real(p) for p in sockets))


def _remove_placeholders(box_view: View) -> None:
    for path in reversed(box_view.placeholders):
        try:
            if path.is_dir() and not path.is_symlink():
                os.rmdir(path)  # only when still empty: never anything someone put there
        except OSError:
            pass


def _lock_file(project: Path) -> int | None:
    """A lock file per project and user, outside the project (and outside every sandbox)."""
    digest = hashlib.sha256(str(project).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"mino-sandbox-{os.getuid()}-{digest}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    if os.fstat(fd).st_uid != os.getuid():  # someone else's file: do not trust it
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def placeholders_held(project: Path):
    """Around one sandboxed command: the empty folders bubblewrap makes as mount points for
    missing protected paths are removed after it, but only by the last command running on
    the project in any mino process (a shared lock while running, then an exclusive try):
    removing a mount point unmounts it in every other sandbox still using it. Assign the
    command's view to the yielded list's first item. Without the lock they stay (git
    ignores an empty .git folder)."""
    fd = _lock_file(_real(project))
    held: list[View] = []
    if fd is None:
        yield held
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
        yield held
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            for box_view in held:
                _remove_placeholders(box_view)
        except OSError:
            pass  # another command runs on this project: it removes them when it ends
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Sandbox:
    kind: str  # "bubblewrap" | "sandbox-exec"
    program: str
    # bubblewrap: run in a new user namespace (as an unprivileged host user when mino is root)
    userns: bool = False

    def wrap(self, argv: list[str], project: Path, tmp: Path | None = None,
             box_view: View | None = None, seccomp_fd: int | None = None) -> list[str]:
        """``argv`` run inside the sandbox with ``project`` writable and as the working
        folder; ``seccomp_fd`` holds the socket filter (see :func:`launch`)."""
        box_view = box_view or View(_real(project))
        if self.kind == "bubblewrap":
            filter_args = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
            args = [self.program, *self._identity(), *_bwrap_mounts(box_view, self.dropped),
                    "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                    "--new-session", "--die-with-parent", *filter_args,
                    "--chdir", str(box_view.project), "--", *argv]
            if self.dropped:
                helper = str(Path(__file__).with_name("rootdrop.py"))
                return [sys.executable, "-I", "-S", helper, str(NOBODY), str(NOBODY),
                        str(box_view.project), "--", *args]
            return args
        return [self.program, "-p", macos_profile(box_view, tmp), *argv]

    @property
    def dropped(self) -> bool:
        """Whether bubblewrap starts as the unprivileged host user (mino is root)."""
        return self.kind == "bubblewrap" and self.userns and os.getuid() == 0

    def _identity(self) -> list[str]:
        args = ["--cap-drop", "ALL"]
        if self.userns:
            args += ["--unshare-user", "--disable-userns"]
        return args


@contextlib.contextmanager
def launch(box: Sandbox, argv: list[str], project: Path, box_view: View, tmp: Path | None = None):
    """The command line, the file descriptors to pass and the preexec function for one
    sandboxed command: yields ``(argv, pass_fds, preexec_fn)``; closes the filter after."""
    fd = None
    if box.kind == "bubblewrap" and not box_view.sockets:
        fd = seccomp.program_fd()
    try:
        wrapped = box.wrap(argv, project, tmp, box_view, fd)
        yield wrapped, ((fd,) if fd is not None else ()), box_view.limits.preexec()
    finally:
        if fd is not None:
            os.close(fd)


def _bwrap_mounts(v: View, dropped: bool = False) -> list[str]:
    root = str(v.project)
    mib = 1 << 20
    limits = v.limits
    args = ["--ro-bind", "/", "/", "--dev", "/dev",
            "--size", str(limits.shm_mb * mib), "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
            "--proc", "/proc", "--size", str(limits.tmp_mb * mib), "--tmpfs", "/tmp"]
    emptied = list(v.emptied)
    if dropped:  # the unprivileged user must be able to reach where the binds go
        dests = [v.project, *v.shown, *v.shown_writable, *v.read_only, *v.hidden, *v.placeholders]
        emptied += [p for p in _unreachable(dests, v.project) if not any(_inside(p, e) for e in emptied)]
    for path in _outer(emptied):
        args += ["--size", str(limits.home_mb * mib), "--tmpfs", str(path)]
    for path in _outer(list(v.shown_writable)):
        args += ["--bind", str(path), str(path)]
    for path in _outer(list(v.shown)):
        args += ["--ro-bind", str(path), str(path)]
    # after the tmpfs mounts, so a project under /tmp or a home stays visible and writable
    args += ["--bind", root, root]
    for path in v.pins:
        args += ["--bind", str(path), str(path)]
    for path in v.read_only:
        args += ["--ro-bind", str(path), str(path)]
    for path in v.placeholders:
        args += ["--tmpfs", str(path), "--remount-ro", str(path)]
    for path in v.hidden:
        if path.is_dir():
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
        else:
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def _unreachable(paths: list[Path], project: Path) -> list[Path]:
    """The outermost folders above ``paths`` that other users cannot enter (mode without
    o+x): emptied for the unprivileged user, who could not make the mounts below them.
    The project and what is in it are reached through the id-mapped mount instead."""
    found: list[Path] = []
    for path in paths:
        for folder in reversed(path.parents):
            if _inside(folder, project):
                break
            try:
                st = os.stat(folder)
            except OSError:
                break
            if not st.st_mode & 0o001 and st.st_uid != NOBODY:
                if folder not in found:
                    found.append(folder)
                break
    return found


def _quote(path: Path) -> str:
    return '"' + str(os.path.realpath(path)).replace("\\", "\\\\").replace('"', '\\"') + '"'


def macos_profile(box_view: View | Path, tmp: Path | None) -> str:
    """A sandbox-exec profile equivalent to the bubblewrap arguments above."""
    if not isinstance(box_view, View):
        box_view = view(box_view)
    project = box_view.project
    writable = [f"(subpath {_quote(project)})"]
    if tmp is not None:
        writable.append(f"(subpath {_quote(tmp)})")
    # sandbox-exec matches paths, so missing ones need no placeholder
    protected = [*box_view.read_only, *box_view.placeholders, project / ".git", project / ".mino"]
    hidden = [*box_view.hidden, *box_view.emptied]
    lines = [
        "(version 1)",
        "(allow default)",
        "(deny network*)",
        "(deny file-write*)",
        f"(allow file-write* {' '.join(writable)} (literal \"/dev/null\") (literal \"/dev/tty\")"
        " (regex #\"^/dev/fd/\"))",
        # later rules win in a profile: the git dir and .mino stay read-only
        f"(deny file-write* {' '.join(f'(subpath {_quote(p)})' for p in protected)})",
    ]
    if hidden:
        lines.append(f"(deny file-read* file-write* {' '.join(f'(subpath {_quote(p)})' for p in hidden)})")
    # what is shown again in an emptied home (later rules win), then what stays hidden in it
    again = [*box_view.shown, *box_view.shown_writable]
    if again:
        lines.append(f"(allow file-read* {' '.join(f'(subpath {_quote(p)})' for p in again)})")
    if box_view.shown_writable:
        lines.append(f"(allow file-write* {' '.join(f'(subpath {_quote(p)})' for p in box_view.shown_writable)})")
    if again and box_view.hidden:
        lines.append(f"(deny file-read* file-write* {' '.join(f'(subpath {_quote(p)})' for p in box_view.hidden)})")
    return "\n".join(lines)


# Fails unless the box holds no capability, cannot make its read-only root writable and,
# when mino is root, cannot read a root-only file (its uid would be 0 outside).
PROBE_SECRET = "/tmp/.mino-probe-root-only"
_PROBE_SCRIPT = r"""
grep -Eq '^CapEff:[[:space:]]*0+$' /proc/self/status || exit 10
grep -Eq '^CapPrm:[[:space:]]*0+$' /proc/self/status || exit 10
if command -v mount >/dev/null 2>&1; then mount -o remount,rw,bind / 2>/dev/null && exit 11; fi
test -w / && exit 12
if test -e /tmp/.mino-probe-root-only; then cat /tmp/.mino-probe-root-only >/dev/null 2>&1 && exit 13; fi
exit 0
"""


def _probe(argv: list[str], pass_fds: tuple = ()) -> bool:
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=PROBE_TIMEOUT,
                              pass_fds=pass_fds).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def probe_box(box: Sandbox, folder: Path) -> bool:
    """Whether ``box`` holds in ``folder``: the probe script, wrapped as a command is (the
    socket filter and limits included). As root, a root-only file is bound in: the
    command must not be able to read it."""
    secret = folder / "root-only"
    project = folder / "project"
    project.mkdir(exist_ok=True)
    box_view = View(_real(project))
    if os.getuid() == 0:
        fd = os.open(secret, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.write(fd, b"root only\n")
        os.close(fd)
        os.chmod(folder, 0o700)
    with launch(box, ["/bin/sh", "-c", _PROBE_SCRIPT], project, box_view) as (argv, fds, _):
        if os.getuid() == 0:
            at = argv.index("--chdir")
            argv = argv[:at] + ["--ro-bind", str(secret), PROBE_SECRET] + argv[at:]
        return _probe(argv, fds)


probes = 0  # how many times a probe ran in this process (tests check it is shared)


def _find() -> Sandbox | None:
    global probes
    probes += 1
    if sys.platform.startswith("linux"):
        program = shutil.which("bwrap")
        if not program:
            return None
        with tempfile.TemporaryDirectory(prefix="mino-probe-") as folder:
            for userns in (True, False):  # an unprivileged user where the machine allows it
                box = Sandbox("bubblewrap", program, userns)
                if probe_box(box, Path(folder)):
                    return box
    elif sys.platform == "darwin":
        program = shutil.which("sandbox-exec") or ("/usr/bin/sandbox-exec"
                                                   if os.path.exists("/usr/bin/sandbox-exec") else None)
        if program:
            box = Sandbox("sandbox-exec", program)
            if _probe(box.wrap(["/usr/bin/true"], Path(tempfile.gettempdir()))):
                return box
    return None


_lock = threading.Lock()
_found: list[Sandbox | None] = []


def detect() -> Sandbox | None:
    """The sandbox this machine offers, or None: probed once per process.

    The start-up thread and the first Bash call share one probe; whoever comes second
    waits for its answer instead of racing it.
    """
    with _lock:
        if not _found:
            _found.append(_find())
        return _found[0]


def forget() -> None:
    """Probe again at the next :func:`detect` (tests change PATH)."""
    with _lock:
        _found.clear()


def status_line(box: Sandbox | None) -> str:
    """One line for people and the model: which sandbox, or that there is none."""
    if box is None:
        setup = ("install bubblewrap (apt install bubblewrap / dnf install bubblewrap)"
                 if sys.platform.startswith("linux") else "sandbox-exec is part of macOS")
        return f"No sandbox found, so every Bash command asks first; {setup}."
    return (f"Sandboxed with {box.kind}: the project folder is writable except its .git and .mino "
            "folders and mino's own code, the rest of the file system is read-only, the home "
            "folders are empty (except folders opted in), mino's home is hidden, /tmp is "
            "private, empty and bounded, the environment holds only build variables, and "
            "there is no network and no unix socket.")


def _shown(path: Path) -> str:
    home = Path.home()
    return "~/" + str(path.relative_to(home)) if _inside(path, home) and path != home else str(path)


def notes(box_view: View, home: Path | None, hide: object) -> list[str]:
    """What the sandbox lets a command see, write and reach, for ``mino plugins``."""
    shown = [_shown(p) for p in box_view.shown]
    lines = [
        "sandbox sees: the file system read-only; the project folder "
        f"{box_view.project} writable; the home folders {', '.join(_shown(p) for p in box_view.emptied if p not in map(Path, SOCKET_DIRS))} "
        "empty, with visible again (read-only): " + (", ".join(shown) or "nothing")
        + (f"; writable: {', '.join(_shown(p) for p in box_view.shown_writable)}" if box_view.shown_writable else "")
        + " (add with tools-fs: {home_read: [...], home_write: [...]})",
        "sandbox keeps read-only in the project: .git, .gitmodules, .mino"
        + (f", {len(box_view.read_only)} path(s) of mino's own code, git and the deny rules" if box_view.read_only else ""),
        "sandbox hides: " + ", ".join(dict.fromkeys(
            [f"mino home {_shown(Path(home).expanduser())}"] * (home is not None)
            + [_shown(p) for p in box_view.hidden if not any(_inside(p, e) for e in box_view.emptied)]
            + [*SOCKET_DIRS, "$XDG_RUNTIME_DIR"])) + "; extend with tools-fs: {hide: [...]}",
        "sandbox environment: only " + ", ".join(environment.DEFAULT_NAMES[:6]) + ", LC_*, the "
        "toolchain variables" + (f" and {', '.join(box_view.env_extra)}" if box_view.env_extra else "")
        + " (add with tools-fs: {env: [...]}); URL passwords removed",
        f"sandbox limits: /tmp {box_view.limits.tmp_mb} MiB, /dev/shm {box_view.limits.shm_mb} MiB, "
        f"home {box_view.limits.home_mb} MiB, {box_view.limits.memory_mb} MiB data memory and "
        f"{box_view.limits.file_mb} MiB a file per process, {box_view.limits.processes} processes, "
        f"{box_view.limits.cpu_seconds} CPU s a process (tools-fs: {{limits: {{...}}}})",
    ]
    if box_view.sockets:
        lines.append("sandbox unix sockets: allowed by tools-fs.unix_sockets ("
                     + ", ".join(_shown(p) for p in box_view.sockets) + "), so the socket filter is off: "
                     "any socket the sandbox sees is reachable")
    elif seccomp.program() is None:
        lines.append("sandbox unix sockets: no socket filter for this machine's architecture; "
                     "sockets in folders the sandbox sees are reachable")
    else:
        lines.append("sandbox unix sockets: none can be made (a seccomp filter); allow named ones "
                     "with tools-fs: {unix_sockets: [...]}")
    return lines


def server_command(argv: list[str], project: Path, box: Sandbox, box_view: View,
                   network: bool = False) -> list[str] | None:
    """``argv`` as one self-contained command line that runs it in ``box`` (bubblewrap
    only), for a long-running program another plugin starts (``sandbox_command``): the
    same view and socket filter as Bash, the same limits but CPU time (a server lives as
    long as the session), and the network only when ``network``. The mount points made
    for missing protected paths stay while it runs (no command's end removes them)."""
    if box.kind != "bubblewrap":
        return None  # sandbox-exec takes its profile inline, but is not tested for servers
    filter_word = None if box_view.sockets else "@seccomp@"
    wrapped = box.wrap(argv, project, None, box_view, filter_word)
    if network:
        wrapped = [a for a in wrapped if a != "--unshare-net"]
    limits = [[int(k), int(v)] for k, v in box_view.limits.rlimits() if k != resource.RLIMIT_CPU]
    helper = str(Path(__file__).with_name("boxexec.py"))
    return [sys.executable, "-I", "-S", helper, json.dumps(limits), "--", *wrapped]
