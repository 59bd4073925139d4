"""The files backend inside the real turn loop, against the scripted model server."""
from __future__ import annotations

import json

import pytest

from mino_memory_files import store

FILES = {"memory": {"backend": "files"}}
PNPM = "This user's projects install dependencies with pnpm, never npm or yarn."
PNPM_LINE = f"- [project] uses-pnpm: {PNPM}"
SAVE_PNPM = {"name": "memory_save", "arguments": {
    "name": "uses-pnpm", "type": "project", "summary": PNPM, "mode": "create"}}
SAVED = "Saved memory uses-pnpm. Its summary appears in the memory index from the next turn."


def lead(request):
    item = request["input"][0]
    return item if item.get("role") == "assistant" else None


def results(harness):
    return [r for r in harness.session.log.records if r.get("type") == "function_call_output"]


def test_memory_index_is_rebuilt_each_turn_and_never_stored(make_harness, scripted_server,
                                                            mino_home, put):
    put(mino_home / "memory", "release-steps", "reference",
        "Run bash scripts/check.sh before tagging a chapter release.", "1. check\n")
    scripted_server.add({"calls": [SAVE_PNPM]}, {"text": "Saved."},
                        {"require": PNPM_LINE, "text": "Use pnpm: run pnpm install."})
    h = make_harness(approve="all", config=FILES)
    h.turn("Remember for future sessions: my projects install dependencies with pnpm, never npm.")
    first, second = scripted_server.requests
    for request in (first, second):
        item = lead(request)
        assert item is not None and item["content"].startswith(store.LABEL)
        assert "- [reference] release-steps: Run bash" in item["content"]
        assert "(+details)" in item["content"]
        assert "uses-pnpm" not in item["content"]
    assert first["input"][0] == second["input"][0]
    assert results(h)[-1]["output"] == SAVED

    h.new_session()
    record = h.turn("Which package manager should I use to install this project's dependencies?")
    assert record.answer == "Use pnpm: run pnpm install."
    third = scripted_server.requests[2]
    assert PNPM_LINE in lead(third)["content"]
    assert third["input"][1] == {"type": "message", "role": "user", "content": "Which package manager should I use "
                                 "to install this project's dependencies?"}
    assert not scripted_server.failures
    for log_file in (mino_home / "sessions").glob("*.jsonl"):
        assert "Mino user memory" not in log_file.read_text()
    assert not any("Mino user memory" in json.dumps(r) for r in h.session.log.records)


def test_confirmation_text_as_the_chapter_shows_it(make_harness, scripted_server, mino_home):
    scripted_server.add({"calls": [SAVE_PNPM]}, {"text": "Saved."})
    h = make_harness(approve="all", config=FILES)
    h.turn("Remember pnpm.")
    [(tool, text, answer)] = h.ui.asked
    assert tool == "memory_save" and answer is True
    assert text == "\n".join([
        'Memory: "uses-pnpm"',
        f'Directory: "{mino_home / "memory"}"',
        'Mode: "Create a new memory"',
        'Type: "project"',
        f'Summary: "{PNPM}"',
        "Saved memories are shown to the model in every later session and project; "
        "approval applies only to this content.",
    ])
    assert "[Tool result: completed]\n" + SAVED in h.transcript


@pytest.mark.parametrize("mode,asked", [("manual", True), ("accept-edits", True),
                                        ("bypass", False)])
def test_save_asks_outside_bypass(make_harness, scripted_server, mino_home, mode, asked):
    scripted_server.add({"calls": [SAVE_PNPM]}, {"text": "Done."})
    h = make_harness(approve="all", mode=mode, config=FILES)
    h.turn("Remember pnpm.")
    assert bool(h.ui.asked) is asked
    assert results(h)[-1]["status"] == "completed"
    if not asked:  # bypass runs it unasked, but still shows it
        assert 'Mode: "Create a new memory"' in h.transcript
    assert (mino_home / "memory" / "uses-pnpm.md").is_file()


def test_denied_save_writes_nothing(make_harness, scripted_server, mino_home):
    scripted_server.add({"calls": [SAVE_PNPM]}, {"require": "status: denied", "text": "OK."})
    h = make_harness(approve="none", config=FILES)
    h.turn("Remember pnpm.")
    assert results(h)[-1]["status"] == "denied"
    assert not (mino_home / "memory" / "uses-pnpm.md").exists()


def test_empty_store_sends_the_users_message_first(make_harness, scripted_server, mino_home):
    (mino_home / "memory").mkdir()
    (mino_home / "memory" / "notes.txt").write_text("not a memory")
    scripted_server.add({"text": "Hi."})
    h = make_harness(config=FILES)
    h.turn("Hello")
    assert scripted_server.requests[0]["input"][0] == {"type": "message", "role": "user", "content": "Hello"}
    assert h.notices == ""


def test_memory_view_asks_nothing(make_harness, scripted_server, mino_home, put):
    path = put(mino_home / "memory", "release-steps", "reference", "Check first.", "1. a\n2. b\n")
    scripted_server.add({"calls": [{"name": "memory_view", "arguments": {"name": "release-steps"}}]},
                        {"require": "1. a\n2. b", "text": "Done."})
    h = make_harness(approve="none", mode="manual", config=FILES)
    h.turn("How do I release?")
    assert h.ui.asked == []
    assert results(h)[-1]["status"] == "completed"
    assert results(h)[-1]["output"] == path.read_text()
    assert not scripted_server.failures


def test_broken_file_one_notice_over_two_turns(make_harness, scripted_server, mino_home, put):
    directory = mino_home / "memory"
    put(directory, "good")
    (directory / "broken.md").write_text("hand-written, no front matter")
    scripted_server.add({"text": "1"}, {"text": "2"}, {"text": "3"}, {"text": "4"}, {"text": "5"},
                        {"text": "6"})
    h = make_harness(config=FILES)
    h.turn("one")
    h.turn("two")
    expected = (f"Some memories in {directory} were not loaded:\n"
                "  broken.md: memory file needs YAML front matter with string fields name, "
                "type, and summary\n")
    assert h.notices == expected
    assert "- [project] good: A fact." in lead(scripted_server.requests[1])["content"]

    (directory / "worse.md").write_text("also broken")  # the list changed: reported again
    h.turn("three")
    assert h.notices.count("Some memories in") == 2 and "worse.md" in h.notices

    h.new_session()  # a session switch reports the same list once more
    h.turn("four")
    assert h.notices.count("Some memories in") == 3

    (directory / "broken.md").unlink()
    (directory / "worse.md").unlink()
    h.turn("five")  # fixed: nothing to say
    (directory / "broken.md").write_text("broken again")
    h.turn("six")
    assert h.notices.count("Some memories in") == 4


def test_index_and_compaction_summary_share_one_assistant_item(make_harness, scripted_server,
                                                               mino_home, put):
    put(mino_home / "memory", "uses-pnpm", "project", PNPM)
    scripted_server.add({"text": "First answer."}, {"text": "Second answer."})
    h = make_harness(config=FILES)
    h.turn("first")
    h.session.log.append({"type": "compaction", "summary": "The user asked about pnpm.", "cut": 2})
    h.turn("second")
    items = scripted_server.requests[1]["input"]
    assert items[0]["role"] == "assistant"
    content = items[0]["content"]
    assert content.startswith(store.LABEL)
    assert content.index(PNPM_LINE) < content.index("The user asked about pnpm.")
    assert items[1] == {"type": "message", "role": "user", "content": "second"}
    assert sum(1 for i in items if i.get("role") == "assistant") == 1


def test_full_index_refused_before_asking(make_harness, scripted_server, mino_home, put):
    for i in range(200):
        put(mino_home / "memory", f"m{i:03d}", summary="s")
    scripted_server.add({"calls": [SAVE_PNPM]},
                        {"require": ["status: invalid_arguments", "Merge", "shorten"],
                         "text": "The memory is full."})
    h = make_harness(approve="all", config=FILES)
    h.turn("Remember pnpm.")
    assert h.ui.asked == []
    assert results(h)[-1]["status"] == "invalid_arguments"
    assert not (mino_home / "memory" / "uses-pnpm.md").exists()
    assert not scripted_server.failures


def test_hand_edit_while_the_question_is_open(make_harness, scripted_server, mino_home, put):
    path = put(mino_home / "memory", "uses-pnpm", "project", "Old.")
    edited = path.read_text().replace("Old.", "Edited by hand.")

    def edit_then_approve(tool, text):
        path.write_text(edited)
        return True

    scripted_server.add(
        {"calls": [{"name": "memory_save", "arguments": dict(SAVE_PNPM["arguments"],
                                                              mode="overwrite")}]},
        {"require": "Memory changed after approval; nothing was written.", "text": "Oh."})
    h = make_harness(approve=edit_then_approve, config=FILES)
    h.turn("Update it.")
    assert 'Mode: "Replace the existing memory"' in h.ui.asked[0][1]
    assert results(h)[-1]["status"] == "failed"
    assert path.read_text() == edited
    assert not scripted_server.failures


def test_resume_rebuilds_the_index_from_the_files(make_harness, scripted_server, mino_home, put):
    scripted_server.add({"text": "a"}, {"require": PNPM_LINE, "text": "b"})
    h = make_harness(config=FILES)
    h.turn("before")
    assert lead(scripted_server.requests[0]) is None
    put(mino_home / "memory", "uses-pnpm", "project", PNPM)
    h.resume(h.session.id)
    h.turn("after")
    assert not scripted_server.failures
