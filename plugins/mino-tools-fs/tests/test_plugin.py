"""The plugin on a real host: its tools, the policy's votes on them, whole turns, the CLI."""
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from mino_core import Decision, Status, ToolCall
from mino_core.testing.harness import isolated_env
from mino_tools_fs import plugin, sandbox

NAME = "mino-tools-fs"
TOOLS = ["Bash", "edit_file", "list_files", "read_file", "search", "write_file"]
INSTALLED = any(ep.name == NAME for ep in metadata.entry_points(group="mino"))


@pytest.fixture
def harness(make_harness):
    """A fresh host with this plugin: from its entry point when installed, else in-process."""
    def make(**kw):
        extra = None if INSTALLED else {NAME: plugin}
        return make_harness(extra_plugins=extra, **kw)
    return make


def call(name, **arguments):
    return {"calls": [{"name": name, "arguments": arguments}]}


def test_registers_its_tools_on_a_fresh_host(harness):
    host = harness().session.host
    host.collect_tools()  # tools are collected on first use
    assert host.plugins[NAME].status == "loaded"
    assert sorted(host.plugins[NAME].tools) == TOOLS
    assert not [e for e in host.errors if NAME in e]
    schemas = {t.name: t.schema() for t in host.tools.values() if t.plugin == NAME}
    assert set(schemas["edit_file"]["parameters"]["properties"]) == {"path", "old_string", "new_string"}
    assert set(schemas["read_file"]["parameters"]["properties"]) == {"path", "offset", "limit"}
    assert set(schemas["list_files"]["parameters"]["properties"]) == {"path", "recursive"}
    assert set(schemas["search"]["parameters"]["properties"]) == {"pattern", "path"}
    assert set(schemas["write_file"]["parameters"]["properties"]) == {"path", "content"}
    assert set(schemas["Bash"]["parameters"]["properties"]) == {"command", "timeout"}


@pytest.mark.parametrize("mode,tool,args,verdict,show", [
    ("manual", "read_file", {"path": "a.txt"}, "allow", False),
    ("manual", "search", {"pattern": "x"}, "allow", False),
    ("manual", "write_file", {"path": "a.txt", "content": "x"}, "ask", False),
    ("accept-edits", "edit_file", {"path": "a.txt", "old_string": "a", "new_string": "b"}, "allow", True),
    ("bypass", "write_file", {"path": "a.txt", "content": "x"}, "allow", True),
])
def test_policy_votes_on_its_tools(harness, project, mode, tool, args, verdict, show):
    (project / "a.txt").write_text("a\n")
    session = harness(mode=mode).session
    votes = [v for _, v in session.host.call("decide_permission", call=ToolCall("c1", tool, args),
                                             tool=session.host.tools[tool], mode=mode, session=session)]
    worst = max(votes, key=lambda d: ["allow", "ask", "deny"].index(d.verdict))
    assert isinstance(worst, Decision) and (worst.verdict, worst.show) == (verdict, show)


def test_sandboxed_bash_runs_unasked_and_shown(bwrap, harness, scripted_server, project):
    h = harness(mode="manual", approve="none")
    scripted_server.add(call("Bash", command="echo hi > made.txt"), {"text": "done"})
    record = h.turn("make a file")
    assert not h.ui.asked and record.outcomes[0].result.status is Status.COMPLETED
    assert (project / "made.txt").read_text() == "hi\n"


def test_unsandboxed_bash_asks(harness, scripted_server, project):
    h = harness(mode="manual", approve="none", config={"tools-fs": {"sandbox": False}})
    scripted_server.add(call("Bash", command="echo hi > made.txt"), {"text": "ok"})
    record = h.turn("make a file")
    assert [a[0] for a in h.ui.asked] == ["Bash"]
    assert record.outcomes[0].result.status is Status.DENIED and not (project / "made.txt").exists()


def test_read_file_turn_runs_unasked(harness, scripted_server, project):
    (project / "notes.txt").write_text("the answer is 42\n")
    h = harness()
    scripted_server.add(call("read_file", path="notes.txt"),
                        {"require": "the answer is 42", "text": "It says 42."})
    record = h.turn("what does notes.txt say?")
    assert record.answer == "It says 42." and not h.ui.asked and not scripted_server.failures


def test_approved_edit_shows_the_diff_and_writes(harness, scripted_server, project):
    (project / "app.py").write_text("DEBUG = True\n")
    h = harness(approve="all")
    scripted_server.add(call("edit_file", path="app.py", old_string="True", new_string="False"),
                        {"require": "Edited app.py", "text": "done"})
    h.turn("turn debug off")
    tool, text, answer = h.ui.asked[0]
    assert tool == "edit_file" and 'Path: "app.py"' in text
    assert "-DEBUG = True" in text and "+DEBUG = False" in text
    assert (project / "app.py").read_text() == "DEBUG = False\n"


def test_denied_edit_writes_nothing(harness, scripted_server, project):
    (project / "app.py").write_text("DEBUG = True\n")
    h = harness(approve="none")
    scripted_server.add(call("write_file", path="app.py", content="gone\n"), {"text": "ok"})
    record = h.turn("rewrite it")
    assert record.outcomes[0].result.status is Status.DENIED
    assert (project / "app.py").read_text() == "DEBUG = True\n"


def test_file_changed_while_the_question_was_open_is_not_written(harness, scripted_server, project):
    target = project / "notes.txt"
    target.write_text("v1\n")

    def approve(tool, text):
        target.write_text("edited by hand while the question was open\n")
        return True

    h = harness(approve=approve)
    scripted_server.add(call("write_file", path="notes.txt", content="model\n"),
                        {"require": "changed after approval; nothing was written", "text": "ok"})
    record = h.turn("overwrite notes")
    result = record.outcomes[0].result
    assert result.status is Status.FAILED and "changed after approval" in result.output
    assert target.read_text() == "edited by hand while the question was open\n"
    assert not scripted_server.failures


def test_escape_is_refused_with_a_reason_the_model_reads(harness, scripted_server, project, outside):
    h = harness(mode="bypass")
    scripted_server.add(call("read_file", path="../outside/secret.txt"),
                        {"require": "outside the project", "text": "cannot"})
    record = h.turn("read the secret")
    assert record.outcomes[0].result.status is Status.INVALID_ARGUMENTS
    assert "outside secret" not in json.dumps(scripted_server.requests)


@pytest.mark.skipif(not INSTALLED, reason="mino-tools-fs is not installed")
def test_installed_entry_point_loads_in_mino_plugins(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    script = Path(sys.executable).with_name("mino")
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "mino_core.cli"]
    done = subprocess.run([*argv, "plugins", "--json"], capture_output=True, text=True,
                          env=isolated_env(home), timeout=60)
    assert done.returncode == 0, done.stderr
    entry = next(p for p in json.loads(done.stdout)["plugins"] if p["name"] == NAME)
    assert entry["status"] == "loaded" and sorted(entry["tools"]) == TOOLS
    assert entry["module"] == "mino_tools_fs.plugin"
    assert entry["notes"] and ("Sandboxed with" in entry["notes"][0] or "No sandbox found" in entry["notes"][0])


def test_plugin_notes_say_whether_bash_is_sandboxed(harness):
    host = harness().session.host
    notes = dict(host.call("plugin_notes", context=host.context))[NAME]
    box = sandbox.detect()
    assert notes[0] == sandbox.status_line(box)
    if box is not None:  # and what it lets a command see, write and reach
        text = "\n".join(notes)
        assert "sandbox sees: the file system read-only; the project folder" in text
        assert "empty, with visible again (read-only)" in text
        assert "sandbox hides: mino home " in text and "/run" in text and "$XDG_RUNTIME_DIR" in text
        assert "sandbox environment: only PATH, HOME" in text and "sandbox limits: /tmp 2048 MiB" in text
        assert "sandbox unix sockets: none can be made" in text
    host.context.config["tools-fs"] = {"sandbox": False}
    assert "sandbox turned off" in dict(host.call("plugin_notes", context=host.context))[NAME][0]
    host.context.config["tools-fs"] = {"hide": "~/.kube"}  # a bad value is named, and asks
    if box is not None:
        note = dict(host.call("plugin_notes", context=host.context))[NAME][0]
        assert "tools-fs.hide must be a list" in note and "every Bash command asks" in note


@pytest.mark.parametrize("why", ["missing", "turned off"])
def test_a_missing_sandbox_is_said_once_per_session(harness, scripted_server, project, monkeypatch, why):
    config = None
    if why == "missing":
        monkeypatch.setenv("PATH", "/nonexistent")
        sandbox.forget()
    else:
        config = {"tools-fs": {"sandbox": False}}
    try:
        h = harness(mode="manual", approve="all", config=config)
        scripted_server.add(call("Bash", command="echo one"), call("Bash", command="echo two"), {"text": "ok"})
        h.turn("run two commands")
        assert [a[0] for a in h.ui.asked] == ["Bash", "Bash"]  # no sandbox: each asks
        assert h.notices.count("Bash runs without a sandbox") == 1, h.notices
        assert ("No sandbox found" if why == "missing" else "turned off") in h.notices
    finally:
        sandbox.forget()


def test_the_schema_defaults_are_the_sandbox_limits():
    from mino_tools_fs.limits import Limits

    props = plugin.config_schema(None)["tools-fs"]["properties"]["limits"]["properties"]
    assert {k: v["default"] for k, v in props.items()} == Limits().__dict__


@pytest.mark.parametrize("key", ["home_read", "home_write", "unix_sockets", "env"])
def test_a_bad_sandbox_list_means_no_sandbox_and_says_why(ctx, key):
    from mino_tools_fs import bash

    ctx.config["tools-fs"] = {key: "not-a-list"}
    assert f"tools-fs.{key} must be a list" in bash.sandbox_problem(ctx)
