"""Calling conventions: how a call of a differentiated callable binds its arguments.

A callable astad differentiates is a plain function, a bound method
(``obj.loss``), a ``functools.partial`` of one, or a lambda or closure (plain
functions whose captured variables are read as constants).  :func:`unwrap`
splits it into the function whose source astad reads and the parameters the
callable fixes: ``self`` of a method, the leading positional arguments of a
partial.  Fixed values are read as constants when transforming, as globals are
(a method's ``self.c`` as a module-level ``c``), and checked on each call as
globals are (see :func:`lookup_of`).

A :class:`Binder` places a call's arguments as Python does: it calls a stub
with the function's own signature and defaults (so binding runs in CPython's
own argument parser, and a wrong call raises exactly the ``TypeError`` Python
raises for the primal), wrapped as the callable is (a method, a partial), and
the stub returns the values of the free parameters, in order: the positional
parameters, then the keyword-only ones.  Only the arguments passed by position
are differentiated (as in JAX): ``argnums`` index them, and pullbacks and
pushforwards take one (co)tangent per argument passed by position.
"""

from __future__ import annotations

import builtins
import functools
import types
from typing import Any, Callable, Sequence

import numpy as np

from . import kind_checks
from .errors import AstadTypeError, SourceUnavailableError


class CallError(AstadTypeError, TypeError):
    """A call that does not fit the function's signature: Python's own message."""


def unwrap(root: Any) -> tuple[Any, dict[str, Any], Callable[[Callable], Callable]]:
    """``(function, fixed, wrap)``: the plain function of a callable, the values
    its leading parameters are fixed to (by name), and how to wrap a function of
    the same signature as the callable wraps it."""
    if isinstance(root, types.MethodType):
        fn, fixed, wrap = unwrap(root.__func__)
        first = _positional_names(fn)[len(fixed):]
        if not first:
            raise SourceUnavailableError(f"{root!r} is a method whose function takes no `self` parameter")
        return fn, {**fixed, first[0]: root.__self__}, lambda stub: types.MethodType(wrap(stub), root.__self__)
    if isinstance(root, functools.partial):
        fn, fixed, wrap = unwrap(root.func)
        free = _positional_names(fn)[len(fixed):]
        if len(root.args) > len(free) and getattr(fn, "__code__", None) is not None:  # (else: refused as no source)
            raise AstadTypeError(f"{root!r} binds {len(root.args)} positional arguments, but "
                                 f"{fn.__qualname__} has {len(free)} positional parameters left")
        fixed = {**fixed, **dict(zip(free, root.args))}
        return fn, fixed, lambda stub: _live_partial(wrap(stub), root)
    return root, {}, lambda stub: stub


def _live_partial(bound: Callable, root: functools.partial) -> Callable:
    """``bound`` called as ``root`` calls its function, with the arguments ``root`` holds at the time
    of the call (its ``keywords`` is a dict, which may be changed in place)."""
    def call(*args: Any, **kwargs: Any) -> Any:
        return bound(*root.args, *args, **{**root.keywords, **kwargs})

    return call


def code_of(root: Any) -> Any:
    """The code of the function a callable calls (None for one that is not a Python function)."""
    return getattr(unwrap(root)[0], "__code__", None)


def _positional_names(fn: Any) -> tuple[str, ...]:
    code = getattr(fn, "__code__", None)
    return () if code is None else code.co_varnames[:code.co_argcount]


def free_names(fn: Any, fixed: dict[str, Any]) -> tuple[str, ...]:
    """The parameters a call fills: the positional ones not fixed, then the keyword-only ones."""
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    return tuple(n for n in names if n not in fixed)


class Binder:
    """The free parameters' values of a call, as Python binds them (see the module docstring)."""

    __slots__ = ("names", "n_positional", "fast_n", "_bind", "_stub", "_root", "_fn", "_fixed", "_keywords")

    def __init__(self, fn: Any, fixed: dict[str, Any], wrap: Callable[[Callable], Callable], root: Any) -> None:
        code = fn.__code__
        self.names = free_names(fn, fixed)
        self.n_positional = code.co_argcount - len(fixed)  # free positional parameters
        partial = partial_of(root)
        # a partial's keywords: a dict, which may gain the name of a positional parameter later (then
        # Python refuses that parameter by position: a call binds, and the fast paths' checks fail)
        self._keywords = partial.keywords if partial is not None else _NOTHING
        # a call of exactly the free positional parameters needs no binding
        self.fast_n = self.n_positional if not code.co_kwonlyargcount and not self._keywords else -1
        self._stub = _stub(fn, self.names)
        self._bind = wrap(self._stub)
        self._root = root
        self._fn, self._fixed = fn, fixed

    def __call__(self, args: tuple, kwargs: dict[str, Any]) -> tuple:
        """The values of the free parameters (Python's TypeError as a :class:`CallError` for a wrong call)."""
        if not kwargs and len(args) == self.fast_n and not self._keywords:
            return args
        stub, fn = self._stub, self._fn
        stub.__defaults__, stub.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__  # as now: they may be assigned
        try:
            return self._bind(*args, **kwargs)
        except TypeError as e:
            raise CallError(str(e), hint=_hint(self._root, e)) from None

    def primal(self, values: tuple) -> Any:
        """The function at the free parameters' values and the fixed ones (each by name)."""
        return self._fn(**self._fixed, **dict(zip(self.names, values)))

    def call_of(self, values: tuple) -> tuple[tuple, dict[str, Any]]:
        """``(args, kwargs)`` of a call of the callable that binds the free parameters to ``values`` (one
        each, as :meth:`__call__` gives them): by position up to the first parameter a partial gives by
        keyword (by position it would be given twice) or that is keyword-only, by keyword from there."""
        k = self.n_positional
        k = next((i for i, name in enumerate(self.names[:k]) if name in self._keywords), k)
        if len(values) <= k:
            return tuple(values), {}
        return tuple(values[:k]), dict(zip(self.names[k:], values[k:]))


def partial_of(root: Any) -> functools.partial | None:
    """The ``functools.partial`` a callable is, or is a method of (None if none)."""
    while isinstance(root, types.MethodType):
        root = root.__func__
    return root if isinstance(root, functools.partial) else None


#: the name a derivative's checks read whether a partial still has no keywords by (see Binder)
PARTIAL_KEYWORDS = "__astad_partial_keywords__"


class _NoKeywords:
    """A partial's keywords as a mapping: :data:`PARTIAL_KEYWORDS` is ``()`` while it has none."""

    __slots__ = ("keywords",)

    def __init__(self, partial: functools.partial) -> None:
        self.keywords = partial.keywords

    def __contains__(self, name: str) -> bool:
        return name == PARTIAL_KEYWORDS

    def __getitem__(self, name: str) -> Any:
        if name != PARTIAL_KEYWORDS:
            raise KeyError(name)
        return () if not self.keywords else self.keywords


def no_keywords_check(root: Any) -> tuple | None:
    """A check (see :func:`checker`) that the partial ``root`` is (or wraps) still has no keywords,
    as when the fast calls that skip binding were remembered; None where there is none to make."""
    partial = partial_of(root)
    if partial is None or partial.keywords:
        return None
    return _NoKeywords(partial), _NOTHING, PARTIAL_KEYWORDS, ()


def _stub(fn: Any, names: tuple[str, ...]) -> Callable:
    """A function with ``fn``'s signature, defaults and name that returns the values of ``names``."""
    code = fn.__code__
    pos = code.co_varnames[:code.co_argcount]
    kwonly = code.co_varnames[code.co_argcount:code.co_argcount + code.co_kwonlyargcount]
    params = ", ".join(pos + (("*",) + kwonly if kwonly else ()))
    body = "(" + "".join(f"{n}, " for n in names) + ")"
    stub_code = _stub_code(params, body).replace(co_name=code.co_name, co_qualname=code.co_qualname)
    stub = types.FunctionType(stub_code, {}, fn.__name__)
    stub.__qualname__ = fn.__qualname__
    stub.__defaults__, stub.__kwdefaults__ = fn.__defaults__, fn.__kwdefaults__
    return stub


@functools.lru_cache(maxsize=256)
def _stub_code(params: str, body: str) -> types.CodeType:
    """The code of ``def stub(params): return body`` (compiled once per signature)."""
    module = compile(f"def stub({params}):\n    return {body}\n", "<astad: signature>", "exec")
    return next(c for c in module.co_consts if isinstance(c, types.CodeType))


def _hint(root: Any, e: TypeError) -> str | None:
    fn = unwrap(root)[0]
    names = _positional_names(fn)
    if not isinstance(root, (types.MethodType, functools.partial)) and names[:1] == ("self",):
        return (f"{fn.__qualname__} is a method: differentiate it bound to its object, "
                f"astad.grad(obj.{fn.__name__}), so that `self` is the object")
    return None


# --------------------------------------------------------------------------- names read when transforming

class _Cells:
    """A function's captured variables as a mapping from name to value (empty cells left out)."""

    __slots__ = ("_cells",)

    def __init__(self, fn: Any) -> None:
        self._cells = dict(zip(fn.__code__.co_freevars, fn.__closure__ or ()))

    def __contains__(self, name: str) -> bool:
        cell = self._cells.get(name)
        if cell is None:
            return False
        try:
            cell.cell_contents
        except ValueError:
            return False
        return True

    def __getitem__(self, name: str) -> Any:
        return self._cells[name].cell_contents


class _Attributes:
    """A function's assignable attributes (:data:`ATTRIBUTES`, and each keyword-only default by
    :func:`keyword_default`) as a mapping from name to value (empty where what a name now means
    is not a Python function)."""

    __slots__ = ("_fn",)

    def __init__(self, fn: Any) -> None:
        self._fn = fn

    def __contains__(self, name: str) -> bool:
        if not isinstance(self._fn, types.FunctionType):
            return False
        if name.startswith(_KEYWORD):
            return name[len(_KEYWORD):-1] in (self._fn.__kwdefaults__ or {})
        return name in ATTRIBUTES

    def __getitem__(self, name: str) -> Any:
        if name.startswith(_KEYWORD):
            return (self._fn.__kwdefaults__ or {})[name[len(_KEYWORD):-1]]
        return getattr(self._fn, name)


#: what a function called by a differentiated one may have assigned after astad read it: a derivative
#: depends on them (astad.frontend.calls.inline_call), and is made again where one is another object
ATTRIBUTES = ("__code__", "__defaults__", "__kwdefaults__")
_KEYWORD = "__kwdefaults__["


def keyword_default(param: str) -> str:
    """The name a derivative reads a called function's keyword-only default by (its ``__kwdefaults__``
    is a dict, which may be changed in place)."""
    return f"{_KEYWORD}{param}]"


def _attribute(name: str) -> bool:
    return name in ATTRIBUTES or name.startswith(_KEYWORD)


#: the name a derivative reads an array it reads as a constant's kind by (shape and dtype, which may be
#: assigned in place: ``A.shape = (3, 1)`` keeps the object, so its check by identity would pass)
ARRAY_KIND = "__astad_array_kind__"
_KINDS: dict[tuple, tuple] = {}


def array_kind(a: np.ndarray) -> tuple:
    """The shape and dtype of an array, one object per kind (a dependency is checked by identity)."""
    kind = (a.shape, a.dtype)
    return _KINDS.setdefault(kind, kind)


class _ArrayKind:
    """An array's kind (:func:`array_kind`) as a mapping from :data:`ARRAY_KIND`."""

    __slots__ = ("_a",)

    def __init__(self, a: Any) -> None:
        self._a = a

    def __contains__(self, name: str) -> bool:
        return name == ARRAY_KIND and isinstance(self._a, np.ndarray)

    def __getitem__(self, name: str) -> Any:
        if name not in self:
            raise KeyError(name)
        return array_kind(self._a)


_NOTHING: dict = {}


class _ClassAttributes:
    """What an object's class gives it, as a mapping from name to value, looked up at each read as
    Python does: in the first class of its type's MRO that defines the name (its ``__class__`` may
    be assigned, and a class before the one that defined the name may define it since)."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def get(self, name: str, default: Any = None) -> Any:
        for c in type(self._obj).__mro__:
            if name in c.__dict__:
                return c.__dict__[name]
        return default

    def __contains__(self, name: str) -> bool:
        return self.get(name, _ABSENT) is not _ABSENT

    def __getitem__(self, name: str) -> Any:
        value = self.get(name, _ABSENT)
        if value is _ABSENT:
            raise KeyError(name)
        return value


def lookup_of(owner: Any, name: str) -> tuple[Any, Any] | None:
    """Where ``name`` is read from ``owner`` (a function: a captured variable, a
    global, a builtin; a method or partial: what it fixes; an object: an
    attribute): a pair of mappings, the first looked at first, or None when what
    the name means cannot change (a method's ``self``, a partial's arguments)."""
    if name == ARRAY_KIND:  # the shape and dtype of an array read as a constant
        return _ArrayKind(owner), _NOTHING
    fn, fixed, _ = unwrap(owner) if callable(owner) and not isinstance(owner, type) else (owner, {}, None)
    if _attribute(name):  # a called function's own attributes that may be assigned (its code, defaults)
        return _Attributes(fn), _NOTHING
    if name in fixed:
        return None
    if isinstance(fn, types.FunctionType):
        if name in fn.__code__.co_freevars:
            return _Cells(fn), _NOTHING
        return fn.__globals__, getattr(fn, "__builtins__", builtins.__dict__)
    return vars(owner), _ClassAttributes(owner)


def read(owner: Any, name: str) -> Any:
    """What ``name`` means in ``owner`` now (KeyError if nothing)."""
    fn, fixed, _ = unwrap(owner) if callable(owner) and not isinstance(owner, type) else (owner, {}, None)
    if name in fixed:
        return fixed[name]
    first, second = lookup_of(owner, name)  # type: ignore[misc]
    if name in first:
        return first[name]
    return second[name]


_ABSENT = object()


def checker(checks: tuple) -> Callable[[], bool] | None:
    """One compiled function of no arguments that is true only if each check
    ``(first, second, name, object)`` still holds (``name`` looked up in
    ``first``, then in ``second``, means ``object``: see :func:`lookup_of`);
    None when there is nothing to check.  Each name is looked up where it was
    found when the check was made (a name now found elsewhere reads as
    changed), so a call that passes it needs no other check."""
    if not checks:
        return None
    ns: dict[str, Any] = {"_absent": _ABSENT}
    terms = []
    for i, (first, second, name, obj) in enumerate(checks):
        ns[f"o{i}"] = obj
        if isinstance(first, _Cells):  # a captured variable: its cell (an empty one raises ValueError)
            ns[f"c{i}"] = first._cells[name]
            terms.append(f"c{i}.cell_contents is o{i}")
        elif isinstance(first, _NoKeywords):  # a partial with no keywords yet
            ns[f"k{i}"] = first.keywords
            terms.append(f"not k{i}")
        elif isinstance(first, _ArrayKind) and name in first:  # an array's shape and dtype, compared inline
            ns[f"a{i}"], ns[f"s{i}"], ns[f"d{i}"] = first._a, obj[0], obj[1]
            terms.append(f"a{i}.shape == s{i} and a{i}.dtype == d{i}")
        elif name in first:
            ns[f"f{i}"] = first
            terms.append(f"f{i}[{name!r}] is o{i}")
        else:
            ns[f"f{i}"], ns[f"s{i}"] = first, second
            terms.append(f"{name!r} not in f{i} and s{i}.get({name!r}, _absent) is o{i}")
    src = ("def holds():\n    try:\n        return " + " and \\\n            ".join(terms) +
           "\n    except (KeyError, ValueError):\n        return False\n")
    exec(compile(src, "<astad: checks of the names a derivative read>", "exec"), ns)
    return ns["holds"]


def key_checker(keys: Sequence[Any], scalar_keys: frozenset) -> Callable[[Sequence[Any]], bool] | None:
    """A function telling whether arguments have the keys ``keys`` (``api._arg_key`` of each),
    compiled once for arguments of tuples, lists and dicts: each container is unpacked
    once and each leaf's type, shape and dtype compared, where ``_arg_key`` builds a
    nested key (one call per container and leaf) that a lookup then hashes.  Each
    test it makes implies that part of the key (see :mod:`astad.kind_checks`), so True
    means equal keys.  None for a key of another kind (a backend's array)."""
    return kind_checks.compiled({"args": keys}, scalar_keys, kind_checks.CONTAINERS,
                                "<astad: the keys of a call's arguments>")
