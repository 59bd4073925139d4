"""Issue 23: a build still works inside the sandbox, with the defaults. Through the real
``mino -p`` and sandboxed Bash (as root in CI, so through the unprivileged host user and
the id-mapped project): a project venv is made, a local package is pip-installed into it
(offline: its build backend lies in the package), and a small project's tests run with
pytest."""
from __future__ import annotations

import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("round3_attacks", HERE / "round3_attacks.py")
attacks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(attacks)

BACKEND = '''\
"""A build backend in 30 lines: the package needs nothing from an index to build."""
import base64, hashlib, os, zipfile

NAME, VERSION = "tinypkg", "0.1"
DIST = f"{NAME}-{VERSION}.dist-info"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    wheel = f"{NAME}-{VERSION}-py3-none-any.whl"
    files = {"tinypkg/__init__.py": open("tinypkg/__init__.py", "rb").read(),
             f"{DIST}/METADATA": f"Metadata-Version: 2.1\\nName: {NAME}\\nVersion: {VERSION}\\n".encode(),
             f"{DIST}/WHEEL": b"Wheel-Version: 1.0\\nGenerator: tiny\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"}
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w") as z:
        for path, data in files.items():
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{DIST}/RECORD,,")
        z.writestr(f"{DIST}/RECORD", "\\n".join(record) + "\\n")
    return wheel
'''


@pytest.fixture
def base(bwrap):
    folder = Path(tempfile.mkdtemp(prefix="mino-build-", dir="/var/tmp")).resolve()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_pip_install_and_pytest_work_in_the_sandbox_with_the_defaults(base):
    with attacks.ScriptedServer() as server:
        run = attacks.Run(base, "build", server)
        pkg = run.project / "pkg"
        (pkg / "tinypkg").mkdir(parents=True)
        (pkg / "tinypkg" / "__init__.py").write_text("VALUE = 42\n")
        (pkg / "backend.py").write_text(BACKEND)
        (pkg / "pyproject.toml").write_text('[build-system]\nrequires = []\nbuild-backend = "backend"\n'
                                            'backend-path = ["."]\n')
        (run.project / "calc.py").write_text("def add(a, b):\n    return a + b\n")
        (run.project / "tests").mkdir()
        (run.project / "tests" / "test_calc.py").write_text(
            "import os, tempfile\nfrom calc import add\n\n\ndef test_add(tmp_path):\n"
            "    (tmp_path / 'x').write_text('scratch')\n    assert add(2, 3) == 5\n")
        (run.project / "conftest.py").write_text("")
        python = sys.executable
        result = run.mino(
            attacks.bash(f"{python} -m venv .venv && .venv/bin/python -m pip --version"),
            attacks.bash(".venv/bin/python -m pip install --no-index --disable-pip-version-check ./pkg"),
            attacks.bash(".venv/bin/python -c 'import tinypkg; print(\"VALUE\", tinypkg.VALUE)'"),
            attacks.bash(f"{python} -m pytest -q tests"),
        )
    venv_made, installed, imported, tested = result["outputs"]
    assert "[Exit code: 0]" in venv_made and "pip " in venv_made, venv_made
    assert "Successfully installed tinypkg-0.1" in installed, installed
    assert "VALUE 42" in imported, imported
    assert "1 passed" in tested and "[Exit code: 0]" in tested, tested
    assert (run.project / ".venv" / "bin" / "python").exists()  # made in the project, on disk
