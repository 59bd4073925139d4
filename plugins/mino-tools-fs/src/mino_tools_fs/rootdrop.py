"""Run bubblewrap as an unprivileged host user when mino runs as root (a helper program).

With a user namespace, the sandbox's ``nobody`` is uid 0 outside when bubblewrap starts
as root, so every root-only file (``/etc/shadow``, 0600 files in ``/root``) is readable
by owner. This helper starts instead of bubblewrap and, before it runs it:

1. enters a private mount namespace (nothing it mounts is seen on the host);
2. clones each folder or file bubblewrap binds (``--bind``/``--ro-bind`` sources), as
   root, since the unprivileged user may not be able to reach them; the project and what
   lies in it are cloned as *idmapped* mounts, in which the project owner's files appear
   owned by the unprivileged user (so the project stays writable, and what the command
   creates is owned by the project owner on disk);
3. attaches the clones under a fresh private tmpfs and rewrites those sources;
4. drops to the unprivileged uid and gid (no groups) and runs bubblewrap, which makes
   its user namespace as that user: its uid maps to the unprivileged one outside.

Only the standard library; run as ``python -I -S rootdrop.py UID GID PROJECT -- BWRAP...``.
Any failure exits 125 with one line on stderr (the start-up probe then finds no sandbox,
and every Bash command asks). Needs Linux 5.12+ and a project file system that supports
idmapped mounts (ext4, xfs, btrfs; tmpfs from 6.3).
"""
import ctypes
import os
import signal
import stat
import sys

CLONE_NEWNS, CLONE_NEWUSER = 0x00020000, 0x10000000
MS_NOSUID, MS_NODEV, MS_REC, MS_PRIVATE = 2, 4, 0x4000, 1 << 18
AT_FDCWD, AT_EMPTY_PATH, AT_RECURSIVE = -100, 0x1000, 0x8000
OPEN_TREE_CLONE, OPEN_TREE_CLOEXEC = 1, os.O_CLOEXEC
MOVE_MOUNT_F_EMPTY_PATH = 4
MOUNT_ATTR_IDMAP = 0x00100000
# the newer mount calls have one number on every architecture
SYS_OPEN_TREE, SYS_MOVE_MOUNT, SYS_MOUNT_SETATTR = 428, 429, 442
STAGE = "/tmp"  # a private tmpfs goes here, in this helper's mount namespace only
BINDS = ("--bind", "--ro-bind", "--bind-try", "--ro-bind-try", "--dev-bind", "--dev-bind-try")

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def fail(what):
    err = ctypes.get_errno()
    sys.stderr.write(f"mino sandbox: {what}: {os.strerror(err) if err else 'failed'}\n")
    sys.exit(125)


def check(result, what):
    if result < 0:
        fail(what)
    return result


def idmap_userns(owner_uid, owner_gid, uid, gid):
    """A user namespace mapping the project owner's ids to the unprivileged ones, as an
    fd (a child holds it open while the maps are written)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(write)
        if libc.unshare(CLONE_NEWUSER) != 0:
            os._exit(1)
        os.read(read, 1)  # wait until the parent opened the namespace
        os._exit(0)
    os.close(read)
    try:
        # The child unshares right after fork: wait until its namespace differs from ours.
        own = os.stat("/proc/self/ns/user").st_ino
        for _ in range(100000):
            try:
                if os.stat(f"/proc/{pid}/ns/user").st_ino != own:
                    break
            except FileNotFoundError:
                fail("the id-mapping namespace helper died")
            os.sched_yield()
        with open(f"/proc/{pid}/uid_map", "w") as f:
            f.write(f"{owner_uid} {uid} 1\n")
        with open(f"/proc/{pid}/gid_map", "w") as f:
            f.write(f"{owner_gid} {gid} 1\n")
        return os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.write(write, b"x")
        os.close(write)
        os.waitpid(pid, 0)


def clone(path, userns_fd):
    fd = check(libc.syscall(SYS_OPEN_TREE, AT_FDCWD, path.encode(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC),
               f"cannot clone {path}")
    if userns_fd is not None:
        attr = MountAttr(MOUNT_ATTR_IDMAP, 0, 0, userns_fd)
        check(libc.syscall(SYS_MOUNT_SETATTR, fd, b"", AT_EMPTY_PATH, ctypes.byref(attr),
                           ctypes.sizeof(attr)), f"cannot id-map {path} (its file system may not allow it)")
    return fd


def inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def main(argv):
    uid, gid, project = int(argv[0]), int(argv[1]), os.path.realpath(argv[2])
    bwrap = argv[argv.index("--") + 1:]
    if not bwrap:
        fail("no command")
    owner = os.stat(project)
    check(libc.unshare(CLONE_NEWNS), "cannot make a mount namespace")
    check(libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "cannot make mounts private")
    userns = idmap_userns(owner.st_uid, owner.st_gid, uid, gid)
    sources = {}
    for i, arg in enumerate(bwrap[:-2]):
        if arg in BINDS and i + 1 < len(bwrap):
            src = bwrap[i + 1]
            if src in ("/", "/dev/null") or src in sources or not os.path.lexists(src):
                continue
            sources[src] = clone(src, userns if inside(os.path.realpath(src), project) else None)
    os.close(userns)
    check(libc.mount(b"tmpfs", STAGE.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"mode=0755,size=1m"),
          "cannot mount a private tmpfs")
    staged = {}
    for n, (src, fd) in enumerate(sources.items()):
        target = f"{STAGE}/{n}"
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            os.mkdir(target, 0o755)
        else:
            os.close(os.open(target, os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o644))
        check(libc.syscall(SYS_MOVE_MOUNT, fd, b"", AT_FDCWD, target.encode(), MOVE_MOUNT_F_EMPTY_PATH),
              f"cannot attach {src}")
        os.close(fd)
        staged[src] = target
    out, i = [], 0
    while i < len(bwrap):
        arg = bwrap[i]
        out.append(arg)
        if arg in BINDS and i + 1 < len(bwrap) and bwrap[i + 1] in staged:
            out.append(staged[bwrap[i + 1]])
            i += 2
            continue
        if arg == "--":  # the command itself is never rewritten
            out += bwrap[i + 1:]
            break
        i += 1
    os.chdir("/")
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores these; the command must not
        signal.signal(sig, signal.SIG_DFL)
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    try:
        os.execv(out[0], out)
    except OSError as exc:
        sys.stderr.write(f"mino sandbox: cannot run {out[0]}: {exc}\n")
        sys.exit(125)


if __name__ == "__main__":
    main(sys.argv[1:])
