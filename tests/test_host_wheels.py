"""Install as people do: the four distributions built as wheels, installed with pip into a
fresh virtual environment (not editable, nothing of this checkout on the path), and the
memory backend swaps as SPEC section 2 promises: the graph wins when installed, files
installed beside it stays inactive until ``memory.backend`` chooses it.

Skipped only when the wheels cannot be built offline (no setuptools and wheel beside this
Python; ``scripts/setup.sh --test`` installs both).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ("mino-tools-fs", "mino-memory-files", "mino-memory-graph")


def _sources(into: Path) -> dict[str, Path]:
    """A copy of each distribution's sources, so building leaves the checkout untouched."""
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "tests")
    core = into / "mino-core"
    core.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, core / name)
    shutil.copytree(ROOT / "mino_core", core / "mino_core", ignore=skip)
    out = {"mino-core": core}
    for name in PLUGINS:
        out[name] = into / name
        shutil.copytree(ROOT / "plugins" / name, out[name], ignore=skip)
    return out


@pytest.fixture(scope="module")
def wheels(tmp_path_factory) -> dict[str, Path]:
    try:
        import setuptools  # noqa: F401 - the offline build backend
        try:
            from setuptools.command import bdist_wheel  # noqa: F401 - setuptools >= 70.1
        except ImportError:
            import wheel  # noqa: F401 - older setuptools build wheels with it
    except ImportError:
        pytest.skip("no setuptools and wheel beside this Python (scripts/setup.sh --test installs "
                    "them): wheels cannot be built offline")
    base = tmp_path_factory.mktemp("wheels")
    out = base / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "--no-build-isolation", "--disable-pip-version-check", "-w", str(out),
                           *map(str, _sources(base).values())],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    built = {}
    for name in ("mino-core", *PLUGINS):
        [built[name]] = out.glob(name.replace("-", "_") + "-*.whl")
    return built


def test_each_distribution_builds_a_wheel_with_its_entry_point(wheels):
    import zipfile

    for name, wheel in wheels.items():
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            [points] = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
            text = archive.read(points).decode()
        if name == "mino-core":
            assert "mino = mino_core.cli:main" in text and "mino_core/base_instructions.md" in names
        else:
            assert f"{name} = " in text and "[mino]" in text


def test_pip_install_of_the_wheels_swaps_the_backend_as_promised(wheels, tmp_path):
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)  # this Python's pip installs into it (--python)
    bin_dir = env_dir / "bin"
    pip = [sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q",
           "--disable-pip-version-check", "-c", str(ROOT / "constraints.txt")]
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MINO_", "OPENAI_", "PYTHON", "VIRTUAL_ENV"))}
    env["MINO_HOME"] = str(home)

    def install(*names):
        done = subprocess.run([*pip, *(str(wheels[n]) for n in names)], capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-3000:]

    def mino(*args):
        done = subprocess.run([str(bin_dir / "mino"), *args], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def listing():
        data = json.loads(mino("plugins", "--json"))
        return data, {p["name"]: p for p in data["plugins"]}

    install("mino-core", "mino-memory-graph")
    where = subprocess.run([str(bin_dir / "python"), "-c", "import mino_core; print(mino_core.__file__)"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert where.stdout.startswith(str(env_dir)), "mino_core came from the checkout, not the wheel"
    data, plugins = listing()
    assert data["memory_backend"] == "graph" and data["errors"] == []
    assert set(plugins) == {"mino.apis", "mino.policy", "mino.skills", "mino.instructions",
                            "mino-memory-graph"}
    assert plugins["mino-memory-graph"]["status"] == "loaded"
    assert "search" in mino("memory", "--help")

    install("mino-memory-files")
    data, plugins = listing()
    assert data["memory_backend"] == "graph"  # graph still wins with both installed
    assert plugins["mino-memory-files"]["status"] == "inactive"
    assert plugins["mino-memory-graph"]["status"] == "loaded"

    (home / "config.yaml").write_text("memory:\n  backend: files\n")
    data, plugins = listing()
    assert data["memory_backend"] == "files" and "config.yaml" in data["memory_backend_reason"]
    assert plugins["mino-memory-graph"]["status"] == "inactive"
    assert sorted(plugins["mino-memory-files"]["tools"]) == ["memory_save", "memory_view"]
    commands = mino("memory", "--help")
    assert "doctor" in commands and "import-files" not in commands


THIRD_PARTY = ROOT / "tests" / "third_party" / "mino-sqlite-memory"


def test_a_third_party_backend_command_and_model_api_need_no_core_edit(wheels, tmp_path, scripted_server):
    """A plugin as a third party writes it (tests/third_party/mino-sqlite-memory, only
    mino_core's public API), built as a wheel and installed with mino-core and the graph
    backend in a fresh venv: ``memory.backend: sqlite`` chooses it over graph's higher
    priority, a turn runs through its own model API (``api: plain-chat``) and its
    front_input, ``mino memory list`` is its command, ``mino sqlite-count`` its top-level
    command; its session_start warning arrives as a notice."""
    import shutil as _shutil

    src = tmp_path / "src"
    _shutil.copytree(THIRD_PARTY, src, ignore=_shutil.ignore_patterns("*.egg-info", "build"))
    out = tmp_path / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                           "--no-build-isolation", "--disable-pip-version-check", "-w", str(out), str(src)],
                          capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    [plugin_wheel] = out.glob("mino_sqlite_memory-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    bin_dir = env_dir / "bin"
    done = subprocess.run([sys.executable, "-m", "pip", "--python", str(bin_dir / "python"), "install",
                           "-q", "--disable-pip-version-check", "-c", str(ROOT / "constraints.txt"),
                           str(wheels["mino-core"]), str(wheels["mino-memory-graph"]), str(plugin_wheel)],
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("MINO_", "OPENAI_", "PYTHON", "VIRTUAL_ENV"))}
    env.update(MINO_HOME=str(home), MINO_BASE_URL=scripted_server.base_url, MINO_PROJECT=str(tmp_path))

    def mino(*args, code=0):
        done = subprocess.run([str(bin_dir / "mino"), *args], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=120, stdin=subprocess.DEVNULL)
        assert done.returncode == code, done.stderr
        return done

    # Without config, graph's declared priority (100) beats sqlite's (5).
    data = json.loads(mino("plugins", "--json").stdout)
    assert data["memory_backend"] == "graph" and data["errors"] == []
    (home / "config.yaml").write_text("memory:\n  backend: sqlite\napi: plain-chat\n")
    data = json.loads(mino("plugins", "--json").stdout)
    mine = {p["name"]: p for p in data["plugins"]}
    assert data["memory_backend"] == "sqlite" and "config.yaml" in data["memory_backend_reason"]
    assert mine["mino-memory-graph"]["status"] == "inactive"
    assert mine["mino-sqlite-memory"]["status"] == "loaded"

    scripted_server.add({"text": "noted"}, {"require": ["Saved earlier in sqlite", "- the port is 8080"],
                                            "text": "it is 8080"})
    first = mino("-p", "the port is 8080")
    assert first.stdout == "noted\n" and "sqlite memory open for session" in first.stderr
    second = json.loads(mino("-p", "which port?", "--output-format", "json").stdout)
    assert second["answer"] == "it is 8080" and scripted_server.failures == []
    assert scripted_server.paths == ["/v1/chat/completions"] * 2  # its API, not /responses
    assert all(body.get("user") == "mino-sqlite-memory" for body in scripted_server.requests)
    assert (home / "sqlite-memory" / "memory.db").is_file() and not (home / "graph").exists()

    assert mino("memory", "list").stdout == "1: the port is 8080\n2: which port?\n"
    assert json.loads(mino("sqlite-count", "--json").stdout) == {"notes": 2}
    assert "sqlite-count" in mino("--help").stdout

    # A backend name nobody installed is one line naming the installed ones; exit 2.
    (home / "config.yaml").write_text("memory:\n  backend: vector\n")
    refused = mino("-p", "hi", code=2)
    assert "memory.backend: found 'vector' (text); allowed: one of graph, sqlite" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
