"""A child process that writes to a shared journal (used by the robustness tests)."""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mino_memory_graph.store import Store  # noqa: E402


def main():
    path, tag, count, ack = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    s = Store.open(path, fsync=False)
    ack_fd = os.open(ack, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600) if ack != "-" else None
    node = None
    for i in range(count):
        with s.write() as r:
            if node is None or i % 5 == 0:
                node = r.create_node("Aspect", f"{tag} node {i}")
            else:
                r.fact(node, f"k{i % 3}", f"{tag} value {i}")
        if ack_fd is not None:
            os.write(ack_fd, b"1")  # one byte per acknowledged request


if __name__ == "__main__":
    main()
