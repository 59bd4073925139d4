"""Issue 12, items 1-4 as an ordinary user (``nobody``): bubblewrap runs unprivileged there,
in a user namespace without the uid mapping root gets, so the same attacks are run again.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).parent
SETPRIV = shutil.which("setpriv")


def git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=cwd, check=True,
                   capture_output=True, timeout=60)


@pytest.fixture
def tree(bwrap):
    """A project, a mino home and a home folder that nobody owns (outside /tmp, which is private)."""
    if os.getuid() != 0:
        pytest.skip("already an ordinary user: test_sandbox_security.py covers this case")
    if SETPRIV is None:
        pytest.skip("setpriv is not installed, so the test cannot become nobody")
    from mino_core.testing import closed_to_others

    closed = closed_to_others(HERE / "nobody_attacks.py", sys.prefix)
    if closed:
        pytest.skip(f"nobody cannot reach {closed} (this checkout is inside a folder only its "
                    "owner may enter), so it cannot run the attacks from here")
    nobody = pwd.getpwnam("nobody")
    base = Path(tempfile.mkdtemp(prefix="mino-nobody-", dir="/var/tmp")).resolve()
    project, home, user = base / "project", base / "mino-home", base / "user"
    for folder in (project, home / "memory", home / "sessions", user / ".ssh"):
        folder.mkdir(parents=True)
    (home / "config.yaml").write_text("api_key: sk-live-SECRET\n")
    (home / "sessions" / "other.jsonl").write_text('{"text": "session SECRET"}\n')
    (user / ".ssh" / "id_x").write_text("PRIVATE KEY\n")
    (project / "a.txt").write_text("a\n")
    git(project, "init", "-q", ".")
    git(project, "add", "a.txt")
    git(project, "commit", "-q", "-m", "first")
    for path in [base, *base.rglob("*")]:
        os.lchown(path, nobody.pw_uid, nobody.pw_gid)
    base.chmod(0o755)
    sock_dir = Path(tempfile.mkdtemp(prefix="mino-sock-", dir="/run")) if os.access("/run", os.W_OK) else base
    sock_dir.chmod(0o755)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock_dir / "agent.sock"))
    os.chmod(sock_dir / "agent.sock", 0o777)
    server.listen()
    yield project, home, user, sock_dir / "agent.sock"
    server.close()
    shutil.rmtree(base, ignore_errors=True)
    shutil.rmtree(sock_dir, ignore_errors=True)


def as_nobody(argv: list[str], user: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "GIT_"))}
    env.update(HOME=str(user), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", *argv],
                          env=env, capture_output=True, text=True, timeout=300, cwd="/")


def nobody_can_run_mino(user: Path) -> str | None:
    """Why nobody cannot import mino from this interpreter (a clone in a folder only its
    owner can enter), or None."""
    done = as_nobody([sys.executable, "-c", "import mino_tools_fs"], user)
    return None if done.returncode == 0 else (
        "nobody cannot import mino from this venv (its folder is closed to others): "
        + (done.stderr.strip().splitlines() or ["?"])[-1])


def test_attacks_fail_as_nobody_too(tree, tmp_path):
    project, home, user, sock = tree
    why = nobody_can_run_mino(user)
    if why:
        pytest.skip(why)
    # nobody runs a copy of the script from a folder it can read (issue 26: the clone may
    # lie in a folder only its owner can enter)
    scripts = Path(tempfile.mkdtemp(prefix="mino-nobody-scripts-"))
    try:
        shutil.copy(HERE / "nobody_attacks.py", scripts / "nobody_attacks.py")
        scripts.chmod(0o755)
        (scripts / "nobody_attacks.py").chmod(0o644)
        done = as_nobody([sys.executable, str(scripts / "nobody_attacks.py"), str(project), str(home),
                          str(sock)], user)
    finally:
        shutil.rmtree(scripts, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["uid"] != 0 and out["box"] and out["sandboxed"], out  # a sandbox as nobody too
    assert "CapEff:\t0000000000000000" in out["caps"] and not out["escaped"]
    assert "SECRET" not in out["secrets"] and "PRIVATE KEY" not in out["secrets"]
    assert out["socket_outside"] and "Operation not permitted" in out["socket"]
    assert not out["payload_ran"], out["git"]
    assert "made" in out["project_write"]  # the project stays writable
    assert out["stray"] == [".git", "a.txt", "made.txt", "payload.sh"]  # no placeholder left
    assert not (project / ".mino").exists()
