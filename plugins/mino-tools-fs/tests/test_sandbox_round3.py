"""Issue 23: a sandbox built from what may be seen. Each attack runs through the real
``mino -p`` (round3_attacks.py), the real bubblewrap and real files, once as the user
the suite runs as (root in CI) and once as ``nobody``; the same check judges both.
"""
from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import importlib.util

import pytest

from mino_tools_fs import sandbox

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("round3_attacks", HERE / "round3_attacks.py")
attacks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(attacks)
SETPRIV = shutil.which("setpriv")


def outputs(result: dict) -> str:
    return "\n".join(result["outputs"])


# -- the checks: what must hold, whoever runs mino ------------------------------------------

def check_env_values(out):
    default = outputs(out["default"])
    for secret in ("dbpw-SECRET", "proxypw-SECRET", "pippw-SECRET", "dsnkey-SECRET", "sk-live-SECRET"):
        assert secret not in default
    assert "DATABASE_URL" not in default and "SENTRY_DSN" not in default  # not on the allow-list
    assert "PATH=" in default and "LANG=C.UTF-8" in default and "HOME=" in default
    added = outputs(out["added"])  # the person added HTTPS_PROXY: passed, without its password
    assert "PROXY=http://user@proxy:3128" in added and "proxypw" not in added


def check_home_files(out):
    default = outputs(out["default"])
    assert "SECRET" not in default and "pip cache entry" not in default
    for name in (".git-credentials", ".npmrc", ".unlisted-tool"):
        assert f"\n{name}\n" not in default  # the home is empty, not a list of hidden names
    opted = outputs(out["opted"])
    assert "pip cache entry" in opted and "SECRET" not in opted  # opted in, read-only
    assert "Read-only file system" in opted and not out["planted"]
    assert "sandbox sees:" in out["plugins"] and "empty, with visible again (read-only):" in out["plugins"]
    assert ".cache/pip" in out["plugins"]  # what the person opted in is listed


def check_root_files(out, shadow_line):
    text = outputs(out["result"])
    assert "root-only-SECRET" not in text and out["secret_after"] == "root-only-SECRET\n"
    if shadow_line:
        assert shadow_line not in text
    assert text.split("\n")[1].strip() != "0"  # not root inside either


def check_deny_rules(out):
    text = outputs(out["result"])
    assert "deny-SECRET" not in text and "pem-SECRET" not in text
    assert out["conf"] == "original\n" and "Read-only file system" in text
    assert out["ok"] and "made" in text  # the rest of the project stays writable


def check_hard_links(out):
    assert "link-SECRET" not in outputs(out["made"])
    read, cat = out["read"]["outputs"]
    assert read.startswith("status: denied") and "read_file(secrets/*)" in read
    assert "link-SECRET" not in cat


def check_own_code(out):
    assert "Read-only file system" in outputs(out["result"])
    assert not out["planted"] and not out["marker"] and out["again_rc"] == 0


def check_limits(out):
    tmp, shm, memory, after = out["tmpfs"]["outputs"]
    assert "No space left on device" in tmp and "[A sandbox folder is full: /tmp holds 4 MiB" in tmp
    assert "No space left on device" in shm
    assert "MemoryError" in memory and "256 MiB of data memory" in memory
    assert "still-usable" in after  # mino and the sandbox go on
    assert "file-size limit (2 MiB a file)" in outputs(out["files"]) and out["big"] <= 2 << 20


def check_unix_sockets(out):
    assert out["outside"] == "hello from the host\n"  # the control: reachable outside
    default = outputs(out["default"])
    assert "hello" not in default and "Operation not permitted" in default
    assert "hello from the host" in outputs(out["allowed"])  # named in tools-fs.unix_sockets


def check_protected_paths(out):
    if "skipped" in out:
        pytest.skip(out["skipped"])
    text = outputs(out["result"])
    assert "journal-SECRET" not in text and "Read-only file system" in text
    assert out["journal"].startswith('{"op": "fact", "text": "journal-SECRET"}\n')
    assert "\nx\n" not in out["journal"]


CHECKS = {name: globals()[f"check_{name}"] for name in attacks.ATTACKS}


def _shadow_line() -> str:
    try:
        return Path("/etc/shadow").read_text().splitlines()[0]
    except (OSError, IndexError):
        return ""


def judge(name, out):
    if name == "root_files":
        CHECKS[name](out, _shadow_line())
    else:
        CHECKS[name](out)


# -- as the suite's user (root in CI) ------------------------------------------------------

@pytest.fixture
def base(bwrap):
    folder = Path(tempfile.mkdtemp(prefix="mino-r3-", dir="/var/tmp")).resolve()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("name", list(attacks.ATTACKS))
def test_attack_fails(base, name):
    judge(name, attacks.run_attacks(base, [name])[name])


# -- as nobody -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def as_nobody():
    """Every attack once with mino running as ``nobody`` (through setpriv), from a copy of
    the script in a folder anyone can read (the clone may lie in a folder only its owner
    can enter)."""
    if os.getuid() != 0:
        pytest.skip("already an ordinary user: test_attack_fails covers this case")
    if SETPRIV is None:
        pytest.skip("setpriv is not installed, so the test cannot become nobody")
    box = sandbox.detect()
    if shutil.which("bwrap") is None or box is None or box.kind != "bubblewrap":
        pytest.skip("bubblewrap is not installed or not usable here")
    nobody = pwd.getpwnam("nobody")
    probe = subprocess.run([SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups", sys.executable,
                            "-c", "import mino_tools_fs"], capture_output=True, text=True, timeout=120, cwd="/")
    if probe.returncode != 0:
        pytest.skip("nobody cannot import mino from this venv (its folder is closed to others): "
                    + (probe.stderr.strip().splitlines() or ["?"])[-1])
    scripts = Path(tempfile.mkdtemp(prefix="mino-r3-scripts-"))
    base = Path(tempfile.mkdtemp(prefix="mino-r3-nobody-", dir="/var/tmp")).resolve()
    try:
        shutil.copy(HERE / "round3_attacks.py", scripts / "round3_attacks.py")
        for path in (scripts, scripts / "round3_attacks.py"):
            path.chmod(0o755)
        os.chown(base, nobody.pw_uid, nobody.pw_gid)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "GIT_", "MINO_"))}
        env.update(ROUND3_AS=json.dumps([SETPRIV, "--reuid=nobody", "--regid=nogroup", "--clear-groups"]),
                   ROUND3_UID=str(nobody.pw_uid), PYTHONDONTWRITEBYTECODE="1")
        done = subprocess.run([sys.executable, str(scripts / "round3_attacks.py"), str(base)],
                              env=env, capture_output=True, text=True, timeout=900, cwd="/")
        assert done.returncode == 0, done.stderr[-3000:]
        yield json.loads(done.stdout)
    finally:
        shutil.rmtree(scripts, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.parametrize("name", list(attacks.ATTACKS))
def test_attack_fails_as_nobody_too(as_nobody, name):
    judge(name, as_nobody[name])


# -- item 3: the probe refuses a sandbox whose uid is 0 outside ----------------------------

@pytest.mark.skipif(os.getuid() != 0, reason="a uid 0 outside exists only when mino runs as root")
def test_probe_refuses_a_sandbox_whose_user_is_root_outside(bwrap, tmp_path):
    """bubblewrap started as root maps the sandbox's nobody to uid 0 outside (how Bash ran
    before): the probe reads a root-only file through it and refuses it."""
    secret = tmp_path / "root-only"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    mapped_to_root = [bwrap.program, "--unshare-user", "--uid", "65534", "--gid", "65534",
                      "--cap-drop", "ALL", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                      "--tmpfs", "/tmp", "--ro-bind", str(secret), sandbox.PROBE_SECRET,
                      "--", "/bin/sh", "-c", sandbox._PROBE_SCRIPT]
    assert sandbox._probe(mapped_to_root) is False
    folder = tmp_path / "probe"
    folder.mkdir()
    assert sandbox.probe_box(bwrap, folder) is True and bwrap.dropped  # as the unprivileged user


def test_mino_installed_under_tmp_stays_visible_in_the_sandbox(bwrap, tmp_path, monkeypatch):
    """A checkout in /tmp (CI may clone there) holds the venv Bash's python comes from: the
    sandbox's fresh /tmp must still show it, read-only, or no build runs."""
    from mino_tools_fs import bash, visibility

    venv = tmp_path / "checkout" / ".venv" / "bin"
    venv.mkdir(parents=True)
    tool = venv / "tool.sh"
    tool.write_text("#!/bin/sh\necho mino tool ran\n")
    tool.chmod(0o755)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setattr(visibility, "_OWN", [tool.parent.parent.parent])
    view = sandbox.view(project)
    out = bash.run_command(f"{tool} && touch {tool}.planted", project, 60, 10_000, bwrap, view)
    assert "mino tool ran" in out.output and out.exit_code != 0  # seen, and read-only
    assert not (venv / "tool.sh.planted").exists()
