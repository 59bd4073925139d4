"""Registration on a fresh plugin manager, the installed entry point, and the CLI."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

from mino_core import PluginContext
from mino_core.testing import plugin_host
from mino_core.testing.harness import isolated_env
from mino_memory_files import plugin

FILES = {"memory": {"backend": "files"}}


def test_registers_on_a_fresh_manager(tmp_path):
    context = PluginContext(home=tmp_path, project_root=tmp_path, config=FILES)
    host = plugin_host({"mino-memory-files": plugin}, context)
    assert host.backend == "files" and host.errors == []
    assert sorted(host.tools) == ["memory_save", "memory_view"]
    assert set(host.plugins["mino-memory-files"].hooks) == {
        "memory_backend", "register_tools", "front_input", "register_memory_commands",
        "protected_paths", "memory_search", "memory_refusal"}


def test_memory_search_and_refusal_for_callers_outside_a_turn(tmp_path, put):
    """The hooks mino_core.MemoryService calls (mino mcp serve): words, then the filter."""
    from mino_core import MemoryService

    put(tmp_path / "memory", "uses-pnpm", "project", "This project installs with pnpm.",
        details="Never npm or yarn.")
    put(tmp_path / "memory", "ci-host", "reference", "The build server is ci-7.")
    context = PluginContext(home=tmp_path, project_root=tmp_path, config=FILES)
    service = MemoryService(plugin_host({"mino-memory-files": plugin}, context))
    [hit] = service.search("which package manager: pnpm or yarn?", 5)
    assert hit.ref == "uses-pnpm" and hit.text.startswith("- [project] uses-pnpm:")
    assert hit.source.endswith("uses-pnpm.md") and service.search("nothing matches", 5) == []
    # The core's detector, as every backend: a provider's key, a prose credential, not a
    # hash nor a flag (the files backend had patterns of its own, which missed the second)
    assert service.refusal("deploy with sk-live-0123456789abcdefXYZ") == "a secret (provider)"
    assert service.refusal("admin creds, admin / Tr0ub4dor-Staging-7") == "a secret (prose)"
    assert service.refusal("password: hunter22") and service.refusal("we use pnpm") is None
    assert service.refusal("commit 3f9c2a7e1b4d8c6f0a2e5b7d9c1f3a5e7b9d1c3f, flag "
                           "NODE_OPTIONS=--max-old-space-size=4096") is None


def test_loaded_by_the_host_as_the_files_backend(make_harness):
    h = make_harness(config=FILES)
    info = h.agent.host.plugins["mino-memory-files"]
    assert info.status == "loaded" and info.backend == "files"
    assert h.agent.host.backend == "files"
    assert {"memory_save", "memory_view"} <= set(h.agent.host.tools)
    assert "memory_delete" not in h.agent.host.tools


def _mino(home: Path, *args: str) -> subprocess.CompletedProcess:
    env = isolated_env(home)
    env["MINO_MEMORY_BACKEND"] = "files"
    script = Path(sys.executable).parent / "mino"  # the installed console script
    command = [str(script)] if script.exists() else [
        sys.executable, "-c", "from mino_core.cli import main; main()"]
    return subprocess.run([*command, *args],
                          env=env, capture_output=True, text=True, timeout=60, cwd=home)


def test_installed_smoke(tmp_path, put):
    home = tmp_path / "home"
    home.mkdir()
    put(home / "memory", "uses-pnpm", "project", "Uses pnpm.")
    (home / "memory" / "broken.md").write_text("nope")
    listing = _mino(home, "plugins", "--json")
    assert listing.returncode == 0, listing.stderr
    data = json.loads(listing.stdout)
    [mine] = [p for p in data["plugins"] if p["name"] == "mino-memory-files"]
    assert mine["status"] == "loaded" and mine["memory_backend"] == "files"
    assert mine["distribution"] == "mino-memory-files"
    assert sorted(mine["tools"]) == ["memory_save", "memory_view"]
    assert data["memory_backend"] == "files"
    doctor = _mino(home, "memory", "doctor")
    assert doctor.returncode == 1
    assert "  broken.md: memory file needs YAML front matter" in doctor.stdout


def _group(home: Path) -> click.Group:
    group = click.Group("memory")
    plugin.register_memory_commands(group=group, context=PluginContext(home=home, project_root=home,
                                                                config=FILES))
    return group


def test_cli_list_show_path_doctor(tmp_path, put):
    home = tmp_path / "home"
    directory = home / "memory"
    put(directory, "uses-pnpm", "project", "Uses pnpm.", "More text.\n")
    put(directory, "a-first", "user", "Prefers short answers.")
    runner = CliRunner()
    group = _group(home)
    assert sorted(group.commands) == ["doctor", "list", "path", "show"]

    out = runner.invoke(group, ["list"])
    assert out.exit_code == 0
    assert out.output == ("- [user] a-first: Prefers short answers.\n"
                          "- [project] uses-pnpm: Uses pnpm. (+details)\n")
    out = runner.invoke(group, ["show", "uses-pnpm"])
    assert out.exit_code == 0 and out.output == (directory / "uses-pnpm.md").read_text()
    assert runner.invoke(group, ["show", "../config"]).exit_code == 2
    assert runner.invoke(group, ["show", "absent"]).exit_code == 1
    out = runner.invoke(group, ["path"])
    assert out.output == f"{directory}\n"
    out = runner.invoke(group, ["doctor"])
    assert out.exit_code == 0 and "Every memory file loads." in out.output

    (directory / "broken.md").write_text("x")
    (directory / "uses-pnpm.md").rename(directory / "renamed.md")
    out = runner.invoke(group, ["doctor"])
    assert out.exit_code == 1
    assert f"Some memories in {directory} were not loaded:" in out.output
    assert "  broken.md: memory file needs YAML front matter" in out.output
    assert "  renamed.md: name 'uses-pnpm' in the front matter does not match" in out.output


def test_cli_on_an_empty_home(tmp_path):
    out = CliRunner().invoke(_group(tmp_path), ["list"])
    assert out.exit_code == 0 and out.output.startswith("No memories in ")
