"""The files a driver shares with its workers: private, checked, never unpickled, and
removed after the driver, even one killed with SIGKILL.

The attacker here plays a local user who watches the shared-memory directory: planting
pickles that would run code, symbolic links that would make spartan write elsewhere, and
damaged or foreign letters. Nothing runs, nothing outside the session directory is
written, and results stay right.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from spartan.backend import channel, session_files, shared_output

pytestmark = pytest.mark.skipif(
    not os.path.isdir(shared_output.SHM_DIR) or not hasattr(os, "O_NOFOLLOW"),
    reason="no POSIX shared memory here",
)

KEY = b"k" * 32


@pytest.fixture
def files():
    made = session_files.SessionDir.make()
    yield made
    made.close()


class _Payload:
    """A pickle that writes ``marker`` when unpickled (what the attacker planted)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').write('ran')",)


def _plant_pickle(path: str, marker: str) -> None:
    with open(path, "wb") as f:
        f.write(pickle.dumps(_Payload(marker)))


@pytest.fixture
def outside(tmp_path):
    """A file outside the session directory that the attacker wants spartan to
    overwrite, and the marker file their pickle would write."""
    target = tmp_path / "victim.txt"
    target.write_text("untouched")
    return target, str(tmp_path / "marker")


def _untouched(target, marker: str) -> bool:
    return target.read_text() == "untouched" and not os.path.exists(marker)


# ---- the letter format ------------------------------------------------------------------


def _roundtrip(value):
    chunks = channel.encode(value, KEY, "s/letter-0")
    assert chunks is not None
    buf = np.frombuffer(b"".join(bytes(c) for c in chunks), np.uint8).copy()
    kind, got = channel.decode(buf, KEY, "s/letter-0")
    assert kind == 1
    return got


_dtypes = st.one_of(
    hnp.boolean_dtypes(),
    hnp.integer_dtypes(),
    hnp.unsigned_integer_dtypes(),
    hnp.floating_dtypes(),
    hnp.complex_number_dtypes(),
    hnp.datetime64_dtypes(),
    hnp.timedelta64_dtypes(),
    hnp.byte_string_dtypes(),
    hnp.unicode_string_dtypes(),
)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(_dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_plain_arrays_come_back_bit_for_bit_in_their_layout(a):
    for value in (a, np.asfortranarray(a), a[..., ::2] if a.ndim else a):
        got = _roundtrip(value)
        assert got.dtype == value.dtype and got.shape == value.shape
        assert got.tobytes() == value.tobytes()
        assert got.flags.writeable
        # (an F-ordered array comes back F-ordered; any other, C-ordered)
        fortran = value.flags.f_contiguous and not value.flags.c_contiguous
        assert got.flags.f_contiguous if fortran else got.flags.c_contiguous


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.complex_numbers(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=5),
)
_trees = st.recursive(
    _scalars
    | st.builds(slice, st.integers() | st.none(), st.integers() | st.none(), st.integers(1, 3)),
    lambda inner: st.lists(inner, max_size=3) | st.lists(inner, max_size=3).map(tuple),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(_trees)
def test_plain_python_values_come_back_equal_and_of_their_type(value):
    got = _roundtrip(value)
    assert got == value and repr(got) == repr(value)


def test_join_update_lists_and_numpy_scalars_travel_in_letters():
    updates = [((slice(0, 2), slice(None)), np.ones((2, 3))), ((slice(2, 3, 1),), np.arange(3))]
    got = _roundtrip(updates)
    assert [d for d, _ in got] == [d for d, _ in updates]
    np.testing.assert_array_equal(got[0][1], np.ones((2, 3)))
    assert _roundtrip(np.float32(1.5)) == np.float32(1.5)
    assert type(_roundtrip(np.datetime64("2020-01-01"))) is np.datetime64
    assert _roundtrip(float("nan")) != _roundtrip(float("nan"))  # NaN, exactly


def _nested(depth: int) -> list:
    value: list = [0]
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "value",
    [
        np.array([None, 1], dtype=object),
        np.zeros(2, dtype="i4,f8"),  # structured records
        np.ma.masked_array([1, 2]),  # an ndarray subclass
        {"a": 1},
        ValueError("x"),
        lambda: 0,
        2**5000,
        _nested(channel.MAX_DEPTH + 2),
    ],
    ids=["object", "records", "subclass", "dict", "exception", "function", "bigint", "deep"],
)
def test_anything_else_is_not_plain_data(value):
    assert channel.encode(value, KEY, "s/letter-0") is None


def _letter_bytes(key=KEY, name="s/letter-0") -> np.ndarray:
    value = np.arange(4.0)
    return np.frombuffer(b"".join(bytes(c) for c in channel.encode(value, key, name)), np.uint8)


def test_a_damaged_or_foreign_letter_is_rejected():
    good = _letter_bytes()
    channel.decode(good.copy(), KEY, "s/letter-0")
    damaged = good.copy()
    damaged[-1] ^= 1  # a data byte: the CRC
    with pytest.raises(channel.Rejected, match="damaged"):
        channel.decode(damaged, KEY, "s/letter-0")
    described = good.copy()
    described[channel.HEADER_BYTES + 5] ^= 1  # the description: the keyed hash
    with pytest.raises(channel.Rejected, match="not from this session"):
        channel.decode(described, KEY, "s/letter-0")
    with pytest.raises(channel.Rejected, match="not from this session"):  # another token
        channel.decode(good.copy(), b"x" * 32, "s/letter-0")
    with pytest.raises(channel.Rejected, match="not from this session"):  # moved
        channel.decode(good.copy(), KEY, "s/letter-1")
    with pytest.raises(channel.Rejected, match="sizes"):
        channel.decode(good[:-1].copy(), KEY, "s/letter-0")
    with pytest.raises(channel.Rejected, match="not a spartan letter"):
        channel.decode(np.frombuffer(pickle.dumps(np.arange(4.0)) + bytes(64), np.uint8), KEY, "")


def test_a_description_naming_an_object_dtype_is_rejected_even_with_the_right_key():
    """The allowed dtypes are checked after the hash: a writer holding the token still
    cannot make a reader build object arrays (or read outside the letter)."""
    enc = channel._Encoder()
    enc._add(bytes(16))
    for meta in (b'["a","|O",[2],"C",0]', b'["a","<f8",[4],"C",0]', b'["x"]'):
        buf = np.frombuffer(
            b"".join(bytes(c) for c in channel._letter(1, meta, enc, KEY, "s/n")), np.uint8
        )
        with pytest.raises(channel.Rejected, match="description"):
            channel.decode(buf.copy(), KEY, "s/n")


# ---- the attacker -----------------------------------------------------------------------


def test_a_planted_pickle_at_a_letters_name_never_runs_and_the_real_letter_is_read(
    files, outside, monkeypatch
):
    target, marker = outside
    mail = channel.Mailbox(files)
    letter = channel.Letter(mail.name(), os.getpid())
    _plant_pickle(letter.path, marker)
    looked = threading.Event()
    real_reject = channel._reject
    monkeypatch.setattr(channel, "_reject", lambda p, why: (looked.set(), real_reject(p, why))[1])
    got = []
    reader = threading.Thread(target=lambda: got.append(letter.receive()))
    reader.start()
    assert looked.wait(30)  # the reader saw the planted file and goes on waiting
    assert channel.post(letter.path, np.arange(3.0))
    reader.join(30)
    np.testing.assert_array_equal(got[0], np.arange(3.0))
    assert _untouched(target, marker)
    mail.close()


def test_links_planted_at_a_letters_names_are_never_followed(files, outside, monkeypatch):
    """Links at the letter's name, its old fixed ``.part`` name and its spill name: the
    writer replaces a link, never writes through it; a reader never reads through one."""
    target, marker = outside
    mail = channel.Mailbox(files)
    letter = channel.Letter(mail.name(), os.getpid())
    for name in (letter.path, letter.path + ".part", channel.spill_path(letter.path)):
        os.symlink(target, name)
    assert channel._take(letter.path, files.token, channel._name(letter.path)) is channel._NOTHING
    real = channel._write  # no room in shared memory: the letter is spilled
    monkeypatch.setattr(
        channel, "_write", lambda p, d: (not d or files.shm not in p) and real(p, d)
    )
    assert channel.post(letter.path, np.arange(3.0), spill=True)
    assert not os.path.islink(letter.path) and not os.path.islink(channel.spill_path(letter.path))
    np.testing.assert_array_equal(letter.receive(), np.arange(3.0))
    assert _untouched(target, marker)
    mail.close()


def test_a_tampered_spill_file_is_rejected_as_a_lost_piece(files, monkeypatch):
    mail = channel.Mailbox(files)
    letter = channel.Letter(mail.name(), os.getpid())
    real = channel._write
    monkeypatch.setattr(
        channel, "_write", lambda p, d: (not d or files.shm not in p) and real(p, d)
    )
    channel.post(letter.path, np.arange(3.0), spill=True)
    spilled = channel.spill_path(letter.path)
    with open(spilled, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        f.write(b"\xff")
    with pytest.raises(channel.PieceRejected):
        letter.receive()
    mail.close()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make another user's file")
def test_another_users_file_is_never_read(files):
    mail = channel.Mailbox(files)
    letter = channel.Letter(mail.name(), os.getpid())
    channel.post(letter.path, np.arange(3.0))
    os.chown(letter.path, 65534, 65534)
    assert channel._take(letter.path, files.token, channel._name(letter.path)) is channel._NOTHING
    with pytest.raises(PermissionError):
        session_files.open_own(letter.path)
    mail.close()


def test_session_files_are_private(files):
    from spartan.backend.call_board import CallBoard, Slot
    from spartan.backend.ray_backend import StopFlag

    for d in (files.shm, files.spill):
        st_ = os.lstat(d)
        assert (st_.st_mode & 0o777) == 0o700 and st_.st_uid == os.geteuid()
        assert len(os.path.basename(d).rsplit("-", 1)[1]) == 16  # 64 random bits
    mail = channel.Mailbox(files)
    letter = mail.name()
    channel.post(letter, np.arange(3.0))
    board = CallBoard.make(2, files)
    flag = StopFlag.make(files)
    zone = shared_output.LandingZone(files)
    made = [letter, board.path, flag.path, zone.reserve(8, limit=1 << 30)]
    for path in made:
        assert os.path.dirname(path) == files.shm
        assert (os.stat(path).st_mode & 0o777) == 0o600
    os.unlink(board.path)
    os.symlink(flag.path, board.path)
    assert Slot.attach(board.path, 0) is None  # a link where the board was: not followed
    os.unlink(flag.path)
    assert StopFlag.attach(flag.path) is None
    mail.close()
    files.close()
    assert not os.path.exists(files.shm) and not os.path.exists(files.spill)


def test_pieces_pass_between_ray_workers_while_an_attacker_plants_at_every_name(
    ray_backend, outside, monkeypatch
):
    """Every letter name the driver hands out already holds a crafted pickle, and a link
    to the victim file sits at its ``.part`` and spill names: the results are right,
    the pickle never runs, the victim file is untouched."""
    from spartan.backend.base import Piece, Region

    target, marker = outside
    be = ray_backend
    mailbox = be._mailbox
    planted = []
    real_name = mailbox.name

    def name():
        path = real_name()
        _plant_pickle(path, marker)
        for link in (path + ".part", channel.spill_path(path)):
            os.symlink(target, link)
        planted.append(path)
        return path

    monkeypatch.setattr(mailbox, "name", name)
    be.put(("attack", "x"), np.arange(8.0), 0)
    be.submit(0, np.positive, [("attack", "x")], [("attack", "made")])  # (a put goes whole)
    region = Region((8,), np.dtype(float), (Piece(0, ("attack", "made"), (slice(0, 8),), ()),))
    be.submit(1, np.negative, [region], [("attack", "y")])
    be.flush()
    be.wait()
    np.testing.assert_array_equal(be.fetch(("attack", "y")), -np.arange(8.0))
    be.delete([("attack", k) for k in ("x", "made", "y")])
    be.wait()
    assert planted  # the piece went through a letter
    assert _untouched(target, marker)


# ---- the janitor ------------------------------------------------------------------------


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _session_name(pid: int, start_ms: int, namespace: int | None = None) -> str:
    ns = session_files._pid_namespace() if namespace is None else namespace
    return f"{session_files.PREFIX}{ns}-{pid}-{start_ms}-{'0' * 16}"


def test_the_janitor_removes_what_provably_dead_drivers_left_and_nothing_else(tmp_path):
    me = os.getpid()
    my_start = session_files._start_ms(me)
    dead = _dead_pid()
    made = {
        "dead": _session_name(dead, my_start),
        "reused pid": _session_name(me, my_start - 60_000),  # another process had my pid
        "live": _session_name(me, my_start),
        "other namespace": _session_name(dead, my_start, namespace=1),
    }
    for name in made.values():
        os.mkdir(tmp_path / name, 0o700)
        (tmp_path / name / "letter-0").write_bytes(b"x")
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    (outside_dir / "keep").write_text("x")
    link = _session_name(_dead_pid(), my_start).replace("0" * 16, "1" * 16)
    os.symlink(outside_dir, tmp_path / link)  # a link named like a session: not followed
    old_dead = tmp_path / f"spartan-calls-{dead}-abc"
    old_live = tmp_path / f"spartan-landing-{me}-abc"
    for path in (old_dead, old_live):
        path.write_bytes(b"")
    removed = session_files.remove_leftovers((str(tmp_path),))
    assert sorted(removed) == sorted(
        [str(tmp_path / made["dead"]), str(tmp_path / made["reused pid"]), str(old_dead)]
    )
    assert (tmp_path / made["live"]).is_dir() and (tmp_path / made["other namespace"]).is_dir()
    assert (outside_dir / "keep").exists() and old_live.exists()


def test_a_driver_killed_with_sigkill_leaves_files_the_next_start_removes(ray_backend):
    """A driver on this Ray cluster, killed mid-session: its session directories stay
    until the janitor (which every new session runs first) removes them; the live
    driver's (this process's) are never removed."""
    import ray

    script = (
        "import sys, numpy as np, ray\n"
        f"ray.init(address={ray.get_runtime_context().gcs_address!r}, log_to_driver=False,"
        " configure_logging=False)\n"
        "from spartan.backend.ray_backend import RayBackend\n"
        "be = RayBackend(num_workers=1, num_cpus_per_worker=0)\n"
        "be.put('x', np.arange(4.0), 0)\n"
        "print(be._files.shm, be._files.spill, float(be.fetch('x').sum()), flush=True)\n"
        "sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        # (a driver that cannot start fails the test instead of hanging it)
        assert select.select([proc.stdout], [], [], 300)[0], "the driver did not start"
        shm, spill, total = proc.stdout.readline().split()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    assert float(total) == 6.0
    assert os.path.isdir(shm) and os.path.isdir(spill)  # left behind
    removed = session_files.remove_leftovers()
    assert shm in removed and spill in removed
    assert not os.path.exists(shm) and not os.path.exists(spill)
    live = ray_backend._files
    assert os.path.isdir(live.shm) and os.path.isdir(live.spill)
    ray_backend.put(("after", "x"), np.arange(3.0), 0)
    np.testing.assert_array_equal(ray_backend.fetch(("after", "x")), np.arange(3.0))
    ray_backend.delete([("after", "x")])
