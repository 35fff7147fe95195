"""The types of the IR: numbers and arrays, tuples, lists, structured arguments
("pytrees"), functions and their cotangents (copowers)."""

from __future__ import annotations

import dataclasses
import functools
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, Union

Dim = Union[int, None]  # None: not known statically


#: whether the IR's nodes and types keep the ``__setattr__`` that raises (``ASTAD_FROZEN_IR=1``: a check that
#: no pass changes one, which tests/test_ir_nodes_fixed.py runs; else they are made in half the time)
FROZEN_NODES = os.environ.get("ASTAD_FROZEN_IR", "") not in ("", "0")


def fast_init(cls: type) -> type:
    """A slotted dataclass ``cls``, declared frozen (hashed and compared by its fields), with an
    ``__init__`` that assigns each field (``self.f = f``: one specialised instruction per slot) and
    without the ``__setattr__`` and ``__delattr__`` that raise ``FrozenInstanceError``: the IR's nodes
    and types are made by the ten thousand, and a frozen class's ``__init__`` must go around its own
    ``__setattr__`` (through ``object.__setattr__``, or each slot's setter, a call each: twice the time
    of this one).  No pass changes a node or a type after it is made (they are shared between the
    stages, and blocks remember facts about them): tests/test_ir_nodes_fixed.py checks that none
    does, as the frozen classes' ``__setattr__`` did."""
    scope: dict[str, Any] = {}
    params, body = [], []
    for i, f in enumerate(dataclasses.fields(cls)):
        assert f.init and not f.kw_only and f.default_factory is dataclasses.MISSING, (cls, f.name)
        if f.default is dataclasses.MISSING:
            params.append(f.name)
        else:
            scope[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
        if FROZEN_NODES:  # (each slot's own setter: the class's __setattr__ raises)
            scope[f"_set{i}"] = getattr(cls, f.name).__set__
            body.append(f"    _set{i}(self, {f.name})")
        else:
            body.append(f"    self.{f.name} = {f.name}")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"]) + "\n"
    # (a file name of its own: profiles tell the classes' __init__s apart)
    exec(compile(source, f"<astad.ir: {cls.__name__}.__init__>", "exec"), scope)  # noqa: S102
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[misc]
    if FROZEN_NODES:
        return cls
    del cls.__setattr__  # type: ignore[misc]
    del cls.__delattr__  # type: ignore[misc]
    return cls


# --------------------------------------------------------------------------- types


class _DifferentiableDtype(dict):
    """A dtype's name -> whether numbers of it are differentiable (float and complex ones),
    each name's answer found once (a hot path's test: ``DIFFERENTIABLE_DTYPE[t.dtype]`` of a Num ``t``)."""

    def __missing__(self, dtype: str) -> bool:
        found = self[dtype] = DIFFERENTIABLE[dtype] = dtype.startswith(("float", "complex"))
        return found


DIFFERENTIABLE_DTYPE: dict[str, bool] = _DifferentiableDtype()
#: its answers so far, in a plain dict: ``DIFFERENTIABLE.get(d) or DIFFERENTIABLE_DTYPE[d]`` answers a
#: differentiable dtype at a plain dict's cost (``d[k]`` of a dict subclass looks up and calls its
#: ``__getitem__``, ~400 instructions: see astad.ad.reverse._VJPS), any other as DIFFERENTIABLE_DTYPE does
DIFFERENTIABLE: dict[str, bool] = {}


@fast_init
@dataclass(frozen=True, slots=True)
class Num:
    """Numbers: a scalar (``shape == ()``) or an array.

    ``dtype`` is a numpy dtype name.  Float dtypes are differentiable (real
    scalars and arrays); integer and boolean ones are discrete.  ``py`` marks a
    Python scalar (``float``/``int``/``bool``) rather than a numpy value; it
    matters for numpy's promotion rules (Python scalars are "weak").  ``value``
    is a statically known value of a discrete scalar (used for shapes).  ``weak`` marks a numpy scalar's type
    that may hold a Python number when the code runs (a join of a Python float and an np.float64 by an
    ``if`` or a loop, ``sum(x[mask])`` of no elements, ``max(x64[0], 0.25)``, and what Python numbers make
    of those): what relies on numpy's semantics (``x ** 0.5`` of a negative ``x`` is nan, not complex) asks it.
    """

    shape: tuple[Dim, ...]
    dtype: str
    py: bool = False
    value: Any = None
    weak: bool = False

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def differentiable(self) -> bool:
        return DIFFERENTIABLE_DTYPE[self.dtype]

    @property
    def known_shape(self) -> bool:
        return None not in self.shape  # (sizes are ints or None)

    def __str__(self) -> str:
        base = _SHORT.get(self.dtype, self.dtype)
        if self.py and not self.shape:
            base = _PY_SHORT.get(base, base)
        if self.value is not None:
            return f"{base}={self.value}"
        if not self.shape:
            return base
        return f"{base}[{','.join('?' if d is None else str(d) for d in self.shape)}]"


#: a dtype's short name in a type's text, and a Python scalar's
_SHORT = {"float64": "f64", "float32": "f32", "int64": "int", "bool": "bool"}
_PY_SHORT = {"f64": "float", "int": "int", "bool": "bool"}


@fast_init
@dataclass(frozen=True, slots=True)
class TupleT:
    items: tuple["Type", ...]

    @property
    def differentiable(self) -> bool:
        return any(t.differentiable for t in self.items)

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.items)) + ("," if len(self.items) == 1 else "") + ")"


@dataclass(frozen=True, slots=True)
class NoneT:
    differentiable = False

    def __str__(self) -> str:
        return "None"


@fast_init
@dataclass(frozen=True, slots=True)
class ListT:
    """A Python list whose length is known only at run time (built by
    ``append`` in a loop); ``elem`` is None until the first append is seen."""

    elem: "Type | None"
    length: int | None = None  # known when transforming (a comprehension over a range or an array)

    @property
    def differentiable(self) -> bool:
        return self.elem is not None and bool(self.elem.differentiable)

    def __str__(self) -> str:
        return f"list[{self.elem if self.elem is not None else '?'}{'' if self.length is None else f'; {self.length}'}]"


@fast_init
@dataclass(frozen=True, slots=True)
class StructT:
    """A structured argument (a "pytree" in JAX's words): a tuple, list, dict or
    NamedTuple of numbers, arrays and further structures.  It exists only at
    the boundary: the function's parameters are its leaves, and the cotangent
    comes back with the same structure.  ``keys`` are the dict's keys or the
    NamedTuple's fields; ``name`` the NamedTuple class (``cls``, not compared)."""

    kind: str  # "tuple", "list", "dict" or "namedtuple"
    keys: tuple[Any, ...]
    items: tuple["Type", ...]
    name: str = ""
    cls: Any = field(default=None, repr=False)  # compared: two classes of one name are two types

    @property
    def differentiable(self) -> bool:
        return any(t.differentiable for t in self.items)

    def __str__(self) -> str:
        if self.kind in ("tuple", "list"):
            inner = ", ".join(map(str, self.items))
            return f"({inner}{',' if len(self.items) == 1 else ''})" if self.kind == "tuple" else f"[{inner}]"
        inner = ", ".join(f"{k}: {t}" if self.kind == "namedtuple" else f"{k!r}: {t}" for k, t in zip(self.keys, self.items))
        return f"{self.name}({inner})" if self.kind == "namedtuple" else "{" + inner + "}"

    def flatten(self, value: Any) -> list[Any]:
        """The leaves of a value of this structure, in order."""
        return _flattener(self)(value)

    def paths(self) -> list[str]:
        """Where each leaf is, as Python subscripts (``["w"]``, ``[0][1]``)."""
        keys = self.keys if self.kind == "dict" else range(len(self.items))
        return [f"[{k!r}]{rest}" for k, t in zip(keys, self.items)
                for rest in (t.paths() if isinstance(t, StructT) else [""])]

    def unflatten(self, leaves: Iterator[Any]) -> Any:
        """A value of this structure from its leaves (cotangents, say)."""
        items = [t.unflatten(leaves) if isinstance(t, StructT) else next(leaves) for t in self.items]
        if self.kind == "dict":
            return dict(zip(self.keys, items))
        if self.kind == "namedtuple":
            return self.cls(*items)
        return items if self.kind == "list" else tuple(items)


@functools.lru_cache(maxsize=256)
def _flattener(t: StructT) -> Callable[[Any], list[Any]]:
    """A function returning the leaves of a value of structure ``t`` (one
    expression: no recursion per call).  Its text is made of indices only: the
    keys are read from a tuple, never written into the text (a key's repr is
    the user's)."""
    keys: list[Any] = []
    return eval("lambda v: [" + ", ".join(f"v{p}" for p in _key_paths(t, keys)) + "]",  # noqa: S307 - our text
                {"__builtins__": {}, "k": tuple(keys)})


def unpacker(t: StructT) -> Callable[[Any], list[Any]]:
    """``_flattener(t)`` for a value known to have the structure ``t`` (the
    arguments of a derivative chosen by their structure): each tuple, list or
    NamedTuple unpacked once (one ``UNPACK_SEQUENCE``, where the flattener
    subscripts every leaf's whole path), a dict read by its keys."""
    keys: list[Any] = []
    lines: list[str] = []
    count = [0]

    def fresh() -> str:
        count[0] += 1
        return f"x{count[0]}"

    def leaves(t: StructT, v: str) -> list[str]:
        names = [fresh() for _ in t.items]
        if t.kind == "dict":
            keys.extend(t.keys)
            lines.extend(f"    {n} = {v}[k[{len(keys) - len(t.keys) + i}]]" for i, n in enumerate(names))
        elif names:
            lines.append(f"    {', '.join(names)}, = {v}")
        return [leaf for n, item in zip(names, t.items)
                for leaf in (leaves(item, n) if isinstance(item, StructT) else [n])]

    out = leaves(t, "v")
    namespace: dict[str, Any] = {"__builtins__": {}, "k": tuple(keys)}
    exec("def unpack(v):\n" + "\n".join(lines) + f"\n    return [{', '.join(out)}]\n", namespace)  # noqa: S102
    return namespace["unpack"]


def builder(types: Sequence["Type"]) -> Callable[[Sequence[Any]], tuple]:
    """A function from the leaves of arguments of ``types`` (one per leaf, in
    order) to the tuple of the arguments, each structure rebuilt (one expression:
    no recursion per call).  Keys and NamedTuple classes are read from tuples,
    never written into the text."""
    keys: list[Any] = []
    classes: list[Any] = []
    count = [0]

    def text(t: "Type", depth: int) -> str:
        if not isinstance(t, StructT):
            count[0] += 1
            return f"l[{count[0] - 1}]"
        if depth > 40:  # deeper than Python's parser may nest: the recursive method
            n = sum(leaf_counts([t]))
            classes.append(t)
            count[0] += n
            return f"c[{len(classes) - 1}].unflatten(iter(l[{count[0] - n}:{count[0]}]))"
        items = [text(item, depth + 1) for item in t.items]
        if t.kind == "dict":
            keys.extend(t.keys)
            first = len(keys) - len(t.keys)
            return "{" + ", ".join(f"k[{first + i}]: {v}" for i, v in enumerate(items)) + "}"
        if t.kind == "namedtuple":
            classes.append(t.cls)
            return f"c[{len(classes) - 1}](" + ", ".join(items) + ")"
        if t.kind == "list":
            return "[" + ", ".join(items) + "]"
        return "(" + "".join(v + ", " for v in items) + ")"

    body = "(" + "".join(text(t, 0) + ", " for t in types) + ")"
    return eval("lambda l: " + body, {"__builtins__": {"iter": iter}, "k": tuple(keys), "c": tuple(classes)})  # noqa: S307


def _key_paths(t: StructT, keys: list[Any]) -> list[str]:
    """The subscripts of each leaf as text (``[k[0]][k[3]]``), the keys appended to ``keys``."""
    out = []
    for key, item in zip(t.keys if t.kind == "dict" else range(len(t.items)), t.items):
        keys.append(key)
        here = f"[k[{len(keys) - 1}]]"
        out += [here + rest for rest in _key_paths(item, keys)] if isinstance(item, StructT) else [here]
    return out


def leaf_counts(types: Sequence["Type"]) -> list[int]:
    """How many parameters each argument becomes (a structure: its leaves)."""
    return [sum(leaf_counts(t.items)) if isinstance(t, StructT) else 1 for t in types]


@fast_init
@dataclass(frozen=True, slots=True)
class FunT:
    """A function value (a ``lambda`` or nested ``def``) called with arguments of
    types ``params``, returning a ``result``."""

    params: tuple["Type", ...]
    result: "Type"
    name: str = ""  # the variable of the ``lam`` that made it: each function value has a type of its own
    differentiable = True

    def __str__(self) -> str:
        return f"({', '.join(map(str, self.params))}) -> {self.result}"


@fast_init
@dataclass(frozen=True, slots=True)
class CopowerT:
    """The cotangent of a function value (CHAD: ``!D1(τ) ⊗ D2(σ)``): the
    formal sum of the calls made to it, each the call's primal argument (here:
    the residuals the call recorded) with the cotangent of its result."""

    fn: FunT
    differentiable = True

    def __str__(self) -> str:
        return f"!({', '.join(map(str, self.fn.params))}) ⊗ {self.fn.result}"


Type = Union[Num, TupleT, NoneT, ListT, StructT, FunT, CopowerT]

FLOAT = Num((), "float64", py=True)
INT = Num((), "int64", py=True)
BOOL = Num((), "bool", py=True)


def is_scalar(t: Type) -> bool:
    return isinstance(t, Num) and t.shape == ()




def tuple_items(t: Type) -> tuple[Type, ...]:
    if not isinstance(t, TupleT):
        raise TypeError(f"not a tuple type: {t}")
    return t.items
