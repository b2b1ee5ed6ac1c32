"""Doctests of ``spartan/``: ``python -m pytest --doctest-modules spartan``.

Every docstring example runs with ``sp`` (and ``spartan``), ``np`` (and ``numpy``) and a
small ``x`` already defined, in a fresh working folder, on two in-process workers (no Ray
instance is started), with ``config.strict_optimizer`` on so that an optimizer error fails
the example; settings an example changes are put back after it. An example that needs
what a test run lacks (Ray, a cluster, a GPU, an optional package) says so in a comment
before its ``# doctest: +SKIP``.

This file sits at the repository root, not in ``spartan/``, so that the wheel does not
ship it; it does nothing for ``tests/`` (their fixtures are in ``tests/conftest.py``).
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
#: packages a module may need only when it is used (``spartan[gpu]``, ``spartan[torch]``):
#: a module that cannot even be imported without one is left out, not reported as an error
OPTIONAL = {"torch", "cupy", "cupyx"}


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave out a module of ``spartan/`` that imports an optional package at import."""
    path = Path(collection_path)
    if path.suffix != ".py" or not path.is_relative_to(ROOT / "spartan"):
        return None
    name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] in OPTIONAL:
            return True
    return None  # (any other import error is the module's own, reported where it is)


@pytest.fixture(scope="session")
def _doctest_backends():
    """Two in-process workers for the doctests: made once, and again only after an
    example ended them (``spartan.init`` shuts the current backend down)."""
    from spartan.backend.local import LocalBackend

    made: list = []

    def current():
        if not made or not made[-1].nworkers:
            made.append(LocalBackend(num_workers=2))
        return made[-1]

    yield current
    if made:
        made[-1].shutdown()


@pytest.fixture(autouse=True)
def _doctest_names(request: pytest.FixtureRequest) -> None:
    """``sp``, ``np`` and ``x`` in every doctest (other tests are left alone)."""
    if not isinstance(request.node, pytest.DoctestItem):
        return
    import numpy

    import spartan
    from spartan.backend import session

    previous = session.peek()  # (the backend of tests run in the same session)
    ours = request.getfixturevalue("_doctest_backends")()
    session.use(ours)

    def restore() -> None:
        left = session.peek()  # a backend an example started (spartan.init) and left
        if left is not None and left is not ours and left is not previous:
            left.shutdown()
        session.use(previous)

    request.addfinalizer(restore)
    # files an example writes (``sp.save("x.npy", x)``) land in a fresh folder
    request.getfixturevalue("monkeypatch").chdir(request.getfixturevalue("tmp_path"))
    # an example may change settings (``config.implicit_fetch = "raise"``): every
    # setting is put back after it, so no example changes the next one's
    cfg = spartan.config
    before = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)}
    cfg.strict_optimizer = True
    request.addfinalizer(lambda: [setattr(cfg, k, v) for k, v in before.items()])
    names = request.getfixturevalue("doctest_namespace")
    names.update(sp=spartan, spartan=spartan, np=numpy, numpy=numpy)
    names["x"] = spartan.arange(6.0).reshape(2, 3)
