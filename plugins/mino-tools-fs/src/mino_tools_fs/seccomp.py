"""A small fixed seccomp program: no unix socket can be made inside the sandbox.

Connecting to a host unix socket (docker.sock, an agent, a database) needs a socket of
the ``AF_UNIX`` family; where such a socket lies in the file system does not matter, so
this blocks every one, listed or not, as Anthropic's sandbox-runtime does. The program
(classic BPF, handed to bubblewrap with ``--seccomp FD``):

- a foreign architecture (a 32-bit binary on x86_64, whose ``socketcall`` hides its
  arguments) or the x32 ABI: the process is killed;
- ``socket(AF_UNIX, ...)``: fails with EPERM ("Operation not permitted");
- ``io_uring_setup``: fails with EPERM (io_uring can make sockets past seccomp);
- everything else is allowed. ``socketpair`` stays allowed: it connects a process only
  to itself (asyncio and multiprocessing pipes use it).

Built for x86_64 and aarch64, the machines mino runs on; elsewhere there is no program
and :func:`program` returns None (``mino plugins`` says so).
"""
from __future__ import annotations

import os
import platform
import struct

# classic BPF opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_RET_K = 0x06
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000
RET_KILL_PROCESS = 0x80000000
EPERM = 1
AF_UNIX = 1
# seccomp_data: nr at 0, arch at 4, args[0] at 16 (the low half on little-endian machines)
_NR, _ARCH, _ARG0 = 0, 4, 16

# machine: (AUDIT_ARCH, socket, io_uring_setup, x32 bit or None)
ARCHES = {
    "x86_64": (0xC000003E, 41, 425, 0x40000000),
    "aarch64": (0xC00000B7, 198, 425, None),
}


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter as bytes of ``struct sock_filter``, or None on another machine."""
    arch = ARCHES.get(machine or platform.machine())
    if arch is None:
        return None
    audit, nr_socket, nr_uring, x32 = arch
    body = [("ld", _ARCH), ("jeq", audit, 0, "kill"), ("ld", _NR)]
    if x32 is not None:
        body.append(("jge", x32, "kill", 0))
    body += [("jeq", nr_uring, "deny", 0), ("jeq", nr_socket, 0, "allow"),
             ("ld", _ARG0), ("jeq", AF_UNIX, "deny", "allow")]
    labels = {"allow": len(body), "deny": len(body) + 1, "kill": len(body) + 2}
    out = []
    for i, item in enumerate(body):
        if item[0] == "ld":
            out.append(_ins(_LD_W_ABS, item[1]))
            continue
        op, k, jt, jf = item
        # jump offsets count from the next instruction
        jt = labels[jt] - i - 1 if isinstance(jt, str) else jt
        jf = labels[jf] - i - 1 if isinstance(jf, str) else jf
        out.append(_ins(_JEQ_K if op == "jeq" else _JGE_K, k, jt, jf))
    out += [_ins(_RET_K, RET_ALLOW), _ins(_RET_K, RET_ERRNO | EPERM), _ins(_RET_K, RET_KILL_PROCESS)]
    return b"".join(out)


def program_fd(machine: str | None = None) -> int | None:
    """A readable file descriptor holding the program (for ``--seccomp FD``), or None.
    The caller passes it to bubblewrap and closes it afterwards."""
    code = program(machine)
    if code is None:
        return None
    read, write = os.pipe()
    os.write(write, code)  # a few dozen bytes: far below a pipe's buffer
    os.close(write)
    return read
