"""The model of a story: the scripted server (``mino_core.testing``), which also answers the
graph backend's reflection requests from the story and lets a scripted call name a memory
node by the label the request shows."""
from __future__ import annotations

import json
import re
from typing import Any

EMPTY_REFLECTION = {"facts": [], "episode": {}, "fixes": [], "skill": None}


def reflection_marker() -> str:
    from mino_memory_graph.loop.reflect import INSTRUCTIONS

    return INSTRUCTIONS.splitlines()[0]


def make_server():
    """A started ScriptedServer whose reflection requests (their instructions are the
    graph backend's reflection prompt) take the current turn's scripted reflection instead
    of the next answer, so a story need not know whether mino reflects on a turn."""
    from mino_core.testing import ScriptedServer

    marker = reflection_marker()

    class StoryServer(ScriptedServer):
        reflection: Any = None
        reflections_asked = 0

        def _next(self, body, chat=False):
            if marker in str(body.get("instructions") or ""):
                with self._lock:
                    self.requests.append(body)
                    self.reflections_asked += 1
                    answer = self.reflection if self.reflection is not None else EMPTY_REFLECTION
                    self._counter += 1
                text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
                return "answer", {"text": text}
            with self._lock:
                if self.script:
                    self.script[0] = resolve_nodes(self.script[0], body, self.unresolved)
            return super()._next(body, chat)

    server = StoryServer()
    server.unresolved = []  # "@node:" references no request showed (warnings)
    return server.start()


_NODE_REF = re.compile(r"^@node:(.+)$")


def resolve_nodes(entry: dict[str, Any], body: dict[str, Any],
                  unresolved: list[str]) -> dict[str, Any]:
    """``"@node:LABEL"`` in a call's arguments becomes the number the request shows beside
    that label (``LABEL #12``), as a model reads it from its recall block; left as it is
    when the request does not show it (the call then fails validation, as a model's guess
    would)."""
    calls = entry.get("calls") or []
    if not any(isinstance(v, str) and _NODE_REF.match(v)
               for c in calls for v in (c.get("arguments") or {}).values()
               if isinstance(c.get("arguments"), dict)):
        return entry
    from mino_core.testing import request_text

    text = request_text(body)
    out = []
    for c in calls:
        args = c.get("arguments")
        args = dict(args) if isinstance(args, dict) else args
        if isinstance(args, dict):
            for k, v in args.items():
                m = _NODE_REF.match(v) if isinstance(v, str) else None
                found = re.search(re.escape(m.group(1)) + r" #(\d+)", text) if m else None
                if found:
                    args[k] = int(found.group(1))
                elif m:
                    unresolved.append(f"{v}: the request does not show that label with a number")
        out.append(dict(c, arguments=args))
    return dict(entry, calls=out)
