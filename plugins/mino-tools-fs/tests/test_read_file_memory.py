"""Security issue 23, item 8: ``read_file`` reads at most what it shows.

A model (or a file it was told to read) can point read_file at a 1 GiB file; reading it
whole raised mino's resident memory by a gibibyte. Through the real ``mino -p`` against the
scripted server, on real sparse files (they take no disk), the peak resident size of the
mino process stays far below the file's size, and what the model reads is still right.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")
GIB = 1 << 30
# Generous: mino itself peaks near 100 MB; reading the file whole costs over 1,000 MB.
PEAK_BOUND_MB = 400


def _sparse(path, head: bytes):
    with open(path, "wb") as fh:
        fh.write(head)
        fh.truncate(GIB)  # the rest is a hole: reads as NUL bytes, stored as nothing


def _run_measured(args, env, tmp):
    """mino's own peak resident memory in MB (``wait4``'s rusage of that one child), its
    exit code, stdout and stderr."""
    with open(tmp / "out.txt", "w+") as out, open(tmp / "err.txt", "w+") as err:
        proc = subprocess.Popen([MINO, *args], env=env, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        out.seek(0)
        err.seek(0)
        return usage.ru_maxrss // 1024, proc.returncode, out.read(), err.read()


@pytest.fixture
def run_mino(tmp_path, scripted_server):
    project = tmp_path / "project"
    project.mkdir()
    env = isolated_env(tmp_path / "home")
    env.update(MINO_BASE_URL=scripted_server.base_url, MINO_PROJECT=str(project),
               MINO_PLUGINS="mino.policy,mino.skills,mino-tools-fs")

    def run(*args):
        return _run_measured(list(args), env, tmp_path)

    run.project = project
    return run


def _read(path, **extra):
    return {"calls": [{"name": "read_file", "arguments": {"path": path, **extra}}]}


def test_a_sparse_gibibyte_of_nul_bytes_is_not_read_into_memory(run_mino, scripted_server):
    _sparse(run_mino.project / "huge.bin", b"")
    scripted_server.add(_read("huge.bin"),
                        {"require": f"binary file of {GIB} bytes", "text": "It is binary."})
    peak, code, out, err = run_mino("-p", "what is in huge.bin?")
    assert code == 0, err
    assert out == "It is binary.\n" and scripted_server.failures == []
    assert peak < PEAK_BOUND_MB, f"mino peaked at {peak} MB reading a 1 GiB file"


def test_a_text_head_then_a_gibibyte_hole_shows_the_head_and_stays_small(run_mino,
                                                                         scripted_server):
    # 9,000 bytes of text, so the binary check (the first 8 KiB) sees text; then one
    # endless "line" of NUL bytes, which a line-at-a-time reader without a bound would keep.
    head = b"".join(b"line %04d of the head\n" % i for i in range(400))
    assert len(head) > 8192
    _sparse(run_mino.project / "huge.log", head)
    scripted_server.add(
        {"calls": [{"name": "read_file", "arguments": {"path": "huge.log", "offset": 399,
                                                       "limit": 2}},
                   {"name": "read_file", "arguments": {"path": "huge.log", "offset": 401}}]},
        {"require": ["   399\tline 0398 of the head", "   400\tline 0399 of the head",
                     f"of a {GIB}-byte file (the line limit)", "offset=401",
                     "   401\t", "line clipped at 2000 characters",
                     "[Stopped: line 401 goes on past 16 MiB; what follows it is not read."],
         "text": "Read it."})
    peak, code, out, err = run_mino("-p", "read the end of the head of huge.log")
    assert code == 0, err
    assert out == "Read it.\n" and scripted_server.failures == []
    assert peak < PEAK_BOUND_MB, f"mino peaked at {peak} MB reading a 1 GiB file"
