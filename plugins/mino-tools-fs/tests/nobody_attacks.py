"""Run by test_sandbox_nobody.py as an ordinary user: the attacks of issue 12 through the
real Bash tool in real bubblewrap, and the user's next git command outside. Prints JSON.

    python nobody_attacks.py PROJECT MINO_HOME SOCKET
"""
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

from mino_core import ToolContext
from mino_tools_fs import bash, sandbox

project, home, sock = (Path(a) for a in sys.argv[1:4])
marker = project.parent / "PWNED"
box = sandbox.detect()
tool = bash.tool(sandbox.detect)
ctx = ToolContext(project_root=project, home=home, session_id="nobody", mode="manual", config={})


def sh(command: str) -> str:
    return tool.run({"command": command}, ctx).output


PAYLOAD = f"printf '#!/bin/sh\\ntouch {marker}\\nexit 1\\n' > payload.sh && chmod +x payload.sh; "
out = {
    "uid": os.getuid(),
    "box": None if box is None else {"kind": box.kind, "userns": getattr(box, "userns", None)},
    "sandboxed": tool.sandboxed({"command": "true"}, ctx),
    "caps": sh("grep CapEff /proc/self/status; mount -o remount,rw,bind /; "
               f"echo pwned > {project.parent}/escaped.txt; echo pwned > {home}/memory/x.md"),
    "secrets": sh(f"cat {home}/config.yaml {home}/sessions/other.jsonl ~/.ssh/id_x; ls -A {home}"),
    "socket": sh("python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
                 f"print(s.recv(100).decode())\" {sock}"),
    "git": sh(PAYLOAD + "mv .git .git-old; rm -rf .git/hooks; mkdir -p .git/hooks && "
              "cp payload.sh .git/hooks/post-checkout; echo \"$PWD\" > .git/commondir; "
              "git config core.fsmonitor \"$PWD/payload.sh\"; "
              "mkdir -p .mino/skills/x && echo evil > .mino/skills/x/SKILL.md; true"),
    "project_write": sh("echo made > made.txt && cat made.txt"),
}
for args in (["status"], ["checkout", "-q", "-b", "other"], ["status"]):
    subprocess.run(["git", *args], cwd=project, capture_output=True, timeout=60)
control = socket.socket(socket.AF_UNIX)
control.connect(str(sock))  # outside the sandbox the socket is reachable
out["socket_outside"] = True
out["payload_ran"] = marker.exists()
out["escaped"] = (project.parent / "escaped.txt").exists() or (home / "memory" / "x.md").exists()
out["stray"] = sorted(p.name for p in project.iterdir())
print(json.dumps(out))
