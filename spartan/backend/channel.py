"""Small pieces passed from worker to worker on one host, past the driver.

Ray resolves an actor call's arguments at the caller: a piece one worker needs from
another goes owner -> driver -> reader, and the reader's task is only sent on once the
driver has heard the piece is ready. With two busy cores (the driver's threads among
them) that hop took 5-11 ms, once per iteration of CG, whose iteration NumPy runs in
19 ms. Here the driver sends both calls at once, naming a *letter*: the owner writes
the piece to a shared-memory file of that name (:func:`post`), and the reader's task,
already queued behind the reader's earlier work, waits for the file
(:meth:`Letter.receive`), looking again as soon as the owner rings its
:class:`Doorbell`. The wait cannot deadlock: the driver sends calls in an order in
which every producer precedes its readers, and each worker runs its calls in that
order (Ray's guarantee for calls from one caller), so the earliest unfinished call
never waits.

**The letter protocol.** Letters live in the driver's private session directory
(:mod:`spartan.backend.session_files`: mode 0700, a name nobody can guess) and nothing
read from one is ever unpickled. A letter is a fixed 64-byte header, a description of
the value (JSON) and the raw bytes of its arrays, each at a 64-byte boundary:

========  ======================================================================
bytes     what
========  ======================================================================
0-7       :data:`MAGIC`
8         kind: 1, the value is here; 2, it waits in Ray (see below)
12-15     bytes of the description
16-23     bytes of the arrays' data
24-27     CRC-32 of that data
32-63     BLAKE2b of bytes 0-31, the letter's name and the description, keyed with
          the session's secret token (which the driver sends the workers through
          Ray, never through a file)
========  ======================================================================

The description holds None, bools, ints, strings, bytes, floats and complex numbers
(exactly, by their hex form), slices, tuples and lists of them, and arrays and NumPy
scalars of plain dtypes (:func:`sendable`: no objects, no structured records) by dtype,
shape, memory order and offset. A reader opens the file without following links, only
if it is a regular file of its own user, and uses it only once the keyed hash, the
CRC, the sizes and every array's dtype and bounds check out; a file that fails is
ignored, as if the letter had not come yet (the writer's rename replaces it), and
logged. A letter names itself in its hash, so one letter cannot stand in for another.

Anything else (an object array, an exception, an arbitrary Python value) never goes
through a file. Pieces the driver knows to be over :data:`MAX_BYTES` do not take
letters. One that turns out bigger (a whole block, whose size the driver does not
know), that is not plain data, or that there is no room for, goes apart (the
transport's other way: Ray's object store, where the reader maps it without a copy)
and its letter is left empty, which the reader gets as :class:`SentApart`. A piece
whose reader holds no such ref (the driver held the post to send it with the owner's
later tasks) is never sent apart: plain data there is no room for is *spilled* to the
session's directory on disk, which an empty letter then points to; any other value
goes to Ray's key-value store (pickled by Ray's own channel, under the letter's name),
and the letter (kind 2) says so. An empty letter carries nothing but "look elsewhere".

>>> import numpy as np
>>> mail = Mailbox()                                 # the driver's
>>> letter = Letter(mail.name(), writer=os.getpid())  # for the owner and the reader
>>> post(letter.path, np.arange(3))                  # the owner
True
>>> letter.receive()                                 # the reader
array([0, 1, 2])
>>> mail.close()
"""

from __future__ import annotations

import contextlib
import functools
import glob
import hashlib
import hmac
import itertools
import json
import logging
import math
import os
import pickle
import re
import secrets
import select
import shutil
import socket
import struct
import sys
import time
import zlib
from dataclasses import dataclass
from typing import Any

import cloudpickle
import numpy as np

from spartan.backend import session_files, shared_output

log = logging.getLogger("spartan")

#: pieces up to this size go in letters; bigger ones apart (through the object store,
#: which moves pieces of many MB faster than a letter's write and checked read)
MAX_BYTES = 1 << 20
#: while waiting, how often the reader checks that the writer's process still lives
CHECK_WRITER_S = 1.0
#: the longest sleep between looks for a letter
MAX_POLL_S = 1e-3

#: the first bytes of every letter (the format's version is its last character)
MAGIC = b"SPTNLTR1"
#: magic, kind, description bytes, data bytes, data CRC-32 (then the 32-byte hash)
_HEADER = struct.Struct("<8sB3xIQI4x")
_HASH_BYTES = 32
HEADER_BYTES = _HEADER.size + _HASH_BYTES
_VALUE, _IN_RAY = 1, 2
#: every array's data, and the data as a whole, start at a multiple of this
_ALIGN = 64
#: the dtype kinds a letter carries: bools, ints, uints, floats, complex, datetimes,
#: timedeltas, fixed-size bytes and str
SENDABLE_KINDS = frozenset("biufcmMSU")
_DTYPE = re.compile(r"[<>|=]?[biufcmMSU]\d+(\[\d*[A-Za-z]+\])?")
#: the deepest nesting of tuples and lists a letter describes
MAX_DEPTH = 32
#: the biggest int a letter describes, in bits (JSON parsers limit digits)
MAX_INT_BITS = 4096
#: arrays under this many bytes are copied into one buffer with their neighbours
_SMALL = 4096
#: iovecs per write (Linux's IOV_MAX is 1024)
_IOV_MAX = 512
#: Ray's key-value namespace of values that cannot go in a letter's file
_KV_NAMESPACE = "spartan-letters"


class PeerLost(ConnectionError):
    """The worker that was to write a letter died before it did."""


class PieceRejected(PeerLost):
    """A letter that came failed its checks (it was replaced or damaged): its piece is
    lost, as if its writer had died."""


class SentApart:
    """What an empty letter means: its piece went another way (see :func:`post`)."""


@dataclass(frozen=True)
class Letter:
    """A piece's name in shared memory, the process id of the worker writing it, and
    what the reader needs for a piece sent apart (the transport's business; Ray does
    not resolve an object ref held in an argument's field); None where none goes apart
    (:func:`post` with ``spill``)."""

    path: str
    writer: int
    apart: Any = None

    def receive(self) -> Any:
        """The posted value, once it is there (the file is then removed).

        Raises :class:`PeerLost` if the writer dies without posting it, and
        :class:`PieceRejected` if the spill file it points to fails its checks."""
        key, name = session_files.key_for(self.path), _name(self.path)
        # the writer is checked at the first miss too: a cancelled evaluation's readers
        # take letters of writers dead since, one after another
        sleep, check_at = 20e-6, time.monotonic()
        while (got := _take(self.path, key, name)) is _NOTHING:
            if time.monotonic() >= check_at:
                check_at = time.monotonic() + CHECK_WRITER_S
                if not shared_output.process_alive(self.writer):
                    # (a writer that posted and then died leaves the letter here)
                    got = _take(self.path, key, name)
                    if got is _NOTHING:
                        raise PeerLost(f"worker process {self.writer} died before sending")
                    break
            doorbell().wait(sleep)
            sleep = min(2 * sleep, MAX_POLL_S)
        if got is not _EMPTY:
            return got
        # an empty letter: the piece was spilled (the file is written before the letter)
        spilled = spill_path(self.path)
        got = _take(spilled, key, name)
        if got is _NOTHING and os.path.lexists(spilled):
            raise PieceRejected(f"the spilled piece at {spilled} failed its checks")
        return SentApart if got is _NOTHING or got is _EMPTY else got


# ---- the doorbell -----------------------------------------------------------------------


class Doorbell:
    """This process's doorbell: a writer rings it (:func:`ring`) once it has posted a
    letter, so that a reader waiting for one looks again at once, not at the end of its
    sleep (up to :data:`MAX_POLL_S`; in CG a letter was taken a median 0.68 ms after it
    was written, once per iteration). A datagram socket in Linux's abstract namespace,
    named after the process id (no file to remove); elsewhere, or where it cannot be
    bound, :meth:`wait` just sleeps. A ring may be spurious (an earlier letter's, or one
    for another process of that id in another pid namespace): it only means a look.

    >>> bell = doorbell()
    >>> ring(os.getpid())
    >>> bell.wait(5.0)
    True
    """

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._sock: socket.socket | None = None
        if sys.platform.startswith("linux"):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                sock.bind(_bell_address(self.pid))
            except OSError:  # e.g. another process of this id, in another pid namespace
                sock.close()
                return
            sock.setblocking(False)
            self._sock = sock

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, less if rung; whether it was rung."""
        if self._sock is None:
            time.sleep(timeout)
            return False
        rung = bool(select.select([self._sock], [], [], timeout)[0])
        with contextlib.suppress(BlockingIOError):
            while True:  # every ring so far is answered by this one look
                self._sock.recv(16)
        return rung


_bell: Doorbell | None = None


def doorbell() -> Doorbell:
    """This process's :class:`Doorbell` (a forked child gets its own)."""
    global _bell
    if _bell is None or _bell.pid != os.getpid():
        _bell = Doorbell()
    return _bell


def ring(pid: int) -> None:
    """Ring the doorbell of process ``pid`` from this process's own (nothing if either
    has none, or ``pid``'s queue of rings is full: it looks again soon anyway)."""
    sock = doorbell()._sock  # (this process's own: no socket made per ring)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.sendto(b"\0", socket.MSG_DONTWAIT, _bell_address(pid))


def _bell_address(pid: int) -> str:
    return f"\0spartan-bell-{pid}"


# ---- posting ----------------------------------------------------------------------------


def post(path: str, value: Any, spill: bool = False) -> bool:
    """Write ``value`` as the letter at ``path`` (the reader sees all of it or nothing)
    and return True. When it is not plain data (:func:`encode`) or there is no room for
    it: without ``spill``, leave an empty letter (:func:`post_apart`) and return False,
    the value going apart (a reader must never wait for a letter that does not come);
    with ``spill`` (its reader has no other way to get it), write plain data to
    :func:`spill_path` and anything else to Ray's key-value store, and return True, or
    raise OSError when neither is possible.

    >>> mail = Mailbox()
    >>> post(mail.name(), lambda: 0)   # not plain data: the letter is left empty
    False
    >>> mail.close()
    """
    key, name = session_files.key_for(path), _name(path)
    chunks = encode(value, key, name)
    if chunks is None:
        if not spill:
            post_apart(path)
            return False
        chunks = _into_ray(value, key, name)
    if _write(path, chunks):
        return True
    spilled = spill and _write(spill_path(path), chunks)  # (before the letter points to it)
    post_apart(path)
    if spill and not spilled:
        size = sum(len(c) for c in chunks)
        raise OSError(f"no room for a {size}-byte piece in {os.path.dirname(path)} or on disk")
    return spilled


def post_apart(path: str) -> None:
    """Leave an empty letter at ``path``: its piece went another way (an empty file
    needs no free space on the shared-memory filesystem). OSError if even that fails."""
    if not _write(path, []):
        raise OSError(f"could not leave a letter at {path}")


def spill_path(path: str) -> str:
    """Where the letter at ``path`` goes when shared memory has no room for it: the
    session's directory on disk (next to the letter outside a known session)."""
    spill = session_files.spill_dir_for(path)
    return os.path.join(spill, os.path.basename(path)) if spill else path + ".spill"


def sendable(dtype: Any) -> bool:
    """Whether arrays of ``dtype`` travel in letters: plain data, no Python objects.

    >>> sendable(np.float32), sendable("M8[ns]"), sendable(object), sendable("i4,f8")
    (True, True, False, False)
    """
    return np.dtype(dtype).kind in SENDABLE_KINDS  # (records, sub-arrays: "V"; objects: "O")


def encode(value: Any, key: bytes, name: str) -> list[Any] | None:
    """The letter (buffers to write one after another) carrying ``value``, keyed with
    ``key`` and named ``name``; None when ``value`` is not plain data (see the module's
    docs)."""
    enc = _Encoder()
    try:
        tree = enc.describe(value, 0)
    except _NotPlain:
        return None
    return _letter(_VALUE, json.dumps(tree, separators=(",", ":")).encode(), enc, key, name)


def decode(buf: np.ndarray, key: bytes, name: str) -> tuple[int, Any]:
    """The kind and value of the letter ``buf`` (its bytes, as a uint8 array whose
    memory the value's arrays then share), checked against ``key`` and ``name``.
    Raises :class:`Rejected` for anything that is not such a letter, whole."""
    if len(buf) < HEADER_BYTES:
        raise Rejected("too short")
    magic, kind, meta_len, data_len, crc = _HEADER.unpack_from(buf.data)
    if magic != MAGIC:
        raise Rejected("not a spartan letter")
    data_at = _aligned(HEADER_BYTES + meta_len)
    if data_at + data_len != len(buf) or kind not in (_VALUE, _IN_RAY):
        raise Rejected("sizes do not match")
    meta = bytes(buf[HEADER_BYTES : HEADER_BYTES + meta_len])
    mac = _hash(key, bytes(buf[: _HEADER.size]), name, meta)
    if not hmac.compare_digest(mac, bytes(buf[_HEADER.size : HEADER_BYTES])):
        raise Rejected("not from this session, or not this letter")
    data = buf[data_at:]
    if zlib.crc32(data.data) != crc:
        raise Rejected("its data is damaged")
    if kind == _IN_RAY:
        return kind, None
    try:
        return kind, _build(json.loads(meta), data, 0)
    except (ValueError, TypeError, KeyError, IndexError, RecursionError) as error:
        raise Rejected(f"its description does not hold: {error}") from None


class Rejected(ValueError):
    """What :func:`decode` raises for a file that is not a whole letter of this session."""


class _NotPlain(Exception):
    """The value is not plain data (see :func:`encode`)."""


class _Encoder:
    """Describes a value (JSON-able) and gathers its arrays' bytes: small arrays copied
    together into one buffer (one write and one CRC update for the many small arrays
    of a join's update lists), big ones written from where they lie."""

    def __init__(self) -> None:
        self.chunks: list[Any] = []
        #: bytes of data so far (those in ``_small`` too) and the CRC of ``chunks``
        self.size = 0
        self.crc = 0
        self._small = bytearray()

    def describe(self, v: Any, depth: int) -> Any:
        t = type(v)
        if v is None or t is bool or t is str:
            return v
        if t is int:
            if v.bit_length() > MAX_INT_BITS:
                raise _NotPlain
            return v
        if t is float:
            return ["f", v.hex()]
        if t is complex:
            return ["c", v.real.hex(), v.imag.hex()]
        if t is bytes:
            return ["b", v.hex()]
        if t is np.ndarray:
            return ["a", *self._array(v)]
        if isinstance(v, np.generic) and not isinstance(v, np.void):
            dtype, _, _, offset = self._array(np.asarray(v))
            return ["s", dtype, offset]
        if v is Ellipsis:
            return ["e"]
        if depth >= MAX_DEPTH:
            raise _NotPlain
        if t is tuple or t is list:
            return ["t" if t is tuple else "l", [self.describe(x, depth + 1) for x in v]]
        if t is slice:
            ends = (v.start, v.stop, v.step)
            if all(x is None or (type(x) is int and x.bit_length() <= 64) for x in ends):
                return ["sl", *ends]  # (the common case, without a call per end)
            return ["sl", *(self.describe(x, depth + 1) for x in ends)]
        raise _NotPlain

    def _array(self, a: np.ndarray) -> tuple[str, list[int], str, int]:
        """(dtype, shape, order, offset) of ``a``, its bytes added."""
        if a.dtype.kind not in SENDABLE_KINDS:
            raise _NotPlain
        order = "C"
        if not a.flags.c_contiguous:
            if a.flags.f_contiguous:
                a, order = a.T, "F"
            else:
                a = np.ascontiguousarray(a)
        offset = self._add(a.reshape(-1).view(np.uint8) if a.nbytes else b"")
        shape = list(a.shape)[::-1] if order == "F" else list(a.shape)
        return a.dtype.str, shape, order, offset

    def _add(self, raw: Any) -> int:
        """Add ``raw`` (bytes, or a 1-D uint8 array) at the next aligned offset; that
        offset."""
        offset = _aligned(self.size)
        self._small += bytes(offset - self.size)
        self.size = offset + len(raw)
        if len(raw) < _SMALL:
            self._small += memoryview(raw)  # (not `+= raw`: NumPy would broadcast)
        else:
            self._flush()
            self.chunks.append(raw)
            self.crc = zlib.crc32(raw, self.crc)
        return offset

    def _flush(self) -> None:
        if self._small:
            self.chunks.append(self._small)
            self.crc = zlib.crc32(self._small, self.crc)
            self._small = bytearray()

    def finish(self) -> _Encoder:
        """This encoder, every byte in ``chunks``."""
        self._flush()
        return self


def _letter(kind: int, meta: bytes, enc: _Encoder, key: bytes, name: str) -> list[Any]:
    enc.finish()
    header = _HEADER.pack(MAGIC, kind, len(meta), enc.size, enc.crc)
    mac = _hash(key, header, name, meta)
    pad = bytes(_aligned(HEADER_BYTES + len(meta)) - HEADER_BYTES - len(meta))
    return [header + mac + meta + pad, *enc.chunks]


def _hash(key: bytes, header: bytes, name: str, meta: bytes) -> bytes:
    h = hashlib.blake2b(key=key, digest_size=_HASH_BYTES, person=b"spartan-letter")
    raw_name = name.encode()
    h.update(header)
    h.update(struct.pack("<I", len(raw_name)))
    h.update(raw_name)
    h.update(meta)
    return h.digest()


def _build(node: Any, data: np.ndarray, depth: int) -> Any:
    """The value a description ``node`` stands for, its arrays views of ``data``."""
    if node is None or type(node) in (bool, int, str):
        return node
    if depth > MAX_DEPTH + 1:
        raise ValueError("nested too deep")
    tag, *args = node
    if tag == "a" or tag == "s":
        dtype_str, shape, order, offset = args if tag == "a" else (args[0], [], "C", args[-1])
        array = _view(data, dtype_str, shape, order, offset)
        return array if tag == "a" else array[()]
    if tag == "t" or tag == "l":
        items = [_build(x, data, depth + 1) for x in args[0]]
        return tuple(items) if tag == "t" else items
    if tag == "sl":
        return slice(
            *(x if x is None or type(x) is int else _build(x, data, depth + 1) for x in args)
        )
    if tag == "f":
        return float.fromhex(args[0])
    if tag == "c":
        return complex(float.fromhex(args[0]), float.fromhex(args[1]))
    if tag == "b":
        return bytes.fromhex(args[0])
    if tag == "e":
        return Ellipsis
    raise ValueError(f"unknown tag {tag!r}")


@functools.lru_cache(maxsize=256)
def _plain_dtype(dtype_str: str) -> np.dtype:
    """The dtype ``dtype_str`` names, if it is one a letter may carry."""
    if type(dtype_str) is not str or not _DTYPE.fullmatch(dtype_str):
        raise ValueError(f"dtype {dtype_str!r} is not allowed")
    dtype = np.dtype(dtype_str)
    if not sendable(dtype):
        raise ValueError(f"dtype {dtype_str!r} is not allowed")
    return dtype


def _view(data: np.ndarray, dtype_str: str, shape: list, order: str, offset: int) -> np.ndarray:
    """The array at ``offset`` of ``data``, once its dtype is plain and it fits."""
    dtype = _plain_dtype(dtype_str)
    for n in shape:
        if type(n) is not int or n < 0:
            raise ValueError("bad shape")
    if order not in ("C", "F") or type(offset) is not int:
        raise ValueError("bad order or offset")
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    if offset < 0 or offset + nbytes > len(data):
        raise ValueError("an array lies outside the letter")
    stored = shape[::-1] if order == "F" else shape  # (an F-ordered array: its transpose)
    if not nbytes:
        array = np.zeros(stored, dtype)
    else:
        array = np.frombuffer(data, dtype, count, offset).reshape(stored)
    return array.T if order == "F" else array


# ---- values through Ray -----------------------------------------------------------------


def _into_ray(value: Any, key: bytes, name: str) -> list[Any]:
    """Put ``value`` (not plain data) into Ray's key-value store under the letter's
    name; the letter that says so. OSError where Ray cannot take it."""
    try:
        from ray.experimental import internal_kv

        if not internal_kv._internal_kv_initialized():
            raise OSError("Ray is not running here")
        internal_kv._internal_kv_put(
            name, cloudpickle.dumps(value, protocol=5), namespace=_KV_NAMESPACE
        )
    except Exception as error:  # noqa: BLE001 -- a value Ray cannot pickle, or no Ray
        raise OSError(f"could not pass a {type(value).__name__} between workers: {error}") from None
    return _letter(_IN_RAY, b"", _Encoder(), key, name)


def _from_ray(name: str) -> Any:
    """The value of letter ``name`` in Ray's key-value store (:func:`_into_ray`), taken
    out of it."""
    from ray.experimental import internal_kv

    data = internal_kv._internal_kv_get(name, namespace=_KV_NAMESPACE)
    if data is None:
        raise PieceRejected(f"the piece of letter {name} is not in Ray's store")
    internal_kv._internal_kv_del(name, namespace=_KV_NAMESPACE)
    return pickle.loads(data)  # (from Ray's store, written by a worker: not a file)


def _name(path: str) -> str:
    """The name of the letter at ``path``: its session directory's and its own (its
    hash, its spill file's and its key in Ray's store say it)."""
    return f"{os.path.basename(os.path.dirname(path))}/{os.path.basename(path)}"


# ---- files ------------------------------------------------------------------------------

#: what :func:`_take` found: no letter (or none that passed its checks), an empty one
_NOTHING, _EMPTY = object(), object()
#: letters already reported as rejected (each is logged once)
_rejected: set[str] = set()


def _write(path: str, chunks: list[Any]) -> bool:
    """Write ``chunks`` to ``path`` whole (by rename, over whatever is there) or not at
    all; False: no room. A new private file, never through a link."""
    part = f"{path}.{secrets.token_hex(6)}.part"
    try:
        fd = os.open(part, os.O_WRONLY | session_files.CREATE_FLAGS, 0o600)
    except OSError:
        return False
    try:
        try:
            _write_all(fd, chunks)
        finally:
            os.close(fd)
        try:
            os.rename(part, path)
        except IsADirectoryError:  # (something planted at the name: it goes)
            shutil.rmtree(path, ignore_errors=True)
            os.rename(part, path)
        return True
    except OSError:
        shared_output.unlink_quietly(part)
        return False


def _write_all(fd: int, chunks: list[Any]) -> None:
    for i in range(0, len(chunks), _IOV_MAX):
        group = chunks[i : i + _IOV_MAX]
        done = os.writev(fd, group)
        for chunk in group:  # the rest of a short write, chunk by chunk
            n = len(chunk)
            if done >= n:
                done -= n
                continue
            view = memoryview(chunk)[done:]
            while len(view):
                view = view[os.write(fd, view) :]
            done = 0


def _take(path: str, key: bytes, name: str) -> Any:
    """The value of the letter at ``path``, removed once read: :data:`_NOTHING` when
    none is there or it fails its checks (left there: the writer's rename replaces it),
    :data:`_EMPTY` for an empty letter."""
    try:
        fd = session_files.open_own(path)
    except FileNotFoundError:
        return _NOTHING
    except OSError as error:  # a link, a directory, another user's file
        return _reject(path, str(error))
    try:
        size = os.fstat(fd).st_size
        buf = np.empty(size, np.uint8)
        got = 0
        while got < size and (n := os.readv(fd, [buf.data[got:]])):
            got += n
    finally:
        os.close(fd)
    if size == 0:
        value: Any = _EMPTY
    else:
        try:
            kind, value = decode(buf[:got], key, name)
        except Rejected as error:
            return _reject(path, str(error))
        if kind == _IN_RAY:
            value = _from_ray(name)
    with contextlib.suppress(FileNotFoundError):  # the mailbox closed meanwhile
        os.unlink(path)
    return value


def _reject(path: str, why: str) -> Any:
    if path not in _rejected:
        _rejected.add(path)
        log.warning("spartan: ignored %s, not a letter of this session (%s)", path, why)
    return _NOTHING


class Mailbox:
    """The driver's letter names (``letter-<random>-<n>`` in its session directory),
    removed by :meth:`close`, with the session, or by the next driver on this host if
    this one dies first (:func:`~spartan.backend.session_files.remove_leftovers`)."""

    def __init__(self, files: session_files.SessionDir | None = None) -> None:
        files = files if files is not None else session_files.default()
        if files.shm is None:
            raise FileNotFoundError("no shared memory to pass letters through")
        self._stem = os.path.join(files.shm, f"letter-{secrets.token_hex(4)}-")
        self._count = itertools.count()

    @staticmethod
    def available() -> bool:
        """Whether this host has shared memory to pass letters through."""
        return os.path.isdir(shared_output.SHM_DIR)

    def name(self) -> str:
        """A new letter's path."""
        return f"{self._stem}{next(self._count)}"

    def close(self) -> None:
        """Remove letters never read (their readers died or were shut down), and the
        values in Ray they point to."""
        for path in glob.glob(self._stem + "*") + glob.glob(spill_path(self._stem) + "*"):
            shared_output.unlink_quietly(path)  # (read meanwhile: gone already)
        with contextlib.suppress(Exception):  # (no Ray, or Ray shut down)
            from ray.experimental import internal_kv

            if internal_kv._internal_kv_initialized():
                internal_kv._internal_kv_del(
                    _name(self._stem), del_by_prefix=True, namespace=_KV_NAMESPACE
                )


def _aligned(n: int) -> int:
    return n + (-n % _ALIGN)
