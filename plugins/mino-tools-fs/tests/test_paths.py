"""Confinement: what resolves inside the project, and how escapes are refused."""
import os

import pytest

from mino_core import InvalidArguments
from mino_tools_fs.paths import OutsideProject, relative, resolve


def test_plain_and_nested_paths_resolve_inside(project):
    (project / "src").mkdir()
    assert resolve(project, "src/a.py") == project / "src" / "a.py"
    assert resolve(project, "./src/../b.txt") == project / "b.txt"
    assert resolve(project, str(project / "c.txt")) == project / "c.txt"  # absolute, inside
    assert relative(project, project / "src" / "a.py") == "src/a.py"


@pytest.mark.parametrize("path", ["../x", "src/../../x", "../project-other/x"])
def test_dotdot_escape_is_refused(project, path):
    with pytest.raises(OutsideProject, match=r"climbs out through '\.\.'"):
        resolve(project, path)


def test_absolute_path_outside_is_refused(project, outside):
    with pytest.raises(OutsideProject, match="absolute path"):
        resolve(project, str(outside / "secret.txt"))
    with pytest.raises(OutsideProject):
        resolve(project, "/etc/passwd")


def test_symlink_leading_out_is_refused(project, outside):
    os.symlink(outside / "secret.txt", project / "link.txt")
    os.symlink(outside, project / "linkdir")
    with pytest.raises(OutsideProject, match="symbolic link"):
        resolve(project, "link.txt")
    with pytest.raises(OutsideProject, match="symbolic link"):
        resolve(project, "linkdir/new-file.txt")  # a file that does not exist yet, too


def test_symlink_staying_inside_is_followed(project):
    (project / "real.txt").write_text("x")
    os.symlink("real.txt", project / "alias.txt")
    assert resolve(project, "alias.txt") == project / "real.txt"


def test_empty_path_is_invalid(project):
    with pytest.raises(InvalidArguments):
        resolve(project, "  ")


def test_a_project_reached_through_a_symlink_still_confines(project, tmp_path, outside):
    link = tmp_path / "via-link"
    os.symlink(project, link)
    assert resolve(link, "a.txt") == project / "a.txt"
    assert resolve(link, str(link / "a.txt")) == project / "a.txt"
    with pytest.raises(OutsideProject):
        resolve(link, "../outside/secret.txt")
