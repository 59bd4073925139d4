"""Issue 23's attacks, each performed through the real ``mino -p`` (a real process against
the scripted model server, the real bubblewrap, real files), as whoever runs this.

test_sandbox_round3.py imports it and runs every attack as root (CI runs as root), and
runs this file as a script as ``nobody`` (copied to a folder nobody can read):

    python round3_attacks.py BASE [ATTACK...]    # prints {attack: observations} as JSON

``BASE`` is an empty folder the current user owns, outside /tmp (the sandbox's /tmp is
private). Each attack returns what it observed; the checks are in the test file.
"""
from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import venv
from pathlib import Path

from mino_core.testing.server import ScriptedServer

_BESIDE = Path(sys.executable).with_name("mino")
MINO = [str(_BESIDE)] if _BESIDE.exists() else [sys.executable, "-m", "mino_core.cli"]
# ``ROUND3_AS='["setpriv", "--reuid=nobody", ...]'``: every mino process runs through
# this prefix (as nobody), and the attack's files are handed to that user first. The
# test's own process stays root: it may not be able to start this venv's Python as
# nobody (a base interpreter in root's home), while setpriv can.
AS = json.loads(os.environ.get("ROUND3_AS") or "[]")
AS_UID = int(os.environ.get("ROUND3_UID") or -1)
PLUGINS = "mino.policy,mino.skills,mino-tools-fs"


class Run:
    """One attack's folders: a project, mino's home, a person's home; ``mino(...)`` runs
    ``mino -p`` with the model making the given tool calls, and returns their outputs."""

    def __init__(self, base: Path, name: str, server: ScriptedServer):
        self.base = base / name
        self.project = self.base / "project"
        self.home = self.base / "mino-home"
        self.user = self.base / "user"
        for folder in (self.project, self.home, self.user):
            folder.mkdir(parents=True)
        self.server = server
        self.keep: set[Path] = set()  # files that stay the test user's (root-only ones)
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("MINO_", "OPENAI_", "MNEMO_", "XDG_", "GIT_"))}
        self.env.update(MINO_HOME=str(self.home), MINO_BASE_URL=server.base_url,
                        MINO_PROJECT=str(self.project), MINO_PLUGINS=PLUGINS, HOME=str(self.user),
                        PYTHONDONTWRITEBYTECODE="1")

    def config(self, text: str) -> None:
        (self.home / "config.yaml").write_text(text)

    def hand_over(self) -> None:
        """Everything under the attack's folder to the user mino runs as (ROUND3_AS)."""
        if AS_UID < 0:
            return
        for path in [self.base, *self.base.rglob("*")]:
            if path not in self.keep:
                os.lchown(path, AS_UID, AS_UID)

    def run(self, argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
        self.hand_over()
        return subprocess.run([*AS, *argv], env={**self.env, **(env or {})}, capture_output=True,
                              text=True, timeout=300, stdin=subprocess.DEVNULL, cwd=str(self.project))

    def mino(self, *calls: tuple[str, dict], argv: list[str] | None = None,
             env: dict | None = None) -> dict:
        """``mino -p`` in which the model makes ``calls`` one after another, then answers.
        Returns the tool outputs the model read, in order, and how mino exited."""
        before = len(self.server.requests)
        for name, arguments in calls:
            self.server.add({"calls": [{"name": name, "arguments": arguments}]})
        self.server.add({"text": "done"})
        done = self.run([*(argv or MINO), "-p", "go"], env)
        outputs = []
        for body in self.server.requests[before:]:
            items = body.get("input") if isinstance(body.get("input"), list) else []
            last = [i for i in items if isinstance(i, dict) and i.get("type") == "function_call_output"]
            if last:
                outputs.append(str(last[-1].get("output")))
        self.server.script.clear()  # an answer left over (mino stopped early) is not the next run's
        return {"outputs": outputs[-len(calls):] if calls else [], "rc": done.returncode,
                "stderr": done.stderr[-2000:]}


def read(path: Path) -> str:
    """A file's text, or "" when the attack removed or moved it."""
    try:
        return path.read_text()
    except OSError:
        return ""


def bash(command: str) -> tuple[str, dict]:
    return ("Bash", {"command": command})


def serve_unix(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    os.chmod(path, 0o777)
    server.listen()

    def accept():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.sendall(b"hello from the host\n")
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    return server


CONNECT = ("python3 -c \"import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); "
           "print(s.recv(100).decode())\" ")

# -- the attacks ---------------------------------------------------------------------------


def env_values(run: Run) -> dict:
    """1. Secrets in environment values reach Bash (the scrub matched names only)."""
    secrets = {"DATABASE_URL": "postgres://u:dbpw-SECRET@h/db",
               "HTTPS_PROXY": "http://user:proxypw-SECRET@proxy:3128",
               "PIP_INDEX_URL": "https://tok:pippw-SECRET@pypi.example/simple",
               "SENTRY_DSN": "https://dsnkey-SECRET@sentry.example/1",
               "OPENAI_API_KEY": "sk-live-SECRET", "LANG": "C.UTF-8"}
    default = run.mino(bash("env; echo HOME=$HOME"), env=secrets)
    run.config("tools-fs:\n  env: [HTTPS_PROXY]\n")
    added = run.mino(bash("echo PROXY=$HTTPS_PROXY"), env=secrets)
    return {"default": default, "added": added}


CREDENTIALS = {".git-credentials": "https://u:gitcred-SECRET@github.com",
               ".config/git/credentials": "https://u:gitcred2-SECRET@github.com",
               ".npmrc": "//registry.npmjs.org/:_authToken=npm-SECRET",
               ".pypirc": "[pypi]\npassword = pypi-SECRET", ".kube/config": "token: kube-SECRET",
               ".cargo/credentials.toml": "token = \"cargo-SECRET\"",
               ".config/gcloud/credentials.db": "gcloud-SECRET", ".bash_history": "export X=hist-SECRET",
               ".unlisted-tool/token": "unlisted-SECRET", ".cache/pip/http/x": "pip cache entry"}


def home_files(run: Run) -> dict:
    """2. Credential files in the home are readable (only a list of them was hidden)."""
    for name, text in CREDENTIALS.items():
        (run.user / name).parent.mkdir(parents=True, exist_ok=True)
        (run.user / name).write_text(text + "\n")
    cat = "cd ~ && cat " + " ".join(CREDENTIALS) + "; ls -A ~; ls -A ~/.cache/pip 2>&1"
    default = run.mino(bash(cat))
    run.config("tools-fs:\n  home_read: [~/.cache/pip]\n")
    opted = run.mino(bash("cat ~/.cache/pip/http/x; echo x > ~/.cache/pip/planted; cat ~/.npmrc"))
    listing = run.run([*MINO, "plugins"])
    return {"default": default, "opted": opted, "plugins": listing.stdout,
            "planted": (run.user / ".cache/pip/planted").exists()}


def root_files(run: Run) -> dict:
    """3. Root-only files are readable when mino runs as root (the sandbox's nobody was uid 0
    outside)."""
    for folder in (run.base.parent, run.base):
        folder.chmod(0o755)  # the path is reachable: only the file's own mode protects it
    secret = run.base / "root-only.txt"
    secret.write_text("root-only-SECRET\n")
    secret.chmod(0o600)
    run.keep.add(secret)  # stays the test user's (root's, in CI)
    shadow = ""
    try:
        shadow = Path("/etc/shadow").read_text().splitlines()[0]
    except (OSError, IndexError):
        pass
    result = run.mino(bash(f"id -u; cat /etc/shadow; cat {secret}; echo x >> {secret}; "
                           "cat /proc/self/uid_map"))
    return {"result": result, "shadow_line": shadow, "uid": os.getuid(),
            "secret_after": read(secret)}


def deny_rules(run: Run) -> dict:
    """4. Deny rules stop at the file tools: Bash reads and writes what they deny."""
    (run.project / "secrets").mkdir()
    (run.project / "secrets" / "k.txt").write_text("deny-SECRET\n")
    (run.project / "conf").mkdir()
    (run.project / "conf" / "app.ini").write_text("original\n")
    (run.project / "keys.pem").write_text("pem-SECRET\n")
    run.config("permissions:\n  deny: ['read_file(secrets/*)', 'write_file(conf/*)', 'read_file(*.pem)']\n")
    result = run.mino(bash("cat secrets/k.txt; ls -A secrets; cat keys.pem; echo evil > conf/app.ini; "
                           "mv conf/app.ini conf/old.ini; echo made > ok.txt; cat ok.txt"))
    return {"result": result, "conf": read(run.project / "conf" / "app.ini"),
            "ok": (run.project / "ok.txt").exists()}


def hard_links(run: Run) -> dict:
    """5. A hard link is another name: read_file shows a denied file through it."""
    (run.project / "secrets").mkdir()
    (run.project / "secrets" / "k.txt").write_text("link-SECRET\n")
    run.config("permissions:\n  deny: ['read_file(secrets/*)']\n")
    made = run.mino(bash("ln secrets/k.txt notes.txt; ls notes.txt"))
    if not (run.project / "notes.txt").exists():  # the link made outside (a checkout, a person)
        os.link(run.project / "secrets" / "k.txt", run.project / "notes.txt")
    read = run.mino(("read_file", {"path": "notes.txt"}), bash("cat notes.txt"))
    return {"made": made, "read": read}


def own_code(run: Run) -> dict:
    """6. mino's own code is writable from the sandbox when its venv lies in the project:
    a planted .pth file runs at the next start of mino, on the host."""
    env_dir = run.project / ".venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(env_dir)
    python = env_dir / "bin" / "python"
    site_dir = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                   capture_output=True, text=True, check=True).stdout.strip())
    here = [p for p in sys.path if p.endswith("site-packages") and os.path.isdir(p)]
    # mino itself, from this interpreter's site-packages (its .pth files run too)
    (site_dir / "mino-here.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in here))
    marker = run.base / "PWNED"
    argv = [str(python), "-c", "from mino_core.cli import main; main()"]
    result = run.mino(bash(f"echo 'import os; open({str(marker)!r}, \"w\")' > {site_dir}/evil.pth; "
                           f"echo 'open({str(marker)!r}, \"w\")' > {site_dir}/sitecustomize.py; "
                           f"ls {site_dir}"), argv=argv)
    again = run.run(argv + ["--version"])
    return {"result": result, "again_rc": again.returncode, "marker": marker.exists(),
            "planted": (site_dir / "evil.pth").exists() or (site_dir / "sitecustomize.py").exists()}


def limits(run: Run) -> dict:
    """7. No resource limits: /tmp and /dev/shm are unbounded RAM, no rlimits."""
    run.config("tools-fs:\n  limits: {tmp_mb: 4, shm_mb: 4, memory_mb: 256}\n")
    tmpfs = run.mino(bash("head -c 8000000 /dev/zero > /tmp/big"),
                     bash("head -c 8000000 /dev/zero > /dev/shm/big"),
                     bash("python3 -c 'x = bytearray(1 << 30)'"),
                     bash("echo still-usable"))
    run.config("tools-fs:\n  limits: {file_mb: 2}\n")
    files = run.mino(bash("head -c 3000000 /dev/zero > big.bin"))
    size = (run.project / "big.bin").stat().st_size if (run.project / "big.bin").exists() else 0
    return {"tmpfs": tmpfs, "files": files, "big": size}


def unix_sockets(run: Run) -> dict:
    """12. Host unix sockets outside /run (under /var/tmp, the home, /var/lib) are reachable."""
    path = run.base / "agent.sock"
    server = serve_unix(path)
    try:
        control = socket.socket(socket.AF_UNIX)
        control.connect(str(path))
        outside = control.recv(100).decode()
        control.close()
        default = run.mino(bash(CONNECT + str(path)))
        run.config(f"tools-fs:\n  unix_sockets: [{path}]\n")
        allowed = run.mino(bash(CONNECT + str(path)))
    finally:
        server.close()
    return {"outside": outside, "default": default, "allowed": allowed}


def protected_paths(run: Run) -> dict:
    """Issue 24: the graph memory declares its journal (here outside mino's home); the
    sandbox hides it, with no knowledge of the graph plugin in tools-fs."""
    import importlib.util

    if importlib.util.find_spec("mino_memory_graph") is None:
        return {"skipped": "mino-memory-graph is not installed (a plugin tested alone)"}
    journal = run.base / "team-memory" / "journal.jsonl"
    journal.parent.mkdir()
    journal.write_text('{"op": "fact", "text": "journal-SECRET"}\n')
    run.config(f"memory:\n  graph:\n    journal: {journal}\n")
    env = {"MINO_PLUGINS": PLUGINS + ",mino-memory-graph"}
    result = run.mino(bash(f"cat {journal}; ls -A {journal.parent}; echo x >> {journal}"), env=env)
    return {"result": result, "journal": read(journal)}


ATTACKS = {f.__name__: f for f in (env_values, home_files, root_files, deny_rules, hard_links,
                                   own_code, limits, unix_sockets, protected_paths)}


def run_attacks(base: Path, names: list[str]) -> dict:
    out = {}
    with ScriptedServer() as server:
        for name in names:
            out[name] = ATTACKS[name](Run(base, name, server))
    return out


if __name__ == "__main__":
    print(json.dumps(run_attacks(Path(sys.argv[1]), sys.argv[2:] or list(ATTACKS))))
