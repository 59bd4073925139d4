"""mino_core.entry_points reads what importlib.metadata reads, without importing it."""
import subprocess
import sys
from importlib import metadata

from mino_core import entry_points


def _key(ep):
    return ep.name, ep.value, ep.dist.name if ep.dist else "", ep.dist.version if ep.dist else ""


def test_same_entry_points_and_versions_as_importlib_metadata():
    for group in ("mino", "console_scripts", "pytest11"):
        want = sorted(_key(e) for e in metadata.entry_points(group=group))
        assert sorted(_key(e) for e in entry_points.entry_points(group)) == want
    assert entry_points.version("mino-core") == metadata.version("mino-core")
    assert entry_points.version("Mino_Memory.Graph") == metadata.version("mino-memory-graph")
    assert entry_points.version("no-such-distribution-here") is None


def test_a_distribution_on_sys_path_first_wins_and_loads(tmp_path, monkeypatch):
    for where, attr in ((tmp_path / "a", "first"), (tmp_path / "b", "second")):
        info = where / "demo_plugin-1.2.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: demo-plugin\nVersion: 1.2\n\nbody\n")
        (info / "entry_points.txt").write_text(
            f"# a comment\n[other]\nx = nope:nope\n\n[mino]\ndemo = demo_mod:{attr} [extra]\n")
        (where / "demo_mod.py").write_text("first = 'one'\nsecond = 'two'\n")
    monkeypatch.syspath_prepend(str(tmp_path / "b"))
    monkeypatch.syspath_prepend(str(tmp_path / "a"))
    (ep,) = [e for e in entry_points.entry_points("mino") if e.name == "demo"]
    assert (ep.value, ep.dist.name, ep.dist.version) == ("demo_mod:first [extra]", "demo-plugin", "1.2")
    assert ep.load() == "one"
    assert entry_points.version("demo_plugin") == "1.2"


def test_mino_plugins_starts_without_importing_importlib_metadata():
    code = ("import sys; from mino_core import entry_points as e; e.entry_points('mino'); "
            "e.version('mino-core'); print('importlib.metadata' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
