"""The plugin's hooks and ``mino memory ...`` commands, on a real journal in a temp home."""
import json
import subprocess
import sys

import click
from click.testing import CliRunner

from mino_core import PluginContext
from mino_memory_graph import plugin
from mino_memory_graph.store import Store


def _group(tmp_path, monkeypatch):
    monkeypatch.delenv("MNEMO_MEMORY_JOURNAL", raising=False)
    ctx = PluginContext(home=tmp_path, project_root=tmp_path, config={})

    @click.group()
    def memory():
        pass
    plugin.register_memory_commands(memory, ctx)
    return memory


def test_chosen_as_the_backend_over_another_unless_config_says_otherwise(tmp_path):
    from mino_core import hookimpl
    from mino_core.testing import plugin_host

    class Files:
        @hookimpl
        def memory_backend(self):
            return "files"

    def host(config):
        context = PluginContext(home=tmp_path, project_root=tmp_path, config=config)
        return plugin_host({"mino-memory-graph": plugin, "other": Files()}, context)

    chosen = host({})
    assert chosen.backend == "graph" and chosen.plugins["other"].status == "inactive"
    assert chosen.plugins["mino-memory-graph"].backend == "graph" and chosen.tools
    other = host({"memory": {"backend": "files"}})
    assert other.backend == "files" and other.plugins["mino-memory-graph"].status == "inactive"
    assert other.tools == {}  # an inactive backend offers no tools


def test_commands(tmp_path, monkeypatch):
    grp = _group(tmp_path, monkeypatch)
    s = Store.open(tmp_path / "graph" / "journal.jsonl")
    with s.write() as r:
        a = r.create_node("Aspect", "helm rollback")
        r.fact(a, "steps", "helm history then rollback with wait")
    with s.write() as r:
        r.fact(a, "steps", "helm rollback --wait")
    run = CliRunner().invoke
    out = run(grp, ["search", "helm rollback", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert set(data) >= {"query", "routed", "why", "results", "path", "scorer"}
    assert data["results"][0]["node"] == a and "state" in data["results"][0]
    assert run(grp, ["show", str(a)]).output.startswith("[Aspect/Semantic] helm rollback")
    hist = run(grp, ["history", str(a)]).output
    assert "superseded" in hist and "helm history then rollback" in hist
    assert run(grp, ["stats", "--json"]).exit_code == 0
    assert run(grp, ["check"]).exit_code == 0
    assert run(grp, ["forget", str(a)]).exit_code == 0
    assert json.loads(run(grp, ["search", "helm rollback", "--json"]).output)["results"] == []
    bad = run(grp, ["show", "999"])
    assert bad.exit_code == 1 and "node 999 does not exist" in bad.output
    assert "Traceback" not in bad.output
    with open(tmp_path / "graph" / "journal.jsonl", "ab") as fh:
        fh.write(b"garbage\n")
    chk = run(grp, ["check"])
    assert chk.exit_code == 1 and "1 line(s) quarantined" in chk.output


def test_plugin_import_is_light():
    code = ("import sys; import mino_memory_graph.plugin; "
            "print('numpy' in sys.modules, 'openai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": ":".join(sys.path)})
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_protected_paths_name_the_journal_folder_or_its_files(tmp_path, monkeypatch):
    """The sandbox hides what this declares: the journal's folder, or, when that folder
    holds the project, the journal and each file beside it."""
    from mino_core import PluginContext
    from mino_memory_graph import plugin

    monkeypatch.delenv("MNEMO_MEMORY_JOURNAL", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    away = tmp_path / "team" / "journal.jsonl"
    context = PluginContext(home=tmp_path / "home", project_root=project,
                            config={"memory": {"graph": {"journal": str(away)}}})
    assert plugin.protected_paths(context) == [(tmp_path / "team", "hidden")]
    beside = tmp_path / "journal.jsonl"  # its folder holds the project
    context.config["memory"]["graph"]["journal"] = str(beside)
    names = {p.name for p, access in plugin.protected_paths(context) if access == "hidden"}
    assert {"journal.jsonl", "journal.index", "journal.lock", "journal.corrupt", "embed"} <= names
    assert str(tmp_path) not in {str(p) for p, _ in plugin.protected_paths(context)}
    monkeypatch.setenv("MNEMO_MEMORY_JOURNAL", str(away))  # Mnemo's variable wins, as for every open
    assert (tmp_path / "team", "hidden") in plugin.protected_paths(context)
