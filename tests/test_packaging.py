"""A plain ``pip install .`` (not editable) ships every module of the package.

``pyproject.toml`` lists the packages by hand; these tests make a folder of modules that
is missing from that list (or lacks ``__init__.py``) fail here rather than vanish from the
wheel. ``.ci/run`` builds the wheel and sdist and imports them from a clean venv.
"""

import os
import sys

import pytest

import spartan

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

tomllib = pytest.importorskip("tomllib") if sys.version_info >= (3, 11) else None


def _project() -> dict:
    if tomllib is None:
        pytest.skip("tomllib needs Python 3.11")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)


def _source_folders() -> set[str]:
    return {
        os.path.relpath(d, ROOT).replace(os.sep, ".")
        for d, _, files in os.walk(os.path.join(ROOT, "spartan"))
        if "__pycache__" not in d and any(f.endswith(".py") for f in files)
    }


def test_every_source_folder_is_a_package():
    missing = sorted(
        p
        for p in _source_folders()
        if not os.path.isfile(os.path.join(ROOT, *p.split("."), "__init__.py"))
    )
    assert not missing, f"folders of modules without __init__.py: {missing}"


def test_every_package_is_listed_in_pyproject():
    listed = set(_project()["tool"]["setuptools"]["packages"])
    assert _source_folders() == listed, (
        f"not in pyproject.toml: {sorted(_source_folders() - listed)}; "
        f"listed but gone: {sorted(listed - _source_folders())}"
    )


def test_version_has_one_source():
    project = _project()
    assert "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "spartan.__version__"}
    assert spartan.__version__.count(".") == 2
