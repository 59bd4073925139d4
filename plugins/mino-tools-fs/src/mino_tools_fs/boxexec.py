"""Start a long-running program in the sandbox from one plain command line (a helper).

Bash gives bubblewrap its socket filter as an open file descriptor and lowers the limits
in ``preexec_fn``; a program another plugin starts (an MCP server, through the
``sandbox_command`` hook) is started by code that passes neither. This helper does both
and then becomes the sandbox: it lowers each limit, opens the filter (``seccomp.py``,
beside it) where the command line says ``@seccomp@``, and execs the rest.

Only the standard library; run as ``python -I -S boxexec.py LIMITS_JSON -- ARGV...``
(``LIMITS_JSON``: ``[[resource, value], ...]``). A failure exits 125 with one line.
"""
import importlib.util
import json
import os
import resource
import sys

SECCOMP_WORD = "@seccomp@"


def fail(what):
    sys.stderr.write(f"mino sandbox: {what}\n")
    sys.exit(125)


def lower(limits):
    for kind, value in limits:
        soft, hard = resource.getrlimit(kind)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        try:
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass  # never raised, only lowered: a limit that cannot be set stays as it was


def filter_fd():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seccomp.py")
    spec = importlib.util.spec_from_file_location("mino_boxexec_seccomp", here)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fd = module.program_fd()
    if fd is None:
        fail("no socket filter for this machine")
    os.set_inheritable(fd, True)
    return fd


def main(argv):
    if "--" not in argv or len(argv) < 3:
        fail("usage: boxexec.py LIMITS_JSON -- ARGV...")
    rest = argv[argv.index("--") + 1:]
    if not rest:
        fail("no command")
    try:
        limits = [(int(k), int(v)) for k, v in json.loads(argv[0])]
    except (ValueError, TypeError):
        fail("bad limits")
    lower(limits)
    if SECCOMP_WORD in rest:
        fd = str(filter_fd())
        rest = [fd if a == SECCOMP_WORD else a for a in rest]
    try:
        os.execvp(rest[0], rest)
    except OSError as e:
        fail(f"cannot run {rest[0]}: {e.strerror}")


if __name__ == "__main__":
    main(sys.argv[1:])
