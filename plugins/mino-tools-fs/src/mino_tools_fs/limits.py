"""Resource limits of a sandboxed command: bounded tmpfs sizes and rlimits.

The sandbox's ``/tmp``, ``/dev/shm`` and empty home are tmpfs (RAM): each gets a size.
The command's processes get hard rlimits (set before bubblewrap starts, so nothing inside
can raise them): data memory, file size, process count, CPU seconds per process, open
files. The defaults fit a build (pip, pytest, a C compile); ``tools-fs: {limits: {...}}``
raises them. A cgroup is not used: it needs a delegated subtree mino cannot assume.

A command that hits a limit is reported as such (:func:`note`): the signal of a file-size
or CPU limit, or the error text of a full tmpfs, a refused allocation or fork.
"""
from __future__ import annotations

import resource
from dataclasses import dataclass, fields

from .boxexec import lower  # the helper's own loop: one way to lower a limit

MIB = 1 << 20


@dataclass(frozen=True)
class Limits:
    tmp_mb: int = 2048      # /tmp inside the sandbox
    shm_mb: int = 256       # /dev/shm
    home_mb: int = 512      # the empty home (and other emptied folders)
    memory_mb: int = 8192   # RLIMIT_DATA per process: heap and private mappings
    file_mb: int = 8192     # RLIMIT_FSIZE: the largest file a command writes
    processes: int = 4096   # RLIMIT_NPROC
    cpu_seconds: int = 1200  # RLIMIT_CPU per process (the wall-clock timeout also holds)
    open_files: int = 4096  # RLIMIT_NOFILE

    @classmethod
    def from_config(cls, value: object) -> "Limits":
        """``tools-fs.limits``; a missing or wrong entry keeps its default (config_schema
        already warned about it)."""
        if not isinstance(value, dict):
            return cls()
        given = {f.name: value[f.name] for f in fields(cls)
                 if isinstance(value.get(f.name), int) and not isinstance(value.get(f.name), bool)
                 and value[f.name] > 0}
        return cls(**given)

    def rlimits(self) -> list[tuple[int, int]]:
        return [(resource.RLIMIT_DATA, self.memory_mb * MIB), (resource.RLIMIT_FSIZE, self.file_mb * MIB),
                (resource.RLIMIT_NPROC, self.processes), (resource.RLIMIT_CPU, self.cpu_seconds),
                (resource.RLIMIT_NOFILE, self.open_files)]

    def preexec(self):
        """A function for Popen's ``preexec_fn``: lowers each limit (never raises one)."""
        wanted = self.rlimits()
        return lambda: lower(wanted)


SIGXCPU, SIGXFSZ = 24, 25


def note(exit_code: int | None, output: str, limits: Limits) -> str | None:
    """Why the command stopped, when a sandbox limit stopped it; else None. The output's
    words count only when the command failed: one that succeeded and printed "out of
    memory" (a grep of a log) was not stopped by anything."""
    if not exit_code:
        return None
    signal = -exit_code if exit_code < 0 else exit_code - 128 if exit_code > 128 else None
    if signal == SIGXFSZ or "File size limit exceeded" in output or "File too large" in output:
        return (f"[Stopped by the sandbox's file-size limit ({limits.file_mb} MiB a file); "
                "raise tools-fs.limits.file_mb in config.yaml if the build needs more.]")
    if signal == SIGXCPU or "CPU time limit exceeded" in output:
        return (f"[Stopped by the sandbox's CPU limit ({limits.cpu_seconds} s a process); "
                "raise tools-fs.limits.cpu_seconds in config.yaml if the build needs more.]")
    if "No space left on device" in output:
        return (f"[A sandbox folder is full: /tmp holds {limits.tmp_mb} MiB, /dev/shm "
                f"{limits.shm_mb} MiB, the home {limits.home_mb} MiB (tools-fs.limits.tmp_mb, "
                "shm_mb, home_mb in config.yaml); the project folder is not bounded.]")
    if any(t in output for t in ("Cannot allocate memory", "MemoryError", "out of memory",
                                 "std::bad_alloc")):
        return (f"[The sandbox bounds each process to {limits.memory_mb} MiB of data memory "
                "(tools-fs.limits.memory_mb in config.yaml).]")
    if "Resource temporarily unavailable" in output and "fork" in output:
        return (f"[The sandbox bounds the number of processes to {limits.processes} "
                "(tools-fs.limits.processes in config.yaml).]")
    return None
