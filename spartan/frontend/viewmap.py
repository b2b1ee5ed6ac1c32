"""Strided views: how each axis of a view maps onto its base array.

One :class:`ViewMap` covers NumPy basic indexing (slices with any step, integers, ``None``,
``...``) and axis permutations (``transpose``/``swapaxes``), and two views compose into
one, so a chain of views is always resolved against the evaluated base in one step.

>>> vm = ViewMap.from_index((4, 6), (slice(None, None, -2), 1))
>>> vm.shape
(2,)
>>> vm.selection(((0, 2),))
((3, 2, -2, False), (1, 1, 1, True))
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

Box = tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class Axis:
    """A view axis: base axis ``base`` read from ``start`` in steps of ``step`` for
    ``count`` elements, or a new unit axis (``base is None``)."""

    base: int | None
    start: int = 0
    step: int = 1
    count: int = 1

    def whole(self, base_shape: Sequence[int]) -> bool:
        """A base axis read whole and in order."""
        return (
            self.base is not None
            and self.start == 0
            and self.step == 1
            and self.count == base_shape[self.base]
        )


@dataclass(frozen=True)
class ViewMap:
    """View axes over a base of ``base_ndim`` axes; ``fixed`` pins dropped base axes."""

    base_ndim: int
    axes: tuple[Axis, ...]
    fixed: tuple[tuple[int, int], ...] = ()  # (base axis, index)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(a.count for a in self.axes)

    # ---- constructors -----------------------------------------------------------------
    @classmethod
    def identity(cls, shape: Sequence[int]) -> ViewMap:
        return cls(len(shape), tuple(Axis(i, 0, 1, n) for i, n in enumerate(shape)))

    @classmethod
    def from_index(cls, shape: Sequence[int], key: object) -> ViewMap:
        """The view ``x[key]`` for a basic index (ints, slices, None, Ellipsis)."""
        if not isinstance(key, tuple):
            key = (key,)
        nreal = sum(1 for k in key if k is not None and k is not Ellipsis)
        if sum(1 for k in key if k is Ellipsis) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if nreal > len(shape):
            raise IndexError(
                f"too many indices for array: array is {len(shape)}-dimensional, "
                f"but {nreal} were indexed"
            )
        expanded: list[object] = []
        for k in key:
            if k is Ellipsis:
                expanded.extend([slice(None)] * (len(shape) - nreal))
            else:
                expanded.append(k)
        if Ellipsis not in key:
            expanded.extend([slice(None)] * (len(shape) - nreal))
        axes: list[Axis] = []
        fixed: list[tuple[int, int]] = []
        b = 0
        for k in expanded:
            if k is None:
                axes.append(Axis(None))
                continue
            n = shape[b]
            if isinstance(k, slice):
                start, stop, step = k.indices(n)
                axes.append(Axis(b, start, step, len(range(start, stop, step))))
            else:
                try:
                    i = operator.index(k)
                except TypeError:
                    raise IndexError(
                        "only integers, slices (`:`), ellipsis (`...`), numpy.newaxis "
                        "(`None`) and integer or boolean arrays are valid indices"
                    ) from None
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {b} with size {n}")
                fixed.append((b, i % n))
            b += 1
        return cls(len(shape), tuple(axes), tuple(fixed))

    @classmethod
    def transpose(cls, shape: Sequence[int], perm: Sequence[int]) -> ViewMap:
        return cls(len(shape), tuple(Axis(p, 0, 1, shape[p]) for p in perm))

    # ---- algebra ------------------------------------------------------------------------
    def then(self, outer: ViewMap) -> ViewMap:
        """The single view equal to applying ``outer`` to this view's result."""
        axes: list[Axis] = []
        fixed = list(self.fixed)
        for a in outer.axes:
            if a.base is None:
                axes.append(a)
                continue
            inner = self.axes[a.base]
            if inner.base is None:
                axes.append(Axis(None, count=a.count))  # a unit axis sliced (maybe empty)
            else:
                axes.append(
                    Axis(
                        inner.base, inner.start + inner.step * a.start, inner.step * a.step, a.count
                    )
                )
        for ax, idx in outer.fixed:
            inner = self.axes[ax]
            if inner.base is not None:
                fixed.append((inner.base, inner.start + inner.step * idx))
        return ViewMap(self.base_ndim, tuple(axes), tuple(sorted(fixed)))

    def is_identity(self) -> bool:
        return (
            not self.fixed
            and len(self.axes) == self.base_ndim
            and all(a.base == i and a.start == 0 and a.step == 1 for i, a in enumerate(self.axes))
        )

    def selection(self, box: Box) -> tuple[tuple[int, int, int, bool], ...]:
        """Per base axis ``(start, count, step, dropped)`` read by view region ``box``."""
        sel: list[tuple[int, int, int, bool] | None] = [None] * self.base_ndim
        for (lo, hi), a in zip(box, self.axes):
            if a.base is not None:
                sel[a.base] = (a.start + a.step * lo, hi - lo, a.step, False)
        for ax, idx in self.fixed:
            sel[ax] = (idx, 1, 1, True)
        return tuple(s if s is not None else (0, 1, 1, False) for s in sel)

    def whole_transpose(self, base_shape: Sequence[int]) -> tuple[int, ...] | None:
        """The axis order when this view is the whole base with its axes reordered (no
        slicing, dropped or new axes), as ``x.T``; None otherwise, or for no reordering."""
        if self.fixed or len(self.axes) != self.base_ndim:
            return None
        if not all(a.whole(base_shape) for a in self.axes):
            return None
        order = tuple(a.base for a in self.axes)
        return None if order == tuple(range(len(order))) else order

    def perm(self) -> tuple[int, ...] | None:
        """Order of the kept base axes as they appear in the view (None if unchanged)."""
        kept = sorted(a.base for a in self.axes if a.base is not None)
        order = tuple(kept.index(a.base) for a in self.axes if a.base is not None)
        return None if order == tuple(range(len(order))) else order

    def base_box(self, box: Box) -> Box:
        """Bounding box in base coordinates of view region ``box``."""
        out = []
        for start, count, step, _ in self.selection(box):
            last = start + step * (count - 1)
            out.append((min(start, last), max(start, last) + 1) if count else (start, start))
        return tuple(out)
