"""A home folder mino cannot enter, with no MINO_HOME: one line saying what to do, not
"unexpected error: PermissionError". Run as ``nobody`` (root enters every folder)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mino_core.testing import closed_to_others

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")
SETPRIV = shutil.which("setpriv")


@pytest.fixture
def locked_home():
    if os.getuid() != 0 or SETPRIV is None:
        pytest.skip("needs root and setpriv, to run mino as nobody (root enters every folder)")
    closed = closed_to_others(MINO, sys.prefix, Path(__file__).parents[1] / "mino_core" / "cli.py")
    if closed:
        pytest.skip(f"nobody cannot reach {closed} (a checkout inside a folder only its owner may enter)")
    base = Path(tempfile.mkdtemp(prefix="mino-home-", dir="/var/tmp"))
    base.chmod(0o755)
    user = base / "user"
    user.mkdir(mode=0o000)
    yield user
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("args", [["-p", "hi"], ["sessions"], []])
def test_an_unreadable_home_is_one_line(locked_home, args):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MINO_", "OPENAI_", "XDG_"))}
    env.update(HOME=str(locked_home), MINO_BASE_URL="http://127.0.0.1:9/v1")
    result = subprocess.run([SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", MINO, *args],
                            env=env, capture_output=True, text=True, timeout=120, cwd="/",
                            stdin=subprocess.DEVNULL)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [f"Cannot use the home folder {locked_home}/.mino: permission denied on the way to "
                     f"{locked_home}/.mino. Set MINO_HOME to a folder you own (export "
                     "MINO_HOME=/path/to/folder)."], result.stderr
