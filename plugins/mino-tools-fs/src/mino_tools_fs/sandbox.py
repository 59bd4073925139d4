"""Finding a sandbox and wrapping a command in it.

Linux: bubblewrap (``bwrap``). The whole file system is mounted read-only, the project
folder read-write on top, a fresh /dev, /proc and an empty private /tmp; the network,
PID and session are unshared, and the sandbox dies with mino. macOS: ``sandbox-exec`` with
a profile that denies the network and every write outside the project and a private
temporary folder. Detection runs a trivial command once, because an installed bwrap can
still be unusable (user namespaces disabled, as in many containers).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
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


# Inside the project but read-only in the sandbox: a hook or a config entry (core.hooksPath,
# core.fsmonitor) written there would run outside the sandbox at the user's next git command.
PROTECTED = (".git/hooks", ".git/config")


def protected_paths(project: Path) -> list[str]:
    return [str(project / rel) for rel in PROTECTED if os.path.lexists(project / rel)]


@dataclass(frozen=True)
class Sandbox:
    kind: str  # "bubblewrap" | "sandbox-exec"
    program: str

    def wrap(self, argv: list[str], project: Path, tmp: Path | None = None) -> list[str]:
        """``argv`` run inside the sandbox with ``project`` writable and as the working folder."""
        root = str(project)
        if self.kind == "bubblewrap":
            return [self.program,
                    "--ro-bind", "/", "/",
                    "--dev", "/dev",
                    "--proc", "/proc",
                    "--tmpfs", "/tmp",
                    # after the tmpfs, so a project under /tmp stays visible and writable
                    "--bind", root, root,
                    *[arg for path in protected_paths(project) for arg in ("--ro-bind", path, path)],
                    "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                    "--new-session", "--die-with-parent",
                    "--chdir", root, "--", *argv]
        return [self.program, "-p", macos_profile(project, tmp), *argv]


def macos_profile(project: Path, tmp: Path | None) -> str:
    """A sandbox-exec profile equivalent to the bubblewrap arguments above."""
    def quote(path: Path) -> str:
        return '"' + str(os.path.realpath(path)).replace("\\", "\\\\").replace('"', '\\"') + '"'

    writable = [f"(subpath {quote(project)})"]
    if tmp is not None:
        writable.append(f"(subpath {quote(tmp)})")
    protected = " ".join(f"(subpath {quote(project / rel)})" for rel in PROTECTED)
    return "\n".join([
        "(version 1)",
        "(allow default)",
        "(deny network*)",
        "(deny file-write*)",
        f"(allow file-write* {' '.join(writable)} (literal \"/dev/null\") (literal \"/dev/tty\")"
        " (regex #\"^/dev/fd/\"))",
        # later rules win in a profile: git hooks and config stay read-only
        f"(deny file-write* {protected})",
    ])


def _probe(argv: list[str]) -> bool:
    try:
        return subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.lru_cache(maxsize=1)
def detect() -> Sandbox | None:
    """The sandbox this machine offers, or None. Cached: checked once per process."""
    if sys.platform.startswith("linux"):
        program = shutil.which("bwrap")
        if program:
            box = Sandbox("bubblewrap", program)
            if _probe(box.wrap(["true"], Path(tempfile.gettempdir()))):
                return box
    elif sys.platform == "darwin":
        program = shutil.which("sandbox-exec") or ("/usr/bin/sandbox-exec"
                                                   if os.path.exists("/usr/bin/sandbox-exec") else None)
        if program:
            box = Sandbox("sandbox-exec", program)
            if _probe(box.wrap(["/usr/bin/true"], Path(tempfile.gettempdir()))):
                return box
    return None


def status_line(box: Sandbox | None) -> str:
    """One line for people and the model: which sandbox, or that there is none."""
    if box is None:
        setup = ("install bubblewrap (apt install bubblewrap / dnf install bubblewrap)"
                 if sys.platform.startswith("linux") else "sandbox-exec is part of macOS")
        return f"No sandbox found, so every Bash command asks first; {setup}."
    return (f"Sandboxed with {box.kind}: the project folder is writable, the rest of the file "
            "system is read-only, /tmp is private and empty, and there is no network.")
