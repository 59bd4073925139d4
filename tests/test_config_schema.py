"""config.yaml checked when mino starts: each bad value is one line naming the file, the
key, what was found and what is allowed; a core key's wrong value exits 2, a plugin's falls
back to its default with a warning; unknown keys get a "did you mean". Real processes,
real files."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mino_core.config import ConfigError, ensure_home
from mino_core.config_schema import CORE, check
from mino_core.testing.harness import isolated_env

_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")
PLUGINS = "mino.policy,mino.skills,mino-tools-fs,mino-memory-graph"


def run(home: Path, base_url: str, *args, **env):
    full = isolated_env(home)
    full.update(MINO_BASE_URL=base_url, MINO_PLUGINS=PLUGINS, MINO_PROJECT=str(home.parent))
    full.update(env)
    return subprocess.run([MINO, *(args or ("-p", "hi"))], env=full, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


# (config.yaml, the key the line names, what the line says)
CORE_ERRORS = [
    ("mode: bogus", "mode", "found 'bogus' (text); allowed: one of manual, accept-edits, bypass"),
    ("context_window: big", "context_window", "allowed: a whole number of at least 1024"),
    ("compaction: {threshold: high}", "compaction.threshold", "allowed: a number from 0.05 to 1"),
    ("compaction: {threshold: 2}", "compaction.threshold", "found 2 (a whole number)"),
    ("compaction: 0.8", "compaction", "allowed: a mapping"),
    ("permissions: {allow: 5}", "permissions.allow", "found 5 (a whole number); allowed: a list or text"),
    ("permissions: {deny: [5]}", "permissions.deny[0]", "allowed: text"),
    ("permissions: [Bash]", "permissions", "allowed: a mapping"),
    ("memory: 3", "memory", "found 3 (a whole number); allowed: a mapping"),
    # the installed (here: enabled) backends' names, as they declared them
    ("memory: {backend: cloud}", "memory.backend", "allowed: one of graph"),
    ("api_key: 12345", "api_key", "allowed: text"),
    ("base_url: localhost:8080", "base_url", "an http:// or https:// URL"),
    ("base_url: [a]", "base_url", "found a list of 1 item(s)"),
    ("model: {name: x}", "model", "found a mapping; allowed: text"),
    ("api: soap", "api", "allowed: one of auto, responses, chat"),
    ("timeout: soon", "timeout", "allowed: a number above 0"),
    ("timeout: 0", "timeout", "allowed: a number above 0"),
    ("retries: many", "retries", "allowed: a whole number from 0 to 10"),
    ("retries: -1", "retries", "found -1"),
    ("retry_backoff: slow", "retry_backoff", "allowed: a number of at least 0"),
    ("max_output_tokens: lots", "max_output_tokens", "allowed: a whole number of at least 0"),
    ("max_output_tokens: 1.5", "max_output_tokens", "found 1.5 (a number)"),
    ("turn_budget: forever", "turn_budget", "allowed: a number of at least 1"),
    ("models: 3", "models", "allowed: a mapping"),
    ("models: {gpt-x: 5}", "models.gpt-x", "allowed: a mapping"),
    ("models: {gpt-x: {context_window: big}}", "models.gpt-x.context_window", "a whole number"),
    ("models: {gpt-x: {max_output_tokens: true}}", "models.gpt-x.max_output_tokens", "found true (true/false)"),
]

# A plugin's own wrong value: a warning naming the plugin and the default it uses.
PLUGIN_WARNINGS = [
    ("tools-fs: {bash_timeout: soon}", "tools-fs.bash_timeout", "mino-tools-fs uses the default (120)"),
    ("tools-fs: {bash_timeout: 9000}", "tools-fs.bash_timeout", "a whole number from 1 to 600"),
    ("tools-fs: {sandbox: maybe}", "tools-fs.sandbox", "allowed: true or false; mino-tools-fs uses the default (true)"),
    ("tools-fs: {bash_output_cap: -1}", "tools-fs.bash_output_cap", "the default (30000)"),
    ("tools-fs: {read_lines: many}", "tools-fs.read_lines", "the default (2000)"),
    ("tools-fs: {read_bytes: 0}", "tools-fs.read_bytes", "the default (100000)"),
    ("tools-fs: {list_cap: x}", "tools-fs.list_cap", "the default (1000)"),
    ("tools-fs: {search_cap: [1]}", "tools-fs.search_cap", "the default (200)"),
    ("tools-fs: {limits: {tmp_mb: 0}}", "tools-fs.limits.tmp_mb", "the default (2048)"),
    ("tools-fs: 5", "tools-fs", "allowed: a mapping (key: value); mino-tools-fs uses its default"),
    ("memory: {graph: {scorer: fancy}}", "memory.graph.scorer", "mino-memory-graph uses the default (hybrid-v1)"),
    ("memory: {graph: {journal: 5}}", "memory.graph.journal", "found 5 (a whole number); allowed: a file's path"),
    ("memory: {graph: {index: off}}", "memory.graph.index", "unknown key"),
    ("memory: {graph: {reflect: always}}", "memory.graph.reflect", "the default (auto)"),
    ("memory: {graph: {episodes: sometimes}}", "memory.graph.episodes", "the default (on)"),
    ("memory: {graph: {guard: loud}}", "memory.graph.guard", "the default (on)"),
    ("memory: {graph: {episode_weight: 2}}", "memory.graph.episode_weight", "the default (0.8)"),
    ("memory: {graph: {vector_weight: heavy}}", "memory.graph.vector_weight", "the default (0.2)"),
    ("memory: {graph: {embedder: {kind: openai, model: m, timeout: soon}}}",
     "memory.graph.embedder.timeout", "the default (10)"),
    ("memory: {graph: 5}", "memory.graph", "mino-memory-graph uses its default"),
]

UNKNOWN = [
    ("modle: gpt-5", "modle", "unknown key (did you mean mode?)"),
    ("compaction: {threshhold: 0.5}", "compaction.threshhold", "did you mean threshold?"),
    ("tools-fs: {bash_timout: 5}", "tools-fs.bash_timout", "did you mean bash_timeout?"),
    ("memory: {backnd: files}", "memory.backnd", "did you mean backend?"),
    ("memory: {grph: {}}", "memory.grph", "did you mean graph?"),
    ("permisions: {allow: [read_file]}", "permisions", "did you mean permissions?"),
]


def _one_line(stderr: str, home: Path, key: str, text: str, kind: str) -> None:
    assert "Traceback" not in stderr and "unexpected error" not in stderr, stderr
    # the config's lines (the first turn's one-time memory notice names config.yaml too)
    lines = [line for line in stderr.splitlines()
             if "config.yaml" in line and line.startswith(("warning: ", "error: "))]
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"{kind}: {home / 'config.yaml'}: {key}: "), lines[0]
    assert text in lines[0], lines[0]


@pytest.mark.parametrize("yaml_text,key,text", CORE_ERRORS, ids=[c[0] for c in CORE_ERRORS])
def test_a_wrong_core_value_is_one_line_and_exit_2(tmp_path, scripted_server, yaml_text, key, text):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml_text + "\n")
    result = run(home, scripted_server.base_url)
    assert result.returncode == 2, result.stderr
    _one_line(result.stderr, home, key, text, "error")
    assert scripted_server.requests == [] and result.stdout == ""


@pytest.mark.parametrize("yaml_text,key,text", PLUGIN_WARNINGS + UNKNOWN,
                         ids=[c[0] for c in PLUGIN_WARNINGS + UNKNOWN])
def test_a_plugins_wrong_value_or_an_unknown_key_is_a_warning_and_mino_runs(
        tmp_path, scripted_server, yaml_text, key, text):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(yaml_text + "\n")
    scripted_server.add({"text": "fine"})
    result = run(home, scripted_server.base_url)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "fine\n"
    _one_line(result.stderr, home, key, text, "warning")


def test_every_core_key_is_in_the_table():
    tested = {key.split(".")[0].split("[")[0] for _, key, _ in CORE_ERRORS}
    assert tested == set(CORE["properties"])


def test_a_plugins_wrong_value_is_removed_so_its_default_applies():
    schemas = {"tools-fs": ("mino-tools-fs", {"type": "object", "properties": {
        "bash_timeout": {"type": "integer", "minimum": 1, "default": 120},
        "sandbox": {"type": "boolean"}}})}
    config = {"tools-fs": {"bash_timeout": "soon", "sandbox": False}, "mode": "bypass", "timeout": None}
    cleaned, report = check(config, Path("/h/config.yaml"), schemas)
    assert cleaned == {"tools-fs": {"sandbox": False}, "mode": "bypass"}  # a null is "not set"
    assert not report.errors and len(report.problems) == 1
    assert config["tools-fs"]["bash_timeout"] == "soon"  # the file's own data is not changed


def test_several_problems_are_one_line_each(tmp_path, scripted_server):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("mode: bogus\ntimeout: soon\ntools-fs: {sandbox: maybe}\nmodle: x\n")
    result = run(home, scripted_server.base_url)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert [line.split(": ")[0] for line in lines] == ["error", "error", "warning", "warning"]
    assert sorted(line.split(": ")[2] for line in lines) == ["mode", "modle", "timeout", "tools-fs.sandbox"]


def test_the_interactive_session_checks_config_too(tmp_path, scripted_server):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("mode: bogus\n")
    result = run(home, scripted_server.base_url, "fix", "it")
    assert result.returncode == 2 and "mode: found 'bogus'" in result.stderr
    result = run(home, scripted_server.base_url, "sessions")  # a listing still works
    assert result.returncode == 0


def test_allowed_modes_as_mino_reads_them(tmp_path):
    for value in ("Accept_Edits", "bypass", "MANUAL"):
        _, report = check({"mode": value}, tmp_path / "config.yaml")
        assert report.problems == [], value


# -- the home folder -----------------------------------------------------------------

def test_home_problems_are_one_line_each(tmp_path, scripted_server):
    afile = tmp_path / "afile"
    afile.write_text("x")
    cases = [
        (afile, "is a file, not a folder"),
        (afile / "home", "a part of the path is a file"),
    ]
    for sub in ("sessions", "logs", "graph", "memory"):
        home = tmp_path / f"home-{sub}"
        home.mkdir()
        (home / sub).write_text("not a folder")
        cases.append((home, f"{home / sub} (in MINO_HOME) is a file, not a folder"))
    # graph/ and memory/ are checked because their backends declare them (memory_backend)
    env = {"MINO_PLUGINS": PLUGINS + ",mino-memory-files", "MINO_MEMORY_BACKEND": "files"}
    for home, text in cases:
        result = run(home, scripted_server.base_url, **env)
        assert result.returncode == 2, (home, result.stderr)
        assert text in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr and "unexpected error" not in result.stderr


def test_a_full_disk_is_one_line(tmp_path, monkeypatch):
    import mino_core.config as config

    monkeypatch.setattr(config, "MIN_FREE_BYTES", 1 << 62)  # more than any disk has free
    with pytest.raises(ConfigError, match="No space left on the disk holding"):
        ensure_home(tmp_path / "home")


def test_an_unreadable_home_is_one_line(tmp_path, scripted_server):
    """chmod 000 on the home; as root (who reads everything) mino runs as nobody instead."""
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="mino-unreadable-"))
    try:
        base.chmod(0o755)
        home = base / "home"
        home.mkdir()
        env = isolated_env(home)
        env.update(MINO_BASE_URL=scripted_server.base_url, MINO_PLUGINS=PLUGINS, MINO_PROJECT=str(base),
                   HOME=str(base))
        extra = {}
        if os.geteuid() == 0:
            home.chmod(0o700)  # root's, so nobody may not enter it
            extra = {"user": 65534}
        else:
            home.chmod(0o000)
        try:
            result = subprocess.run([MINO, "-p", "hi"], env=env, capture_output=True, text=True, timeout=60,
                                    stdin=subprocess.DEVNULL, cwd=str(base), **extra)
        except (PermissionError, OSError) as exc:
            pytest.skip(f"cannot run mino as another user here: {exc}")
        finally:
            home.chmod(0o700)
        if extra and "Permission denied" in result.stderr and "home" not in result.stderr:
            pytest.skip("the installed mino is not readable by nobody")
        assert result.returncode == 2, result.stderr
        assert f"MINO_HOME {home} is not readable and writable by you" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_subcommands_check_too(tmp_path, scripted_server):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("memory: 3\n")
    for args in (["memory", "stats"], ["plugins"]):
        result = run(home, scripted_server.base_url, *args)
        assert result.returncode == 2, args
        _one_line(result.stderr, home, "memory", "found 3", "error")
    afile = tmp_path / "afile"
    afile.write_text("x")
    result = run(afile, scripted_server.base_url, "sessions")
    assert result.returncode == 2 and "is a file, not a folder" in result.stderr
    assert "Traceback" not in result.stderr and "unexpected error" not in result.stderr


def test_the_tools_fs_schema_names_the_plugins_own_defaults():
    from mino_tools_fs import bash, files, plugin

    props = plugin.config_schema(None)["tools-fs"]["properties"]
    assert props["bash_timeout"]["default"] == bash.DEFAULT_TIMEOUT
    assert props["bash_timeout"]["maximum"] == bash.MAX_TIMEOUT
    assert props["bash_output_cap"]["default"] == bash.DEFAULT_CAP
    assert props["read_lines"]["default"] == files.READ_LINES
    assert props["read_bytes"]["default"] == files.READ_BYTES
    assert props["list_cap"]["default"] == files.LIST_CAP
    assert props["search_cap"]["default"] == files.SEARCH_CAP


def test_every_plugin_key_is_in_the_table():
    """Each key a plugin declares has a wrong-value row (the sandbox's path and name lists
    are its own check: a bad one turns the sandbox off, tested in mino-tools-fs)."""
    from mino_memory_graph import plugin as graph
    from mino_tools_fs import plugin as tools_fs

    declared = {f"tools-fs.{k}" for k in tools_fs.config_schema(None)["tools-fs"]["properties"]}
    declared |= {f"memory.graph.{k}" for k in graph.config_schema(None)["memory.graph"]["properties"]}
    tested = {".".join(key.split(".")[:3] if key.startswith("memory.") else key.split(".")[:2])
              for _, key, _ in PLUGIN_WARNINGS}
    assert declared - tested == {"tools-fs.hide", "tools-fs.env", "tools-fs.home_read",
                                 "tools-fs.home_write", "tools-fs.unix_sockets"}


def test_a_plugins_bad_schema_or_a_second_claim_is_the_plugins_error(tmp_path, monkeypatch):
    from mino_core import hookimpl
    from mino_core.config_schema import plugin_schemas
    from mino_core.plugins import PluginContext
    from mino_core.testing import plugin_host

    monkeypatch.delenv("MINO_PLUGINS", raising=False)

    class Clock:
        @hookimpl
        def config_schema(self, context):
            return {"clock": {"type": "object", "properties": {"format": {"enum": ["12h", "24h"]}}}}

    class Copycat:
        @hookimpl
        def config_schema(self, context):
            return {"clock": {"type": "object"}}

    class Broken:
        @hookimpl
        def config_schema(self, context):
            return ["not", "a", "mapping"]

    context = PluginContext(home=tmp_path, project_root=tmp_path, config={})
    host = plugin_host({"a-clock": Clock(), "b-copycat": Copycat(), "c-broken": Broken()}, context)
    schemas = plugin_schemas(host)
    assert list(schemas) == ["clock"] and schemas["clock"][0] == "a-clock"
    errors = host.drain_errors()
    assert any("a-clock and b-copycat both declare the config section 'clock'" in e for e in errors)
    assert any("Plugin c-broken returned a config_schema that is not a mapping" in e for e in errors)
    cleaned, report = check({"clock": {"format": "13h"}}, tmp_path / "config.yaml", schemas)
    assert cleaned == {"clock": {}} and report.lines() == [
        f"warning: {tmp_path / 'config.yaml'}: clock.format: found '13h' (text); allowed: one of 12h, "
        "24h; a-clock uses its default"]


def test_a_graph_journal_path_that_cannot_be_a_file_is_one_line(tmp_path, scripted_server):
    afile, adir = tmp_path / "afile", tmp_path / "adir"
    afile.write_text("x")
    adir.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    for journal, why in ((afile / "journal.jsonl", f"({afile} is a file)"), (adir, "(a folder)")):
        (home / "config.yaml").write_text(f"memory: {{graph: {{journal: '{journal}'}}}}\n")
        scripted_server.add({"text": "fine"})
        result = run(home, scripted_server.base_url)
        assert result.returncode == 0, result.stderr
        _one_line(result.stderr, home, "memory.graph.journal", f"found '{journal}' {why}", "warning")
        assert "uses the default (<home>/graph/journal.jsonl)" in result.stderr
        assert "NotADirectoryError" not in result.stderr and "IsADirectoryError" not in result.stderr


def _immutable(path: Path, on: bool) -> bool:
    chattr = shutil.which("chattr")
    if chattr is None:
        return False
    return subprocess.run([chattr, "+i" if on else "-i", str(path)], capture_output=True).returncode == 0


@pytest.mark.parametrize("sub", ["", "sessions", "logs"])
def test_a_home_mino_cannot_write_is_one_line(tmp_path, scripted_server, sub):
    """An immutable folder (chattr +i) is one nobody may write, root included."""
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    (home / "logs").mkdir()
    target = home / sub if sub else home
    if not _immutable(target, True):
        pytest.skip("chattr +i is not available here")
    try:
        result = run(home, scripted_server.base_url)
    finally:
        _immutable(target, False)
    assert result.returncode == 2, result.stderr
    what = f"MINO_HOME {home}" if not sub else f"{target} (in MINO_HOME)"
    text = f"{what} is not readable and writable by you (mode 755). It is on a read-only disk " \
        "or marked immutable (lsattr)"
    assert text in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr and "unexpected error" not in result.stderr
