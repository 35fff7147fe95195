"""What the caller gets owns its memory.

numpy arrays are mutable, so two promises are kept at the API boundary:

- a pullback reads copies of whatever of its residuals shares memory with the
  arguments, the returned value or the constant arrays the code reads (a
  module-level array, a captured one, ``self``'s, a partial's: mutating them
  after the forward call does not change the gradient);
- the cotangents a call returns are arrays of their own: none shares memory
  with another returned cotangent, with the output cotangent passed in, with
  the residuals (so calling the pullback again gives the same result) or with
  the arguments.

Two arrays share memory only if they are views of one owner (``.base``
followed to its end), which is what is compared: one set lookup per array.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def _owner(a: np.ndarray) -> int:
    """The id of the object that owns an array's memory (the end of its ``.base`` chain)."""
    base = a.base
    while base is not None:
        a, base = base, getattr(base, "base", None) if isinstance(base, np.ndarray) else None
    return id(a)


def owners(*values: Any) -> set[int]:
    """The ids of the owners of every array in ``values`` (tuples, lists, dicts
    and NamedTuples walked)."""
    out: set[int] = set()
    _add_owners(values, out)
    return out


_SCALARS = (float, int, bool, type(None))


def _add_owners(values: Any, out: set[int]) -> None:
    for v in values:
        t = type(v)
        if t is np.ndarray:
            out.add(id(v) if v.base is None else _owner(v))
        elif t in _SCALARS:
            continue
        elif isinstance(v, np.ndarray):
            out.add(_owner(v))
        elif isinstance(v, (tuple, list)):
            _add_owners(v, out)
        elif isinstance(v, dict):
            _add_owners(v.values(), out)


def arrays_of(constants: dict[str, Any]) -> tuple[Any, ...]:
    """The arrays among the values of ``constants`` (``Derivative.constant_arrays``)."""
    return tuple(v for v in constants.values() if isinstance(v, np.ndarray))


def changeable_owners(arrays: Any) -> set[int]:
    """The owners of the memory of the constant arrays ``arrays`` (``Derivative.constant_arrays``)
    that could change: all but those whose memory is a ``bytes`` object's (``np.frombuffer(b"...")``,
    which nothing changes).  A read-only array is no exception: the array owning its memory may
    be made writeable again (``a.flags.writeable = True``), and a read-only memmap's file, a
    bytearray's buffer, change under it."""
    out: set[int] = set()
    for a in arrays:
        end = a
        while isinstance(end, np.ndarray) and end.base is not None:
            end = end.base
        if type(end) is not bytes:
            out.add(_owner(a))
    return out


def copy_shared(value: Any, held: set[int], copies: dict[int, Any] | None = None) -> Any:
    """``value`` with each array whose memory is in ``held`` replaced by a copy
    (containers rebuilt only where something changed; an array found twice, a
    constant in the residuals of each call of a recursion's function, copied once)."""
    if isinstance(value, np.ndarray):
        if _owner(value) not in held:
            return value
        if copies is None:
            return value.copy()
        found = copies.get(id(value))
        if found is None:
            found = copies[id(value)] = value.copy()
        return found
    if type(value) is tuple or type(value) is list:
        copies = {} if copies is None else copies
        items = [copy_shared(v, held, copies) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return tuple(items) if type(value) is tuple else items
    return value


def distinct(cts: Any, held: set[int]) -> Any:
    """The cotangents ``cts`` (a tuple, one per parameter, each maybe a
    structure), each array copied if its memory is in ``held`` or is that of an
    earlier one (``held`` is extended: the callers pass a set of their own)."""
    seen = held
    if type(cts) is tuple:  # the usual case, without the recursion: one array (or float, or None) per parameter
        out = list(cts)
        for i, c in enumerate(out):
            if type(c) is np.ndarray:
                owner = id(c) if c.base is None else _owner(c)
                if owner in seen:
                    out[i] = c = c.copy()
                    owner = id(c)
                seen.add(owner)
            elif c is not None and type(c) is not float:
                out[i] = _distinct(c, seen)
        return tuple(out)
    return _distinct(cts, seen)


def _distinct(value: Any, seen: set[int]) -> Any:
    if isinstance(value, np.ndarray):
        owner = _owner(value)
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



def zero_d_marks(value: Any) -> Any:
    """Where ``value`` holds 0-d arrays: True for a 0-d array, False for a numpy float scalar, a list (a dict)
    of the marks of a tuple's or list's items (a dict's values) holding one, None for anything else (see
    :func:`zero_d`)."""
    t = type(value)
    if t is np.ndarray:
        return True if not value.shape else None
    if t in _SCALARS:
        return None
    if isinstance(value, np.floating):  # False: a numpy scalar, whose cotangent is one (np.zeros_like(s) is 0-d)
        return False
    if isinstance(value, (tuple, list)):
        marks = [zero_d_marks(v) for v in value]
        return marks if any(m is not None for m in marks) else None
    if isinstance(value, dict):
        found = {k: zero_d_marks(v) for k, v in value.items()}
        return found if any(m is not None for m in found.values()) else None
    return None


def zero_d(marks: Any, ct: Any) -> Any:
    """The cotangent ``ct`` of an argument with each leaf for a 0-d array of it (``marks``, see
    :func:`zero_d_marks`) a 0-d array, as JAX's (generated code computes it as numpy does: a numpy
    scalar), and each for a numpy scalar a numpy scalar (``np.zeros_like(s)`` is a 0-d array), also
    inside tuples, lists, dicts and NamedTuples."""
    if ct is None or marks is None:
        return ct
    if marks is True:
        return ct if type(ct) is np.ndarray else np.asarray(ct)
    if marks is False:
        return ct[()] if type(ct) is np.ndarray and not ct.shape else ct
    if type(marks) is list and isinstance(ct, (tuple, list)) and len(marks) == len(ct):
        items = [zero_d(m, c) for m, c in zip(marks, ct)]
        if all(a is b for a, b in zip(items, ct)):
            return ct
        if type(ct) is list:
            return items
        return type(ct)(*items) if hasattr(type(ct), "_fields") else tuple(items)
    if type(marks) is dict and isinstance(ct, dict):
        return {k: zero_d(marks.get(k), c) for k, c in ct.items()}
    return ct
