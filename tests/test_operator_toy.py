"""Adding an operator takes one module: its Expr subclass with its facts, registered.

``Clip01`` below is a whole new operator (not a :class:`~spartan.frontend.map.Map`):
it lowers itself to one task per tile, tells the optimizer it is element-wise
(:meth:`Expr.program_node`), gives its local tiling rule, and says that row pipelines
may compute it in row chunks inside a product (:meth:`Expr.row_local` and the two
methods after it). Nothing else in spartan was edited for it: planning, explain, the
row pipelines and both backends pick it up from the class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy
import pytest

import spartan as sp
from spartan.frontend import planning
from spartan.frontend.array import Array
from spartan.frontend.expr import OPERATORS, Expr, register
from spartan.frontend.lowering import Lowering
from spartan.frontend.optimizer import Program
from spartan.tiling import Tiling


def _clip01(x: Any) -> Any:
    """The task function: one block clipped to [0, 1] (also a row pipeline's step)."""
    return numpy.clip(x, 0, 1)


# -- the toy operator: this class and its registration line are all it takes ---------


@register
class Clip01(Expr):
    """``x`` clipped to ``[0, 1]`` element by element."""

    def __init__(self, child: Expr) -> None:
        super().__init__(child.shape, child.dtype, [child])

    def lower(self, ctx: Lowering) -> None:
        (child,) = self.children
        tiles = ctx.new_tiles(self)
        for idx, box, w in tiles.placements():
            ctx.backend.submit(w, _clip01, [ctx.region(child, box, w)], [tiles.key(idx)])
        self.data = tiles

    def program_node(self, p: Program, ins: list[int]) -> int:
        return p.map(ins[0], itemsize=self.dtype.itemsize, name=self.label)

    def local_tiling(self, tiling_of: Callable[[Expr], Tiling]) -> Tiling:
        return tiling_of(self.children[0])

    def row_local(self) -> bool:
        return self.row_candidate()

    def row_operands(self) -> list[tuple]:
        return [("op", self, self.children[0])]

    def row_tree(self, subtrees: tuple) -> tuple:
        return ("map", _clip01, subtrees, self.dtype, self.shape[1:], self.uid)


def clip01(x: Any) -> Array:
    """``x`` clipped to ``[0, 1]``.

    >>> clip01(sp.asarray([-1.0, 0.5, 2.0])).to_numpy()
    array([0. , 0.5, 1. ])
    """
    return Array(Clip01(sp.asarray(x)._expr))


# -- the checks -------------------------------------------------------------------------


def test_the_toy_operator_is_registered():
    assert OPERATORS["Clip01"] is Clip01


def test_clip01_matches_numpy(backend, tiling):
    x = numpy.random.default_rng(0).normal(size=(7, 5))
    a = sp.asarray(x, tiling=tiling)
    numpy.testing.assert_array_equal(clip01(a).to_numpy(), numpy.clip(x, 0, 1))
    # read through a view, and feeding other operators
    numpy.testing.assert_array_equal(clip01(a.T[1:]).to_numpy(), numpy.clip(x.T[1:], 0, 1))
    got = (clip01(a * 2) + 1).sum(axis=0)
    numpy.testing.assert_allclose(got.to_numpy(), (numpy.clip(x * 2, 0, 1) + 1).sum(axis=0))


def test_clip01_in_a_row_pipeline_matches_numpy_and_is_never_made(backend, tiling):
    """Row-local by its own facts: between two products it is computed in row chunks
    inside ``X.T @ ...`` and never exists as tiles (a duplicated X has no rows to cut)."""
    rng = numpy.random.default_rng(1)
    x, v = rng.normal(size=(23, 4)), rng.normal(size=(4, 3))
    X = sp.asarray(x, tiling=tiling)
    y = clip01(X @ sp.asarray(v))
    g = X.T @ y
    sp.evaluate(g)
    numpy.testing.assert_allclose(g.to_numpy(), x.T @ numpy.clip(x @ v, 0, 1), rtol=1e-12)
    if tiling == "row":
        assert y._expr.data is None


def test_planning_and_explain_see_the_toy_operator(local):
    a = sp.asarray(numpy.linspace(-1, 2, 24).reshape(6, 4), tiling="column")
    c = clip01(a) + 1
    order = sp.frontend.evaluate.pending_order([c._expr])
    program, node_of, _ = planning.to_program(order, 3)
    assert program[node_of[order[-2].uid]].op == "map"
    # the local rule keeps the input's (column) tiling: nothing moves
    rules = planning.local_rules(order, 3)
    assert rules[order[-2].uid] == rules[a._expr.uid]
    assert rules[a._expr.uid].cuts[0] == 1 < rules[a._expr.uid].cuts[1]
    assert "clip01" in str(sp.explain(c))
    numpy.testing.assert_array_equal(c.to_numpy(), numpy.clip(a.to_numpy(), 0, 1) + 1)


def test_register_refuses_an_operator_without_its_facts():
    with pytest.raises(TypeError, match="must define lower"):

        @register
        class NoLower(Expr):
            pass

    with pytest.raises(TypeError, match="row_operands/row_tree"):

        @register
        class HalfRowLocal(Expr):
            def lower(self, ctx: Lowering) -> None: ...

            def row_local(self) -> bool:
                return True

    assert "NoLower" not in OPERATORS and "HalfRowLocal" not in OPERATORS


def test_register_refuses_a_second_operator_of_the_same_name():
    class Map(Expr):  # (not spartan.frontend.map.Map)
        def lower(self, ctx: Lowering) -> None: ...

    with pytest.raises(ValueError, match="registered already"):
        register(Map)
    assert OPERATORS["Map"] is not Map


def test_every_operator_in_spartan_is_registered():
    import spartan  # noqa: F401  (every operator module imported)
    from spartan.frontend.view import View

    def subclasses(cls: type) -> list[type]:
        return [s for c in cls.__subclasses__() for s in (c, *subclasses(c))]

    ours = [c for c in subclasses(Expr) if c.__module__.startswith("spartan.") and c is not View]
    assert ours and all(OPERATORS.get(c.__name__) is c for c in ours), [
        c for c in ours if OPERATORS.get(c.__name__) is not c
    ]
