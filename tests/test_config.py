"""spartan.config: the two tiers, set() as a context manager, the environment, and the
process-level tuning knobs off or on as docs/tuning.md says."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import spartan
from spartan.backend import session, shared_output
from spartan.config import Config

TUNING_DOC = Path(__file__).resolve().parent.parent / "docs" / "tuning.md"


# ---- set() ----------------------------------------------------------------------------
def test_set_as_a_context_manager_restores_and_nests():
    c = spartan.config
    before = c.max_graph_size, c.task_timeout
    with c.set(max_graph_size=10, task_timeout=5.0) as got:
        assert got is c and (c.max_graph_size, c.task_timeout) == (10, 5.0)
        with c.set(max_graph_size=20):
            assert c.max_graph_size == 20
        assert c.max_graph_size == 10
    assert (c.max_graph_size, c.task_timeout) == before


def test_set_restores_after_an_exception_and_as_a_plain_call_keeps():
    c = spartan.config
    before = c.checkpoint_keep
    with pytest.raises(KeyError), c.set(checkpoint_keep=7):
        raise KeyError("inside")
    assert c.checkpoint_keep == before
    undo = c.set(checkpoint_keep=9)  # a plain call: set for good
    try:
        assert c.checkpoint_keep == 9
    finally:
        undo.__exit__(None, None, None)
    assert c.checkpoint_keep == before


def test_settings_are_the_processes_not_the_threads():
    seen = []
    with spartan.config.set(recovery_attempts=11):
        t = threading.Thread(target=lambda: seen.append(spartan.config.recovery_attempts))
        t.start()
        t.join()
    assert seen == [11]


def test_unknown_names_and_bad_values_are_refused_naming_them():
    c = spartan.config
    with pytest.raises(TypeError, match="'tiles_per_workers'.*did you mean 'tiles_per_worker'"):
        c.set(tiles_per_workers=2)
    with pytest.raises(AttributeError, match="no setting 'max_tile_byte'"):
        c.max_tile_byte = 1
    with pytest.raises(AttributeError, match="no knob 'local_below_bytes'"):
        c.tuning.local_below_bytes = 0  # a user setting, not a tuning knob
    with pytest.raises(TypeError, match="strict_optimizer must be True or False, got '0'"):
        c.strict_optimizer = "0"
    with pytest.raises(TypeError, match="max_graph_size may not be None"):
        c.max_graph_size = None
    with pytest.raises(ValueError, match="implicit_fetch must be one of"):
        c.implicit_fetch = "ignore"
    before = c.max_graph_size
    with pytest.raises(TypeError, match="must be an integer"):
        c.set(max_graph_size=5, max_graph_depth="deep")  # nothing set
    assert c.max_graph_size == before


def test_tuning_is_a_section_of_the_same_settings():
    c = spartan.config
    assert "worker_niceness" in dir(c.tuning) and "local_below_bytes" not in dir(c.tuning)
    with c.tuning.set(retile_inputs=False):
        assert c.retile_inputs is False and c.tuning.retile_inputs is False
    assert c.retile_inputs is True
    with pytest.raises(TypeError, match="unknown knob 'task_timeout'"):
        c.tuning.set(task_timeout=1.0)
    assert "tuning=Tuning(" in repr(c)


def test_a_path_is_kept_as_a_string(tmp_path):
    with spartan.config.set(checkpoint_dir=tmp_path):
        assert spartan.config.checkpoint_dir == str(tmp_path)


# ---- the environment ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "value"),
    [("0", False), ("false", False), ("No", False), ("OFF", False), (" 1 ", True)]
    + [("true", True), ("yes", True), ("on", True)],
)
def test_booleans_are_parsed_not_tested_for_emptiness(raw, value):
    c = Config()
    c.load_env({"SPARTAN_STRICT_OPTIMIZER": raw, "SPARTAN_RETILE_INPUTS": raw})
    assert c.strict_optimizer is value and c.retile_inputs is value


@pytest.mark.parametrize(
    ("var", "raw"),
    [
        ("SPARTAN_STRICT_OPTIMIZER", "maybe"),
        ("SPARTAN_MAX_TILE_BYTES", "64MB"),
        ("SPARTAN_TASK_TIMEOUT", "soon"),
        ("SPARTAN_IMPLICIT_FETCH", "ignore"),
        ("SPARTAN_LOCAL_BELOW_BYTES", "none"),  # (may not be None)
    ],
)
def test_a_bad_value_raises_naming_the_variable_and_changes_nothing(var, raw):
    c = Config()
    before = repr(c)
    with pytest.raises(ValueError, match=re.escape(f"{var}={raw!r}")):
        c.load_env({"SPARTAN_MAX_GRAPH_SIZE": "7", var: raw})
    assert repr(c) == before


def test_env_values_none_and_empty_and_code_wins():
    c = Config()
    env = {"SPARTAN_TASK_TIMEOUT": "2.5", "SPARTAN_CANCEL_TIMEOUT": "none"}
    env |= {"SPARTAN_TILES_PER_WORKER": "", "SPARTAN_MAX_GRAPH_SIZE": "77"}
    c.max_graph_size = 5  # set in code: the environment leaves it
    c.load_env(env)
    assert (c.task_timeout, c.cancel_timeout, c.tiles_per_worker) == (2.5, None, None)
    assert c.max_graph_size == 5
    c.load_env({})  # variables gone: the defaults again
    assert (c.task_timeout, c.cancel_timeout) == (Config.task_timeout, Config.cancel_timeout)


def test_a_set_block_ends_with_the_environment_in_charge_again():
    c = Config()
    with c.set(max_graph_size=3):
        c.load_env({"SPARTAN_MAX_GRAPH_SIZE": "8"})
        assert c.max_graph_size == 3
    c.load_env({"SPARTAN_MAX_GRAPH_SIZE": "8"})
    assert c.max_graph_size == 8


def test_the_environment_is_read_at_first_use_not_at_import():
    code = (
        "import os, spartan\n"
        "os.environ['SPARTAN_LOCAL_BELOW_BYTES'] = '123'\n"
        "os.environ['SPARTAN_STRICT_OPTIMIZER'] = '0'\n"
        "print(spartan.config.local_below_bytes, spartan.config.strict_optimizer)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARTAN_")}
    env["SPARTAN_STRICT_OPTIMIZER"] = "1"  # at import; changed before the first use
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["123", "False"]


def test_init_reads_the_environment_again(monkeypatch):
    monkeypatch.setenv("SPARTAN_STRICT_OPTIMIZER", "perhaps")
    with pytest.raises(ValueError, match="SPARTAN_STRICT_OPTIMIZER='perhaps'"):
        spartan.init(backend="local", num_workers=1)  # refused before anything starts
    monkeypatch.delenv("SPARTAN_STRICT_OPTIMIZER")
    names = ("checkpoint_keep", "max_graph_size")
    before = [getattr(spartan.config, n) for n in names]
    spartan.config.reset(*names)  # (as if never set in code, by earlier tests too)
    monkeypatch.setenv("SPARTAN_CHECKPOINT_KEEP", "5")
    monkeypatch.setenv("SPARTAN_MAX_GRAPH_SIZE", "1234")
    current = session.peek()
    session.use(None)  # (the init below shuts down no one else's backend)
    try:
        spartan.init(backend="local", num_workers=1)
        assert [getattr(spartan.config, n) for n in names] == [5, 1234]
    finally:
        spartan.shutdown()
        session.use(current)
        monkeypatch.delenv("SPARTAN_CHECKPOINT_KEEP")
        monkeypatch.delenv("SPARTAN_MAX_GRAPH_SIZE")
        spartan.config.reset(*names)
    assert [getattr(spartan.config, n) for n in names] == [Config.checkpoint_keep, 2000]
    for name, value in zip(names, before):
        setattr(spartan.config, name, value)


def test_reset_forgets_what_code_set():
    c = Config()
    c.max_graph_size, c.checkpoint_keep = 5, 6
    c.reset("max_graph_size", environ={"SPARTAN_MAX_GRAPH_SIZE": "8"})
    assert (c.max_graph_size, c.checkpoint_keep) == (8, 6)
    c.reset(environ={})
    assert (c.max_graph_size, c.checkpoint_keep) == (2000, 2)
    with pytest.raises(TypeError, match="unknown setting 'max_graph'"):
        c.reset("max_graph")


# ---- the process-level knobs: defaults as documented ------------------------------------
def _documented_defaults() -> dict[str, object]:
    """``knob: default`` from the tables of docs/tuning.md (``A << B`` or a literal)."""
    rows = re.findall(r"^\| `(\w+)` \| `([^`]*)` \|", TUNING_DOC.read_text(), re.MULTILINE)
    out = {}
    for name, text in rows:
        shift = re.fullmatch(r"(\d+) << (\d+)", text)
        out[name] = int(shift[1]) << int(shift[2]) if shift else ast.literal_eval(text)
    return out


def test_the_defaults_are_those_docs_tuning_documents():
    documented = _documented_defaults()
    knobs = {"worker_niceness", "worker_streaming_copy_bytes", "worker_keep_freed_bytes"}
    assert knobs | {"landing_zone_bytes", "landing_zone_lends"} <= set(documented)
    c = Config()
    assert {name: getattr(c, name) for name in documented} == documented


def test_the_workers_environment_is_ray_and_glibcs_own_by_default(monkeypatch):
    pytest.importorskip("ray")
    from spartan.backend.ray_backend import worker_env

    for name in ("worker_niceness", "worker_streaming_copy_bytes"):
        monkeypatch.setattr(spartan.config, name, getattr(Config(), name))
    assert worker_env({}) == {}  # Ray's niceness, glibc's own copy threshold
    with spartan.config.set(worker_niceness=3):
        assert worker_env({}) == {"RAY_worker_niceness": "3"}


def test_a_result_is_copied_out_of_the_zone_unless_it_lends(monkeypatch):
    if not os.path.isdir(shared_output.SHM_DIR):
        pytest.skip("no POSIX shared memory here")
    monkeypatch.setattr(shared_output, "FIRST_BYTES", 1024)
    zone = shared_output.LandingZone()
    values = np.arange(100.0)  # 800 of 1024 bytes: fills most of the zone
    for lend in (False, True):
        path = zone.reserve(values.nbytes, limit=1 << 30)
        shared_output.attach(path, values.shape, values.dtype)[:] = values
        out = zone.read(values.shape, values.dtype, lend=lend)
        np.testing.assert_array_equal(out, values)
        assert out.flags.owndata is not lend
        assert (zone.path == path) is not lend  # lent: the zone is the result's now
    del out
    zone.close()


def test_ray_fetches_follow_landing_zone_lends(on_ray, monkeypatch):
    monkeypatch.setattr(shared_output, "MIN_BYTES", 0)
    monkeypatch.setattr(shared_output, "FIRST_BYTES", 64)
    monkeypatch.setattr(on_ray.landing, "zone", shared_output.LandingZone())
    a = np.arange(7.0 * 5).reshape(7, 5)
    x = spartan.array(a, tiling="row")
    with spartan.config.set(landing_zone_bytes=1 << 30, landing_zone_lends=False):
        copied = x.to_numpy()
    with spartan.config.set(landing_zone_bytes=1 << 30, landing_zone_lends=True):
        lent = (x + 0).to_numpy()
    np.testing.assert_array_equal(copied, a)
    np.testing.assert_array_equal(lent, a)
    assert copied.flags.owndata and not lent.flags.owndata


def test_a_config_pickles_with_what_was_set_in_code():
    import pickle

    c = Config()
    c.max_graph_size = 5
    copied = pickle.loads(pickle.dumps(c))
    assert copied == c and copied.max_graph_size == 5
    copied.load_env({"SPARTAN_MAX_GRAPH_SIZE": "9"})  # still set in code in the copy
    assert copied.max_graph_size == 5
