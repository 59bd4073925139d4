"""Start-up: ``mino --help``, the time to the first ``You> `` prompt (on a dumb terminal,
and on a real one, where prompt_toolkit draws it), ``mino -p hi`` and the first streamed
character. Wall time, and the CPU time (user + system) of the process beside it.

Reported as medians, and as ratios to a bare ``python -c pass``, to ``python -c "import
click"`` and to ``python -c "import openai"`` measured in the same run (these machines are
shared and noisy). ``mino -p hi`` answers from the scripted server on loopback (instant).
"first character" is mino's own time from sending a turn to its first streamed character,
in a fresh process whose ``openai`` import was prewarmed (as while the person types).
"first character from exec" is the whole way on a pseudo-terminal: exec, ``You>``, the
message typed at once (or after 1 s, as a person takes to type: then counted from Enter),
the answer's first character on screen; CPU is the process's own up to that moment.
Run: ``.venv/bin/python bench/startup.py [--runs N] [--json]``.
"""
from __future__ import annotations

import argparse
import json
import os
import pty
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# The console script beside this interpreter: the one installed with this checkout.
_BESIDE = os.path.join(os.path.dirname(sys.executable), "mino")
MINO = _BESIDE if os.path.exists(_BESIDE) else shutil.which("mino")


CPU: dict[str, list[float]] = {}  # per case: the process's CPU milliseconds


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def timed(argv, env) -> float:
    start, cpu = time.perf_counter(), _children_cpu()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    CPU.setdefault(argv_name(argv), []).append(_children_cpu() - cpu)
    return (time.perf_counter() - start) * 1000


def argv_name(argv) -> str:
    return " ".join(os.path.basename(str(a)) for a in argv)


def to_prompt(env, name="prompt") -> float:
    """Milliseconds from exec to the first ``You> `` on a pseudo-terminal (CPU: up to the
    prompt, from /proc, in 10 ms ticks; elsewhere the whole process to its exit)."""
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(MINO, [MINO], env)
    seen = b""
    try:
        while b"You> " not in seen and b"You>\x1b" not in seen:
            ready, _, _ = select.select([fd], [], [], 30)
            if not ready:
                raise RuntimeError(f"no prompt: {seen!r}")
            seen += os.read(fd, 4096)
        elapsed = (time.perf_counter() - start) * 1000
        at_prompt = _proc_cpu(pid)
        os.write(fd, b"/exit\r")
        while select.select([fd], [], [], 5)[0]:  # drain, so its last writes never block
            try:
                if not os.read(fd, 4096):
                    break
            except OSError:
                break
    finally:
        status, usage = _reap(pid)
        os.close(fd)
    whole = (usage.ru_utime + usage.ru_stime) * 1000
    CPU.setdefault(name, []).append(at_prompt if at_prompt is not None else whole)
    return elapsed


def repl_first_char(env, name: str, typing: float = 0.0, mino: str = "") -> float:
    """Milliseconds to the answer's first character on a pseudo-terminal: from exec, or,
    with ``typing`` seconds of typing after ``You>``, from the Enter that sends it."""
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(mino or MINO, [mino or MINO], env)
    seen = b""
    cpu = None

    def until(marker: bytes, after: int = 0) -> None:
        nonlocal seen
        while marker not in seen[after:]:
            ready, _, _ = select.select([fd], [], [], 30)
            if not ready:
                raise RuntimeError(f"no {marker!r}: {seen[-300:]!r}")
            seen += os.read(fd, 4096)

    try:
        until(b"You>")
        time.sleep(typing)
        sent = time.perf_counter()
        os.write(fd, b"hi\r")
        until(b"Hi.")
        elapsed = (time.perf_counter() - (sent if typing else start)) * 1000
        cpu = _proc_cpu(pid)
        # Ctrl-D at the next prompt: sent while the turn still ends (a memory backend's
        # end-of-turn work), the key watcher takes it as typed ahead and mino stays.
        until(b"You>", seen.index(b"Hi."))
        os.write(fd, b"\x04")
        while select.select([fd], [], [], 5)[0]:
            try:
                if not os.read(fd, 4096):
                    break
            except OSError:
                break
    finally:
        status, usage = _reap(pid)
        os.close(fd)
    CPU.setdefault(name, []).append(cpu if cpu is not None else (usage.ru_utime + usage.ru_stime) * 1000)
    return elapsed


def _reap(pid: int, wait: float = 10.0):
    """(status, rusage) of the child; one still there after ``wait`` seconds (a key that
    did not reach it, a failed case) is killed, so the run never hangs on it."""
    end = time.monotonic() + wait
    while time.monotonic() < end:
        got, status, usage = os.wait4(pid, os.WNOHANG)
        if got:
            return status, usage
        time.sleep(0.05)
    print(f"startup: killed mino (pid {pid}), still running {wait:g} s after its case", file=sys.stderr)
    os.kill(pid, 9)
    _, status, usage = os.wait4(pid, 0)
    return status, usage


def _proc_cpu(pid: int):
    """CPU milliseconds the process has used so far (Linux /proc), or None."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def first_char_child() -> None:
    """In a fresh process: prewarm, then time one turn to its first streamed character."""
    from pathlib import Path

    from mino_core.model import prewarm
    from mino_core.testing import Harness, ScriptedServer
    from mino_core.turn import run_turn

    with ScriptedServer([{"text": "Hello there, this is the answer."}]) as server, \
            tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "p").mkdir()
        h = Harness(server, Path(tmp) / "h", Path(tmp) / "p", config={})
        prewarm(h.agent.host.collect_tools).join()  # what the REPL does while the person types
        first = []
        shown = h.ui.text_delta
        h.ui.text_delta = lambda d: (first or first.append(time.perf_counter()), shown(d))
        start = time.perf_counter()
        run_turn(h.session, "hi")
    print((first[0] - start) * 1000)


def first_char(env) -> float:
    cpu = _children_cpu()
    out = subprocess.run([sys.executable, __file__, "--first-char-child"], env=env, check=True,
                         capture_output=True, text=True).stdout
    CPU.setdefault("first", []).append(_children_cpu() - cpu)  # the whole child, set-up included
    return float(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--baseline", metavar="MINO",
                        help="another mino executable (an older checkout) measured in the same run")
    parser.add_argument("--first-char-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_char_child:
        return first_char_child()
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from mino_core.testing import ScriptedServer

    with tempfile.TemporaryDirectory() as home, ScriptedServer() as server:
        server.add(*[{"text": "Hi."} for _ in range(6 * args.runs + 2)])
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MINO_", "OPENAI_"))}
        project = os.path.join(home, "project")
        os.mkdir(project)
        from mino_core.trust import remember

        remember(home, project)  # answered once, as a person would have: no trust question
        env.update(MINO_HOME=home, MINO_BASE_URL="http://127.0.0.1:9/v1", TERM="dumb",
                   MINO_PROJECT=project)
        answered = dict(env, MINO_BASE_URL=server.base_url)
        # A real terminal answers prompt_toolkit's cursor-position query; a bare pty does not.
        terminal = dict(env, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        answered_tty = dict(answered, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        cases = {
            "python -c pass": lambda: timed([sys.executable, "-c", "pass"], env),
            "python -c 'import click'": lambda: timed([sys.executable, "-c", "import click"], env),
            "python -c 'import openai'": lambda: timed([sys.executable, "-c", "import openai"], env),
            "mino --help": lambda: timed([MINO, "--help"], env),
            "first You> prompt": lambda: to_prompt(env),
            "first You> (terminal)": lambda: to_prompt(terminal, "terminal"),
            "mino -p hi": lambda: timed([MINO, "-p", "hi"], answered),
            "first character (own)": lambda: first_char(env),
            "first char from exec": lambda: repl_first_char(answered_tty, "exec"),
            "first char after 1 s typing": lambda: repl_first_char(answered_tty, "typed", 1.0),
        }
        if args.baseline:
            base = args.baseline
            cases["baseline: mino -p hi"] = lambda: timed([base, "-p", "hi"], answered)
            cases["baseline: first char from exec"] = lambda: repl_first_char(answered_tty, "b-exec", mino=base)
            cases["baseline: after 1 s typing"] = lambda: repl_first_char(answered_tty, "b-typed", 1.0, base)
        to_prompt(env)  # warm the file cache and write the first-run files
        to_prompt(terminal, "terminal")
        CPU.clear()
        samples = {name: [] for name in cases}
        cpu = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, fn in cases.items():  # interleaved, so drift hits every case alike
                before = {k: len(v) for k, v in CPU.items()}
                samples[name].append(fn())
                for key, values in CPU.items():
                    if len(values) > before.get(key, 0):
                        cpu[name].append(values[-1])
    medians = {name: statistics.median(v) for name, v in samples.items()}
    cpu_medians = {name: statistics.median(v) if v else 0.0 for name, v in cpu.items()}
    bare, click_floor = medians["python -c pass"], medians["python -c 'import click'"]
    openai_floor = medians["python -c 'import openai'"]
    cpu_click = cpu_medians["python -c 'import click'"] or 1.0
    cpu_openai = cpu_medians["python -c 'import openai'"] or 1.0
    result = {name: {"median_ms": round(m, 1), "x_bare": round(m / bare, 2),
                     "x_click": round(m / click_floor, 2), "x_openai": round(m / openai_floor, 2),
                     "cpu_ms": round(cpu_medians[name], 1),
                     "cpu_x_click": round(cpu_medians[name] / cpu_click, 2),
                     "cpu_x_openai": round(cpu_medians[name] / cpu_openai, 2)}
              for name, m in medians.items()}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{'what':<26} {'median ms':>10} {'x bare':>8} {'x click':>8} {'x openai':>9}"
          f" {'cpu ms':>8} {'cpu x click':>12} {'cpu x openai':>13}")
    for name, row in result.items():
        print(f"{name:<26} {row['median_ms']:>10.1f} {row['x_bare']:>8.2f} {row['x_click']:>8.2f}"
              f" {row['x_openai']:>9.2f} {row['cpu_ms']:>8.1f} {row['cpu_x_click']:>12.2f}"
              f" {row['cpu_x_openai']:>13.2f}")
    print("targets: mino --help within 1.5x click; first prompt within 3x click; "
          "mino -p within 1.5x openai; first character under 300 ms")


if __name__ == "__main__":
    main()
