"""Views (slice, transpose, swapaxes, new axes): no data is copied, reads go to the base."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from spartan.frontend.expr import Expr
from spartan.frontend.viewmap import ViewMap
from spartan.tiling import Tiling

if TYPE_CHECKING:
    from spartan.frontend.optimizer import Program


class View(Expr):
    """``base`` seen through a :class:`ViewMap`; a view of a view composes into one.

    Views read through to their base and never hold tiles of their own: ``isinstance(e,
    View)`` is how the rest of the frontend tells them apart (:func:`base_of` gives the
    node whose tiles any node reads)."""

    def __init__(self, base: Expr, vm: ViewMap) -> None:
        if isinstance(base, View):
            vm = base.vm.then(vm)
            base = base.base
        super().__init__(vm.shape, base.dtype, (base,))
        self.vm = vm
        self.pending = base.pending

    @property
    def base(self) -> Expr:
        return self.children[0]

    @property
    def label(self) -> str:
        return "view"

    def induced_tiling(self, base_tiling: Tiling) -> Tiling:
        """The tiling a reader of this view sees: cuts follow axes taken whole."""
        if base_tiling.replicated:
            return Tiling.duplicated(self.shape)
        cuts = []
        for a in self.vm.axes:
            whole = a.base is not None and abs(a.step) == 1 and a.count == self.base.shape[a.base]
            cuts.append(base_tiling.cuts[a.base] if whole else 1)
        return Tiling(tuple(cuts))

    def done(self) -> None:
        """A view keeps its base: it has no tiles of its own."""

    def program_node(self, p: Program, ins: list[int]) -> int:
        return p.view(ins[0], self.vm, self.label)

    def local_tiling(self, tiling_of: Callable[[Expr], Tiling]) -> Tiling:
        return self.induced_tiling(tiling_of(self.base))


def base_of(e: Expr) -> Expr:
    """The node whose tiles ``e`` reads: its base for a view, else ``e`` itself."""
    return e.base if isinstance(e, View) else e


def view(base: Expr, vm: ViewMap) -> Expr:
    """``base`` through ``vm``; the identity view is ``base`` itself."""
    if vm.is_identity() and vm.shape == base.shape and not isinstance(base, View):
        return base
    if not isinstance(base, View):
        narrowed = base.viewed(vm)
        if narrowed is not None:
            return narrowed
    return View(base, vm)


def transpose(base: Expr, perm: Sequence[int]) -> Expr:
    return view(base, ViewMap.transpose(base.shape, perm))
