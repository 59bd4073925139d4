"""Bash sandbox overhead: median ms of ``true`` through the Bash tool's own runner,
inside bubblewrap (or sandbox-exec) and outside, measured in one run, interleaved; with
``--baseline``, also through another checkout's sandbox, so old and new are a same-run
ratio. Wall time and the CPU time of the processes each call started are both reported.

Run: ``python bench/sandbox_overhead.py [--runs N] [--json] [--baseline CHECKOUT]``
(needs mino-tools-fs installed). A baseline checkout: ``git archive REV | tar -x -C DIR``.
The view is what a Bash call computes (git dirs, deny rules, own code, homes), on an
empty temporary project.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mino_tools_fs import bash, sandbox


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(call) -> tuple[float, float]:
    cpu, start = _children_cpu(), time.perf_counter()
    outcome = call()
    elapsed = (time.perf_counter() - start) * 1000
    if outcome.exit_code != 0:
        sys.exit(f"`true` failed: {outcome.output}")
    return elapsed, (_children_cpu() - cpu) * 1000


def load_baseline(checkout: Path):
    """The ``mino_tools_fs`` package of another checkout, imported as ``baseline_tools_fs``."""
    folder = checkout / "plugins" / "mino-tools-fs" / "src" / "mino_tools_fs"
    spec = importlib.util.spec_from_file_location("baseline_tools_fs", folder / "__init__.py",
                                                  submodule_search_locations=[str(folder)])
    package = importlib.util.module_from_spec(spec)
    sys.modules["baseline_tools_fs"] = package
    spec.loader.exec_module(package)
    import baseline_tools_fs.bash as old_bash  # noqa: E402
    import baseline_tools_fs.sandbox as old_sandbox  # noqa: E402

    return old_bash, old_sandbox


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--baseline", type=Path, help="another checkout's root, measured beside this one")
    args = parser.parse_args()
    box = sandbox.detect()
    if box is None:
        print(sandbox.status_line(None), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mino-bench-", dir="/var/tmp") as tmp:
        project = Path(tmp).resolve()
        home = project.parent / f"{project.name}-home"
        calls = {"outside": lambda: bash.run_command("true", project, 30, 1000, None),
                 "inside": lambda: bash.run_command("true", project, 30, 1000, box,
                                                    lambda: sandbox.view(project, home, None, {}))}
        if args.baseline:
            old_bash, old_sandbox = load_baseline(args.baseline.resolve())
            old_box = old_sandbox.detect()
            calls["baseline"] = lambda: old_bash.run_command(
                "true", project, 30, 1000, old_box, lambda: old_sandbox.view(project, home, None, {}))
        for _ in range(3):  # warm the page cache for each
            for call in calls.values():
                timed(call)
        wall = {k: [] for k in calls}
        cpu = {k: [] for k in calls}
        for _ in range(args.runs):  # interleaved, so drift on a shared machine hits each
            for name, call in calls.items():
                w, c = timed(call)
                wall[name].append(w)
                cpu[name].append(c)
    result = {"sandbox": box.kind, "runs": args.runs, "as_root": os.getuid() == 0}
    for name in calls:
        result[f"{name}_ms"] = round(statistics.median(wall[name]), 2)
        result[f"{name}_cpu_ms"] = round(statistics.median(cpu[name]), 2)
    result["overhead_ms"] = round(result["inside_ms"] - result["outside_ms"], 2)
    result["ratio"] = round(result["inside_ms"] / result["outside_ms"], 2)
    if args.baseline:
        result["baseline_overhead_ms"] = round(result["baseline_ms"] - result["outside_ms"], 2)
        result["inside_vs_baseline"] = round(result["inside_ms"] / result["baseline_ms"], 2)
        result["inside_vs_baseline_cpu"] = round(result["inside_cpu_ms"] / max(result["baseline_cpu_ms"], 0.01), 2)
    if args.json:
        print(json.dumps(result))
    else:
        print(f"`true` via the Bash runner, median of {args.runs}: outside {result['outside_ms']} ms "
              f"(CPU {result['outside_cpu_ms']}), inside {box.kind} {result['inside_ms']} ms "
              f"(CPU {result['inside_cpu_ms']}); overhead {result['overhead_ms']} ms ({result['ratio']}x)")
        if args.baseline:
            print(f"baseline sandbox ({args.baseline}): {result['baseline_ms']} ms (CPU "
                  f"{result['baseline_cpu_ms']}); this one / baseline: {result['inside_vs_baseline']}x wall, "
                  f"{result['inside_vs_baseline_cpu']}x CPU")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
