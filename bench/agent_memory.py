"""Scripted multi-session coding stories through mino's REPL: does the needed memory reach
the model?

    .venv/bin/python bench/agent_memory.py                    # every story in bench/stories
    .venv/bin/python bench/agent_memory.py --quick            # one story per category
    .venv/bin/python bench/agent_memory.py --stories DIR      # any folder of stories
    .venv/bin/python bench/agent_memory.py --stories bench/stories --stories bench/stories-holdout
                                                              # both folders, one run
    .venv/bin/python bench/agent_memory.py --only NAME --show # one story, its blocks printed
    .venv/bin/python bench/agent_memory.py --variant mnemo:memory.graph.scorer=mnemo

A story (``bench/stories/README.md``; loaded and linted by ``story_format.py``) is
sessions of user messages with the model's scripted answers; tool calls run for real (Bash
in its sandbox, the file tools on a real git project). ``story_runner.py`` runs each
session as ``mino`` does: ``start_agent``, then ``mino_core.repl.repl`` reading the
messages as typed lines (``--resume`` for a ``resume``); a ``headless`` session is a real
``mino -p`` process per message. The model is the scripted server (``story_server.py``),
which answers reflections from the story. A question is a later message whose first
request must carry given text in its leading memory block.

Reported here: the hit rate over questions, per category; the block's size in tokens
(4 characters a token, the core's own estimate); the memory plugin's time per turn (its
hook implementations, CPU of the main thread and wall, less the reflection's model
request); the wording lint's findings; with ``--variant``, the same stories under other
settings in the same run, set beside the default.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from story_format import (Story, StoryError, content_words, lint,  # noqa: E402,F401
                          load_stories, load_story)
from story_runner import (CHARS_PER_TOKEN, QuestionResult,  # noqa: E402,F401
                          StoryResult, parse_variant, run_story)

STORIES = HERE / "stories"


def _median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000 if values else 0.0


def _p95_ms(values: list[float]) -> float:
    if not values:
        return 0.0
    v = sorted(values)
    return v[min(len(v) - 1, int(round(0.95 * (len(v) - 1))))] * 1000


def summary(results: list[StoryResult]) -> dict[str, Any]:
    qs = [q for r in results for q in r.questions]
    cats: dict[str, list[QuestionResult]] = {}
    for q in qs:
        cats.setdefault(q.category, []).append(q)
    cpu = [c for r in results for c in r.turn_cpu]
    wall = [w for r in results for w in r.turn_wall]
    tokens = [q.block_tokens for q in qs]
    whole = [t for r in results for t in r.turn_whole]
    end_cpu = [c for r in results for c in r.end_cpu]
    end_wall = [w for r in results for w in r.end_wall]
    return {
        "stories": len(results), "questions": len(qs), "hits": sum(q.hit for q in qs),
        "hit_rate": (sum(q.hit for q in qs) / len(qs)) if qs else 0.0,
        "categories": {c: {"questions": len(v), "hits": sum(q.hit for q in v)}
                       for c, v in sorted(cats.items())},
        "category_figures": category_figures(results),
        "block_tokens": {"median": statistics.median(tokens) if tokens else 0,
                         "max": max(tokens) if tokens else 0,
                         "mean": round(statistics.fmean(tokens), 1) if tokens else 0},
        "turns": len(cpu),
        "memory_ms_per_turn": {"cpu_median": round(_median_ms(cpu), 2),
                               "cpu_p95": round(_p95_ms(cpu), 2),
                               "wall_median": round(_median_ms(wall), 2),
                               "wall_p95": round(_p95_ms(wall), 2),
                               "cpu_max": round(max(cpu) * 1000, 2) if cpu else 0.0,
                               "whole_turn_wall_median": round(_median_ms(whole), 2)},
        "session_end_ms": {"sessions": len(end_cpu), "cpu_median": round(_median_ms(end_cpu), 2),
                           "wall_median": round(_median_ms(end_wall), 2),
                           "cpu_max": round(max(end_cpu) * 1000, 2) if end_cpu else 0.0},
        "misses": [{"story": q.story, "session": q.session, "question": q.question,
                    "missing": q.missing, "present_but_forbidden": q.leaked,
                    "in_turn_missing": q.in_turn_missing} for q in qs if not q.hit],
        "errors": [f"{r.story.name}: {e}" for r in results for e in r.errors],
        "warnings": [f"{r.story.name}: {w}" for r in results for w in r.warnings],
        "stored_secrets": [f"{r.story.name}: {x}" for r in results for x in r.stored],
    }


def category_figures(results: list[StoryResult]) -> dict[str, dict[str, float]]:
    """Per category: the block's median size at its questions (tokens) and the memory's
    median CPU per turn over the turns of the stories of that category (a question's own
    category may differ from its story's: its turns are the story's)."""
    blocks: dict[str, list[int]] = {}
    cpu: dict[str, list[float]] = {}
    for r in results:
        for q in r.questions:
            blocks.setdefault(q.category, []).append(q.block_tokens)
        cpu.setdefault(r.story.category, []).extend(r.turn_cpu)
    return {c: {"block_median": statistics.median(b),
                "cpu_median_ms": round(_median_ms(cpu.get(c, [])), 2)}
            for c, b in sorted(blocks.items())}


def print_report(s: dict[str, Any], lint_problems: list[str], refused: list[str], wall: float,
                 cpu: float) -> None:
    print(f"\nstories {s['stories']}, questions {s['questions']}, turns {s['turns']} "
          f"({wall:.1f} s wall, {cpu:.1f} s CPU for the whole run)")
    print(f"hit rate of the recall block: {s['hits']}/{s['questions']} = {s['hit_rate']:.1%} "
          "(goal: at least 90%)")
    print("per category:")
    figures = s.get("category_figures", {})
    for c, v in s["categories"].items():
        f = figures.get(c)
        extra = (f"  block median {f['block_median']} tokens, memory CPU median "
                 f"{f['cpu_median_ms']} ms/turn" if f else "")
        print(f"  {c:<16} {v['hits']:>3}/{v['questions']:<3} {v['hits'] / v['questions']:.0%}"
              f"{extra}")
    b = s["block_tokens"]
    print(f"block size at questions, tokens (characters / {CHARS_PER_TOKEN}): "
          f"median {b['median']}, "
          f"mean {b['mean']}, max {b['max']}")
    m = s["memory_ms_per_turn"]
    print(f"memory plugin time per turn (its hooks, model requests excluded): CPU median "
          f"{m['cpu_median']} ms, p95 {m['cpu_p95']} ms, max {m['cpu_max']} ms; wall median "
          f"{m['wall_median']} ms, p95 {m['wall_p95']} ms (whole turn, scripted model and tools "
          f"included: wall median {m['whole_turn_wall_median']} ms)")
    e = s["session_end_ms"]
    print(f"memory plugin time at session end ({e['sessions']} sessions): CPU median "
          f"{e['cpu_median']} ms, max {e['cpu_max']} ms; wall median {e['wall_median']} ms")
    if s["misses"]:
        print("misses:")
        for miss in s["misses"]:
            why = []
            if miss["missing"]:
                why.append("missing " + ", ".join(repr(t) for t in miss["missing"]))
            if miss["present_but_forbidden"]:
                why.append("present but must not be "
                           + ", ".join(repr(t) for t in miss["present_but_forbidden"]))
            if miss["in_turn_missing"]:
                why.append("not within the turn "
                           + ", ".join(repr(t) for t in miss["in_turn_missing"]))
            print(f"  {miss['story']} [{miss['session']}] {miss['question']!r}: {'; '.join(why)}")
    print(f"secret stories' forbidden texts kept in a file under the home: "
          f"{len(s['stored_secrets'])}")
    for title, lines in (("story errors", s["errors"]), ("warnings", s["warnings"]),
                         ("secrets kept under the home", s["stored_secrets"]),
                         ("wording lint", lint_problems), ("stories refused", refused)):
        if lines:
            print(f"{title}:")
            for line in lines:
                print(f"  {line}")


def quick_pick(stories: list[Story]) -> list[Story]:
    """One story per category (the first by name), for --quick."""
    seen, out = set(), []
    for s in stories:
        if s.category not in seen:
            seen.add(s.category)
            out.append(s)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stories", type=Path, action="append", default=[],
                        help="folder of story files (repeatable: each folder is reported "
                             "on its own, all measured in the same run; default bench/stories)")
    parser.add_argument("--quick", action="store_true", help="one story per category")
    parser.add_argument("--only", action="append", default=[],
                        help="run only this story (repeatable)")
    parser.add_argument("--show", action="store_true", help="print each question's memory block")
    parser.add_argument("--json", type=Path, help="also write the summary as JSON here")
    parser.add_argument("--variant", action="append", default=[], metavar="NAME:KEY=VALUE,...",
                        help="also run every story with these config.yaml keys (dotted), in the "
                             "same run, e.g. mnemo:memory.graph.scorer=mnemo; compared with "
                             "the default")
    parser.add_argument("--keep", action="store_true",
                        help="keep each story's home and projects (to inspect the journal)")
    args = parser.parse_args(argv)
    folders = args.stories or [STORIES]
    loaded: list[tuple[Path, list[Story], list[str]]] = []
    for folder in folders:
        if not folder.is_dir():
            print(f"agent_memory: {folder} is not a folder of stories", file=sys.stderr)
            return 2
        stories, refused = load_stories(folder)
        if args.only:
            stories = [s for s in stories if s.name in set(args.only)]
        if args.quick:
            stories = quick_pick(stories)
        if not stories and not args.only:
            print(f"agent_memory: no runnable story in {folder}", file=sys.stderr)
            for line in refused:
                print(f"  {line}", file=sys.stderr)
            return 2
        loaded.append((folder, stories, refused))
    if not any(stories for _, stories, _ in loaded):
        print("agent_memory: no runnable story in " + ", ".join(map(str, folders)),
              file=sys.stderr)
        return 2
    try:
        variants = [("default", {})] + [parse_variant(v) for v in args.variant]
    except ValueError as exc:
        print(f"agent_memory: {exc}", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="agent-memory-"))
    c0, w0 = time.process_time(), time.perf_counter()
    results: dict[Path, dict[str, list[StoryResult]]] = {
        f: {name: [] for name, _ in variants} for f, _, _ in loaded}
    try:
        for folder, stories, _ in loaded:
            for story in stories:  # variants interleaved per story: noise hits all alike
                for name, overrides in variants:
                    r = run_story(story, work, show=args.show and name == "default",
                                  keep=args.keep, overrides=overrides)
                    hits = sum(q.hit for q in r.questions)
                    tag = f" [{name}]" if len(variants) > 1 else ""
                    print(f"{story.name:<34} {story.category:<14} {hits}/{len(r.questions)} "
                          f"{r.seconds:5.1f} s{tag}{'  ERROR' if r.errors else ''}", flush=True)
                    results[folder][name].append(r)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    out: dict[str, Any] = {}
    failed = False
    for folder, stories, refused in loaded:
        summaries = {name: summary(rs) for name, rs in results[folder].items()}
        lint_problems = [p for s in stories for p in lint(s)]
        if len(loaded) > 1:
            print(f"\n=== {folder}")
        print_report(summaries["default"], lint_problems, refused, wall, cpu)
        if len(variants) > 1:
            print_variants(summaries, dict(variants))
        out[str(folder)] = {**summaries["default"],
                            "variants": {k: v for k, v in summaries.items() if k != "default"},
                            "lint": lint_problems, "refused": refused}
        failed = (failed or any(v["errors"] or v["stored_secrets"] for v in summaries.values())
                  or bool(refused))
    if args.json:
        # one folder: its summary as before; several: one summary per folder
        args.json.write_text(json.dumps(out[str(loaded[0][0])] if len(loaded) == 1 else out,
                                        indent=2))
    return 1 if failed else 0


def print_variants(summaries: dict[str, dict[str, Any]], overrides: dict[str, dict]) -> None:
    """Each variant beside the default, measured in the same run (ratios of medians)."""
    base = summaries["default"]["memory_ms_per_turn"]
    print("\nvariants, same run (memory CPU and wall per turn: median, ratio to the default):")
    for name, v in summaries.items():
        m = v["memory_ms_per_turn"]
        ratio_cpu = m["cpu_median"] / base["cpu_median"] if base["cpu_median"] else 0.0
        ratio_wall = m["wall_median"] / base["wall_median"] if base["wall_median"] else 0.0
        figs = v.get("category_figures", {})
        cats = ", ".join(f"{c} {x['hits']}/{x['questions']} ({figs[c]['block_median']} tok, "
                         f"{figs[c]['cpu_median_ms']} ms)" if c in figs
                         else f"{c} {x['hits']}/{x['questions']}"
                         for c, x in v["categories"].items())
        print(f"  {name:<14} hits {v['hits']}/{v['questions']} ({v['hit_rate']:.1%}); block median "
              f"{v['block_tokens']['median']} tokens; CPU {m['cpu_median']} ms (x{ratio_cpu:.2f}), "
              f"wall {m['wall_median']} ms (x{ratio_wall:.2f}) "
              f"{json.dumps(overrides[name]) if overrides[name] else ''}")
        print(f"  {'':<14} {cats}")


if __name__ == "__main__":
    sys.exit(main())
