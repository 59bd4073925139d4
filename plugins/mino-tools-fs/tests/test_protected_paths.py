"""Issue 24 (part 1): a third party's plugin, installed in a fresh venv, declares its files
through ``protected_paths``; the sandbox hides or keeps them read-only and the default
policy asks before a tool writes there, with no line of mino naming that plugin."""
from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
import venv
from pathlib import Path

import pytest

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("round3_attacks", HERE / "round3_attacks.py")
attacks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(attacks)

PLUGIN = '''\
"""A third party's plugin: a vault of its own, and rules it alone may change."""
import os
from pathlib import Path

from mino_core import ProtectedPath, hookimpl

BASE = Path(os.environ["VAULT_BASE"])


@hookimpl
def protected_paths(context):
    return [ProtectedPath(BASE / "vault", "hidden"), (BASE / "rules.txt", "read-only"),
            (Path(context.project_root) / "generated", "read-only")]
'''


def install(env_dir: Path) -> Path:
    """A fresh venv that sees mino (this interpreter's site-packages) and has the plugin
    installed as a distribution with a ``mino`` entry point."""
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site = next((env_dir / "lib").glob("python3*/site-packages"))
    here = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "mino-here.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in here))
    (site / "vault_plugin.py").write_text(PLUGIN)
    dist = site / "vault_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: vault-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[mino]\nvault-plugin = vault_plugin\n")
    (dist / "RECORD").write_text("")
    return python


@pytest.fixture
def base(bwrap):
    folder = Path(tempfile.mkdtemp(prefix="mino-protected-", dir="/var/tmp")).resolve()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_third_party_plugin_protects_its_files(base):
    with attacks.ScriptedServer() as server:
        run = attacks.Run(base, "vault", server)
        python = install(run.base / "venv")
        (run.base / "vault").mkdir()
        (run.base / "vault" / "key").write_text("vault-SECRET\n")
        (run.base / "rules.txt").write_text("rule one\n")
        # reachable and writable by anyone: only the sandbox's mounts refuse them
        for path in (run.base.parent, run.base, run.base / "vault"):
            path.chmod(0o755)
        (run.base / "rules.txt").chmod(0o666)
        (run.project / "generated").mkdir()
        (run.project / "generated" / "out.txt").write_text("made by the plugin\n")
        argv = [str(python), "-c", "from mino_core.cli import main; main()"]
        env = {"VAULT_BASE": str(run.base), "MINO_PLUGINS": attacks.PLUGINS + ",vault-plugin"}
        listing = run.run([*argv, "plugins"], env)
        assert "vault-plugin" in listing.stdout and "[loaded]" in listing.stdout, listing.stdout
        result = run.mino(attacks.bash(f"cat {run.base}/vault/key; ls -A {run.base}/vault; "
                                       f"echo x >> {run.base}/rules.txt; echo x >> generated/out.txt; "
                                       "echo ok > mine.txt"), argv=argv, env=env)
        text = "\n".join(result["outputs"])
        assert "vault-SECRET" not in text and text.count("Read-only file system") == 2, text
        assert (run.base / "rules.txt").read_text() == "rule one\n"
        assert (run.project / "generated" / "out.txt").read_text() == "made by the plugin\n"
        assert (run.project / "mine.txt").read_text() == "ok\n"  # the rest of the project is not
        # The policy: a write there is never an ordinary project edit, so accept-edits asks
        # (headless, an ask is refused), while an ordinary edit runs.
        edits = run.mino(("write_file", {"path": "generated/out.txt", "content": "changed\n"}),
                         ("write_file", {"path": "notes.txt", "content": "fine\n"}),
                         argv=[*argv, "--mode", "accept-edits"], env=env)
        guarded, ordinary = edits["outputs"]
        assert guarded.startswith("status: denied"), edits  # it asked; headless, nobody said yes
        assert ordinary.startswith("status: completed"), edits
        assert (run.project / "generated" / "out.txt").read_text() == "made by the plugin\n"
