"""Each driver's private directory for the files it shares with the workers on its host.

The letters workers pass each other (:mod:`spartan.backend.channel`), the call board
(:mod:`~spartan.backend.call_board`), the stop flag and the landing zone
(:mod:`~spartan.backend.shared_output`) are files. They live in one directory per
driver session, ``spartan-session-<pid namespace>-<pid>-<start ms>-<random>`` under
:data:`~spartan.backend.shared_output.SHM_DIR` (a twin of it under the temporary
directory holds letters shared memory had no room for): made mode 0700 with a name
nobody can guess, so no other local user can read, plant or replace a file in it.
Files in it are made with ``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600, and opened
with ``O_NOFOLLOW`` by :func:`open_own`, which checks that a regular file of this user
is there. The directory goes when its :class:`SessionDir` is closed (backend
shutdown) or at exit; a driver killed before that leaves it, and the next driver's
:func:`remove_leftovers` removes it once the driver is provably dead (no process of
that pid, or one that started at another time).

The session's *token* (random, made by the driver) goes to the workers inside Ray's
calls, never into a file: letters carry a checksum keyed with it
(:mod:`~spartan.backend.channel`).

>>> files = SessionDir.make()
>>> oct(os.stat(files.spill).st_mode & 0o777)
'0o700'
>>> key_for(os.path.join(files.spill, "letter-0")) == files.token
True
>>> files.close()
>>> os.path.exists(files.spill)
False
"""

from __future__ import annotations

import contextlib
import mmap
import os
import secrets
import shutil
import stat
import tempfile
import weakref
from dataclasses import dataclass, field

import psutil

from spartan.backend import shared_output

#: every session directory's name starts so
PREFIX = "spartan-session-"
#: the names of the files drivers before session directories left in SHM_DIR and the
#: temporary directory (``<prefix><driver pid>-...``), removed once their driver is dead
OLD_PREFIXES = ("spartan-letter-", "spartan-calls-", "spartan-landing-", "spartan-stop-")
#: how far the start time in a directory's name may be from its process's to be that
#: process's (the boot time a start time is counted from can move by a second)
START_SLACK_MS = 2000
#: flags of a new private file (never through a link planted at its name)
CREATE_FLAGS = os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
#: flags every open of an existing session file adds
OPEN_FLAGS = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def spill_base() -> str:
    """Where the session directories for letters spilled to disk go (read when asked:
    tests and users may change the temporary directory)."""
    return tempfile.gettempdir()


@dataclass(frozen=True)
class Handle:
    """What a worker needs of its driver's session: the directories and the token.
    Sent to workers through Ray with their start; the token never goes into a file
    (nor into this object's repr).

    ``shm``: the directory in shared memory, None where the host has none; ``spill``:
    the one under the temporary directory."""

    shm: str | None
    spill: str
    token: bytes = field(repr=False)


#: the sessions this process made or joined, by each of their directories
_known: dict[str, Handle] = {}
#: the key of letters in a directory of no known session (a test's own directory): no
#: other process knows it, so such letters pass only within this process
_PROCESS_TOKEN = secrets.token_bytes(32)


class SessionDir:
    """A driver's private directories (see the module's docs), removed by :meth:`close`,
    when it is garbage, or at exit."""

    def __init__(self, handle: Handle) -> None:
        self.handle = handle
        self._pid = os.getpid()
        self._removal = weakref.finalize(self, _remove_dirs, handle, self._pid)
        for d in (handle.shm, handle.spill):
            if d is not None:
                _known[d] = handle

    @property
    def shm(self) -> str | None:
        return self.handle.shm

    @property
    def spill(self) -> str:
        return self.handle.spill

    @property
    def token(self) -> bytes:
        return self.handle.token

    @classmethod
    def make(cls) -> SessionDir:
        """New directories for this process (under shared memory where the host has
        it), after removing what dead drivers left (:func:`remove_leftovers`)."""
        remove_leftovers()
        name = f"{PREFIX}{_pid_namespace()}-{os.getpid()}-{_start_ms(os.getpid())}-"
        spill = _make_private_dir(spill_base(), name)
        shm = None
        if os.path.isdir(shared_output.SHM_DIR):
            with contextlib.suppress(OSError):  # (a full or read-only /dev/shm: none)
                shm = _make_private_dir(shared_output.SHM_DIR, name)
        return cls(Handle(shm, spill, secrets.token_bytes(32)))

    def new_file(self, stem: str, size: int = 0) -> tuple[str, int]:
        """A new file in the shared-memory directory, named ``stem`` and a random part,
        ``size`` bytes (reserved), open for reading and writing: its path and its file
        descriptor (the caller closes it). OSError without shared memory or room."""
        if self.shm is None:
            raise FileNotFoundError("no shared-memory directory in this session")
        while True:
            path = os.path.join(self.shm, f"{stem}-{secrets.token_hex(8)}")
            try:
                fd = os.open(path, os.O_RDWR | CREATE_FLAGS, 0o600)
                break
            except FileExistsError:  # (a random name taken: another one)
                continue
        try:
            if size:
                # reserve the pages now: a full tmpfs fails here, not as SIGBUS later
                os.posix_fallocate(fd, 0, size)
        except OSError:
            os.close(fd)
            shared_output.unlink_quietly(path)
            raise
        return path, fd

    def close(self) -> None:
        """Remove the directories and everything in them (mappings stay valid)."""
        self._removal()


_default: SessionDir | None = None


def default() -> SessionDir:
    """This process's own session, made on first use (for callers that were given
    none: the doctests, the tests of each part)."""
    global _default
    if _default is None or _default._pid != os.getpid() or not _default._removal.alive:
        _default = SessionDir.make()
    return _default


def join(handle: Handle | None) -> Handle | None:
    """Take ``handle``, the driver's session, in a worker: letters in its directories
    are checked with its token. Directories not on this host, or that are not
    private directories of this user, are left out (their files are never read here);
    None when neither is left."""
    if handle is None:
        return None
    shm = handle.shm if handle.shm is not None and _is_private_dir(handle.shm) else None
    spill = handle.spill if _is_private_dir(handle.spill) else None
    if shm is None and spill is None:
        return None
    for d in (shm, spill):
        if d is not None:
            _known[d] = handle
    return handle


def key_for(path: str) -> bytes:
    """The key of the letter at ``path``: its session's token (that of this process
    alone where its directory belongs to no known session)."""
    handle = _known.get(os.path.dirname(path))
    return handle.token if handle is not None else _PROCESS_TOKEN


def spill_dir_for(path: str) -> str | None:
    """The session directory where the letter at ``path`` is spilled; None outside a
    known session."""
    handle = _known.get(os.path.dirname(path))
    return handle.spill if handle is not None else None


def open_own(path: str, flags: int = os.O_RDONLY) -> int:
    """``os.open(path, flags)`` never through a symbolic link, and only of a regular file
    of this user (OSError else): what a session file is."""
    fd = os.open(path, flags | OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid():
            raise PermissionError(f"{path} is not a file of this user")
    except BaseException:
        os.close(fd)
        raise
    return fd


def map_own(path: str | None) -> mmap.mmap | None:
    """The session file at ``path`` (:func:`open_own`) mapped read-write; None without
    a path, or where there is no such file of this user here (a board on another host)
    or it is empty."""
    if path is None:
        return None
    try:
        fd = open_own(path, os.O_RDWR)
    except OSError:
        return None
    try:
        return mmap.mmap(fd, os.fstat(fd).st_size)
    except (OSError, ValueError):  # (an empty file)
        return None
    finally:
        os.close(fd)


# ---- the janitor ------------------------------------------------------------------------


def remove_leftovers(directories: tuple[str, ...] | None = None) -> list[str]:
    """Remove what drivers that are provably dead left in ``directories`` (default: the
    shared-memory and temporary directories): session directories, and the files of
    drivers before them. Only this user's, never through a link; a driver whose death
    cannot be proved (its process is another user's, or in another pid namespace)
    keeps its files. Returns the paths removed.

    >>> remove_leftovers(()) == []
    True
    """
    if directories is None:
        directories = tuple(dict.fromkeys((shared_output.SHM_DIR, spill_base())))
    removed = []
    for base in directories:
        try:
            names = os.listdir(base)
        except OSError:  # (no such directory)
            continue
        for name in names:
            path = os.path.join(base, name)
            if name.startswith(PREFIX):
                owner = _owner(name[len(PREFIX) :])
                if owner is not None and _dead(*owner) and _is_private_dir(path):
                    shutil.rmtree(path, ignore_errors=True)  # (never follows a link)
                    removed.append(path)
            elif name.startswith(OLD_PREFIXES):
                pid = name.split("-")[2]
                if pid.isdigit() and not shared_output.process_alive(int(pid)) and _own(path):
                    shared_output.unlink_quietly(path)
                    removed.append(path)
    return removed


def _owner(rest: str) -> tuple[int, int, int] | None:
    """(pid namespace, pid, start ms) from what follows :data:`PREFIX` in a name."""
    parts = rest.split("-")
    if len(parts) != 4 or not all(p.isdigit() for p in parts[:3]):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def _dead(namespace: int, pid: int, start_ms: int) -> bool:
    """Whether the driver of ``pid`` that started at ``start_ms`` is gone for sure."""
    if namespace != _pid_namespace():
        return False  # (its pids are not ours: no way to tell)
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:  # killed, not yet reaped
            return True
        return abs(round(proc.create_time() * 1000) - start_ms) > START_SLACK_MS
    except psutil.NoSuchProcess:  # (a zombie too)
        return True
    except psutil.Error:  # e.g. access denied: it lives
        return False


def _own(path: str) -> bool:
    try:
        return os.lstat(path).st_uid == os.geteuid()
    except OSError:
        return False


def _is_private_dir(path: str) -> bool:
    """Whether ``path`` is a directory (not a link to one) of this user that nobody else
    may enter."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def _make_private_dir(base: str, stem: str) -> str:
    while True:
        path = os.path.join(base, stem + secrets.token_hex(8))
        try:
            os.mkdir(path, 0o700)
            break
        except FileExistsError:  # (a random name taken: another one)
            continue
    os.chmod(path, 0o700)  # (whatever the umask: the owner must write, nobody else)
    if not _is_private_dir(path):  # e.g. a filesystem that ignores modes
        shutil.rmtree(path, ignore_errors=True)
        raise PermissionError(f"could not make a private directory in {base}")
    return path


def _remove_dirs(handle: Handle, pid: int) -> None:
    """Remove ``handle``'s directories, from the process that made them only (a forked
    child exiting must not take its parent's files)."""
    if os.getpid() != pid:
        return
    for d in (handle.shm, handle.spill):
        if d is not None:
            _known.pop(d, None)
            shutil.rmtree(d, ignore_errors=True)


def _start_ms(pid: int) -> int:
    return round(psutil.Process(pid).create_time() * 1000)


def _pid_namespace() -> int:
    """The inode of this process's pid namespace (0 where there is none to read)."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0
