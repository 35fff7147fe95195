"""What the lowering knows of names while it runs: the scopes (a function's
variables, and the scope a nested function was defined in), closures
(lambdas and nested defs), the values names hold, and what identifies
those values when transforming.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Iterator, Union

import libcst as cst
import numpy as np

from ..values import PyDict, PyTuple, Ref
from ..ir import Atom, Bind, Const, ListT, Num, Type, Var
from .syntax import local_names, user_names
from .parse import Parsed


class Closure:
    """A ``lambda`` or nested ``def``: its code, the scope whose variables it
    reads when called (as Python does: their values at the call), and its
    defaults (evaluated where it is defined).  Compared by identity."""

    def __init__(self, node: cst.Lambda | cst.FunctionDef, scope: "Scope", defaults: dict[str, "Value"],
                 site: "tuple[list[Bind], Bind | None, set[str]] | None" = None) -> None:
        self.node, self.scope, self.defaults = node, scope, defaults
        # where it was made: the bindings it is made among, the one before it, the
        # variables its body could read there (see Lowerer.function_value)
        self.site = site
        # the function values made of it: (argument types, captures) -> variable, or None
        # where its body could not be one (its calls with that key are inlined)
        self.values: dict[Any, Var | None] = {}

    @property
    def __name__(self) -> str:
        return self.node.name.value if isinstance(self.node, cst.FunctionDef) else "<lambda>"

    @property
    def locals(self) -> frozenset[str]:
        """The names Python makes its own locals: a read of one it has not assigned is not the enclosing scope's."""
        return local_names(self.node)

    @functools.cached_property
    def reads(self) -> list[str]:
        """The names its body mentions that are not its parameters (what it may capture), sorted."""
        return sorted(user_names(self.node.body) - {p.name.value for p in self.node.params.params})


Value = Union[Atom, PyTuple, PyDict, Ref]


class Env(dict):
    """A scope's names and their values, noting which variables have been
    values of its names (``vars``, never forgotten: a superset of those that
    are) and which names hold something else than a variable or a constant
    (``others``: tuples, lists, functions): whether a name holds a variable
    is then answered without looking at every name (see ``LowererCore._held``)."""

    def __init__(self, items: Any = ()) -> None:
        super().__init__(items)  # (a copy at C speed: a branch copies its scope's names)
        if type(items) is Env:
            self.vars, self.others = set(items.vars), set(items.others)
            return
        self.vars: set[str] = {v.name for v in self.values() if type(v) is Var}
        self.others: set[str] = {k for k, v in self.items() if type(v) is not Var and type(v) is not Const}

    def __setitem__(self, name: str, value: Value) -> None:
        cls = type(value)
        if cls is Var:
            self.vars.add(value.name)
            self.others.discard(name)
        elif cls is Const:
            self.others.discard(name)
        else:
            self.others.add(name)
        dict.__setitem__(self, name, value)

    def update(self, items: Any = (), **more: Value) -> None:  # (every value through __setitem__)
        for name, value in dict(items, **more).items():
            self[name] = value

    def setdefault(self, name: str, value: Value = None) -> Value:  # type: ignore[assignment]
        if name not in self:
            self[name] = value
        return self[name]


@dataclass
class Scope:
    parsed: Parsed
    path: tuple[str, ...] = ()
    env: dict[str, Value] = field(default_factory=Env)
    call_key: Any = None  # the callee and what is known of the arguments when transforming
    parent: "Scope | None" = None  # a nested function's: the scope it was defined in
    own: frozenset[str] = frozenset()  # a nested function's locals (syntax.local_names): never read from `parent`

    def __post_init__(self) -> None:
        if type(self.env) is not Env:
            self.env = Env(self.env)


def scope_chain(scope: "Scope | None") -> Iterator["Scope"]:
    """A scope and the scopes it is nested in, innermost first."""
    while scope is not None:
        yield scope
        scope = scope.parent


def closures_in(value: Any) -> list[Closure]:
    if isinstance(value, (PyTuple, PyDict)):
        return [c for v in value.items for c in closures_in(v)]
    if isinstance(value, Ref) and value.kind == "closure":
        return [value.obj]
    return []


def is_list_value(value: Any) -> bool:
    return (isinstance(value, PyTuple) and value.is_list) or (isinstance(value, Var) and isinstance(value.type, ListT))


def atoms_in(value: Any) -> list[Atom]:
    """The atoms a value is made of (a tuple's items, a bound method's array)."""
    if isinstance(value, (PyTuple, PyDict)):
        return [a for v in value.items for a in atoms_in(v)]
    if isinstance(value, Ref):
        return atoms_in(value.self_value) if value.self_value is not None else []
    return [value] if isinstance(value, Var) else []


def value_key(value: Any) -> Any:
    """What identifies a value when transforming (variables by name, constants by value, the rest by identity)."""
    if isinstance(value, (PyTuple, PyDict)):
        return tuple(value_key(v) for v in value.items)
    if isinstance(value, Var):
        return ("var", value.name)
    if isinstance(value, Const):
        return ("const", value.key if value.name is None else value.name)
    if isinstance(value, Ref):
        return ("ref", id(value.obj), value_key(value.self_value))
    return ("other", id(value))


def mentions(value: Value, x: Atom) -> bool:
    if isinstance(value, (PyTuple, PyDict)):
        return any(mentions(v, x) for v in value.items)
    if isinstance(value, Ref):
        return value.self_value == x
    return value == x


def sample_of(v: Any) -> Any:
    """A Python object of the kind ``v`` stands for (for ``isinstance``)."""
    if isinstance(v, PyTuple):
        return [] if v.is_list else ()
    if isinstance(v, PyDict):
        return {}
    t = getattr(v, "type", None)
    if isinstance(t, ListT):
        return []
    if isinstance(t, Num):
        if t.shape:
            return np.zeros(0)
        return np.zeros((), t.dtype).item() if t.py else np.zeros((), t.dtype)[()]
    return v


def make_call_key(callee: Any, env: dict[str, Any], memo: dict[int, tuple[Any, Any]] | None = None) -> tuple:
    """What identifies a call when transforming; ``memo`` keeps the keys of tuples and dicts
    (per id, with the value: they are immutable), which a recursion over a tree passes down
    part by part (each call's key would otherwise walk its whole subtree again)."""
    return id(callee), tuple(sorted((k, _static_key(v, memo)) for k, v in env.items()))


def _static_key(v: Any, memo: dict[int, tuple[Any, Any]] | None = None) -> Any:
    """What is known of a value when transforming: constants, types (with the
    values of ints and shapes), the structure of tuples, which function."""
    if isinstance(v, Const):
        return "c", v.key if v.name is None else v.name
    if isinstance(v, Var):
        return "v", v.type
    if isinstance(v, (PyTuple, PyDict)):
        if memo is not None:
            found = memo.get(id(v))
            if found is not None and found[0] is v:
                return found[1]
        key = (("t", v.is_list, tuple(_static_key(i, memo) for i in v.items)) if isinstance(v, PyTuple) else
               ("d", v.keys, tuple(_static_key(i, memo) for i in v.items)))
        if memo is not None:
            memo[id(v)] = (v, key)
        return key
    if isinstance(v, Ref):
        return "r", v.kind, id(v.obj)
    return "o", repr(v)


def rebuild(shape: Any, outs: Any) -> Value:
    if shape[:1] == ("atom",):
        return next(outs)
    if shape[:1] == ("same",):
        return shape[1]
    if shape[:1] == ("list",):  # a list joined item by item stays a list
        return PyTuple(tuple(rebuild(s, outs) for s in shape[1]), is_list=True)
    return PyTuple(tuple(rebuild(s, outs) for s in shape))


def forget_value(t: Type) -> Type:
    """A loop-carried value changes between iterations: its static value (a list: its length) is unknown."""
    if isinstance(t, ListT) and t.length is not None:
        return ListT(t.elem)
    return Num(t.shape, t.dtype, t.py) if isinstance(t, Num) and t.value is not None else t
