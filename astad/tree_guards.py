"""A printed check that a call's arguments have the kinds of an earlier call: ``astad.jvp``'s
lookup for arguments that are trees of tuples.

:func:`astad.api_forward.fast_key` keys a call by the kinds of its arguments and tangents: an
array's shape and dtype, a scalar's (or None's) type, a tuple's items' kinds, recursively.  For a
tree of tuples (``tree``: 255 tuples, 256 arrays) building that key, hashing it and comparing it
with the stored one walk the tree three times on every call, a tenth of the JVP.  :func:`guard_of`
prints, once per key, one straight-line function that answers whether new arguments have exactly
that key: a check per node, in one pass, with no tuple built.  ``astad.api_forward.jvp_at`` keeps
the last such call's guard with its entry (in the Forward's tables, which ``astad.clear_caches``
empties); when the guard says yes, the call uses that entry, whose checks of the globals it read
still run; when it says no, the call is keyed as any other.

A guard passes only arguments whose key equals its own (the checks are printed by
:mod:`astad.kind_checks`): each node is checked for exactly what the key records of it
(``type(x) is np.ndarray`` with its shape and ``dtype.num``, ``type(x) is tuple`` with its length,
``type(x) is T`` for a scalar or None); a value of any other kind (a list, a dict, a NamedTuple, a
subclass) gets no guard, and its calls keep the key.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import kind_checks


def guard_of(args: Sequence[Any], tangents: Sequence[Any], plain: frozenset) -> Callable[[tuple, tuple], bool] | None:
    """``guard(args, tangents)``: whether a call's arguments and tangents have the kinds these
    have (``plain``: the types a key records by their type alone); None where the kinds are not
    all arrays, tuples and ``plain`` ones, or more than ``kind_checks.MOST_ITEMS`` (a larger tree
    keeps the key: its guard would be a long compile)."""
    try:
        keys = {"args": [_key(a, plain) for a in args], "tangents": [_key(t, plain) for t in tangents]}
    except (kind_checks.NoCheck, RecursionError):
        return None
    return kind_checks.compiled(keys, plain, {tuple}, "<astad: the kinds of a call's arguments>")


def _key(value: Any, plain: frozenset) -> Any:
    """``api_forward.fast_key``'s key of a value made of arrays, tuples and ``plain`` scalars."""
    t = type(value)
    if t is np.ndarray:
        return tuple(map(int, value.shape)), int(value.dtype.num)
    if t is tuple:
        return tuple, tuple(_key(v, plain) for v in value)
    if t in plain:
        return t
    raise kind_checks.NoCheck
