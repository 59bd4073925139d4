"""The plugin installed: its entry point, mino mcp list, start-up cost, lifecycle hooks."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from mino_core.testing import isolated_env, mino_command
from mcptest import called, stdio_server


def mino(home, *args, timeout=180):
    return subprocess.run([*mino_command(), *args], env=isolated_env(home), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def configure(home, servers):
    (home / "config.yaml").write_text(yaml.safe_dump({"mcp": {"servers": servers}}))


def test_importing_the_plugin_does_not_import_the_sdk():
    code = ("import sys, mino_mcp.plugin; mino_mcp.plugin.config_schema(None); "
            "print('mcp' in sys.modules or 'pydantic' in sys.modules or 'mino_mcp.config' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


def test_listed_as_loaded(mino_home):
    out = mino(mino_home, "plugins", "--json")
    [me] = [p for p in json.loads(out.stdout)["plugins"] if p["name"] == "mino-mcp"]
    assert me["status"] == "loaded"
    assert {"register_tools", "session_start", "session_end", "host_shutdown",
            "register_commands"} <= set(me["hooks"])


def test_mcp_list_shows_servers_state_and_tools(mino_home, tmp_path):
    configure(mino_home, {"demo": stdio_server(), "dead": {"command": [sys.executable, "-c", "pass"],
                                                           "sandbox": False},
                          "boxed": {"command": "whatever"}})
    out = mino(mino_home, "mcp", "list", "--json")
    rows = {r["name"]: r for r in json.loads(out.stdout)["servers"]}
    assert rows["demo"]["state"] == "ready" and rows["demo"]["unsandboxed"] is True
    assert {"mcp__demo__add", "mcp__demo__echo", "mcp__demo__resources"} <= set(rows["demo"]["tools"])
    assert rows["dead"]["state"] == "failed" and "did not start" in rows["dead"]["error"]
    # sandboxed (the default): no such program inside the sandbox, or no sandbox at all
    assert rows["boxed"]["state"] == "failed" and rows["boxed"]["unsandboxed"] is False
    text = mino(mino_home, "mcp", "list").stdout
    assert "demo  [ready]  stdio:" in text and "tools: mcp__demo__add" in text


def test_mcp_list_without_servers_says_how_to_add_one(mino_home):
    out = mino(mino_home, "mcp", "list")
    assert out.returncode == 0 and "No MCP servers configured" in out.stdout


def test_a_session_server_starts_with_the_session_and_stops_with_it(harness, calls):
    from mino_mcp.plugin import servers_for

    h = harness({"demo": stdio_server(calls, start="session")})
    conn = servers_for(h.session.host.context).connections["demo"]
    h.session.host.collect_tools()  # waits for the start session_start began
    assert conn.state == "ready"
    h.end_session()
    assert conn.state == "stopped"


def test_host_shutdown_stops_every_server(harness):
    from mino_mcp.plugin import servers_for

    h = harness({"demo": stdio_server()})
    h.session.host.collect_tools()
    conn = servers_for(h.session.host.context).connections["demo"]
    assert conn.state == "ready"
    h.agent.host.shutdown()
    assert conn.state == "stopped"


def test_mino_p_calls_a_server_tool_and_leaves_no_server_behind(mino_home, tmp_path, scripted_server,
                                                                 calls):
    """The real mino, headless: the call is allowed with --allow, and when mino exits the
    server is gone (session_end and host_shutdown stopped it)."""
    import os

    project = tmp_path / "project"
    project.mkdir()
    pidfile = tmp_path / "server.pid"
    entry = stdio_server(calls)
    entry["command"] = [sys.executable, "-c",
                        f"import os, runpy, sys; open({str(pidfile)!r}, 'w').write(str(os.getpid())); "
                        f"sys.argv = [{entry['command'][1]!r}]; runpy.run_path(sys.argv[0], run_name='__main__')"]
    configure(mino_home, {"demo": entry})
    scripted_server.add({"calls": [{"name": "mcp__demo__add", "arguments": {"a": 20, "b": 22}}]},
                        {"text": "the sum is 42", "require": "42"})
    env = {**isolated_env(mino_home), "MINO_BASE_URL": scripted_server.base_url,
           "MINO_PROJECT": str(project), "OPENAI_API_KEY": "test"}
    out = subprocess.run([*mino_command(), "-p", "add them", "--allow", "mcp__demo__*"], env=env,
                         capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert "the sum is 42" in out.stdout and called(calls) == ["add"]
    pid = int(pidfile.read_text())
    deadline = __import__("time").monotonic() + 30
    while __import__("time").monotonic() < deadline:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (ProcessLookupError, FileNotFoundError):
            break
        if state == "Z":  # exited; an init that does not reap (a container) keeps the entry
            break
        __import__("time").sleep(0.2)
    else:
        raise AssertionError("the MCP server outlived mino")
