"""Bash sandbox overhead: median ms of ``true`` through the Bash tool's own runner,
inside bubblewrap (or sandbox-exec) and outside, measured in one run, interleaved.

Run: ``python bench/sandbox_overhead.py [--runs N] [--json]`` (needs mino-tools-fs installed).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mino_tools_fs import sandbox
from mino_tools_fs.bash import run_command


def timed(project: Path, box) -> float:
    start = time.perf_counter()
    outcome = run_command("true", project, 30, 1000, box)
    elapsed = (time.perf_counter() - start) * 1000
    if outcome.exit_code != 0:
        sys.exit(f"`true` failed ({'inside' if box else 'outside'}): {outcome.output}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    box = sandbox.detect()
    if box is None:
        print(sandbox.status_line(None), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mino-bench-") as tmp:
        project = Path(tmp).resolve()
        for _ in range(3):  # warm the page cache for both
            timed(project, None), timed(project, box)
        outside, inside = [], []
        for _ in range(args.runs):  # interleaved, so drift on a shared machine hits both
            outside.append(timed(project, None))
            inside.append(timed(project, box))
    result = {"sandbox": box.kind, "runs": args.runs,
              "outside_ms": round(statistics.median(outside), 2),
              "inside_ms": round(statistics.median(inside), 2)}
    result["overhead_ms"] = round(result["inside_ms"] - result["outside_ms"], 2)
    result["ratio"] = round(result["inside_ms"] / result["outside_ms"], 2)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"`true` via the Bash runner, median of {args.runs}: outside {result['outside_ms']} ms, "
              f"inside {box.kind} {result['inside_ms']} ms; overhead {result['overhead_ms']} ms "
              f"({result['ratio']}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
