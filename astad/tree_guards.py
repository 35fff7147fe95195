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

A guard passes only arguments whose key equals its own: each node is checked for exactly what the
key records of it (``type(x) is np.ndarray`` with its shape and ``dtype.num``, ``type(x) is tuple``
with its length, ``type(x) is T`` for a scalar or None); a value of any other kind (a list, a dict,
a NamedTuple, a subclass) gets no guard, and its calls keep the key.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

#: the most nodes a printed guard checks (a larger tree keeps the key: its guard would be a long compile)
MAX_NODES = 20000


class _NoGuard(Exception):
    pass


def guard_of(args: Sequence[Any], tangents: Sequence[Any], plain: frozenset) -> Callable[[tuple, tuple], bool] | None:
    """``guard(args, tangents)``: whether a call's arguments and tangents have the kinds these
    have (``plain``: the types a key records by their type alone); None where the kinds are not
    all arrays, tuples and ``plain`` ones."""
    lines = ["def guard(args, tangents):"]
    consts: dict[str, Any] = {"ndarray": np.ndarray}
    types: dict[type, str] = {}
    count = [0]

    def fresh() -> str:
        count[0] += 1
        if count[0] > MAX_NODES:
            raise _NoGuard
        return f"v{count[0]}"

    def check(value: Any, name: str) -> None:
        t = type(value)
        if t is np.ndarray:
            lines.append(f"    if type({name}) is not ndarray or {name}.shape != {tuple(map(int, value.shape))!r} "
                         f"or {name}.dtype.num != {int(value.dtype.num)}:")
        elif t is tuple:
            lines.append(f"    if type({name}) is not tuple or len({name}) != {len(value)}:")
        elif t in plain:
            if t not in types:
                types[t] = f"T{len(types)}"
                consts[types[t]] = t
            lines.append(f"    if type({name}) is not {types[t]}:")
        else:
            raise _NoGuard
        lines.append("        return False")
        if t is tuple:
            unpack(value, name)

    def unpack(values: Sequence[Any], name: str) -> None:
        names = [fresh() for _ in values]
        if names:
            lines.append(f"    {', '.join(names)}{',' if len(names) == 1 else ''} = {name}")
        for v, n in zip(values, names):
            check(v, n)

    try:
        for group, name in ((args, "args"), (tangents, "tangents")):
            lines += [f"    if len({name}) != {len(group)}:", "        return False"]
            unpack(group, name)
    except _NoGuard:
        return None
    lines.append("    return True")
    namespace = dict(consts)
    exec(compile("\n".join(lines) + "\n", "<astad: the kinds of a call's arguments>", "exec"), namespace)  # noqa: S102
    return namespace["guard"]  # type: ignore[no-any-return]
