"""memory_view and memory_save, step by step: validate, preview, run."""
from __future__ import annotations

import os
import stat

import pytest

from mino_core import InvalidArguments, Status
from mino_memory_files import store, tools

SAVED = "Saved memory {}. Its summary appears in the memory index from the next turn."


def args(**kw):
    base = {"name": "uses-pnpm", "type": "project",
            "summary": "This user's projects install dependencies with pnpm, never npm or yarn.",
            "mode": "create"}
    base.update(kw)
    return base


def save(ctx, approve=True, before_run=None, **kw):
    """validate -> preview (the question) -> run, as the turn loop does."""
    checked = tools.validate_save(args(**kw), ctx)
    preview = tools.preview_save(checked, ctx)
    if before_run:
        before_run()
    ctx.seen, ctx.previewed = preview.fingerprint, True
    return tools.run_save(checked, ctx), preview


def test_create_writes_the_file_private(ctx):
    result, preview = save(ctx)
    assert (result.status, result.output) == (Status.COMPLETED, SAVED.format("uses-pnpm"))
    path = ctx.home / "memory" / "uses-pnpm.md"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.scan(path.parent).memories[0].name == "uses-pnpm"
    assert [f for f in os.listdir(path.parent)] == ["uses-pnpm.md"]  # no temp file left


def test_confirmation_fields_and_warning(ctx):
    _, preview = save(ctx, details="line\n" * 3)
    assert preview.fields == [
        ("Memory", "uses-pnpm"),
        ("Directory", str(ctx.home / "memory")),
        ("Mode", "Create a new memory"),
        ("Type", "project"),
        ("Summary", "This user's projects install dependencies with pnpm, never npm or yarn."),
        ("Details", "line\n" * 3),
    ]
    assert preview.notes == ["Saved memories are shown to the model in every later session "
                             "and project; approval applies only to this content."]


def test_no_details_field_without_details(ctx):
    _, preview = save(ctx)
    assert [label for label, _ in preview.fields] == ["Memory", "Directory", "Mode", "Type",
                                                      "Summary"]


@pytest.mark.parametrize("details", ["x\n" * 100, "y" * 5000, "z" * 100 + "\n" + "w" * 3000,
                                     "é" * 2000])
def test_details_preview_is_bounded(details):
    shown = tools.details_preview(details)
    assert len(shown.split("\n")) <= 20 and len(shown.encode()) <= 2048
    assert "preview ends here" in shown


def test_overwrite_says_replace_and_replaces(ctx):
    save(ctx)
    result, preview = save(ctx, mode="overwrite", summary="Uses pnpm 9.")
    assert ("Mode", "Replace the existing memory") in preview.fields
    assert result.status is Status.COMPLETED
    assert store.scan(ctx.home / "memory").memories[0].summary == "Uses pnpm 9."


def test_create_refuses_an_existing_name(ctx):
    save(ctx)
    checked = tools.validate_save(args(), ctx)
    with pytest.raises(InvalidArguments, match="already exists.*mode overwrite"):
        tools.preview_save(checked, ctx)


def test_overwrite_refuses_a_missing_name(ctx):
    checked = tools.validate_save(args(mode="overwrite"), ctx)
    with pytest.raises(InvalidArguments, match="no memory named uses-pnpm.*mode create"):
        tools.preview_save(checked, ctx)


def test_hand_edit_between_approval_and_run_is_left_untouched(ctx):
    save(ctx)
    path = ctx.home / "memory" / "uses-pnpm.md"
    edited = path.read_text().replace("never npm", "never npm (edited by hand)")

    result, _ = save(ctx, mode="overwrite", summary="Model's version.",
                     before_run=lambda: path.write_text(edited))
    assert (result.status, result.output) == (
        Status.FAILED, "Memory changed after approval; nothing was written.")
    assert path.read_text() == edited


def test_file_created_by_hand_after_a_create_question(ctx):
    path = ctx.home / "memory" / "uses-pnpm.md"

    def by_hand():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("mine")

    result, _ = save(ctx, before_run=by_hand)
    assert result.output == "Memory changed after approval; nothing was written."
    assert path.read_text() == "mine"


@pytest.mark.parametrize("bad,fragment", [
    ({"name": "../etc/passwd"}, "lowercase letters"),
    ({"name": "Uses-Pnpm"}, "lowercase letters"),
    ({"name": "a--b"}, "single hyphens"),
    ({"name": "-a"}, "lowercase letters"),
    ({"name": "a" * 65}, "at most 64"),
    ({"name": ""}, "non-empty"),
    ({"type": "secret"}, "type must be one of user, feedback, project, reference"),
    ({"summary": "two\nlines"}, "one line"),
    ({"summary": "x" * 201}, "201 bytes; the limit is 200"),
    ({"summary": "é" * 101}, "202 bytes"),
    ({"summary": "   "}, "non-empty"),
    ({"details": "d" * (16 * 1024 + 1)}, "16 KiB"),
    ({"mode": "append"}, "create or overwrite"),
])
def test_invalid_arguments(ctx, bad, fragment):
    with pytest.raises(InvalidArguments, match="Invalid memory_save arguments") as info:
        tools.validate_save(args(**bad), ctx)
    assert fragment in str(info.value)
    assert not (ctx.home / "memory").exists()  # validation wrote nothing


def test_summary_of_exactly_200_bytes_and_chinese_text(ctx):
    result, preview = save(ctx, summary="回" * 66 + "xx")  # 200 bytes
    assert result.status is Status.COMPLETED
    assert store.scan(ctx.home / "memory").memories[0].summary == "回" * 66 + "xx"


def test_full_index_by_entries_refused_in_validate(ctx, put):
    directory = ctx.home / "memory"
    for i in range(200):
        put(directory, f"m{i:03d}", summary="s")
    with pytest.raises(InvalidArguments) as info:
        tools.validate_save(args(), ctx)
    message = str(info.value)
    assert "200" in message and "Merge" in message and "shorten" in message
    assert not (directory / "uses-pnpm.md").exists()
    # Overwriting one that exists does not add an entry, so it is still allowed.
    assert tools.validate_save(args(name="m000", mode="overwrite"), ctx)["name"] == "m000"


def test_full_index_by_bytes_refused_in_validate(ctx, put):
    directory = ctx.home / "memory"
    for i in range(73):
        put(directory, f"m{i:03d}", summary="x" * 200)
    assert store.index_size(store.scan(directory).memories)[1] < 16 * 1024
    with pytest.raises(InvalidArguments, match="16 KiB.*Merge.*shorten"):
        tools.validate_save(args(summary="y" * 200), ctx)
    # A shorter overwrite is fine; a longer one of a short memory would pass the limit.
    tools.validate_save(args(name="m000", mode="overwrite", summary="short"), ctx)


def test_view_returns_the_whole_file(ctx, put):
    path = put(ctx.home / "memory", "release-steps", "reference", "Check first.", "1. a\n2. b\n")
    checked = tools.validate_view({"name": "release-steps"}, ctx)
    result = tools.run_view(checked, ctx)
    assert (result.status, result.output) == (Status.COMPLETED, path.read_text())


@pytest.mark.parametrize("name", ["../config.yaml", "/etc/passwd", "x.md", "memory/x", "A"])
def test_view_takes_names_never_paths(ctx, name):
    with pytest.raises(InvalidArguments, match="not a path"):
        tools.validate_view({"name": name}, ctx)


def test_view_of_missing_and_of_skipped_files(ctx, put, tmp_path):
    result = tools.run_view({"name": "absent"}, ctx)
    assert result.status is Status.INVALID_ARGUMENTS and "no memory named absent" in result.output
    target = put(tmp_path / "elsewhere", "linked")
    (ctx.home / "memory").mkdir()
    os.symlink(target, ctx.home / "memory" / "linked.md")
    result = tools.run_view({"name": "linked"}, ctx)
    assert result.status is Status.FAILED and "symbolic link" in result.output


def test_tool_declarations():
    view, save_tool = tools.make_tools()
    assert (view.name, view.read_only) == ("memory_view", True)
    assert (save_tool.name, save_tool.read_only, save_tool.targets, save_tool.sandboxed) == (
        "memory_save", False, None, None)
    assert "Never save secrets" in save_tool.description
    assert set(save_tool.parameters["properties"]) == {"name", "type", "summary", "details", "mode"}
    assert save_tool.parameters["properties"]["mode"]["enum"] == ["create", "overwrite"]


def test_overwrite_of_a_link_never_writes_through_it(ctx, put, tmp_path):
    outside = put(tmp_path / "elsewhere", "uses-pnpm", summary="Outside.")
    before = outside.read_text()
    (ctx.home / "memory").mkdir()
    os.symlink(outside, ctx.home / "memory" / "uses-pnpm.md")
    result, _ = save(ctx, mode="overwrite")
    assert result.status is Status.COMPLETED
    assert outside.read_text() == before
    assert not (ctx.home / "memory" / "uses-pnpm.md").is_symlink()


def test_run_without_a_preview_still_checks_the_mode(ctx):
    save(ctx)
    checked = tools.validate_save(args(summary="Second."), ctx)
    ctx.seen, ctx.previewed = None, False
    result = tools.run_save(checked, ctx)
    assert result.status is Status.INVALID_ARGUMENTS and "already exists" in result.output
    assert "Second." not in (ctx.home / "memory" / "uses-pnpm.md").read_text()


def test_exactly_20_lines_and_2_kib_are_shown_whole():
    details = "\n".join(["x" * 50] * 20)
    assert tools.details_preview(details) == details
