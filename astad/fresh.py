"""What the caller gets owns its memory.

numpy arrays are mutable, so two promises are kept at the API boundary:

- a pullback reads copies of whatever of its residuals shares memory with the
  arguments or the returned value (mutating them after the forward call does
  not change the gradient);
- the cotangents a call returns are arrays of their own: none shares memory
  with another returned cotangent, with the output cotangent passed in, with
  the residuals (so calling the pullback again gives the same result) or with
  the arguments.

Two arrays share memory only if they are views of one owner (``.base``
followed to its end), which is what is compared: one set lookup per array.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np


def _owner(a: np.ndarray) -> Any:
    """The object that owns an array's memory (the end of its ``.base`` chain)."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a


def arrays(value: Any) -> Iterator[np.ndarray]:
    """The arrays in a value (tuples, lists, dicts and NamedTuples walked)."""
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from arrays(v)


def owners(*values: Any) -> set[int]:
    """The ids of the owners of every array in ``values``."""
    return {id(_owner(a)) for v in values for a in arrays(v)}


def copy_shared(value: Any, held: set[int]) -> Any:
    """``value`` with each array whose memory is in ``held`` replaced by a copy
    (containers rebuilt only where something changed)."""
    if isinstance(value, np.ndarray):
        return value.copy() if id(_owner(value)) in held else value
    if type(value) is tuple or type(value) is list:
        items = [copy_shared(v, held) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return tuple(items) if type(value) is tuple else items
    return value


def distinct(cts: Any, held: set[int]) -> Any:
    """The cotangents ``cts`` (a tuple, one per parameter, each maybe a
    structure), each array copied if its memory is in ``held`` or is that of an
    earlier one."""
    seen = set(held)
    return _distinct(cts, seen)


def _distinct(value: Any, seen: set[int]) -> Any:
    if isinstance(value, np.ndarray):
        owner = id(_owner(value))
        if owner in seen:
            value = value.copy()
            owner = id(value)
        seen.add(owner)
        return value
    if isinstance(value, (tuple, list)):
        items = [_distinct(v, seen) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        if type(value) is list:
            return items
        return type(value)(*items) if hasattr(type(value), "_fields") else tuple(items)
    if isinstance(value, dict):
        return {k: _distinct(v, seen) for k, v in value.items()}
    return value
