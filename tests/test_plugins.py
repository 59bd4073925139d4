"""The plugin host: loading, narrowing, failures contained, duplicates loud, one backend."""
from __future__ import annotations

import inspect
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest

from mino_core import hookspecs
from mino_core.plugins import PluginContext, build_host

PLUGIN_SOURCE = '''
from mino_core import hookimpl, Tool, ToolResult

@hookimpl
def register_tools(context):
    return [Tool("{tool}", "t", {{"type": "object"}}, read_only=True,
                 run=lambda a, c: ToolResult.completed("x"))]
'''

BACKEND_SOURCE = '''
from mino_core import MemoryBackend, hookimpl
CALLS = []

@hookimpl
def memory_backend():
    return MemoryBackend("{backend}", priority={priority})

@hookimpl
def front_input(turn):
    CALLS.append(turn)
    return "from {backend}"
'''


@pytest.fixture
def make_plugins(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    for key in ("MINO_PLUGINS", "MINO_DISABLE_PLUGINS", "MINO_MEMORY_BACKEND", "MINO_STRICT_PLUGINS"):
        monkeypatch.delenv(key, raising=False)

    def make(**sources: str) -> list[EntryPoint]:
        eps = []
        for name, source in sources.items():
            module = f"fake_{name.replace('-', '_')}_{abs(hash(str(tmp_path))) % 10**6}"
            (tmp_path / f"{module}.py").write_text(source)
            eps.append(EntryPoint(name=name, value=module, group="mino"))
        return eps

    return make


def host_for(eps, config=None, tmp=Path("/tmp")):
    return build_host(PluginContext(home=tmp, project_root=tmp, config=config or {}), entry_points=eps)


def test_a_plugin_that_fails_to_import_is_reported_and_the_rest_load(make_plugins):
    eps = make_plugins(**{"good": PLUGIN_SOURCE.format(tool="good_tool"),
                          "broken": "raise RuntimeError('kaboom at import')"})
    host = host_for(eps)
    assert host.plugins["broken"].status == "failed"
    assert "kaboom at import" in host.plugins["broken"].error
    assert "good_tool" in host.tools
    [message] = host.errors
    assert "broken" in message and "MINO_DISABLE_PLUGINS=broken" in message and "\n" not in message


def test_strict_mode_reraises(make_plugins, monkeypatch):
    eps = make_plugins(broken="raise RuntimeError('kaboom')")
    monkeypatch.setenv("MINO_STRICT_PLUGINS", "1")
    with pytest.raises(RuntimeError):
        host_for(eps)


def test_duplicate_tool_names_name_both_plugins(make_plugins):
    eps = make_plugins(alpha=PLUGIN_SOURCE.format(tool="same"), beta=PLUGIN_SOURCE.format(tool="same"))
    host = host_for(eps)
    assert "same" not in host.tools
    [message] = host.errors
    assert "alpha" in message and "beta" in message and "'same'" in message


def test_allow_and_deny_lists_filter_before_import(make_plugins, monkeypatch):
    eps = make_plugins(good=PLUGIN_SOURCE.format(tool="good_tool"),
                       broken="raise RuntimeError('never imported')")
    monkeypatch.setenv("MINO_DISABLE_PLUGINS", "broken")
    host = host_for(eps)
    assert host.plugins["broken"].status == "disabled" and host.errors == []
    monkeypatch.delenv("MINO_DISABLE_PLUGINS")
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,good")
    host = host_for(eps)
    assert host.plugins["broken"].status == "disabled"
    assert host.plugins["mino.skills"].status == "disabled"
    assert host.plugins["good"].status == "loaded"


def test_the_highest_priority_backend_wins_by_default_and_config_or_env_choose(make_plugins, monkeypatch):
    eps = make_plugins(**{"mem-files": BACKEND_SOURCE.format(backend="files", priority=10),
                          "mem-graph": BACKEND_SOURCE.format(backend="graph", priority=100)})
    host = host_for(eps)
    assert host.backend == "graph" and "highest priority" in host.backend_reason
    assert host.plugins["mem-files"].status == "inactive"
    # The inactive backend's hooks are never called.
    assert [text for _, text in host.call("front_input", turn=None)] == ["from graph"]

    host = host_for(eps, config={"memory": {"backend": "files"}})
    assert host.backend == "files" and "config.yaml" in host.backend_reason
    monkeypatch.setenv("MINO_MEMORY_BACKEND", "graph")
    host = host_for(eps, config={"memory": {"backend": "files"}})
    assert host.backend == "graph" and "MINO_MEMORY_BACKEND" in host.backend_reason
    monkeypatch.setenv("MINO_MEMORY_BACKEND", "vector")
    host = host_for(eps)
    assert host.backend is None and "not installed" in host.errors[0]
    assert "(installed: files, graph)" in host.errors[0]


def test_priority_not_a_name_decides_and_a_bare_name_still_declares(make_plugins):
    """The core prefers no backend by name: a third party's with a higher priority than
    graph's wins; a plugin returning only a name is a backend of priority 0."""
    eps = make_plugins(**{"mem-graph": BACKEND_SOURCE.format(backend="graph", priority=100),
                          "mem-sqlite": BACKEND_SOURCE.format(backend="sqlite", priority=200),
                          "mem-bare": "from mino_core import hookimpl\n@hookimpl\n"
                                      "def memory_backend():\n    return 'bare'\n"})
    host = host_for(eps)
    assert host.backend == "sqlite" and host.plugins["mem-graph"].status == "inactive"
    assert host.backends["bare"].priority == 0 and host.plugins["mem-bare"].backend == "bare"


def test_a_malformed_backend_declaration_is_one_line_and_not_offered(make_plugins):
    eps = make_plugins(**{"mem-odd": "from mino_core import MemoryBackend, hookimpl\n@hookimpl\n"
                                     "def memory_backend():\n"
                                     "    return MemoryBackend('odd', folders=('../escape',))\n"})
    host = host_for(eps)
    assert host.backend is None and host.backends == {}
    [message] = host.errors
    assert "mem-odd returned" in message and "not offered" in message and "\n" not in message


def test_one_failing_hook_does_not_silence_the_others(make_plugins):
    eps = make_plugins(bad="from mino_core import hookimpl\n@hookimpl\ndef front_input(turn):\n    raise ValueError('bad hook')\n",
                       good="from mino_core import hookimpl\n@hookimpl\ndef front_input(turn):\n    return 'good text'\n")
    host = host_for(eps)
    assert [text for _, text in host.call("front_input", turn=None)] == ["good text"]
    assert "bad failed in front_input: ValueError: bad hook" in host.errors[0]


def test_core_policy_is_an_ordinary_plugin_that_can_be_blocked(make_plugins, monkeypatch):
    monkeypatch.setenv("MINO_DISABLE_PLUGINS", "mino.policy")
    host = host_for([])
    assert host.plugins["mino.policy"].status == "disabled"
    assert host.call("decide_permission", call=None, tool=None, mode="manual", session=None) == []


def test_every_hookspec_is_documented_with_an_example():
    specs = [f for name, f in inspect.getmembers(hookspecs, inspect.isfunction)
             if hasattr(f, "mino_spec")]
    assert {f.__name__ for f in specs} >= {"front_input", "register_tools", "decide_permission",
                                           "after_turn", "tool_outcome", "memory_backend",
                                           "register_commands", "register_memory_commands",
                                           "register_model_apis", "session_start", "host_shutdown"}
    for spec in specs:
        doc = inspect.getdoc(spec) or ""
        assert "Called" in doc and "Example::" in doc and "@hookimpl" in doc, spec.__name__


def test_every_hookspec_and_public_name_is_in_the_plugin_guide():
    """docs/plugins.md's table names every hook with its arguments, and the guide names
    every public export: a hook or a name added without its documentation fails here."""
    import mino_core

    guide = (Path(__file__).resolve().parent.parent / "docs" / "plugins.md").read_text()
    for name, spec in inspect.getmembers(hookspecs, inspect.isfunction):
        if hasattr(spec, "mino_spec"):
            args = ", ".join(inspect.signature(spec).parameters)
            assert f"| `{name}({args})` |" in guide, name
    assert [n for n in mino_core.__all__ if f"`{n}`" not in guide] == []


PROBE_RETURNS = {
    "register_tools": "[Tool('probe_tool', 'p', {'type': 'object'}, read_only=True, "
                      "run=lambda a, c: ToolResult.completed('probed'))]",
    "memory_backend": "'probe'", "front_input": "'probe front'", "instructions": "'probe rules'",
    "plugin_notes": "['probe note']",
}


def test_every_hookspec_is_called_by_the_core(tmp_path, monkeypatch, scripted_server, mino_home):
    """datasette's rule: a hook the core never calls is a hook that silently broke. An
    installed plugin (a real entry point) implements every hookspec; a session with a turn
    (started, ended, its host shut down), ``mino plugins``, ``mino --help`` and ``mino
    memory`` must between them call each one."""
    import json
    from importlib.metadata import entry_points

    from click.testing import CliRunner

    from mino_core.cli import cli
    from mino_core.testing import Harness

    names = [n for n, f in inspect.getmembers(hookspecs, inspect.isfunction) if hasattr(f, "mino_spec")]
    lines = ["import json, os", "from mino_core import hookimpl, Tool, ToolResult",
             "def _called(name):",
             "    if 'PROBE_LOG' not in os.environ:",  # host_shutdown of a CLI host at exit
             "        return",
             "    with open(os.environ['PROBE_LOG'], 'a') as f:",
             "        f.write(name + chr(10))"]
    for name in names:
        args = ", ".join(inspect.signature(getattr(hookspecs, name)).parameters)
        lines += ["@hookimpl", f"def {name}({args}):", f"    _called({name!r})",
                  f"    return {PROBE_RETURNS.get(name, 'None')}"]
    (tmp_path / "mino_probe_plugin.py").write_text("\n".join(lines) + "\n")
    dist = tmp_path / "mino_probe-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mino-probe\nVersion: 0\n")
    (dist / "entry_points.txt").write_text("[mino]\nmino-probe = mino_probe_plugin\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert "mino-probe" in {ep.name for ep in entry_points(group="mino")}
    log = tmp_path / "called.txt"
    monkeypatch.setenv("PROBE_LOG", str(log))
    monkeypatch.setenv("MINO_PLUGINS", "mino.policy,mino-probe")
    monkeypatch.setenv("MINO_MEMORY_BACKEND", "probe")

    project = tmp_path / "project"
    project.mkdir()
    h = Harness(scripted_server, mino_home, project, config={})
    scripted_server.add({"require": ["probe rules", "probe front"],
                         "calls": [{"name": "probe_tool", "arguments": {}}]}, {"text": "done"})
    record = h.turn("probe everything")
    assert record.outcomes[0].result.output == "probed" and scripted_server.failures == []
    h.close()  # session_end, host_shutdown
    runner = CliRunner()
    listing = runner.invoke(cli, ["plugins", "--json"], env={"MINO_HOME": str(mino_home)})
    [probe] = [p for p in json.loads(listing.output)["plugins"] if p["name"] == "mino-probe"]
    assert probe["status"] == "loaded" and probe["notes"] == ["probe note"]
    runner.invoke(cli, ["memory", "--help"], env={"MINO_HOME": str(mino_home)})
    runner.invoke(cli, ["--help"], env={"MINO_HOME": str(mino_home)})
    from mino_core import MemoryService  # the memory hooks other plugins reach (mino mcp serve)

    service = MemoryService(h.agent.host)
    assert service.search("probe") == [] and service.refusal("probe") is None
    # the sandbox other plugins ask for (mino-mcp's stdio servers): no answer, no sandbox
    assert h.agent.host.context.sandbox_command(["true"]) is None
    called = set(log.read_text().split())
    assert set(names) - called == set(), "hookspecs the core never called"
    assert set(probe["hooks"]) == set(names)


def test_plugin_notes_are_collected_per_plugin(make_plugins):
    eps = make_plugins(noted="from mino_core import hookimpl\n@hookimpl\ndef plugin_notes(context):\n    return ['no sandbox found']\n")
    host = host_for(eps)
    assert host.call("plugin_notes", context=host.context) == [("noted", ["no sandbox found"])]


def test_a_failed_plugin_keeps_mino_in_manual_mode(make_plugins, scripted_server, mino_home, project):
    """It may have been a plugin that denies calls: only the asking mode is safe without it."""
    from mino_core.testing import Harness

    eps = make_plugins(guard="raise ImportError('guard needs a missing package')")
    host = host_for(eps)
    h = Harness(scripted_server, mino_home, project, mode="bypass", config={})
    h.agent.host = host
    session = h.agent.new_session("bypass")
    assert session.mode == "manual"
    assert "Starting in manual mode, not bypass: plugin guard failed to load" in h.notices
    assert session.set_mode("accept-edits") is None and session.mode == "manual"
    assert "MINO_DISABLE_PLUGINS=guard" in h.notices
