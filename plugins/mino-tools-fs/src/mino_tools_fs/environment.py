"""The environment a command the model wrote gets: an allow-list, not a scrub.

Only the names below (and what the person adds with ``tools-fs: {env: [...]}``) are
passed; everything else is dropped, whatever its name, because a secret can sit in any
value (``DATABASE_URL=postgres://u:pw@h/db``). From every value passed, a URL's password
is removed (``https://u:pw@proxy`` becomes ``https://u@proxy``).

Passed by default: what a shell and a build need. ``PATH`` and ``HOME`` (inside the
sandbox the home is an empty folder); the locale and terminal; the toolchain variables
compilers, Python, Node, Go, Rust and Java builds read (paths and flags, never
credentials). ``VIRTUAL_ENV``, ``CONDA_PREFIX`` and ``PYTHONPATH`` are paths a build in
an activated environment relies on; what they point to is read-only in the sandbox when
it is mino's own environment.
"""
from __future__ import annotations

import fnmatch
import os
import re

DEFAULT_NAMES = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM",
    "NO_COLOR", "TERMINFO", "PWD",
    # C and C++ toolchains
    "CC", "CXX", "CPP", "LD", "AR", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "MAKEFLAGS",
    "PKG_CONFIG_PATH", "LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH",
    # Python
    "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE",
    "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONHASHSEED", "PYTHONWARNINGS",
    # other toolchains
    "JAVA_HOME", "GOROOT", "GOFLAGS", "GOOS", "GOARCH", "CGO_ENABLED", "RUSTFLAGS", "NODE_ENV",
    "SOURCE_DATE_EPOCH", "CI",
)
DEFAULT_PREFIXES = ("LC_",)
# "scheme://user:password@" -> "scheme://user@"
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/@:\s]*):[^/@\s]*@")


def without_passwords(value: str) -> str:
    """``value`` with every URL's password left out (the user name stays)."""
    return _URL_PASSWORD.sub(r"\1\2@", value)


def parse_names(value: object) -> tuple[list[str], list[str]]:
    """The person's additions (``tools-fs.env``: names, ``*`` allowed), and problems."""
    if value is None:
        return [], []
    if not isinstance(value, list):
        return [], [f"tools-fs.env must be a list of variable names, not {type(value).__name__}"]
    names, problems = [], []
    for item in value:
        if isinstance(item, str) and re.fullmatch(r"[A-Za-z_*][A-Za-z0-9_*]*", item.strip()):
            names.append(item.strip())
        else:
            problems.append(f"tools-fs.env: {item!r} is not a variable name")
    return names, problems


def allowed(name: str, extra: list[str]) -> bool:
    return (name in DEFAULT_NAMES or name.startswith(DEFAULT_PREFIXES)
            or any(fnmatch.fnmatchcase(name, pattern) for pattern in extra))


def command_env(extra: object = None, environ: dict[str, str] | None = None,
                home: str | None = None) -> dict[str, str]:
    """The environment for one command: allow-listed names only, URL passwords removed;
    ``HOME`` set to ``home`` when given (the empty home inside the sandbox)."""
    environ = dict(os.environ if environ is None else environ)
    names, _ = parse_names(extra)
    env = {k: without_passwords(v) for k, v in environ.items() if allowed(k, names)}
    if home is not None:
        env["HOME"] = home
    env.setdefault("PATH", os.defpath)
    return env
