"""A plugin's life around sessions and the process: session_start, session_end and
host_shutdown in the real ``mino`` (normal end, a failed turn, Ctrl-C), plugins' commands
at the top level, and how plugins report (plugin_logger, notice)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from mino_core.testing import isolated_env, mino_command

LIFECYCLE = '''
import os, click
from mino_core import MemoryBackend, hookimpl, notice, plugin_logger

log = plugin_logger("mino.lifecycle-probe")

def _say(what):
    with open(os.environ["LIFECYCLE_LOG"], "a") as f:
        f.write(what + "\\n")

@hookimpl
def session_start(session):
    _say("start " + session.id)
    log.warning("probe warning %s", 42)
    log.info("probe info only in the log")

@hookimpl
def session_end(session):
    _say("end " + session.id)

@hookimpl
def host_shutdown(context):
    _say("shutdown")

@hookimpl
def front_input(turn):
    notice("probe notice from front_input")

@hookimpl
def register_commands(cli, context):
    @cli.command("probe-hello")
    @click.argument("name")
    def hello(name):
        click.echo("hello " + name + " \\x1b]0;title\\x07")

    @cli.command("sessions")
    def clash():
        click.echo("never")
'''

INACTIVE_BACKEND = '''
import click
from mino_core import MemoryBackend, hookimpl

@hookimpl
def memory_backend():
    return MemoryBackend("unused", priority=-1)

@hookimpl
def register_commands(cli, context):
    @cli.command("unused-backend-cmd")
    def cmd():
        pass
'''


def _install(site: Path, name: str, source: str) -> None:
    module = name.replace("-", "_")
    (site / f"{module}.py").write_text(source)
    dist = site / f"{module}-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(f"[mino]\n{name} = {module}\n")


@pytest.fixture
def probe(tmp_path, scripted_server):
    site = tmp_path / "site"
    site.mkdir()
    _install(site, "lifecycle-probe", LIFECYCLE)
    _install(site, "unused-backend", INACTIVE_BACKEND)
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    log = tmp_path / "lifecycle.txt"
    env = isolated_env(home)
    env.update(MINO_BASE_URL=scripted_server.base_url, MINO_PROJECT=str(project),
               PYTHONPATH=str(site), LIFECYCLE_LOG=str(log),
               MINO_PLUGINS="mino.apis,mino.policy,lifecycle-probe,unused-backend,mino-memory-files",
               MINO_MEMORY_BACKEND="files")

    class Probe:
        def run(self, *args, **kw):
            return subprocess.run([*mino_command(), *args], env=env, capture_output=True, text=True,
                                  timeout=60, stdin=subprocess.DEVNULL, **kw)

        def events(self):
            return log.read_text().split("\n")[:-1] if log.exists() else []

    Probe.env, Probe.home = env, home
    return Probe()


def test_a_run_starts_ends_and_shuts_down_once_each(probe, scripted_server):
    scripted_server.add({"text": "fine"})
    result = probe.run("-p", "hi", "--output-format", "stream-json")
    assert result.returncode == 0, result.stderr
    events = probe.events()
    assert [e.split()[0] for e in events] == ["start", "end", "shutdown"]
    assert events[0].split()[1] == events[1].split()[1]
    notices = [json.loads(line)["text"] for line in result.stdout.splitlines()
               if json.loads(line)["type"] == "notice"]
    # a plugin_logger warning and a notice() reach the person as notices, in stream-json too;
    # info goes to the log file only
    assert "probe warning 42" in notices and "probe notice from front_input" in notices
    assert "probe info only in the log" not in result.stdout + result.stderr
    logged = (probe.home / "logs" / "mino.log").read_text()
    assert "probe info only in the log" in logged and "probe warning 42" in logged


def test_a_failed_turn_still_ends_the_session_and_shuts_down(probe, scripted_server):
    scripted_server.add({"fail": {"status": 400, "times": 1, "message": "bad request"}})
    result = probe.run("-p", "hi")
    assert result.returncode == 1 and "bad request" in result.stderr
    assert [e.split()[0] for e in probe.events()] == ["start", "end", "shutdown"]


def test_ctrl_c_while_the_model_answers_still_shuts_down(probe, scripted_server):
    scripted_server.add({"text": "slow " * 200, "delay": 0.2})
    # SIGINT as a terminal has it: a suite started in the background (``&``) runs with it
    # ignored, and the child would inherit that
    proc = subprocess.Popen([*mino_command(), "-p", "hi"], env=probe.env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        for _ in range(600):  # until the request is in flight (no time bound on the run)
            if scripted_server.requests:
                break
            time.sleep(0.05)
        assert scripted_server.requests, "mino never sent its request"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert probe.events()[-1] == "shutdown" and "Traceback" not in err


def test_a_plugin_adds_a_top_level_command_and_a_clash_is_one_line(probe):
    result = probe.run("probe-hello", "world")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("hello world ") and "\x1b" not in result.stdout  # escaped
    assert "Plugin lifecycle-probe's command 'sessions' is not added: mino has a command" in result.stderr
    listing = probe.run("sessions")  # the core's own command still answers
    assert listing.returncode == 0 and "never" not in listing.stdout
    helped = probe.run("--help").stdout
    assert "probe-hello" in helped and "unused-backend-cmd" not in helped  # inactive backend: none
    assert probe.events()[-1] == "shutdown"  # a plugin command's host shuts down too


def test_words_that_name_no_command_are_still_the_first_message(probe, scripted_server):
    scripted_server.add({"text": "fixed"})
    result = probe.run("-p", "fix", "the", "bug")
    assert result.returncode == 0 and result.stdout == "fixed\n", result.stderr
    assert "fix the bug" in json.dumps(scripted_server.requests[-1])
    # with -p the words are the prompt: no second plugin host was built to look them up
    assert [e.split()[0] for e in probe.events()] == ["start", "end", "shutdown"]
