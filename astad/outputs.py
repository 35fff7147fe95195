"""The list/tuple structure of a function's output.

The IR has one tuple type for Python's tuples and the lists of a fixed length
(a list literal, a list parameter); the generated code returns tuples.  The
frontend records which of the output's tuples are lists (:func:`template`) and
the API rebuilds them (:func:`rebuilt`), so ``return [a, b]`` gives a list, as
plain Python does, and so do its tangent and its Jacobians (their structure
is the output's).  A template is JSON data (the disk cache stores it): None
for a leaf (an array, a number, a run-time list: already a list), else
``[is_list, [template of each item]]``; a template without any list is None.
A NamedTuple (an argument returned, ``np.linalg.slogdet(a)``) is ``[cls, [...]]``
with its class in place of ``is_list``: not JSON (the disk cache keeps no such entry)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .ir import Num, TupleT
from .values import PyTuple


def template(value: Any) -> Any:
    """The template of a returned frontend value (None: no list in it)."""
    if type(value) is not PyTuple:
        return None
    items = [template(v) for v in value.items]
    if value.cls is not None and not value.is_list:
        return [value.cls, items]
    if not value.is_list and all(i is None for i in items):
        return None
    return [bool(value.is_list), items]


def checked(data: Any) -> Any:
    """A template read from the disk cache, checked to be one (else ValueError)."""
    if data is None:
        return None
    if not (type(data) is list and len(data) == 2 and type(data[0]) is bool and type(data[1]) is list):
        raise ValueError("not an output template")
    return [data[0], [checked(i) for i in data[1]]]


def rebuilt(t: Any, value: Any) -> Any:
    """``value`` (tuples from the generated code) with the lists of template ``t``."""
    if t is None or type(value) is not tuple:  # (None: a zero tangent, a symbolic zero)
        return value
    items = [rebuilt(ti, v) for ti, v in zip(t[1], value)]
    kind = t[0]
    return items if kind is True else tuple(items) if kind is False else kind(*items)


def reverse_forward(forward: Callable, t: Any) -> Callable:
    """Reverse mode's forward function ``(*args) -> (value, residuals)`` with the output's lists."""

    def with_lists(*args: Any) -> tuple[Any, Any]:
        value, residuals = forward(*args)
        return rebuilt(t, value), residuals

    return with_lists


def jvp(fn: Callable, t: Any) -> Callable:
    """A JVP ``(*args, *tangents) -> (value, tangent)`` with the output's lists in both."""

    def with_lists(*args: Any) -> tuple[Any, Any]:
        value, tangent = fn(*args)
        return rebuilt(t, value), rebuilt(t, tangent)

    return with_lists


def guarded_jvp(fn: Callable, t: Any) -> Callable:
    """A guarded JVP ``(primals, tangents) -> (value, tangent)`` (:func:`astad.guards.guard_jvp`)
    with the output's lists in both; its miss (not a pair) as it is."""

    def with_lists(primals: Any, tangents: Any) -> Any:
        found = fn(primals, tangents)
        if type(found) is not tuple:  # guards.MISS
            return found
        return rebuilt(t, found[0]), rebuilt(t, found[1])

    return with_lists


def _has_numpy_scalar(t: Any) -> bool:
    """Whether an output type has a numpy float scalar leaf (not a Python float, not an array of
    dimensions; a 0-d array, say ``np.where`` of scalars, is one to the IR)."""
    if isinstance(t, TupleT):
        return any(_has_numpy_scalar(i) for i in t.items)
    return isinstance(t, Num) and t.shape == () and not t.py and t.dtype.startswith("float")


def _like(value: Any, tangent: Any) -> Any:
    """``tangent`` of the type of ``value`` where that is a numpy scalar or a 0-d array (numpy's ``where`` of
    scalars gives a 0-d array, Python's arithmetic a float, numpy's of 0-d arrays a numpy scalar: the tangent
    of a numpy scalar is a numpy scalar, of a 0-d array a 0-d array, as the value's dtype is the tangent's)."""
    if type(value) is tuple and type(tangent) is tuple:
        return tuple(_like(v, t) for v, t in zip(value, tangent))
    if tangent is None or type(tangent) is type(value):
        return tangent
    if isinstance(value, np.generic):
        return type(value)(tangent)
    if type(value) is np.ndarray and not value.ndim and isinstance(tangent, (np.generic, float, int)):
        return np.asarray(tangent, value.dtype)
    return tangent


def scalar_tangents(fn: Callable, t: Any) -> Callable:
    """A JVP ``(*args, *tangents) -> (value, tangent)`` whose output type is ``t``: where ``t`` has a numpy
    scalar leaf, its tangent made of the value's type (see _like); else ``fn`` itself."""
    if not _has_numpy_scalar(t):
        return fn

    def like_values(*args: Any) -> tuple[Any, Any]:
        value, tangent = fn(*args)
        return value, _like(value, tangent)

    like_values.__wrapped__ = fn  # type: ignore[attr-defined]
    return like_values


def guarded_scalar_tangents(fn: Callable, t: Any) -> Callable:
    """As :func:`scalar_tangents`, for a guarded JVP (:func:`astad.guards.guard_jvp`); its miss as it is."""
    if not _has_numpy_scalar(t):
        return fn

    def like_values(primals: Any, tangents: Any) -> Any:
        found = fn(primals, tangents)
        if type(found) is not tuple:  # guards.MISS
            return found
        return found[0], _like(found[0], found[1])

    return like_values
