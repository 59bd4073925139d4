"""Finding a sandbox and wrapping a command in it.

Linux: bubblewrap (``bwrap``). The whole file system is mounted read-only, the project
folder read-write on top, a fresh /dev, /proc and an empty private /tmp, /run and
$XDG_RUNTIME_DIR (host unix sockets live there); the network, PID and session are
unshared, and the sandbox dies with mino. Every capability is dropped and, where the
machine allows user namespaces, the command runs as an unprivileged user in one (as
``nobody`` when mino runs as root). Inside the project, the git dir (also what a ``.git``
file or ``commondir`` points to) and ``.mino/`` are read-only, and cannot be created when
missing; mino's home and the usual credential stores are hidden (see :func:`view`).

macOS: ``sandbox-exec`` with a profile that denies the network, every write outside the
project and a private temporary folder, writes to the git dir and ``.mino/``, and reads of
the hidden paths.

Detection runs a probe once per process (an installed bwrap can still be unusable: user
namespaces disabled, as in many containers), and it checks that a remount fails inside;
every caller waits for that one probe.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path

# Variables that look like credentials never reach a command the model wrote.
_SECRET = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.I)
_SECRET_PREFIXES = ("OPENAI_", "ANTHROPIC_", "AWS_", "AZURE_", "GOOGLE_", "GCP_", "GH_", "GITHUB_",
                    "HF_", "HUGGING", "MINO_", "MNEMO_", "SSH_", "GPG_", "NPM_", "PYPI_", "DOCKER_")


def scrubbed_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """A copy of the environment without anything that looks like a secret."""
    environ = dict(os.environ if environ is None else environ)
    return {k: v for k, v in environ.items()
            if not _SECRET.search(k) and not k.upper().startswith(_SECRET_PREFIXES)}


# Hidden inside the sandbox (an empty folder or an empty file), extended by
# ``tools-fs: {hide: [...]}``. mino's own home is always hidden as well.
DEFAULT_HIDE = ("~/.mino", "~/.ssh", "~/.aws", "~/.config/gh", "~/.netrc", "~/.pgpass",
                "~/.docker/config.json", "~/.docker/run", "~/.gnupg")
# Read-only even when the project contains them (``cd ~ && mino``): git reads them at the
# user's next git command anywhere (core.fsmonitor, core.hooksPath run programs).
HOME_READ_ONLY = ("~/.gitconfig", "~/.config/git")
# Where host unix sockets live (docker.sock, the session bus, gpg-agent): emptied.
SOCKET_DIRS = ("/run", "/var/run")
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
    emptied: tuple[Path, ...] = ()  # socket folders, mounted over before the project
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


def _journal(config: dict) -> Path | None:
    """Where the graph memory keeps its journal, when it is not in mino's home."""
    env = os.environ.get("MNEMO_MEMORY_JOURNAL")
    graph = ((config.get("memory") or {}) if isinstance(config.get("memory"), dict) else {}).get("graph")
    if env:
        return Path(env).expanduser()
    if isinstance(graph, dict) and isinstance(graph.get("journal"), str) and graph["journal"]:
        return Path(graph["journal"]).expanduser()
    return None


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

    def add(self, raw: Path, kind: str, must_exist: bool = False) -> None:
        """kind: "read_only" or "hidden"; ``must_exist``: a missing one is not creatable."""
        path = _real(raw)
        if _inside(self.project, path):
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

    def build(self, emptied: list[Path]) -> View:
        shut = self.read_only + self.hidden + self.placeholders
        # A missing path under a read-only one cannot be created anyway (nor its mount point).
        placeholders = [p for p in self.placeholders if not any(_inside(p, c) and p != c for c in shut)]
        covered = self.read_only + self.hidden + placeholders
        # A pin inside another mount would re-open a read-only folder; keep only outer ones.
        pins = [p for p in self.pins if not any(_inside(p, c) for c in covered)]
        return View(self.project, tuple(_outer(self.read_only)), tuple(placeholders),
                    tuple(pins), tuple(_outer(self.hidden)), tuple(emptied), tuple(self.problems))


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
         environ: dict[str, str] | None = None) -> View:
    """What a command in ``project`` sees: see :class:`View`.

    ``home`` is mino's home (hidden, and not creatable inside the project), ``hide`` the
    raw ``tools-fs.hide`` setting, ``config`` the whole configuration (for the journal).
    """
    environ = os.environ if environ is None else environ
    project = _real(project)
    builder = _Builder(project)
    for path in git_dirs(project):
        builder.add(path, "read_only", must_exist=True)
    builder.add(project / ".gitmodules", "read_only")
    for sub in submodules(project):
        for path in git_dirs(sub):
            builder.add(path, "read_only", must_exist=True)
    builder.add(project / ".mino", "read_only", must_exist=True)
    for name in HOME_READ_ONLY:
        builder.add(Path(name).expanduser(), "read_only")
    if home is not None:
        builder.add(Path(home), "hidden", must_exist=True)
    journal = _journal(config or {})
    if journal is not None:
        builder.add(journal, "hidden")
    extra, problems = parse_hide(hide, project)
    builder.problems.extend(problems)
    for path in [Path(p).expanduser() for p in DEFAULT_HIDE] + extra:
        builder.add(path, "hidden")
    return builder.build(_socket_dirs(project, environ))


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
    # bubblewrap: run in a new user namespace (as nobody when mino is root)
    userns: bool = False

    def wrap(self, argv: list[str], project: Path, tmp: Path | None = None,
             box_view: View | None = None) -> list[str]:
        """``argv`` run inside the sandbox with ``project`` writable and as the working folder."""
        box_view = box_view or View(_real(project))
        if self.kind == "bubblewrap":
            return [self.program, *self._identity(), *_bwrap_mounts(box_view),
                    "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                    "--new-session", "--die-with-parent",
                    "--chdir", str(box_view.project), "--", *argv]
        return [self.program, "-p", macos_profile(box_view, tmp), *argv]

    def _identity(self) -> list[str]:
        args = ["--cap-drop", "ALL"]
        if self.userns:
            args += ["--unshare-user", "--disable-userns"]
            if os.getuid() == 0:
                args += ["--uid", str(NOBODY), "--gid", str(NOBODY)]
        return args


def _bwrap_mounts(v: View) -> list[str]:
    root = str(v.project)
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    for path in v.emptied:
        args += ["--tmpfs", str(path)]
    # after the tmpfs mounts, so a project under /tmp stays visible and writable
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
    return "\n".join(lines)


# Fails unless the box holds no capability and cannot make its read-only root writable.
_PROBE_SCRIPT = r"""
grep -Eq '^CapEff:[[:space:]]*0+$' /proc/self/status || exit 10
grep -Eq '^CapPrm:[[:space:]]*0+$' /proc/self/status || exit 10
if command -v mount >/dev/null 2>&1; then mount -o remount,rw,bind / 2>/dev/null && exit 11; fi
test -w / && exit 12
exit 0
"""


def _probe(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=PROBE_TIMEOUT).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


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
                if _probe(box.wrap(["/bin/sh", "-c", _PROBE_SCRIPT], Path(folder))):
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
            "folders, the rest of the file system is read-only, mino's home and credential "
            "stores are hidden, /tmp is private and empty, and there is no network and no "
            "host unix socket.")


def _shown(path: Path) -> str:
    home = Path.home()
    return "~/" + str(path.relative_to(home)) if _inside(path, home) and path != home else str(path)


def hidden_note(home: Path | None, hide: object, project: Path) -> str:
    """Which paths the sandbox hides, for ``mino plugins`` (whether they exist or not)."""
    names = [f"mino home {_shown(Path(home).expanduser())}"] if home is not None else []
    extra, _ = parse_hide(hide, project)
    names += [_shown(Path(p).expanduser()) for p in DEFAULT_HIDE] + [_shown(p) for p in extra]
    names += [*SOCKET_DIRS, "$XDG_RUNTIME_DIR"]
    return ("hidden inside the sandbox: " + ", ".join(dict.fromkeys(names))
            + "; extend with tools-fs: {hide: [...]} in config.yaml")
