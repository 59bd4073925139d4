"""read_file, list_files and search on real files, called the way the core calls them."""
import os

import pytest

from mino_core import InvalidArguments, Status
from mino_tools_fs import files
from mino_tools_fs.paths import OutsideProject

TOOLS = {t.name: t for t in files.tools()}


def call(name, ctx, **args):
    tool = TOOLS[name]
    args = tool.validate(args, ctx) or args
    return tool.run(args, ctx)


def test_read_file_numbers_lines_and_honours_offset_and_limit(project, ctx):
    (project / "a.txt").write_text("one\ntwo\nthree\nfour\n")
    assert call("read_file", ctx, path="a.txt").output == "     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour"
    out = call("read_file", ctx, path="a.txt", offset=2, limit=2).output
    assert out.splitlines()[:2] == ["     2\ttwo", "     3\tthree"]
    assert "Truncated: showed lines 2-3 of 4 (the line limit)" in out and "offset=4" in out


def test_read_file_size_cap_says_it_truncated(project, ctx):
    (project / "big.txt").write_text("x" * 50 + "\n" * 1 + ("y" * 50 + "\n") * 100)
    ctx.config["tools-fs"] = {"read_bytes": 500}
    out = call("read_file", ctx, path="big.txt").output
    assert "500-byte size cap" in out and len(out) < 800


def test_read_file_binary_missing_and_folder(project, ctx):
    (project / "bin").write_bytes(b"\x00\x01\x02")
    assert "binary file of 3 bytes" in call("read_file", ctx, path="bin").output
    with pytest.raises(InvalidArguments, match="does not exist"):
        call("read_file", ctx, path="nope.txt")
    with pytest.raises(InvalidArguments, match="is a folder"):
        call("read_file", ctx, path=".")


def test_read_only_tools_refuse_escapes(project, ctx, outside):
    os.symlink(outside, project / "out")
    with pytest.raises(OutsideProject):
        call("read_file", ctx, path="../outside/secret.txt")
    with pytest.raises(OutsideProject):
        call("read_file", ctx, path=str(outside / "secret.txt"))
    with pytest.raises(OutsideProject, match="symbolic link"):
        call("read_file", ctx, path="out/secret.txt")
    with pytest.raises(OutsideProject):
        call("list_files", ctx, path="out")
    with pytest.raises(OutsideProject):
        call("search", ctx, pattern="secret", path="..")


def test_list_files_flat_recursive_ignored_and_links_not_followed(project, ctx, outside):
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("*.log\n")
    (project / "src" / "deep").mkdir(parents=True)
    (project / "src" / "deep" / "m.py").write_text("")
    (project / "x.log").write_text("")
    os.symlink(outside, project / "out")
    assert call("list_files", ctx).output.splitlines() == [".gitignore", "out", "src/"]
    assert call("list_files", ctx, recursive=True).output.splitlines() == [
        ".gitignore", "out", "src/", "src/deep/", "src/deep/m.py"]
    assert call("list_files", ctx, path="src").output.splitlines() == ["src/deep/"]


def test_list_files_cap(project, ctx):
    for i in range(12):
        (project / f"f{i:02}").write_text("")
    ctx.config["tools-fs"] = {"list_cap": 5}
    out = call("list_files", ctx).output.splitlines()
    assert len(out) == 6 and "Stopped at 5 entries" in out[-1]


def test_search_gives_file_line_results_and_caps(project, ctx, outside):
    (project / "a.py").write_text("import os\nx = 1\nimport re\n")
    (project / "sub").mkdir()
    (project / "sub" / "b.py").write_text("import sys\n")
    (project / ".gitignore").write_text("ignored.py\n")
    (project / "ignored.py").write_text("import hidden\n")
    (project / "blob").write_bytes(b"import\x00")
    os.symlink(outside / "secret.txt", project / "link.txt")
    out = call("search", ctx, pattern=r"^import \w+").output.splitlines()
    assert out == ["a.py:1: import os", "a.py:3: import re", "sub/b.py:1: import sys"]
    assert call("search", ctx, pattern="import", path="sub").output == "sub/b.py:1: import sys"
    assert call("search", ctx, pattern="secret").output == "No matches for 'secret'."
    ctx.config["tools-fs"] = {"search_cap": 2}
    out = call("search", ctx, pattern="import").output.splitlines()
    assert len(out) == 3 and "Stopped at 2 matches" in out[-1]


def test_search_bad_regex_is_invalid_arguments(project, ctx):
    with pytest.raises(InvalidArguments, match="not a valid regular expression"):
        call("search", ctx, pattern="(unclosed")


def test_read_only_flags():
    assert all(t.read_only for t in TOOLS.values())
    assert Status.COMPLETED.value == "completed"


def test_fifos_are_refused_and_skipped(project, ctx):
    os.mkfifo(project / "pipe")
    (project / "a.txt").write_text("needle\n")
    with pytest.raises(InvalidArguments, match="not a regular file"):
        call("read_file", ctx, path="pipe")
    assert call("search", ctx, pattern="needle").output == "a.txt:1: needle"
