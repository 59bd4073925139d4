"""Rendering the files backend's memory index from 200 memories, as a turn start does.

Writes 200 memory files (one in four with details) into a temporary folder, then times,
median over many runs in this one process:

- ``scandir``: a bare ``os.scandir`` of the folder, reading each entry's name (the floor);
- ``scandir_lstat``: the same plus one ``lstat`` per entry (what any correct skip rule for
  links, special files and hard links must pay);
- ``render``: ``store.scan(folder).text`` with the parse cache warm, as at every turn after
  the first (the folder is listed and every file checked; unchanged files are not re-read);
- ``render_cold``: the same with the cache emptied first (the first turn of a process, or
  every file changed);
- ``front_input``: the plugin hook itself, notice bookkeeping included.

Goal: ``render`` under 5 ms median. Run from the repository root:
``python bench/memory_index.py [--memories 200] [--runs 300] [--json]``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from mino_memory_files import plugin, store

TYPES = ("user", "feedback", "project", "reference")


def populate(directory: Path, count: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        details = f"Step {i}: run the checks, then tag.\n" * 6 if i % 4 == 0 else ""
        memory = store.Memory(f"memory-{i:03d}", TYPES[i % 4],
                              f"Projects prefer build tool {i} over the default one.", details)
        (directory / f"{memory.name}.md").write_text(store.format_memory(memory), encoding="utf-8")


def median_ms(fn, runs: int) -> float:
    fn()  # warm the page cache (and the parse cache where it applies)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=200)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        directory = store.memory_dir(home)
        populate(directory, options.memories)

        def bare():
            with os.scandir(directory) as entries:
                for entry in entries:
                    entry.name

        def with_lstat():
            with os.scandir(directory) as entries:
                for entry in entries:
                    entry.stat(follow_symlinks=False)

        def render():
            return store.scan(directory).text

        def render_cold():
            store._CACHE.clear()
            return store.scan(directory).text

        session = SimpleNamespace(home=home, state={}, notice=lambda text: None)
        turn = SimpleNamespace(session=session, purpose="turn")

        text = render()
        assert text.count("\n") == options.memories, "every memory must be in the index"
        figures = {
            "memories": options.memories,
            "index_bytes": len(text.encode()),
            "runs": options.runs,
            "scandir_ms": median_ms(bare, options.runs),
            "scandir_lstat_ms": median_ms(with_lstat, options.runs),
            "render_ms": median_ms(render, options.runs),
            "render_cold_ms": median_ms(render_cold, max(20, options.runs // 10)),
            "front_input_ms": median_ms(lambda: plugin.front_input(turn=turn), options.runs),
        }
    figures["render_vs_scandir"] = figures["render_ms"] / figures["scandir_ms"]
    figures["render_vs_scandir_lstat"] = figures["render_ms"] / figures["scandir_lstat_ms"]
    figures["goal_ms"] = 5.0
    figures["meets_goal"] = figures["render_ms"] < 5.0
    if options.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"{options.memories} memories, index {figures['index_bytes']} bytes, "
          f"median of {options.runs} runs")
    print(f"  os.scandir (floor)        {figures['scandir_ms']:8.3f} ms")
    print(f"  os.scandir + lstat        {figures['scandir_lstat_ms']:8.3f} ms")
    print(f"  render index (warm cache) {figures['render_ms']:8.3f} ms  "
          f"{figures['render_vs_scandir']:.1f}x scandir, "
          f"{figures['render_vs_scandir_lstat']:.1f}x scandir+lstat")
    print(f"  render index (cold)       {figures['render_cold_ms']:8.3f} ms")
    print(f"  front_input hook          {figures['front_input_ms']:8.3f} ms")
    print(f"  goal: render under 5 ms: {'met' if figures['meets_goal'] else 'NOT met'}")


if __name__ == "__main__":
    main()
