"""Every example's ``--check``: the same program on spartan (in-process workers, tiny
tiles) and on NumPy gives the same results. The examples are found in ``examples/`` (each
that runs through the harness), so a new one is checked without being listed here."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spartan
from spartan.backend import session
from spartan.config import Config

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
sys.path.insert(0, str(EXAMPLES))

harness = importlib.import_module("harness")

#: the examples with a ``--check``: those that run through the harness
APPLICATIONS = sorted(
    p.stem for p in EXAMPLES.glob("*.py") if p.stem != "harness" and "run_example(" in p.read_text()
)


def test_the_array_examples_are_found():
    assert {"kmeans", "pagerank", "ssvd", "stencil"} <= set(APPLICATIONS)
    assert len(APPLICATIONS) >= 15


@pytest.fixture
def own_backend():
    """Let the example start its own in-process workers; restore the previous backend."""
    previous = session._current
    session.use(None)
    yield
    session.shutdown()
    session.use(previous)


@pytest.mark.parametrize("replicate", [0, Config().replicate_below_bytes])
@pytest.mark.parametrize("name", APPLICATIONS)
def test_example_check_agrees_with_numpy(name, replicate, own_backend, capsys):
    """Under the test-suite's tiny tiles, and with small arrays replicated as users get."""
    spartan.config.replicate_below_bytes = replicate
    example = importlib.import_module(name)
    status = example.main(["--check", "--backend", "local", "--workers", "2"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "results agree" in out


def test_an_example_checks_from_the_command_line():
    """As the README runs them: ``python examples/NAME.py --check`` (local workers here)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARTAN_")}
    env["SPARTAN_STRICT_OPTIMIZER"] = "1"
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "kmeans.py"), "--check", "--backend", "local"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert "results agree" in done.stdout


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    n=st.integers(20, 400),
    d=st.integers(1, 6),
    k=st.integers(1, 5),
    iters=st.integers(1, 4),
    workers=st.integers(1, 3),
)
def test_kmeans_any_shape_and_worker_count(n, d, k, iters, workers, own_backend, capsys):
    kmeans = importlib.import_module("kmeans")
    argv = ["--check", "--backend", "local", "--workers", str(workers)]
    argv += ["--n", str(n), "--d", str(d), "--k", str(k), "--iters", str(iters)]
    status = kmeans.main(argv)
    assert status == 0, capsys.readouterr().out
    session.shutdown()


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(n=st.integers(40, 400), d=st.integers(1, 6), workers=st.integers(1, 3))
def test_logistic_regression_any_shape_and_worker_count(n, d, workers, own_backend, capsys):
    logreg = importlib.import_module("logistic_regression")
    argv = [
        "--check",
        "--backend",
        "local",
        "--workers",
        str(workers),
        "--n",
        str(n),
        "--d",
        str(d),
    ]
    status = logreg.main(argv)
    assert status == 0, capsys.readouterr().out
    session.shutdown()


def test_check_reports_a_mismatch():
    want = numpy.arange(6.0).reshape(2, 3)
    assert harness.mismatches(want.copy(), want) == []
    off = want.copy()
    off[1, 2] += 1e-3
    (problem,) = harness.mismatches((off, 1), (want, 1))
    assert problem.startswith("result[0]: max abs difference 0.001")
    assert harness.mismatches(numpy.ones(3), numpy.ones(4)) == [
        "result: shape (3,) != NumPy's (4,)"
    ]
    assert harness.mismatches(numpy.array([1, 2]), numpy.array([1, 3])) != []


def test_with_numpy_rebinds_np_in_every_function_of_the_module():
    kmeans = importlib.import_module("kmeans")
    twin = harness.with_numpy(kmeans.program)
    assert twin.__globals__["np"] is numpy
    assert twin.__globals__["kmeans"].__globals__["np"] is numpy
    assert kmeans.np is spartan  # the module itself is untouched
    X = numpy.random.default_rng(0).random((50, 3))
    centers, labels, _ = twin(X, type("Args", (), {"k": 2, "iters": 2})())
    assert isinstance(centers, numpy.ndarray) and labels.shape == (50,)


def test_mismatch_exits_nonzero(own_backend, monkeypatch, capsys):
    kmeans = importlib.import_module("kmeans")
    numpy_twin = harness.with_numpy

    def skewed(fn):
        """The NumPy twin, with the program's results off by one."""
        twin = numpy_twin(fn)
        if fn.__name__ != "program":
            return twin
        return lambda *args: tuple(numpy.asarray(r) + 1 for r in twin(*args))

    monkeypatch.setattr(harness, "with_numpy", skewed)
    status = kmeans.main(["--check", "--backend", "local", "--workers", "2", "--iters", "1"])
    assert status == 1
    assert "MISMATCH" in capsys.readouterr().out
