"""Random programs for judging the optimizer against brute force (thesis §3.2).

Every operator kind appears; array dimensions are drawn from the thesis's 128K–512K.
Programs are only costed, never executed.

>>> import random
>>> p = random_program(random.Random(0), noperators=6, nworkers=8)
>>> p.noperators
6
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from spartan.frontend.optimizer.program import Program
from spartan.tiling import Tiling

#: The thesis's array dimensions: 128K to 512K.
THESIS_DIMS = (131072, 262144, 393216, 524288)
OPERATOR_KINDS = (
    "map",
    "fold",
    "scan",
    "filter",
    "join_update",
    "dot",
    "slice",
    "transpose",
    "reshape",
    "concatenate",
)


def random_program(
    rng: random.Random,
    noperators: int,
    nworkers: int = 8,
    dims: Sequence[int] = THESIS_DIMS,
    evaluated: float = 0.2,
) -> Program:
    """A program of exactly ``noperators`` non-source nodes.

    Sources are fresh arrays, or (probability ``evaluated``) arrays already evaluated in
    a random tiling for ``nworkers`` workers. Inputs prefer recent arrays, so programs
    form chains with some reuse, like real code.
    """
    if noperators < 1:
        raise ValueError(f"noperators must be >= 1, got {noperators}")
    return _Builder(rng, nworkers, tuple(dims), evaluated).build(noperators)


class _Builder:
    def __init__(
        self, rng: random.Random, nworkers: int, dims: tuple[int, ...], evaluated: float
    ) -> None:
        self.rng = rng
        self.nworkers = nworkers
        self.dims = dims
        self.evaluated = evaluated
        self.p = Program()
        self.makers: dict[str, Callable[[], bool]] = {
            k: getattr(self, "_" + k) for k in OPERATOR_KINDS
        }

    def build(self, noperators: int) -> Program:
        self.target = noperators
        self._source((self._dim(), self._dim()))
        while self.p.noperators < noperators:
            kinds = list(OPERATOR_KINDS)
            if not self._room(2):
                kinds.remove("filter")  # needs a mask op too
            made = False
            while not made:  # a maker declines when its inputs do not fit; draw again
                made = self.makers[self.rng.choice(kinds)]()
        return self.p

    def _room(self, n: int) -> bool:
        """Whether ``n`` more operators fit in the target."""
        return self.p.noperators + n <= self.target

    # ---- picking ---------------------------------------------------------------------
    def _dim(self) -> int:
        return self.rng.choice(self.dims)

    def _pick(self, materialized: bool = False) -> int:
        """A random array of any rank (a non-view one if ``materialized``)."""
        x = self._pick_or_none(None, materialized)
        # the program starts with a 2-D source, which is neither a view nor 0-d
        assert x is not None, "the first source always qualifies"
        return x

    def _pick_or_none(self, ndim: int | None = None, materialized: bool = False) -> int | None:
        """A random array of ``ndim`` dimensions (any if None), or None if there is none."""
        nodes = [
            n.id
            for n in self.p
            if (ndim is None or len(n.shape) == ndim)
            and len(n.shape) >= 1
            and not (materialized and n.is_view)
        ]
        if not nodes:
            return None
        # recent arrays are likelier inputs: weight by position
        return self.rng.choices(nodes, weights=range(1, len(nodes) + 1))[0]

    def _source(self, shape: tuple[int, ...]) -> int:
        tiling = None
        if self.rng.random() < self.evaluated:
            kind = self.rng.choice(("row", "column", "block"))
            tiling = Tiling.named(kind, shape, self.nworkers)
        return self.p.source(shape, tiling=tiling)

    def _like(self, shape: tuple[int, ...]) -> int:
        """An existing array of ``shape`` (possibly a transposed one), or a new source."""
        same = [n.id for n in self.p if n.shape == shape]
        flipped = [n.id for n in self.p if len(shape) == 2 and n.shape == shape[::-1]]
        r = self.rng.random()
        if same and r < 0.4:
            return self.rng.choice(same)
        if flipped and r < 0.7 and self._room(2):
            return self.p.transpose(self.rng.choice(flipped))
        return self._source(shape)

    # ---- one maker per operator kind; False when it does not apply ----------------------
    def _map(self) -> bool:
        x = self._pick()
        shape = self.p[x].shape
        r = self.rng.random()
        if r < 0.2:
            self.p.map(x)
        elif r < 0.35 and len(shape) == 2:
            self.p.map(x, self._like((shape[1],)))  # broadcast a row vector
        else:
            self.p.map(x, self._like(shape))
        return True

    def _fold(self) -> bool:
        x = self._pick()
        nd = len(self.p[x].shape)
        self.p.fold(x, self.rng.choice([None, *range(nd)]))
        return True

    def _scan(self) -> bool:
        x = self._pick()
        self.p.scan(x, self.rng.randrange(len(self.p[x].shape)))
        return True

    def _filter(self) -> bool:
        x = self._pick()
        mask = self.p.map(x, itemsize=1)
        self.p.filter(x, mask, self.p[x].size // 2)
        return True

    def _join_update(self) -> bool:
        x = self._pick_or_none(2)
        if x is None:
            return False
        axis = self.rng.randrange(2)
        inputs, axes = [x], [axis]
        if self.rng.random() < 0.6:
            y = self._pick()
            inputs.append(y)
            axes.append(-1)
        n = self.p[x].shape[axis]
        shape = (n, self._dim()) if self.rng.random() < 0.5 else (self._dim(), self._dim())
        update_axis = 0 if shape[0] == n else None
        self.p.join_update(inputs, axes, shape, update_axis=update_axis)
        return True

    def _dot(self) -> bool:
        x = self._pick_or_none(2)
        if x is None:
            return False
        k = self.p[x].shape[1]
        y = self._like((k, self._dim()) if self.rng.random() < 0.7 else (k,))
        self.p.dot(x, y)
        return True

    def _slice(self) -> bool:
        x = self._pick()
        shape = self.p[x].shape
        index: list[slice | int] = []
        for n in shape:
            r = self.rng.random()
            if r < 0.4:
                index.append(slice(None))
            elif r < 0.7:
                index.append(slice(0, n // 2))
            elif r < 0.9 or len(shape) == 1:
                index.append(slice(None, None, 2))
            else:
                index.append(self.rng.randrange(n))
        self.p.slice(x, tuple(index))
        return True

    def _transpose(self) -> bool:
        x = self._pick_or_none(2)
        if x is None:
            return False
        self.p.transpose(x)
        return True

    def _reshape(self) -> bool:
        x = self._pick(materialized=True)
        shape = self.p[x].shape
        if len(shape) == 2:
            self.p.reshape(x, (shape[0] * shape[1],))
            return True
        d = self._dim()
        if shape[0] % d or shape[0] == d:
            return False
        self.p.reshape(x, (shape[0] // d, d))
        return True

    def _concatenate(self) -> bool:
        x = self._pick()
        shape = self.p[x].shape
        axis = self.rng.randrange(len(shape))
        self.p.concatenate([x, self._like(shape)], axis)
        return True
