"""NumPy's docstrings on spartan's methods, with spartan's differences stated.

:func:`derived_from` copies the docstring of NumPy's namesake (as
``dask.utils.derived_from`` does), so ``help(x.sum)`` reads as NumPy's page, led by
the note of how spartan's version differs and followed by any text of spartan's own.
NumPy's examples use NumPy's arrays: they are marked ``+SKIP`` for doctest.

>>> import numpy as np
>>> @derived_from(np.ndarray, note="``out=`` must be a spartan array.")
... def sum(self, axis=None, dtype=None, out=None):
...     '''Reduces tile by tile on the workers.'''
>>> print(sum.__doc__.splitlines()[0])
Return the sum of the array elements over the given axis.
>>> "``out=`` must be a spartan array." in sum.__doc__
True
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def skip_doctest(doc: str) -> str:
    """``doc`` with each example line marked ``# doctest: +SKIP`` (NumPy's examples
    call NumPy, with NumPy's arrays; they are not spartan's tests)."""
    lines = []
    for line in doc.splitlines():
        source = line.lstrip()[3:].strip()
        # (a ">>> # comment" line is no example: doctest rejects a directive on it)
        if line.lstrip().startswith(">>>") and source and not source.startswith("#"):
            if "doctest:" not in line:
                line += "  # doctest: +SKIP"
        lines.append(line)
    return "\n".join(lines)


def _numpy_doc(original: Any, name: str) -> tuple[str, str]:
    """NumPy's docstring of ``original.name`` without its leading signature lines
    (``a.sum(axis=None, ...)``: ``inspect.signature`` shows spartan's own), and the
    dotted name it was copied from."""
    obj = getattr(original, name)
    owner = getattr(original, "__module__", None) or ""
    qual = getattr(original, "__name__", "") or ""
    source = f"{'numpy' if owner.startswith('numpy') else owner}.{qual}.{name}"
    if inspect.ismodule(original):
        source = f"{original.__name__}.{name}"
    doc = inspect.cleandoc(getattr(obj, "__doc__", None) or "")
    lines = doc.splitlines()
    while lines and (lines[0].startswith(("a.", f"{name}(")) and lines[0].rstrip().endswith(")")):
        lines.pop(0)  # the signature line(s) of a C method or function
    while lines and not lines[0].strip():
        lines.pop(0)
    return "\n".join(lines), source


def derived_from(original: Any, *, name: str | None = None, note: str = "") -> Callable[[F], F]:
    """Decorate a spartan function with the docstring of ``original``'s attribute of
    the same name (``name`` to take another), stating spartan's differences:
    ``note`` (what spartan does not support or does otherwise), the NumPy parameters
    the function does not take (found from the two signatures), and the function's
    own docstring, if any. Returns the function itself, not a wrapper, so its
    signature and source stay the function's.

    >>> import numpy as np
    >>> @derived_from(np.ndarray)
    ... def argmax(self, axis=None):
    ...     pass
    >>> "Spartan does not take NumPy's out, keepdims." in argmax.__doc__
    True
    """

    def decorate(f: F) -> F:
        target = name or f.__name__
        doc, source = _numpy_doc(original, target)
        head, _, rest = doc.partition("\n\n")
        differences = []
        if note:
            differences.append(note.strip())
        # a NumPy function's first parameter is the method's ``self``
        missing = _missing(getattr(original, target), f, skip_first=inspect.ismodule(original))
        if missing:
            differences.append(f"Spartan does not take NumPy's {', '.join(missing)}.")
        own = inspect.cleandoc(f.__doc__ or "")
        parts = [head]
        about = f"This docstring was copied from ``{source}``."
        if differences:
            about += " Spartan's differences: " + " ".join(differences)
        parts.append(about)  # (one line: help() wraps nothing, and a search finds it)
        if own:
            parts.append(own)
        if rest:
            parts.append(skip_doctest(rest))
        f.__doc__ = "\n\n".join(p for p in parts if p)
        return f

    return decorate


def _missing(theirs: Any, ours: Callable[..., Any], skip_first: bool = False) -> list[str]:
    """The parameters of NumPy's ``theirs`` that ``ours`` does not take (none where
    NumPy's signature is not exposed, or ``ours`` takes ``**kwargs``); ``skip_first``:
    not ``theirs``'s first (the array a function takes where the method has ``self``)."""
    try:
        numpy_params = dict(inspect.signature(theirs).parameters)
    except (TypeError, ValueError):
        return []
    if skip_first and numpy_params:
        del numpy_params[next(iter(numpy_params))]
    mine = inspect.signature(ours).parameters
    if any(p.kind == p.VAR_KEYWORD for p in mine.values()):
        return []
    return [
        n
        for n, p in numpy_params.items()
        if n not in mine and n != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


__all__ = ["derived_from", "skip_doctest"]
