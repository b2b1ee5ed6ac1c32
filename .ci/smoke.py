"""Smoke test of an installed spartan (wheel or sdist), run from outside the checkout.

.ci/run installs the built wheel into a fresh venv in a temporary folder and runs this
file from there: every subpackage must import from site-packages, and a small program must
give NumPy's answers on the in-process backend and on two Ray workers.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys

import numpy

import spartan
from spartan import config

checkout = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
where = os.path.dirname(os.path.abspath(spartan.__file__))
assert "site-packages" in where, f"spartan imported from {where}, not an installed copy"
assert checkout is None or not where.startswith(checkout), f"imported from the checkout: {where}"

for mod in pkgutil.walk_packages(spartan.__path__, "spartan."):
    importlib.import_module(mod.name)  # optional extras (torch, cupy) are imported lazily

config.local_below_bytes = 0  # distribute even these small arrays
a = numpy.arange(48.0).reshape(6, 8)
for backend in ("local", "ray"):
    spartan.init(backend=backend, num_workers=2)
    x = spartan.asarray(a)
    got = spartan.compute((x @ x.T).sum(axis=0), (x - x.mean(axis=0)).std())
    want = ((a @ a.T).sum(axis=0), (a - a.mean(axis=0)).std())
    for g, w in zip(got, want):
        numpy.testing.assert_allclose(g, w)
    spartan.shutdown()
print(f"smoke: spartan {spartan.__version__} from {where}: ok")
