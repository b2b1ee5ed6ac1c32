"""Checkpoints that never lie (issue 35, item 0; per-tile checksums, item 5).

A save returns only with every tile on disk and its checksum in the manifest, written
last; a worker killed at any point of a save has its tiles written again by its
replacement; the live arrays stay rebuildable throughout; periodic checkpoints keep the
newest few; a corrupt or replaced tile is refused on load.
"""

from __future__ import annotations

import gc
import hashlib
import os
import re
import signal
import threading
import warnings

import msgpack
import numpy as np
import pytest

import spartan as sp
from spartan.backend import checkpoint as backend_checkpoint
from spartan.backend import rerun
from spartan.backend.checkpoint import MANIFEST
from spartan.frontend import checkpoint as frontend_checkpoint


def _manifest(path):
    with open(os.path.join(path, MANIFEST), "rb") as f:
        return msgpack.unpackb(f.read(), raw=False, strict_map_key=False)


def _pid(be, w):
    return be._get([be.actors[w].pid.remote()])[0]


def _same_files(path):
    """The checkpoint in ``path`` is whole: its manifest lists exactly the files there,
    each with the checksum of its bytes, and nothing else is left (no temporaries)."""
    listed = {}
    for e in _manifest(path)["arrays"].values():
        for box, fname in e["files"].items():
            listed[fname] = e["checksums"][box]
    assert set(os.listdir(path)) == set(listed) | {MANIFEST}
    for fname, digest in listed.items():
        with open(os.path.join(path, fname), "rb") as f:
            assert hashlib.blake2b(f.read(), digest_size=32).hexdigest() == digest


class _Killer:
    """SIGKILLs the save task that pauses at ``phase`` (the test hook
    :data:`spartan.backend.checkpoint.PAUSE_DIR`): a thread waits on the FIFO the paused
    task writes its pid into."""

    def __init__(self, pause, phase):
        self.fifo = str(pause / "fifo")
        (pause / phase).touch()  # armed: the first save task to reach ``phase`` takes it
        self.pids = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        with open(self.fifo) as f:  # (blocks until a paused task writes)
            text = f.read()
        if text:
            self.pids.append(int(text))
            os.kill(int(text), signal.SIGKILL)

    def finish(self):
        """Release a waiting thread whose task never came (it then kills nothing)."""
        try:
            os.close(os.open(self.fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # (no reader: it is done)
            pass
        self.thread.join(timeout=30)


@pytest.fixture
def pause(tmp_path, monkeypatch):
    d = tmp_path / "pause"
    d.mkdir()
    os.mkfifo(d / "fifo")
    monkeypatch.setattr(backend_checkpoint, "PAUSE_DIR", str(d))
    return d


def _kill_at(be, pause, phase, run):
    """Run ``run()`` while the worker whose save task reaches ``phase`` is killed there
    (``idle``: worker 1, killed before the save is sent); the index of the worker killed."""
    pids = [_pid(be, w) for w in range(be.nworkers)]
    before = be.recoveries
    if phase == "idle":
        os.kill(pids[1], signal.SIGKILL)
        killed = [pids[1]]
        run()
    else:
        killer = _Killer(pause, phase)
        try:
            run()
        finally:
            killer.finish()
        killed = killer.pids
    assert len(killed) == 1, f"no save task paused at {phase!r}"
    assert be.recoveries > before
    return pids.index(killed[0])


PHASES = ["idle", "before", "writing", "written"]


@pytest.mark.parametrize("phase", PHASES)
def test_a_save_with_a_worker_killed_at_any_point_is_complete(on_ray, tmp_path, pause, phase):
    be = on_ray
    x = sp.random.rand(40, 6, tiling="row")
    y = sp.arange(30, dtype=np.int32) * 2
    sp.evaluate(x, y)
    xn, yn = x.to_numpy(), y.to_numpy()
    path = str(tmp_path / "ckpt")
    w = _kill_at(be, pause, phase, lambda: sp.save_checkpoint(path, x=x, y=y))
    # complete (the killed worker's tiles written by its replacement), nothing left over
    _same_files(path)
    loaded = sp.load_checkpoint(path)
    np.testing.assert_array_equal(loaded["x"].to_numpy(), xn)
    np.testing.assert_array_equal(loaded["y"].to_numpy(), yn)
    np.testing.assert_array_equal(x.to_numpy(), xn)
    # the same worker dies once more: the live arrays are rebuilt, and so is what was
    # read back from the checkpoint
    os.kill(_pid(be, w), signal.SIGKILL)
    np.testing.assert_array_equal(x.to_numpy(), xn)
    np.testing.assert_array_equal(y.to_numpy(), yn)
    np.testing.assert_array_equal(loaded["x"].to_numpy(), xn)


@pytest.mark.parametrize("phase", ["writing", "written"])
def test_a_periodic_checkpoint_with_a_worker_killed_in_it_is_complete_before_it_is_used(
    on_ray, tmp_path, pause, phase, monkeypatch
):
    be = on_ray
    x = sp.random.rand(40, 6, tiling="row")
    sp.evaluate(x)
    xn = x.to_numpy()
    d = tmp_path / "periodic"
    monkeypatch.setattr(sp.config, "checkpoint_dir", str(d))
    monkeypatch.setattr(sp.config, "checkpoint_interval", 0.0)
    z = x * 3
    w = _kill_at(be, pause, phase, lambda: sp.evaluate(z))
    (made,) = os.listdir(d)
    _same_files(str(d / made))
    assert f"n{z._expr.uid}" in _manifest(str(d / made))["arrays"]
    # z's tiles are rebuilt from the checkpoint now: from files that are all there
    records = [be.lineage.made_by[(z._expr.data.key(idx), w)] for idx, _, w in z._expr.data.tiles()]
    assert all(type(r.fn).__name__ == "LoadTile" for r in records)
    os.kill(_pid(be, w), signal.SIGKILL)
    np.testing.assert_array_equal(z.to_numpy(), xn * 3)
    np.testing.assert_array_equal(x.to_numpy(), xn)


def test_a_periodic_checkpoint_that_fails_leaves_the_lineage_as_it_was(
    on_ray, tmp_path, monkeypatch
):
    be = on_ray
    x = sp.random.rand(20, 4, tiling="row")
    sp.evaluate(x)
    d = tmp_path / "periodic"
    monkeypatch.setattr(sp.config, "checkpoint_dir", str(d))
    monkeypatch.setattr(sp.config, "checkpoint_interval", 0.0)

    def disk_full(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(frontend_checkpoint, "write_manifest", disk_full)
    z = x + 1
    with pytest.warns(RuntimeWarning, match="periodic checkpoint .* failed"):
        sp.evaluate(z)
    assert os.listdir(d) == []  # the incomplete checkpoint is gone
    key = z._expr.data.key((0, 0))
    assert type(be.lineage.made_by[(key, 0)].fn).__name__ != "LoadTile"
    os.kill(_pid(be, 0), signal.SIGKILL)
    np.testing.assert_array_equal(z.to_numpy(), x.to_numpy() + 1)


def test_the_manifest_lists_every_array_with_a_checksum_per_tile(local, tmp_path):
    arrays = {
        "f": sp.random.rand(9, 5, tiling="block"),
        "i": sp.arange(12, dtype=np.int64).reshape(3, 4),
        "b": sp.arange(7) % 2 == 0,
        "s": sp.array(np.array(["a", "bc", "def"])),
        "t": sp.array(np.arange(4).astype("datetime64[s]")),
        "zero_d": sp.array(np.float32(2.5)),
    }
    path = str(tmp_path / "ckpt")
    assert sp.save_checkpoint(path, **arrays) == path
    manifest = _manifest(path)
    assert set(manifest["arrays"]) == set(arrays)
    assert manifest["checksum"] == "blake2b-256"
    for name, a in arrays.items():
        e = manifest["arrays"][name]
        assert e["shape"] == list(a.shape) and np.dtype(e["dtype"]) == a.dtype
        assert set(e["checksums"]) == set(e["files"])
    _same_files(path)
    loaded = sp.load_checkpoint(path)
    for name, a in arrays.items():
        np.testing.assert_array_equal(loaded[name].to_numpy(), a.to_numpy())


def test_an_object_array_is_refused_on_save(local, tmp_path):
    x = sp.array(np.array([{}, None], dtype=object))
    with pytest.raises(ValueError, match="'x' has dtype object"):
        sp.save_checkpoint(str(tmp_path), x=x)


@pytest.fixture
def saved(local, tmp_path):
    x = sp.random.rand(8, 6, tiling="row")
    path = str(tmp_path / "ckpt")
    sp.save_checkpoint(path, x=x)
    fname = sorted(_manifest(path)["arrays"]["x"]["files"].values())[0]
    return path, os.path.join(path, fname), x.to_numpy()


def _flip_last_byte(file):
    with open(file, "r+b") as f:
        f.seek(-1, os.SEEK_END)
        byte = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([byte[0] ^ 1]))


def _replace(file):
    shape = np.load(file).shape
    np.save(file, np.zeros(shape))  # a valid tile of the right shape, other data


def _truncate(file):
    os.truncate(file, os.path.getsize(file) - 8)


def _grow(file):
    with open(file, "ab") as f:
        f.write(b"\0" * 1_000_000)


@pytest.mark.parametrize("damage", [_flip_last_byte, _replace, _truncate, _grow])
def test_a_corrupt_or_replaced_tile_is_refused_naming_array_and_file(saved, damage):
    path, file, _ = saved
    damage(file)
    x = sp.load_checkpoint(path)["x"]
    with pytest.raises(ValueError, match=f"{re.escape(os.path.basename(file))}.*'x'"):
        x.to_numpy()


def test_a_missing_tile_is_a_clear_error(saved):
    path, file, _ = saved
    os.unlink(file)
    name = re.escape(os.path.basename(file))
    with pytest.raises(FileNotFoundError, match=f"{name}.*'x'.*missing"):
        sp.load_checkpoint(path)["x"].to_numpy()


def _set_checksum(path, file):
    """Make the manifest agree with ``file`` as it is now (an attacker's rewrite)."""
    manifest = _manifest(path)
    e = manifest["arrays"]["x"]
    box = next(b for b, f in e["files"].items() if f == os.path.basename(file))
    with open(file, "rb") as f:
        e["checksums"][box] = hashlib.blake2b(f.read(), digest_size=32).hexdigest()
    with open(os.path.join(path, MANIFEST), "wb") as f:
        f.write(msgpack.packb(manifest, use_bin_type=True))


class _Boom:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


@pytest.mark.parametrize(
    "planted, message",
    [
        (lambda shape: np.zeros((shape[0] + 1, shape[1])), "holds float64"),
        (lambda shape: np.zeros(shape, dtype=np.float32), "holds float32"),
        (lambda shape: np.full(shape, _Boom(), dtype=object), "holds object"),
    ],
)
def test_a_tile_with_a_matching_checksum_must_still_hold_its_shape_and_dtype(
    saved, planted, message, monkeypatch, tmp_path
):
    path, file, _ = saved
    np.save(file, planted(np.load(file).shape))
    _set_checksum(path, file)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=message):
        sp.load_checkpoint(path)["x"].to_numpy()
    assert not (tmp_path / "pwned").exists()  # nothing unpickled


def test_a_manifest_without_checksums_is_refused(saved):
    path, _, _ = saved
    manifest = _manifest(path)
    del manifest["arrays"]["x"]["checksums"]
    with open(os.path.join(path, MANIFEST), "wb") as f:
        f.write(msgpack.packb(manifest, use_bin_type=True))
    with pytest.raises(ValueError, match="checksums"):
        sp.load_checkpoint(path)


def test_a_failed_save_leaves_the_checkpoint_before_whole(saved, monkeypatch):
    path, _, xn = saved
    before = set(os.listdir(path))
    writes = []
    real = backend_checkpoint._write_npy

    def fail_second(file, block):  # in-process workers: the patch reaches them
        writes.append(file)
        if len(writes) == 2:
            raise OSError(28, "No space left on device")
        return real(file, block)

    monkeypatch.setattr(backend_checkpoint, "_write_npy", fail_second)
    with pytest.raises(OSError, match="No space"):
        sp.save_checkpoint(path, x=sp.zeros((8, 6), tiling="row"))
    assert set(os.listdir(path)) == before
    np.testing.assert_array_equal(sp.load_checkpoint(path)["x"].to_numpy(), xn)


def test_workers_lost_in_every_round_fail_the_save_loudly(saved, monkeypatch, local_backend):
    path, _, xn = saved
    before = set(os.listdir(path))

    def lost(handles):
        raise ConnectionError("worker gone")

    monkeypatch.setattr(local_backend, "results", lost)
    monkeypatch.setattr(rerun, "lost_worker", lambda error: True)
    with pytest.raises(RuntimeError, match="lost 3 times .* not written"):
        sp.save_checkpoint(path, x=sp.ones((8, 6), tiling="row"))
    assert set(os.listdir(path)) == before
    np.testing.assert_array_equal(sp.load_checkpoint(path)["x"].to_numpy(), xn)


def test_a_new_save_at_a_path_replaces_the_files_before(saved):
    path, _, _ = saved
    sp.save_checkpoint(path, y=sp.arange(5))
    assert set(_manifest(path)["arrays"]) == {"y"}
    _same_files(path)  # x's files went with its manifest entry
    np.testing.assert_array_equal(sp.load_checkpoint(path)["y"].to_numpy(), np.arange(5))


def _npy_bytes(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def test_periodic_checkpoints_keep_the_newest_n(local, tmp_path, monkeypatch):
    d = tmp_path / "periodic"
    monkeypatch.setattr(sp.config, "checkpoint_dir", str(d))
    monkeypatch.setattr(sp.config, "checkpoint_interval", 0.0)
    monkeypatch.setattr(sp.config, "checkpoint_keep", 2)
    w = sp.ones((64, 16), tiling="row")
    sp.evaluate(w)
    for _ in range(12):
        w = w * 0.5 + 1
        sp.evaluate(w)
    made = sorted(os.listdir(d))
    assert len(made) == 2
    assert f"n{w._expr.uid}" in _manifest(str(d / made[-1]))["arrays"]
    assert _npy_bytes(d) < 3 * w.nbytes  # two checkpoints of one w, not 13
    np.testing.assert_array_equal(
        sp.load_checkpoint(str(d / made[-1]))[f"n{w._expr.uid}"].to_numpy(), w.to_numpy()
    )


def test_periodic_checkpoints_keep_what_a_live_array_rebuilds_from(on_ray, tmp_path, monkeypatch):
    be = on_ray
    d = tmp_path / "periodic"
    monkeypatch.setattr(sp.config, "checkpoint_dir", str(d))
    monkeypatch.setattr(sp.config, "checkpoint_interval", 0.0)
    monkeypatch.setattr(sp.config, "checkpoint_keep", 2)
    x = sp.random.rand(64, 16, tiling="row")
    sp.evaluate(x)
    xn = x.to_numpy()
    (first,) = os.listdir(d)
    w, wn = sp.zeros((64, 16), tiling="row"), np.zeros((64, 16))
    for _ in range(10):
        w, wn = w * 0.5 + x, wn * 0.5 + xn
        sp.evaluate(w)
    gc.collect()  # (the earlier ws are freed: expressions hold cycles)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no failed checkpoint on the way
        sp.evaluate(w + 0)
    made = sorted(os.listdir(d))
    # x's checkpoint stays (x rebuilds from it), holding x alone; so does w's; the rest:
    # the newest 2
    assert first in made and len(made) <= 4
    assert set(_manifest(str(d / first))["arrays"]) == {f"n{x._expr.uid}"}
    _same_files(str(d / first))
    assert _npy_bytes(d) < 5 * w.nbytes
    os.kill(_pid(be, 0), signal.SIGKILL)
    np.testing.assert_allclose(w.to_numpy(), wn)
    np.testing.assert_array_equal(x.to_numpy(), xn)


def test_checkpoint_keep_must_be_positive(local, tmp_path, monkeypatch):
    monkeypatch.setattr(sp.config, "checkpoint_dir", str(tmp_path))
    monkeypatch.setattr(sp.config, "checkpoint_interval", 0.0)
    monkeypatch.setattr(sp.config, "checkpoint_keep", 0)
    with pytest.raises(ValueError, match="checkpoint_keep"):
        sp.evaluate(sp.ones(4) + 1)
