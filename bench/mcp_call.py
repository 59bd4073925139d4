"""The cost of one MCP tool call beside a built-in tool call, in the same run (issue 27).

    .venv/bin/python bench/mcp_call.py [--calls 200]

One agent (the real core, the scripted model server) with mino-tools-fs and mino-mcp, and
the tests' demo MCP server (the SDK's own MCPServer) over stdio, started once. Each call
goes through the core's whole tool path (``turn.execute``: schema check, validate,
permission decision (an allow rule, so nobody is asked), run, session log, tool_outcome
hooks), without a model request, so the figures are the tool call's own:

- ``read_file`` (mino-tools-fs, in-process) on a small file: the built-in baseline;
- ``mcp__demo__echo`` over stdio: the same path plus the JSON-RPC round trip to the server;
- ``mcp__boxed__echo``: the same server run in the sandbox (the default for stdio servers),
  where bubblewrap works.

Reported: the median wall time per call, mino's own CPU per call (the server's CPU is the
child's, read from /proc), and the ratio MCP / built-in. Then the same as whole turns (one
scripted model request with the call, one with the answer) to show the share of a turn.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEMO = HERE.parent / "plugins" / "mino-mcp" / "tests" / "demo_server.py"


def _children_cpu() -> float:
    """CPU seconds of this process's children (the MCP server), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for pid in kids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / tick
            except (OSError, IndexError, ValueError):
                pass
    return total


def measure(session, info, raw, calls: int):
    from mino_core.turn import execute

    walls, cpus = [], []
    child_before = _children_cpu()
    for i in range(calls):
        outcomes: list = []
        c0, w0 = time.process_time(), time.perf_counter()
        execute(session, info, dict(raw, call_id=f"c{i}"), outcomes)
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        assert outcomes[0].result.status.value == "completed", outcomes[0].result.output
    return statistics.median(walls), statistics.median(cpus), (_children_cpu() - child_before) / calls


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()

    from mino_core.testing import Harness, ScriptedServer
    from mino_core.turn_data import TurnInfo

    with tempfile.TemporaryDirectory() as tmp:
        home, project = Path(tmp) / "home", Path(tmp) / "project"
        home.mkdir()
        project.mkdir()
        (project / "notes.txt").write_text("hello from a small file\n")
        boxed_demo = project / "demo_server.py"  # inside the project: the sandbox empties homes
        boxed_demo.write_bytes(DEMO.read_bytes())
        config = {"mcp": {"servers": {"demo": {"command": [sys.executable, str(DEMO)], "sandbox": False},
                                      "boxed": {"command": [sys.executable, str(boxed_demo)]}}},
                  "permissions": {"allow": ["mcp__demo__*", "mcp__boxed__*"]},
                  "memory": {"backend": "none"}}
        os.environ["MINO_DISABLE_PLUGINS"] = "mino-memory-graph,mino-memory-files,mino-mcp-memory"
        server = ScriptedServer().start()
        h = Harness(server, home, project, config=config)
        tools = h.session.host.collect_tools()
        assert "mcp__demo__echo" in tools and "read_file" in tools, sorted(tools)
        boxed = "mcp__boxed__echo" in tools  # the sandbox (bubblewrap) works here
        info = TurnInfo(session=h.session, user_text="bench", number=1)
        builtin = {"type": "function_call", "name": "read_file", "arguments": '{"path": "notes.txt"}'}
        mcp = {"type": "function_call", "name": "mcp__demo__echo", "arguments": '{"text": "hello"}'}
        in_box = dict(mcp, name="mcp__boxed__echo")
        for raw in (builtin, mcp, *([in_box] if boxed else [])):  # warm: servers started
            measure(h.session, info, raw, 5)
        b_wall, b_cpu, _ = measure(h.session, info, builtin, args.calls)
        m_wall, m_cpu, m_child = measure(h.session, info, mcp, args.calls)
        x_wall, x_cpu, _ = measure(h.session, info, in_box, args.calls) if boxed else (0, 0, 0)
        print(f"one tool call through the core's tool path, median of {args.calls} (same run):")
        print(f"  built-in read_file      wall {b_wall * 1e3:7.3f} ms   mino CPU {b_cpu * 1e3:7.3f} ms")
        print(f"  MCP mcp__demo__echo     wall {m_wall * 1e3:7.3f} ms   mino CPU {m_cpu * 1e3:7.3f} ms"
              f"   server CPU {m_child * 1e3:7.3f} ms (mean)")
        if boxed:
            print(f"  MCP, server sandboxed   wall {x_wall * 1e3:7.3f} ms   mino CPU {x_cpu * 1e3:7.3f} ms")
        else:
            print("  MCP, server sandboxed   (no sandbox here: not measured)")
        print(f"  ratio MCP / built-in    wall {m_wall / b_wall:6.1f}x        CPU {m_cpu / b_cpu:6.1f}x"
              f"   extra wall {(m_wall - b_wall) * 1e3:.3f} ms per call")
        if boxed:
            print(f"  ratio sandboxed / not   wall {x_wall / m_wall:6.2f}x        CPU {x_cpu / m_cpu:6.2f}x")

        def turns(raw_name: str, arguments: dict) -> float:
            times = []
            for _ in range(args.turns):
                server.add({"calls": [{"name": raw_name, "arguments": arguments}]}, {"text": "done"})
                w0 = time.perf_counter()
                record = h.turn("go")
                times.append(time.perf_counter() - w0)
                assert record.outcomes[0].result.status.value == "completed"
            return statistics.median(times)

        t_b = turns("read_file", {"path": "notes.txt"})
        t_m = turns("mcp__demo__echo", {"text": "hello"})
        print(f"whole turns (call + answer, two scripted model requests), median of {args.turns}:")
        print(f"  built-in {t_b * 1e3:.2f} ms   MCP {t_m * 1e3:.2f} ms   ratio {t_m / t_b:.2f}x")
        h.close()
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
