"""Operators own their facts: no module lists them, and the operators never import the
row pipelines (a lowering strategy chosen in ``evaluate._lower``).

Read from the source with ``ast``: every runtime import, function-local ones included
(imports under ``if TYPE_CHECKING:`` are for annotations only and never run).
"""

from __future__ import annotations

import ast
import functools
import pathlib

FRONTEND = pathlib.Path(__file__).resolve().parent.parent / "spartan" / "frontend"

#: the modules that define operators' tasks
OPERATOR_MODULES = ["fold", "join_update", "map", "scan", "filter", "reshape", "view"]


@functools.cache
def runtime_imports(module: str) -> frozenset[str]:
    """The ``spartan.frontend`` modules ``module`` imports when it runs."""
    tree = ast.parse((FRONTEND / f"{module}.py").read_text())
    type_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            type_only.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    out = set()
    for node in ast.walk(tree):
        if id(node) in type_only or not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        parts = node.module.split(".")
        if parts[:2] == ["spartan", "frontend"] and len(parts) > 2:
            out.add(parts[2])
        elif node.module == "spartan.frontend":
            out.update(a.name for a in node.names)
    return frozenset(m for m in out if (FRONTEND / f"{m}.py").exists())


def reaches(start: str, goal: str) -> bool:
    seen, stack = set(), [start]
    while stack:
        for m in runtime_imports(stack.pop()):
            if m == goal:
                return True
            if m not in seen:
                seen.add(m)
                stack.append(m)
    return False


def test_operators_never_import_the_row_pipelines():
    for module in OPERATOR_MODULES:
        assert "pipeline" not in runtime_imports(module), module
    # nor through another module (scan.py also holds cumsum & co., which import the
    # Array API and so evaluation)
    for module in set(OPERATOR_MODULES) - {"scan"}:
        assert not reaches(module, "pipeline"), module


def test_no_import_cycles_through_the_lowering_modules():
    for module in ["fold", "join_update", "pipeline", "evaluate", "checkpoint", "planning"]:
        assert not reaches(module, module), module


def test_planning_pipeline_and_fusion_import_no_operator():
    """Planning, the pipelines and fusion ask each node's methods, not its type."""
    operators = {"fold", "join_update", "scan", "filter", "reshape", "fancy", "sorting"}
    assert not (runtime_imports("planning") & (operators | {"map"}))
    assert not (runtime_imports("evaluate") & operators)
    # (the pipelines run fold's row reduction and a product's extents in their tasks)
    assert runtime_imports("pipeline") & operators <= {"fold", "join_update"}
