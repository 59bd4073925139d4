"""bench/agent_memory.py: stories parsed, driven through the real REPL against the scripted
server, and scored; a missing memory, a forbidden one and a guard note that never came are
misses; a broken story is refused in one line; the wording lint catches a copied question."""
import importlib.util
import sys
from pathlib import Path

import pytest

pytest.importorskip("mino_memory_graph")
pytest.importorskip("mino_tools_fs")

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("agent_memory_bench", BENCH / "agent_memory.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


TEACH_AND_ASK = """
title: a preference saved, then asked for in other words
category: preference
sessions:
  - turns:
      - user: From now on write every SQL keyword in capitals.
        model:
          - calls: [{name: memory_save,
                     arguments: {where: user, key: sql style, value: "upper-case keywords"}}]
          - text: Noted.
  - turns:
      - user: Draft the query that lists yesterday's orders.
        expect:
          recall: ["upper-case keywords"]
      - user: And one counting refunds by month.
        expect:
          recall: ["upper-case keywords", "tabs in makefiles"]
          absent: ["never taught"]
      - user: One more for the top customers please.
        expect:
          absent: ["upper-case keywords"]
"""

FAILING_COMMAND = """
title: a command that fails for real; the guard's note is expected within the turn
category: guard
projects:
  main:
    files:
      scripts/go.sh: |
        #!/bin/sh
        echo "go.sh: broken on purpose" >&2
        exit 3
sessions:
  - turns:
      - user: Run the go script for me.
        model:
          - calls: [{name: Bash, arguments: {command: "sh scripts/go.sh"}}]
          - text: It failed.
        expect:
          in_turn: ["a note nobody writes"]
          clean: true
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_taught_memory_is_a_hit_and_missing_or_forbidden_text_is_a_miss(bench, tmp_path):
    story = bench.load_story(write(tmp_path / "s", "teach.yaml", TEACH_AND_ASK))
    assert [s.name for s in story.sessions] == ["s1", "s2"] and len(story.questions()) == 3
    result = bench.run_story(story, tmp_path)
    assert result.errors == []
    first, second, third = result.questions
    assert first.hit and "upper-case keywords" in first.block and first.block_tokens > 0
    assert not second.hit and second.missing == ["tabs in makefiles"] and second.leaked == []
    assert not third.hit and third.leaked == ["upper-case keywords"]
    s = bench.summary([result])
    assert (s["questions"], s["hits"]) == (3, 1)
    assert s["categories"] == {"preference": {"questions": 3, "hits": 1}}
    assert len(s["misses"]) == 2 and s["turns"] == 4


def test_a_failed_call_and_an_absent_guard_note_are_misses(bench, tmp_path):
    story = bench.load_story(write(tmp_path / "s", "fail.yaml", FAILING_COMMAND))
    result = bench.run_story(story, tmp_path)
    assert result.errors == []
    (q,) = result.questions
    assert not q.hit
    assert q.in_turn_missing[0] == "a note nobody writes"
    assert "1 failed" in q.in_turn_missing[1]


def test_unused_answers_are_a_story_error_and_bad_files_are_refused(bench, tmp_path, capsys):
    folder = tmp_path / "stories"
    write(folder, "extra.yaml", TEACH_AND_ASK.replace(
        "          - text: Noted.\n",
        "          - text: Noted.\n          - text: never asked for\n", 1))
    write(folder, "broken.yaml", "title: [unclosed\n")
    write(folder, "empty.yaml", "title: nothing measured\nsessions:\n  - turns: [hello there]\n")
    write(folder, "outside.yaml", "projects: {../../elsewhere: {}}\n" + TEACH_AND_ASK)
    stories, refused = bench.load_stories(folder)
    assert [s.name for s in stories] == ["extra"]
    assert any(r.startswith("outside: project '../../elsewhere' must be a plain folder name")
               for r in refused)
    assert any(r.startswith("broken: not valid YAML") for r in refused)
    assert any("empty: no turn has an expect" in r for r in refused)
    result = bench.run_story(stories[0], tmp_path)
    assert any("1 scripted answer(s) not asked for" in e for e in result.errors)
    assert bench.main(["--stories", str(folder)]) == 1
    out = capsys.readouterr().out
    assert "hit rate of the recall block" in out and "stories refused:" in out
    assert bench.main(["--stories", str(tmp_path / "nowhere")]) == 2


def test_the_lint_flags_a_copied_question_not_a_paraphrase(bench, tmp_path):
    copied = TEACH_AND_ASK.replace("Draft the query that lists yesterday's orders.",
                                   "Write every SQL keyword in capitals?")
    problems = bench.lint(bench.load_story(write(tmp_path, "copied.yaml", copied)))
    assert len(problems) == 1 and "shares" in problems[0] and "capitals" in problems[0]
    answer_inside = TEACH_AND_ASK.replace("Draft the query that lists yesterday's orders.",
                                          "Should it be upper-case keywords?")
    problems = bench.lint(bench.load_story(write(tmp_path, "inside.yaml", answer_inside)))
    assert any("contains its answer" in p for p in problems)
    assert bench.lint(bench.load_story(write(tmp_path, "ok.yaml", TEACH_AND_ASK))) == []


def test_the_bundled_stories_load_and_keep_the_wording_rule(bench):
    stories, refused = bench.load_stories(BENCH / "stories")
    assert refused == []
    assert len(stories) >= 30
    assert [p for s in stories for p in bench.lint(s)] == []
    categories = {s.category for s in stories}
    assert {"failure-fix", "preference", "correction", "path-command", "multi-project",
            "distractors", "side-session", "guard"} <= categories


SIDE_RUN = """
title: a headless side run (a real mino -p) saves in bypass; the resumed session sees it
category: side-session
sessions:
  - name: main
    turns: [{user: Good morning, let's start., reply: Morning.}]
  - name: side
    headless: true
    mode: bypass
    turns:
      - user: Note the staging password rotation happens every Monday.
        model:
          - calls: [{name: memory_save, arguments: {where: project, key: credential rotation,
                                                     value: "every Monday"}}]
          - text: Noted.
  - name: back
    resume: main
    turns:
      - user: When do the shared secrets get replaced?
        expect:
          recall: ["every Monday"]
"""


def test_a_headless_side_run_is_its_own_process_and_the_main_one_catches_up(bench, tmp_path):
    story = bench.load_story(write(tmp_path / "s", "side.yaml", SIDE_RUN))
    assert story.sessions[1].headless and story.sessions[1].approve == "none"
    result = bench.run_story(story, tmp_path)
    assert result.errors == []
    (q,) = result.questions
    assert q.hit, q.block
    assert len(result.turn_cpu) == 2  # the side run's turn is scored, not timed


def test_variants_parse_and_a_bad_one_is_one_line(bench, tmp_path, capsys):
    assert bench.parse_variant("mnemo:memory.graph.scorer=mnemo,memory.graph.episodes=off") == (
        "mnemo", {"memory": {"graph": {"scorer": "mnemo", "episodes": False}}})
    with pytest.raises(ValueError, match="NAME:KEY=VALUE"):
        bench.parse_variant("no-colon")
    write(tmp_path / "stories", "teach.yaml", TEACH_AND_ASK)
    assert bench.main(["--stories", str(tmp_path / "stories"), "--variant", "x:=1"]) == 2
    assert "is not KEY=VALUE" in capsys.readouterr().err


def test_two_folders_in_one_run_are_reported_apart_per_category(bench, tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    write(a, "teach.yaml", TEACH_AND_ASK)
    write(b, "teach.yaml", TEACH_AND_ASK.replace("category: preference", "category: paraphrase"))
    out = tmp_path / "out.json"
    assert bench.main(["--stories", str(a), "--stories", str(b), "--json", str(out)]) == 0
    import json
    data = json.loads(out.read_text())
    assert set(data) == {str(a), str(b)}
    assert data[str(a)]["categories"] == {"preference": {"questions": 3, "hits": 1}}
    fig = data[str(b)]["category_figures"]["paraphrase"]
    assert fig["block_median"] > 0 and fig["cpu_median_ms"] > 0
    text = capsys.readouterr().out
    assert f"=== {a}" in text and f"=== {b}" in text and "block median" in text


KEPT_NOT_SECRET = """
title: a 'secret' story whose forbidden text memory keeps on purpose (the check must see it)
category: secret
sessions:
  - turns:
      - user: Remember that the build cache lives in /var/cache/buildkite-shared.
        model:
          - calls: [{name: memory_save, arguments: {where: project, key: build cache,
                                                     value: /var/cache/buildkite-shared}}]
          - text: Saved.
  - turns:
      - user: Where do the CI machines keep reusable artefacts?
        expect:
          absent: ["buildkite-shared"]
"""


def test_a_secret_story_greps_every_memory_file_under_the_home(bench, tmp_path):
    res = bench.run_story(bench.load_story(write(tmp_path / "s", "kept.yaml", KEPT_NOT_SECRET)),
                          tmp_path)
    assert any(x.startswith("'buildkite-shared' in graph/journal.jsonl") for x in res.stored)
    assert not any(x.split(" in ")[1].startswith("sessions") for x in res.stored)


def test_the_bundled_secret_stories_keep_no_secret_in_any_memory_file(bench, tmp_path):
    stories, _ = bench.load_stories(BENCH / "stories")
    secret = [s for s in stories if s.category == "secret"]
    assert len(secret) >= 2
    results = [bench.run_story(s, tmp_path) for s in secret]
    assert [r.errors for r in results] == [[] for _ in results]
    assert [x for r in results for x in r.stored] == []
    assert all(q.hit for r in results for q in r.questions)
