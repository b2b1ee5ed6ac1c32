"""A plain ``pip install .`` (not editable) ships every module of the package."""

import os

from setuptools import find_packages

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_source_folder_is_a_package():
    found = set(find_packages(ROOT, include=["spartan", "spartan.*"]))
    folders = {
        os.path.relpath(d, ROOT).replace(os.sep, ".")
        for d, _, files in os.walk(os.path.join(ROOT, "spartan"))
        if any(f.endswith(".py") for f in files)
    }
    assert folders <= found, f"not packages (no __init__.py): {sorted(folders - found)}"
