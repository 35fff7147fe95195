"""Printed checks that a call's values have the kinds of an earlier call: the one printer behind
astad's "same kinds as last time" fast paths.

A derivative is specialised on the kinds of its arguments, and a call finds it by a key of them
(``api._arg_key``, ``api_forward.fast_key``): an array's exact type, shape and dtype number, a
scalar's (or None's) exact type, a container's type and length, a dict's keys, recursively.
Building that key, hashing it and comparing it on every call costs as much as a small derivative.
:func:`lines` prints, once per key, the statements that answer whether values have exactly that
key instead: one test per node, each container unpacked once, no key built; a tuple or list
whose items all have one key is checked by a loop over them (its items' checks compiled once: a
tree of 256 arrays compiles in under a millisecond, not in 25).  Its users:

- ``guards.guard_jvp``: the checks at the top of a generated JVP (``astad.jvp`` of scalars and
  arrays), which runs straight on when they pass;
- ``tree_guards.guard_of``: ``astad.jvp`` of arguments that are trees of tuples;
- ``calling.key_checker``: ``Reverse.entry`` for arguments that are structures.

Each test implies its part of the key (``type(x) is ndarray`` with the shape and the dtype;
``type(x) is T`` for a scalar; ``type(x) is tuple`` with its length, ...), so the checks pass only
values whose key is equal, and all of them but arrays of a dtype in the other byte order (whose
key, ``dtype.num``, is the same: they are keyed as before).  A key of another kind (a Dask or
CuPy array's, a container its user does not accept) raises :class:`NoCheck`: that user keeps its
lookup by key.
"""

from __future__ import annotations

from typing import Any, Callable, Collection, Sequence

import numpy as np

#: the most items the checks of one key unpack (a larger key's checks would be a long compile)
MOST_ITEMS = 20000

#: the containers a key may record (each user says which of them it accepts)
CONTAINERS = frozenset({tuple, list, dict})


class NoCheck(Exception):
    """A key with a part the printer does not check (or too many parts)."""


def fresh_name(base: str, taken: Collection[str]) -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first not in ``taken``."""
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


class Names:
    """The names printed checks use for the objects they compare with (bound in ``namespace``),
    and fresh names for the items they unpack; none is in ``taken``."""

    def __init__(self, taken: Collection[str] = (), most: int = MOST_ITEMS) -> None:
        self.namespace: dict[str, Any] = {}
        self._taken = set(taken)
        self._by_id: dict[int, str] = {}
        self._most = most  # the most items unpacked
        self._count = 0

    def fresh(self, base: str) -> str:
        name = fresh_name(base, self._taken)
        self._taken.add(name)
        return name

    def item(self) -> str:
        self._count += 1
        if self._count > self._most:
            raise NoCheck
        return self.fresh(f"item_{self._count}")

    def of(self, obj: Any, base: str | None = None) -> str:
        """The name ``obj`` is read by (the same name for the same object)."""
        name = self._by_id.get(id(obj))
        if name is None:
            name = self._by_id[id(obj)] = self.fresh(base or getattr(obj, "__name__", "kind"))
            self.namespace[name] = obj
        return name


#: numpy's own dtype object of each number, in this machine's byte order: a float64 array's dtype is it,
#: or one equal to it (unpickled), or one of the same number in the other byte order, which the checks
#: refuse (stricter than the key: that call is keyed as before)
_USUAL_DTYPES = {np.dtype(c).num: np.dtype(c) for c in "?bBhHiIlLqQefdgFDG"}


def is_array_key(k: Any) -> bool:
    """Whether ``k`` is a key of a numpy array: ``(shape, dtype number)``."""
    return type(k) is tuple and len(k) == 2 and type(k[0]) is tuple and type(k[1]) is int


def lines(key: Any, value: str, fail: str, names: Names, scalars: Collection[type],
          containers: Collection[type] = CONTAINERS) -> list[str]:
    """Statements (unindented) that run ``fail`` (``return False``, ``return miss``) unless the
    expression ``value`` (a name) has ``key``: a type in ``scalars`` (checked by exact type), an
    array's ``(shape, dtype number)``, ``(tuple or list, keys of the items)`` or ``(dict, its keys,
    keys of its values)`` for the types in ``containers``; :class:`NoCheck` for any other key."""
    out: list[str] = []
    _lines(key, value, fail, names, frozenset(scalars), frozenset(containers), out)
    return out


def _lines(k: Any, v: str, fail: str, names: Names, scalars: frozenset, containers: frozenset, out: list[str]) -> None:
    is_type = names.of(type, "type")
    if k is type(None) and k in scalars:
        out.append(f"if {v} is not None: {fail}")
    elif type(k) is type and k in scalars:
        out.append(f"if {is_type}({v}) is not {names.of(k, 'kind_' + k.__name__)}: {fail}")
    elif is_array_key(k):
        shape = tuple(map(int, k[0]))
        num = int(k[1])
        usual = _USUAL_DTYPES.get(num)  # most arrays' dtype is numpy's own object: `is` is the cheaper test
        dtype = f"{v}.dtype.num != {num}" if usual is None else (  # (equal dtypes may differ in number: long, longlong)
            f"({v}.dtype is not {names.of(usual, 'dtype_' + usual.name)} and ({v}.dtype.num != {num} "
            f"or {v}.dtype != {names.of(usual)}))")
        out.append(f"if {is_type}({v}) is not {names.of(np.ndarray)} or {v}.shape != {shape!r} or {dtype}: {fail}")
    elif type(k) is tuple and len(k) == 2 and k[0] in (tuple, list) and k[0] in containers and type(k[1]) is tuple:
        out.append(f"if {is_type}({v}) is not {names.of(k[0], 'kind_' + k[0].__name__)} "
                   f"or {names.of(len, 'len')}({v}) != {len(k[1])}: {fail}")
        if len(k[1]) > 1 and all(key == k[1][0] for key in k[1]):  # items of one kind: a loop
            item = names.item()
            body: list[str] = []
            _lines(k[1][0], item, fail, names, scalars, containers, body)
            out.append(f"for {item} in {v}:")
            out.extend(f"    {line}" for line in body)
            return
        items = [names.item() for _ in k[1]]
        if items:
            out.append(f"{', '.join(items)}, = {v}")
        for key, item in zip(k[1], items):
            _lines(key, item, fail, names, scalars, containers, out)
    elif type(k) is tuple and len(k) == 3 and k[0] is dict and dict in containers and type(k[1]) is tuple \
            and type(k[2]) is tuple:
        tup, key_types = names.of(tuple, "kind_tuple"), names.of(tuple(map(type, k[1])), "key_types")
        out.append(f"if {is_type}({v}) is not {names.of(dict, 'kind_dict')} or {tup}({v}) != {names.of(k[1], 'keys')} "
                   f"or {tup}({names.of(map, 'map')}({is_type}, {v})) != {key_types}: {fail}")
        for key, item_key in zip(k[1], k[2]):
            item = names.item()
            out.append(f"{item} = {v}[{names.of(key, 'key')}]")
            _lines(item_key, item, fail, names, scalars, containers, out)
    else:
        raise NoCheck


def compiled(groups: dict[str, Sequence[Any]], scalars: Collection[type], containers: Collection[type],
             filename: str, most: int = MOST_ITEMS) -> Callable[..., bool] | None:
    """``check(*groups)``: whether each parameter (a sequence, of any type) has one item of each
    key in its group, compiled; None where a key has a part the printer does not check."""
    names = Names(groups, most)
    is_len = names.of(len, "len")
    body: list[str] = []
    try:
        for param, keys in groups.items():
            body.append(f"if {is_len}({param}) != {len(keys)}: return False")
            items = [names.item() for _ in keys]
            if items:
                body.append(f"{', '.join(items)}, = {param}")
            for k, item in zip(keys, items):
                body += lines(k, item, "return False", names, scalars, containers)
    except NoCheck:
        return None
    src = f"def check({', '.join(groups)}):\n" + "".join(f"    {line}\n" for line in body) + "    return True\n"
    namespace = dict(names.namespace)
    namespace["__builtins__"] = {}
    exec(compile(src, filename, "exec"), namespace)  # noqa: S102
    return namespace["check"]  # type: ignore[no-any-return]
