"""A child process writing to a shared (PostgreSQL) journal from a given home: one
"machine" of the shared-journal tests. Each request is one operation; an acknowledged
one is recorded in the ack file (``tag i``), a refused one counted and not retried (a new
value goes next), so an operation is never written twice by this process."""
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mino_memory_graph.store import Store  # noqa: E402


def main():
    url, home, tag, count, ack = sys.argv[1:6]
    pause = float(sys.argv[6]) if len(sys.argv) > 6 else 0.0
    cfg = {"memory": {"graph": {"journal": url}}}
    s = None
    while s is None:
        try:
            s = Store.open(home=home, config=cfg, fsync=False)
        except OSError:
            time.sleep(0.2)
    fd = os.open(ack, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    node, failed = None, 0
    for i in range(int(count)):
        try:
            with s.write() as r:
                if node is None or i % 5 == 0:
                    node = r.create_node("Aspect", f"{tag} node {i}")
                else:
                    r.fact(node, f"k{i % 3}", f"{tag} value {i}")
        except OSError:
            failed += 1
            node = None  # the node may not exist: the next request makes one
            time.sleep(0.05)
            continue
        os.write(fd, f"{tag} {i}\n".encode())
        if pause:
            time.sleep(pause)
    s.close()
    print(f"failed {failed}")


if __name__ == "__main__":
    main()
