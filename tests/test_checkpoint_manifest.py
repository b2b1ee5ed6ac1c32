"""A checkpoint's manifest is checked before any tile is read (issue 35, item 5)."""

from __future__ import annotations

import os

import msgpack
import numpy as np
import pytest

import spartan as sp
from spartan.backend.checkpoint import MANIFEST


@pytest.fixture
def saved(tmp_path, local):
    x = sp.array(np.arange(12.0).reshape(3, 4), tiling="row")
    path = str(tmp_path / "ckpt")
    sp.save_checkpoint(path, x=x)
    return path


def _rewrite(path, change):
    with open(os.path.join(path, MANIFEST), "rb") as f:
        manifest = msgpack.unpackb(f.read(), raw=False, strict_map_key=False)
    change(manifest)
    with open(os.path.join(path, MANIFEST), "wb") as f:
        f.write(msgpack.packb(manifest, use_bin_type=True))


def test_a_saved_checkpoint_loads(saved):
    np.testing.assert_array_equal(
        np.asarray(sp.load_checkpoint(saved)["x"]), np.arange(12.0).reshape(3, 4)
    )


def _first_file(m, value):
    files = m["arrays"]["x"]["files"]
    files[next(iter(files))] = value


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: _first_file(m, "../outside/secret.npy"), "plain .npy name"),
        (lambda m: _first_file(m, "/etc/passwd.npy"), "plain .npy name"),
        (lambda m: m["arrays"]["x"].update(dtype="|O"), "not one a checkpoint holds"),
        (lambda m: m["arrays"]["x"].update(dtype="not a dtype"), "dtype"),
        (lambda m: m["arrays"]["x"].update(shape=[3, -4]), "shape"),
        (lambda m: m["arrays"]["x"].update(cuts=[99, 1]), "cuts"),
        (lambda m: m["arrays"]["x"]["files"].popitem(), "cover its tiles"),
        (lambda m: m["arrays"].update({"../y": m["arrays"]["x"]}), "cannot name"),
        (lambda m: m.update(arrays=[1, 2]), "lists no arrays"),
    ],
)
def test_a_crafted_manifest_is_refused_before_any_read(saved, change, message):
    _rewrite(saved, change)
    with pytest.raises(ValueError, match=message):
        sp.load_checkpoint(saved)


def test_a_deeply_nested_manifest_is_a_clear_error(saved):
    with open(os.path.join(saved, MANIFEST), "wb") as f:
        f.write(b"\x91" * 100_000)  # a list in a list in a list...
    with pytest.raises(ValueError, match="cannot be read"):
        sp.load_checkpoint(saved)


def test_a_name_that_leaves_the_directory_is_refused_on_save(tmp_path, local):
    x = sp.array(np.arange(4.0), tiling="row")
    with pytest.raises(ValueError, match="cannot name"):
        sp.save_checkpoint(str(tmp_path), **{"../escape": x})
    assert not (tmp_path.parent / "escape.npy").exists()
