"""Issue 25, item 2: a failure fixed in one session and fixed differently in the next (the
first fix stopped working). Driven as a story through the real REPL, the scripted model
server and real commands in the sandbox: the next session's recall shows one pitfall with
the new fix, no old command from the first session's episode (its successful run of it), with episodes on and off;
the journal keeps the old fix as history."""
import importlib.util
import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("mino_memory_graph")
pytest.importorskip("mino_tools_fs")

BENCH = Path(__file__).resolve().parents[1] / "bench"

STORY = """
title: a build fix that stopped working, replaced by another
category: stale-fix
projects:
  app:
    origin: https://git.example.com/acme/app.git
    files:
      scripts/build.sh: |
        #!/bin/sh
        [ "$CACHE_DIR" = "/tmp/buildcache" ] || { echo "build.sh: cache folder not writable" >&2; exit 1; }
        echo built
  app-later:
    origin: git@git.example.com:acme/app.git
    files:
      scripts/build.sh: |
        #!/bin/sh
        [ "$1" = "--no-cache" ] || { echo "build.sh: cache folder not writable" >&2; exit 1; }
        echo built without a cache
sessions:
  - project: app
    turns:
      - user: Build the app.
        model:
          - calls: [{name: Bash, arguments: {command: "sh scripts/build.sh"}}]
          - calls: [{name: Bash, arguments: {command: "CACHE_DIR=/tmp/buildcache sh scripts/build.sh"}}]
          - text: Built with the cache moved.
        reflection:
          fixes: [{problem: "sh scripts/build.sh failed: cache folder not writable",
                   fix: "CACHE_DIR=/tmp/buildcache sh scripts/build.sh"}]
  - project: app-later
    turns:
      - user: Build it again on this checkout.
        model:
          - calls: [{name: Bash, arguments: {command: "sh scripts/build.sh"}}]
          - calls: [{name: Bash, arguments: {command: "CACHE_DIR=/tmp/buildcache sh scripts/build.sh"}}]
          - calls: [{name: Bash, arguments: {command: "sh scripts/build.sh --no-cache"}}]
          - text: Moving the cache no longer helps; building without one does.
        reflection:
          fixes: [{problem: "the build cannot write where it keeps its cache",
                   fix: "sh scripts/build.sh --no-cache"}]
  - project: app-later
    turns:
      - user: The app build fails on the cache again, what works now?
        expect:
          recall: ["--no-cache"]
          # the old fix is never offered as working: neither by the pitfall nor by the
          # first session's episode (its run of it went fine then); the second session's
          # record of trying it and failing may show
          absent: ["a fix that worked: CACHE_DIR", "buildcache sh scripts/build.sh): ok"]
"""


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("agent_memory_bench_stale", BENCH / "agent_memory.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop(spec.name, None)


def _story(bench, tmp_path):
    path = tmp_path / "stale.yaml"
    path.write_text(STORY, encoding="utf-8")
    return bench.load_story(path)


@pytest.mark.parametrize("episodes", ["on", "off"])
def test_a_new_working_fix_supersedes_the_old_one(bench, tmp_path, episodes):
    overrides = {} if episodes == "on" else {"memory": {"graph": {"episodes": "off"}}}
    result = bench.run_story(_story(bench, tmp_path), tmp_path, keep=True, overrides=overrides)
    assert result.errors == []
    (q,) = result.questions
    assert q.hit, q.block
    assert q.block.count("seen before") == 1  # one pitfall, not the old beside the new
    # Mnemo keeps history: the old fix is a superseded fact of that pitfall in the journal
    journal = next(tmp_path.glob("story-stale-*/home/memory/**/journal.jsonl"), None) \
        or next(tmp_path.glob("story-stale-*/home/**/*.jsonl"))
    ops = [json.loads(line) for line in journal.read_text().splitlines() if line.strip()]
    fixes = {body.get("fact_id") or body.get("new_fact_id"): body.get("value") or body.get("new_value")
             for op in ops for name, body in op.items()
             if name in ("AddFact", "SupersedeFact")
             and (body.get("key") or body.get("new_key")) == "fix"}
    assert set(fixes.values()) == {"CACHE_DIR=/tmp/buildcache sh scripts/build.sh",
                                   "sh scripts/build.sh --no-cache"}
    assert any("SupersedeFact" in op and op["SupersedeFact"]["new_key"] == "fix" for op in ops)
