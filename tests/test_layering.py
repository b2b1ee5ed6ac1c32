"""Import layering of ``spartan/``, read from the source with ``ast`` (every import,
function-local and ``TYPE_CHECKING`` ones included: a lazy import is a dependency too).

The layers, bottom up:

- ``spartan/backend/``: workers, transport, sessions. Never imports ``frontend/``.
- operators (``frontend/``): the Expr classes and how they are planned, lowered and
  evaluated (:data:`OPERATORS`).
- core API (:data:`CORE`): ``spartan.Array`` and the NumPy functions the others are
  written with: creation, shape manipulation, element-wise and ufuncs, reductions,
  indexing, sorting, scans, products (dot/matmul/einsum), the arrays read from
  stored data.
- derived API (:data:`DERIVED`): functions written on the core: statistics,
  nan-functions, sets, polynomials, calculus, random, fft, I/O of text...; and the
  namespaces on top (``spartan``, ``spartan.numpy_api``, ``spartan.linalg``...).

The rule: nothing below the derived layer imports it, so a derived module can change
(or be dropped) without touching the core; and no ``frontend/`` module imports the
``spartan`` namespace, except where a NumPy protocol hands over to the whole of it.
Every ``frontend/`` module is placed in one layer, so a new one must be placed too.
"""

from __future__ import annotations

import ast
import functools
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "spartan"

#: Expr classes, planning, lowering, evaluation (and what they need)
OPERATORS = {
    "checkpoint",
    "evaluate",
    "expr",
    "filter",
    "fold",
    "join_update",
    "lowering",
    "map",
    "memory",
    "pipeline",
    "planning",
    "reshape",
    "source",
    "stored",
    "taskgrid",
    "tiles",
    "view",
    "viewmap",
}
#: the Array handle and the NumPy functions everything else is written with
CORE = {
    "aliasing",
    "alongaxis",
    "array",
    "creation",
    "docstrings",
    "elementwise",
    "fancy",
    "hdf5_io",
    "implicit_fetch",
    "index_tricks",
    "indexing",
    "manipulation",
    "printing",
    "products",
    "reductions",
    "scan",
    "small",
    "sorting",
    "ufunc_objects",
    "ufuncs",
    "zarr_io",
}
#: NumPy functions (and tools) written on the core
DERIVED = {
    "array_api",
    "calculus",
    "convolution",
    "decompositions",
    "explain",
    "fft",
    "inspection",
    "interpolation",
    "nanfuncs",
    "npyio",
    "operators",
    "polynomials",
    "random",
    "sets",
    "statistics",
    "stride_tricks",
    "textio",
}
#: the namespaces on top of everything (spartan.linalg is numpy.linalg's)
NAMESPACES = {
    "spartan",
    "spartan.numpy_api",
    "spartan.linalg",
    "spartan.fft",
    "spartan.lib",
    "spartan.special",
}
#: (module, function) allowed to import the ``spartan`` namespace: NumPy's protocols
#: hand a call over to the whole namespace
NAMESPACE_USERS = {
    ("spartan.frontend.array", "__array_function__"),
    ("spartan.frontend.array", "__array_namespace__"),
}


def _module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@functools.cache
def _all_modules() -> frozenset[str]:
    return frozenset(_module_name(p) for p in ROOT.rglob("*.py"))


@functools.cache
def _imports(path: pathlib.Path) -> list[tuple[str, str]]:
    """(imported module, enclosing function or "") for every import in ``path``;
    ``from a import b`` counts as ``a.b`` when that is a module of spartan's."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[tuple[str, str]] = []

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, child.name)
                continue
            if isinstance(child, ast.Import):
                found.extend((a.name, function) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package
                    for _ in range(child.level - 1):
                        base = base.rpartition(".")[0]
                    module = base + ("." + child.module if child.module else "")
                else:
                    module = child.module or ""
                for a in child.names:
                    sub = f"{module}.{a.name}"
                    found.append((sub if sub in _all_modules() else module, function))
            visit(child, function)

    visit(ast.parse(path.read_text()), "")
    return found


def _frontend_modules() -> dict[str, pathlib.Path]:
    return {
        p.stem: p
        for p in (ROOT / "frontend").glob("*.py")
        if p.stem != "__init__"  # (the package itself imports nothing of these)
    }


def _short(module: str) -> str | None:
    """The frontend module's short name (``spartan.frontend.sets`` -> ``sets``)."""
    prefix = "spartan.frontend."
    if not module.startswith(prefix) or module.startswith(prefix + "optimizer"):
        return None
    return module[len(prefix) :].split(".")[0]


def test_every_frontend_module_has_a_layer() -> None:
    layers = (OPERATORS, CORE, DERIVED)
    assert not (OPERATORS & CORE or OPERATORS & DERIVED or CORE & DERIVED)
    unplaced = sorted(n for n in _frontend_modules() if not any(n in layer for layer in layers))
    assert not unplaced, f"place these frontend modules in a layer of {__name__}: {unplaced}"
    gone = sorted((OPERATORS | CORE | DERIVED) - set(_frontend_modules()))
    assert not gone, f"modules listed in a layer but not in spartan/frontend: {gone}"


def test_core_never_imports_derived() -> None:
    """Neither the core API nor the operators import a derived module or a namespace
    on top (not even lazily inside a function)."""
    bad = []
    for name, path in _frontend_modules().items():
        if name in DERIVED:
            continue
        for module, function in _imports(path):
            if _short(module) in DERIVED or module in NAMESPACES - {"spartan"}:
                bad.append(f"{name} -> {module}" + (f" (in {function})" if function else ""))
    assert not bad, f"core/operator modules importing derived ones: {bad}"


def test_frontend_never_imports_the_namespace() -> None:
    """``import spartan`` in a frontend module would make it depend on every other;
    only NumPy's protocols (``__array_function__``...) hand over to the namespace."""
    bad = []
    for name, path in _frontend_modules().items():
        for module, function in _imports(path):
            where = (f"spartan.frontend.{name}", function)
            if module in ("spartan", "spartan.numpy_api") and where not in NAMESPACE_USERS:
                bad.append(f"{name} -> {module}" + (f" (in {function})" if function else ""))
    assert not bad, f"frontend modules importing the spartan namespace: {bad}"


def test_backend_never_imports_frontend() -> None:
    bad = [
        f"{_module_name(path)} -> {module}"
        for path in (ROOT / "backend").rglob("*.py")
        for module, _ in _imports(path)
        if module == "spartan.frontend" or module.startswith("spartan.frontend.")
    ]
    assert not bad, f"backend modules importing frontend ones: {bad}"


def test_the_checks_see_lazy_imports() -> None:
    """The parser finds a function-local, relative import (what the rules rely on)."""
    found = _imports(ROOT / "frontend" / "array.py")
    assert ("spartan.frontend.reductions", "sum") in found
    assert ("spartan", "__array_function__") in found
    assert ("spartan.frontend.aliasing", "") in found
