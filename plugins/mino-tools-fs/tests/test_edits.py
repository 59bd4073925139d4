"""write_file / edit_file: validation, diff preview, bound approval, atomic writes."""
import os
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

from mino_core import InvalidArguments, Status, atomic_write
from mino_tools_fs import edits
from mino_tools_fs.edits import fingerprint
from mino_tools_fs.paths import OutsideProject

TOOLS = {t.name: t for t in edits.tools()}


def approve_and_run(name, ctx, between=None, **args):
    """validate -> preview -> (the user looks; ``between`` runs) -> run, as the core does."""
    tool = TOOLS[name]
    tool.validate(args, ctx)
    preview = tool.preview(args, ctx)
    if between:
        between()
    ctx.seen, ctx.previewed = preview.fingerprint, True
    return preview, tool.run(args, ctx)


def test_write_creates_with_parents_and_shows_a_creation_diff(project, ctx):
    preview, result = approve_and_run("write_file", ctx, path="new/dir/a.txt", content="hello\n")
    assert preview.fields == [("Path", "new/dir/a.txt"), ("Action", "create")]
    assert preview.notes[:3] == ["--- /dev/null", "+++ b/new/dir/a.txt", "@@ -0,0 +1 @@"]
    assert preview.fingerprint is None
    assert result.status is Status.COMPLETED and "Created new/dir/a.txt" in result.output
    assert (project / "new/dir/a.txt").read_text() == "hello\n"


def test_edit_diff_preview_and_result(project, ctx):
    (project / "m.py").write_text("def f():\n    return 1\n")
    preview, result = approve_and_run("edit_file", ctx, path="m.py", old_string="return 1",
                                      new_string="return 2")
    assert preview.fields == [("Path", "m.py")]
    assert "-    return 1" in preview.notes and "+    return 2" in preview.notes
    assert preview.notes[0] == "--- a/m.py"
    assert result.status is Status.COMPLETED
    assert (project / "m.py").read_text() == "def f():\n    return 2\n"


def test_long_diff_is_bounded_and_counts_what_was_left_out(project, ctx):
    (project / "big.txt").write_text("".join(f"line {i}\n" for i in range(300)))
    preview = TOOLS["write_file"].preview({"path": "big.txt", "content": "short\n"}, ctx)
    assert len(preview.notes) == edits.DIFF_LINES + 1
    assert preview.notes[-1] == f"[... {304 - edits.DIFF_LINES} more diff lines not shown]"


def test_edit_missing_or_ambiguous_match_says_which(project, ctx):
    (project / "a.txt").write_text("x = 1\nx = 1\ny = 2\n")
    with pytest.raises(InvalidArguments, match="was not found in a.txt"):
        TOOLS["edit_file"].validate({"path": "a.txt", "old_string": "z", "new_string": "w"}, ctx)
    with pytest.raises(InvalidArguments, match="occurs 2 times in a.txt"):
        TOOLS["edit_file"].validate({"path": "a.txt", "old_string": "x = 1", "new_string": "w"}, ctx)
    with pytest.raises(InvalidArguments, match="does not exist; use write_file"):
        TOOLS["edit_file"].validate({"path": "b.txt", "old_string": "x", "new_string": "w"}, ctx)


def test_validate_is_pure(project, ctx):
    (project / "a.txt").write_text("x\n")
    before = sorted(p.name for p in project.iterdir())
    TOOLS["write_file"].validate({"path": "d/new.txt", "content": "c"}, ctx)
    TOOLS["edit_file"].validate({"path": "a.txt", "old_string": "x", "new_string": "y"}, ctx)
    assert sorted(p.name for p in project.iterdir()) == before
    assert (project / "a.txt").read_text() == "x\n"


@pytest.mark.parametrize("change", ["modify", "create", "delete"])
def test_change_after_approval_writes_nothing(project, ctx, change):
    target = project / "a.txt"
    if change != "create":
        target.write_text("original\n")

    def meddle():
        if change == "delete":
            target.unlink()
        else:
            target.write_text("changed by hand\n")

    _, result = approve_and_run("write_file", ctx, between=meddle, path="a.txt", content="model\n")
    assert result.status is Status.FAILED
    assert result.output.startswith("a.txt changed after approval; nothing was written.")
    assert (not target.exists()) if change == "delete" else target.read_text() == "changed by hand\n"


def test_edit_refused_when_changed_after_approval(project, ctx):
    target = project / "a.txt"
    target.write_text("alpha\n")
    _, result = approve_and_run("edit_file", ctx, between=lambda: target.write_text("alpha beta\n"),
                                path="a.txt", old_string="alpha", new_string="omega")
    assert "changed after approval" in result.output and target.read_text() == "alpha beta\n"


def test_unpreviewed_run_does_not_check_fingerprint(project, ctx):
    (project / "a.txt").write_text("x\n")
    ctx.seen, ctx.previewed = None, False
    assert TOOLS["write_file"].run({"path": "a.txt", "content": "y\n"}, ctx).status is Status.COMPLETED


def test_targets_are_resolved_paths_and_escapes_refused(project, ctx, outside):
    (project / "real.txt").write_text("r")
    os.symlink("real.txt", project / "alias.txt")
    os.symlink(outside / "secret.txt", project / "out.txt")
    assert TOOLS["write_file"].targets({"path": "alias.txt", "content": ""}, ctx) == [project / "real.txt"]
    for path in ("out.txt", "../outside/secret.txt", str(outside / "secret.txt")):
        with pytest.raises(OutsideProject):
            TOOLS["write_file"].validate({"path": path, "content": "pwned"}, ctx)
    assert (outside / "secret.txt").read_text() == "outside secret\n"


def test_write_through_inside_link_keeps_the_link_and_the_mode(project, ctx):
    real = project / "run.sh"
    real.write_text("echo 1\n")
    real.chmod(0o751)
    os.symlink("run.sh", project / "alias.sh")
    approve_and_run("write_file", ctx, path="alias.sh", content="echo 2\n")
    assert (project / "alias.sh").is_symlink()
    assert real.read_text() == "echo 2\n"
    assert stat.S_IMODE(real.stat().st_mode) == 0o751
    assert not [p for p in project.iterdir() if p.name.startswith(".mino-tmp-")]


def test_fingerprint_tracks_content_and_existence(project):
    path = project / "f"
    assert fingerprint(path) is None
    path.write_text("a")
    first = fingerprint(path)
    path.write_text("b")
    assert first and fingerprint(path) != first


def test_a_writer_killed_mid_write_leaves_the_old_file_whole(project):
    """SIGKILL the writer after the temporary file holds most of the new content."""
    target = project / "data.txt"
    old = "old line\n" * 10_000
    target.write_text(old)
    child = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from mino_core import atomic_write
        real_fsync = os.fsync
        def stall(fd):
            print("written", flush=True)
            time.sleep(60)  # killed here: temp file full, rename not done
        os.fsync = stall
        atomic_write(Path({str(target)!r}), "new line\\n" * 500_000)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "written"
    temps = [p for p in project.iterdir() if p.name.startswith(".mino-tmp-")]
    assert temps and temps[0].stat().st_size > 1_000_000  # the new content was on its way
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert target.read_text() == old


def test_atomic_write_new_file_gets_umask_mode(project):
    umask = os.umask(0o022)
    try:
        atomic_write(project / "n.txt", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((project / "n.txt").stat().st_mode) == 0o644


def test_special_files_are_refused_not_read(project, ctx):
    os.mkfifo(project / "pipe")
    with pytest.raises(InvalidArguments, match="not a regular file"):
        TOOLS["edit_file"].validate({"path": "pipe", "old_string": "a", "new_string": "b"}, ctx)
    with pytest.raises(InvalidArguments, match="not a regular file"):
        TOOLS["write_file"].validate({"path": "pipe", "content": "x"}, ctx)


def test_overwriting_a_binary_file_previews_without_a_diff(project, ctx):
    (project / "logo.bin").write_bytes(b"\xff\xfe\x00")
    preview, result = approve_and_run("write_file", ctx, path="logo.bin", content="text\n")
    assert preview.notes == ["(replaces a non-text file of 3 bytes)"]
    assert result.status is Status.COMPLETED and (project / "logo.bin").read_text() == "text\n"


def test_write_file_never_lands_outside_while_a_folder_is_swapped_for_a_link(project, ctx, outside):
    """The resolve-then-write race, for real: resolve() checks d/, another process swaps d/ for a
    link to an outside folder, the write follows. The old code put 209 of 16,000 writes
    outside; the write must land in the folder that was checked, or fail."""
    import time

    (project / "d").mkdir()
    swapper = start_swapper(project / "d", outside)
    outcomes = {"written": 0, "refused": 0}
    deadline = time.monotonic() + 2.0
    try:
        while time.monotonic() < deadline:
            args = {"path": "d/f.txt", "content": "payload\n"}
            try:  # the core turns InvalidArguments from either step into the call's result
                TOOLS["write_file"].validate(args, ctx)
                result = TOOLS["write_file"].run(args, ctx)
            except InvalidArguments:
                outcomes["refused"] += 1
                continue
            outcomes["written" if result.status is Status.COMPLETED else "refused"] += 1
    finally:
        swapper.kill()
        swapper.wait()
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert outcomes["written"] and outcomes["refused"]


SWAPPER = """
import os, sys
folder, parked, outside = sys.argv[1:4]
n = 0
while True:
    n += 1  # a fresh parking name: when the writer's mkdir wins, the old one stays put
    for step in (lambda: os.rename(folder, f"{parked}{n}"), lambda: os.symlink(outside, folder),
                 lambda: os.unlink(folder), lambda: os.rename(f"{parked}{n}", folder)):
        try:
            step()
        except OSError:  # each step can lose a race with the writer's mkdir
            pass
"""


def start_swapper(folder, outside):
    """Another process (real parallelism, not the GIL's turns) that swaps ``folder`` for a
    link to ``outside`` and back, forever."""
    import subprocess
    import sys

    parked = folder.with_name(folder.name + ".parked")
    return subprocess.Popen([sys.executable, "-c", SWAPPER, str(folder), str(parked), str(outside)])


def test_long_names_are_written_and_too_long_ones_refused_clearly(project, ctx):
    """Temporary names were the target's plus 18 characters: 237+ crashed with OSError."""
    name = "n" * 250 + ".txt"
    _, result = approve_and_run("write_file", ctx, path=f"long/{name}", content="x\n")
    assert result.status is Status.COMPLETED and (project / "long" / name).read_text() == "x\n"
    _, result = approve_and_run("edit_file", ctx, path=f"long/{name}", old_string="x", new_string="y")
    assert result.status is Status.COMPLETED and (project / "long" / name).read_text() == "y\n"
    with pytest.raises(InvalidArguments, match="at most 255 bytes"):
        TOOLS["write_file"].validate({"path": "n" * 256, "content": "x"}, ctx)


def test_a_crashed_saves_temporary_file_is_removed_by_a_later_write(project, ctx):
    """A temporary file left by a killed writer is cleaned once it is stale."""
    import time

    from mino_core.atomic import STALE_SECONDS

    left = project / ".mino-tmp-0123456789abcdef"
    left.write_text("half of a save")
    old = time.time() - STALE_SECONDS - 1
    os.utime(left, (old, old))
    _, result = approve_and_run("write_file", ctx, path="a.txt", content="x")
    assert result.status is Status.COMPLETED
    assert sorted(os.listdir(project)) == ["a.txt"]
