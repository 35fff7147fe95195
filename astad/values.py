"""The frontend's values known when transforming: tuples, lists and dicts
element by element, and references to what is not a value (modules, numpy
functions, user functions, builtins, bound methods).  Lowering removes them;
the alias analysis (:mod:`astad.aliases`) reads them too."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PyTuple:
    """A tuple or list known statically, element by element (removed by lowering)."""

    items: tuple["Value", ...]
    is_list: bool = False
    fields: tuple[str, ...] | None = None  # a NamedTuple's field names
    cls: Any = field(default=None, compare=False)  # its class (the output is one: astad.outputs)


@dataclass(frozen=True)
class PyDict:
    """A dict argument, known key by key (removed by lowering)."""

    keys: tuple[Any, ...]
    items: tuple["Value", ...]


@dataclass(frozen=True)
class Ref:
    """A reference to something that is not a value: a module, a numpy function,
    a user function, a builtin, or a method bound to an array."""

    kind: str  # "module", "numpy", "user", "builtin", "method", "dtype"
    obj: Any
    self_value: Any = None
    path: tuple[str, ...] = ()  # how a user function is reached from the root function's globals
