"""The public API: ``reverse`` and the JAX-style helpers built on it."""

from __future__ import annotations

import dataclasses
import functools
import types
import weakref
from typing import Any, Callable, Sequence, Union

import numpy as np

from . import backends, cache, calling, fresh, frontend, pipeline
from .memo import LRU, snapshot
from .errors import AstadError, AstadTypeError, SourceUnavailableError, UnsupportedSyntaxError
from .ir import Num, TupleT, Type
from .pipeline import Derivative
from .source import reversed_function

ArgNums = Union[int, Sequence[int]]

def _memory_size() -> int:
    return cache.config.memory_cache_size


#: derivatives by code object and argument types, shared by every Reverse (LRU: see memo.py)
_MEMORY: "LRU[Derivative]" = LRU(_memory_size)
_LIVE: "weakref.WeakSet[Reverse]" = weakref.WeakSet()
#: the memory caches of the modules built on this one (forward mode, programs), cleared by clear_caches
CLEARERS: list[Callable[[], None]] = []

#: scalar types whose type alone gives the abstract type (frontend.abstract)
_SCALAR_KEYS = frozenset({float, int, bool}) | frontend._NUMPY_SCALARS
#: the kinds of arguments whose type alone is their key (api._arg_key): the scalars, and None (`mask=None`)
_TYPE_KEYS = _SCALAR_KEYS | {type(None)}


def _arg_key(a: Any) -> Any:
    """A cheap key of an argument of the common kinds (exact ndarray, scalar,
    tuple, list, dict with str/int keys) that determines its abstract type; None
    for any other kind (then the abstract type itself is the key)."""
    t = type(a)
    if t is np.ndarray:
        return a.shape, a.dtype.num
    if t in _TYPE_KEYS:
        return t
    if t is tuple or t is list:
        items = tuple(map(_arg_key, a))
        return None if None in items else (t, items)
    if t is dict and all(type(k) is str or type(k) is int for k in a):
        items = tuple(map(_arg_key, a.values()))
        return None if None in items else (dict, tuple(a), items)
    return backends.array_key(a)  # a Dask or CuPy array: its backend, shape and dtype (None for anything else)


def _dep_checks(fn: Callable, deps: Sequence[tuple[tuple[str, ...], Any]]) -> tuple:
    """(mapping, fallback, name, object) to check, on each call, that the names a
    derivative was built from still mean the same objects (else: transform again).
    A name is looked up as Python does (see calling.lookup_of): a captured variable,
    in the globals then in the builtins (so a global defined later that shadows a
    builtin is seen), an attribute of ``self`` in the object then in its class."""
    checks = []
    owners: dict[tuple[str, ...], Any] = {(): fn}  # a path -> the object it leads to
    for path, obj in {(p, id(o)): (p, o) for p, o in deps}.values():  # a name read at every call: once
        owner = _owner(owners, tuple(path[:-1]))
        where = calling.lookup_of(reversed_function(owner) or owner, path[-1])
        if where is not None:  # None: a method's self, a partial's argument, which cannot change
            checks.append((*where, path[-1], obj))
    unique = {(id(g), id(b), n, id(o)): (g, b, n, o) for g, b, n, o in checks}  # a recursive function reads its globals again
    keywords = calling.no_keywords_check(fn)  # (the fast calls of a partial skip binding while it has none)
    return tuple(unique.values()) + ((keywords,) if keywords is not None else ())


def _owner(owners: dict[tuple[str, ...], Any], path: tuple[str, ...]) -> Any:
    """``cache.resolve(fn, path)``, read on from the longest part of ``path`` already read (the
    paths of a recursion 800 calls deep, ``r.r.r...``, each read from ``fn``: a quadratic number of reads)."""
    known = len(path)
    while path[:known] not in owners:
        known -= 1
    obj = owners[path[:known]]
    for i in range(known, len(path)):
        obj = owners[path[:i + 1]] = cache.resolve(obj, path[i:i + 1])
    return obj


_MISSING = object()


def _never(args: Sequence[Any]) -> bool:
    return False


def _checks_hold(checks: tuple) -> bool:
    for g, b, n, o in checks:
        if (g[n] if n in g else b.get(n, _MISSING)) is not o:
            return False
    return True


def kinds(args: Sequence[Any]) -> Any:
    """The key of a fast path's table: the types of the arguments (the type of a
    single argument is ``type(args[0])``, which the callers compute inline)."""
    if len(args) == 2:
        return type(args[0]), type(args[1])  # faster than map(type, ...)
    return type(args[0]) if len(args) == 1 else tuple(map(type, args))


def remember(table: dict, args: Sequence[Any], entry: tuple, allowed: frozenset = _SCALAR_KEYS) -> None:
    """Put a fast path's ``entry`` in its table under the types of ``args``, when
    each is a scalar whose type alone gives its abstract type (then the types are
    the whole key: a subclass, another numpy scalar type, an array miss it)."""
    limit = _memory_size()
    if limit > 0 and allowed.issuperset(map(type, args)):
        if len(table) >= limit:
            table.clear()
        table[kinds(args)] = entry


def _deps_unchanged(fn: Callable, d: Any) -> bool:
    """Whether each name ``d`` was built from means, read from ``fn``, the object it meant: ``d`` may have been
    made for another function of the same code (``types.FunctionType(code, other_globals)``), where a path
    leads elsewhere or nowhere (a name that is a builtin here, a user's function there: TypeError)."""
    try:
        return all(cache.resolve(fn, p) is o for p, o in d.deps)
    except (KeyError, AttributeError, TypeError):
        return False


def kept(d: Derivative, residuals: Any, held: set[int]) -> Any:
    """The residuals of a call of ``d`` a pullback keeps: each array sharing memory with ``held`` (the
    owners of the arguments' and the value's memory) or with a constant array of ``d`` that could
    change (``d.changing``) copied, so that the pullback is the derivative at the values the
    forward call used, whatever changes them afterwards."""
    if d.changing:
        held |= d.changing
    return fresh.copy_shared(residuals, held) if held else residuals


class Pullback:
    """The linear backward map of one call: ``pullback(ct)`` returns one
    cotangent per argument passed by position (``None`` for discrete ones; as in
    JAX, keyword arguments and defaults are not differentiated).  It holds
    copies of the arguments and of the returned value where it needs them, and
    each cotangent it returns is an array of its own (see :mod:`astad.fresh`)."""

    __slots__ = ("_backward", "_residuals", "_out_type", "_held", "_n", "_zero_d")

    def __init__(self, backward: Callable, residuals: Any, out_type: Type, n: int | None = None,
                 zero_d: dict[int, Any] | None = None) -> None:
        self._backward = backward
        self._residuals = residuals
        self._out_type = out_type
        self._held: set[int] | None = None  # the owners of the residuals' memory, found at the first call
        self._n = n  # how many arguments were passed by position (None: every parameter)
        self._zero_d = zero_d  # where the arguments hold 0-d arrays (fresh.zero_d_marks): theirs are 0-d arrays

    def __call__(self, ct: Any) -> tuple:
        t = self._out_type
        if type(ct) is not float or type(t) is not Num or t.shape:  # a float is a cotangent of any scalar
            _check_cotangent(t, ct, "the output")
        ct = typed_cotangent(t, ct)
        cts = self._backward(self._residuals, ct)
        if self._n is not None:
            cts = tuple(cts)[:self._n]
        if self._zero_d:  # (generated code computes a 0-d array's cotangent as numpy does: a numpy scalar)
            cts = tuple(fresh.zero_d(self._zero_d.get(i), c) for i, c in enumerate(cts))
        if type(cts) is tuple and _all_floats(cts):  # Python floats are immutable: nothing to copy
            return cts
        if self._held is None:
            self._held = fresh.owners(self._residuals)
        return fresh.distinct(cts, self._held | fresh.owners(ct))

    def __repr__(self) -> str:
        return f"<astad pullback: cotangent of type {self._out_type} -> cotangents of the arguments>"


def typed_cotangent(t: Type, ct: Any) -> Any:
    """``ct`` with each Python number that is the cotangent of a numpy scalar (``x[0] / n``'s) made
    that numpy scalar: the generated code computes with it as the primal did with the value
    (``ct / n`` at ``n = 0`` is inf for an ``np.float64``, a ZeroDivisionError for a Python float);
    an integer cotangent (a number or an array) of a float value is made a float one of its dtype."""
    if isinstance(t, Num):
        if not t.differentiable:
            return ct
        if not t.shape and (type(ct) in (float, int) or isinstance(ct, np.integer)):
            return float(ct) if t.py else np.dtype(t.dtype).type(ct)
        if t.py and isinstance(ct, (np.floating, np.ndarray)) and np.ndim(ct) == 0:  # (a numpy float or a 0-d
            return float(ct)  # array for a Python float: the argument's cotangent a float, as its own, README)
        if type(ct) is np.ndarray and ct.dtype.kind in "iu":  # an integer cotangent of a float value: a float one
            return ct.astype(t.dtype)
        if not t.py and (type(ct) is np.ndarray or isinstance(ct, np.floating)) and ct.dtype.kind == "f" \
                and ct.dtype != t.dtype:  # (a float64 cotangent of a float32 value: the value's, as the code
            return ct.astype(t.dtype)  # computes with; the arguments' theirs, README)
        return ct
    if isinstance(t, TupleT) and isinstance(ct, (tuple, list)):
        typed = [typed_cotangent(ti, ci) for ti, ci in zip(t.items, ct)]
        if any(a is not b for a, b in zip(typed, ct)):
            return tuple(typed)
    return ct


def seed(t: Type) -> Any:
    """The output cotangent 1.0 of a gradient, of the output's type (see typed_cotangent)."""
    return typed_cotangent(t, 1.0)


def _all_floats(values: tuple) -> bool:
    for v in values:
        if type(v) is not float:
            return False
    return True


def _check_cotangent(t: Type, ct: Any, what: str) -> None:
    if isinstance(t, TupleT):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(t.items):
            raise AstadTypeError(f"the cotangent of {what} must be a tuple of {len(t.items)}, got {type(ct).__name__}")
        for i, (ti, ci) in enumerate(zip(t.items, ct)):
            _check_cotangent(ti, ci, f"{what}[{i}]")
    elif isinstance(t, Num) and t.differentiable:
        _check_real(ct, what)
        shape = np.shape(ct)
        if len(shape) != len(t.shape) or any(d is not None and d != s for d, s in zip(t.shape, shape)):
            expected = tuple("?" if d is None else d for d in t.shape)
            raise AstadTypeError(f"the cotangent of {what} must have shape {expected}, got shape {shape}")


def _check_real(ct: Any, what: str) -> None:
    """A cotangent of a float value is a real number or an array of them (not a string, None, a list, a bool)."""
    if isinstance(ct, (bool, np.bool_)) or not (isinstance(ct, (float, int, np.floating, np.integer, np.ndarray))
                                                or backends.array_backend(ct) is not None) \
            or getattr(ct, "dtype", np.dtype(float)).kind not in "fiu":
        raise AstadTypeError(f"the cotangent of {what} must be a float or an array of floats, got "
                             f"{type(ct).__name__}{'' if getattr(ct, 'dtype', None) is None else ' of ' + str(ct.dtype)}",
                             hint="one cotangent of the value's shape (a tuple of them for a tuple)")
    if isinstance(ct, np.ndarray) and type(ct) is not np.ndarray:  # np.matrix: its * is a matrix product
        raise AstadTypeError(f"the cotangent of {what} is a {type(ct).__name__}, a subclass of numpy's ndarray, whose "
                             "operators are not numpy's", hint="np.asarray(ct)")


def check_cotangent_like(value: Any, ct: Any, what: str = "the output") -> None:
    """``ct`` must be a cotangent of ``value``: its structure, and a real number or array of the shape
    of each float leaf (a discrete leaf takes anything: it has no derivative)."""
    if isinstance(value, (tuple, list)):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(value):
            raise AstadTypeError(f"the cotangent of {what} must be a tuple of {len(value)}, got {type(ct).__name__}")
        for i, (v, c) in enumerate(zip(value, ct)):
            check_cotangent_like(v, c, f"{what}[{i}]")
    elif isinstance(value, dict):
        if not isinstance(ct, dict) or ct.keys() != value.keys():
            raise AstadTypeError(f"the cotangent of {what} must be a dict with the keys {list(value)}")
        for k in value:
            check_cotangent_like(value[k], ct[k], f"{what}[{k!r}]")
    elif np.asarray(value).dtype.kind == "f":
        _check_real(ct, what)
        if np.shape(ct) != np.shape(value):
            raise AstadTypeError(f"the cotangent of {what} must have shape {np.shape(value)}, got shape {np.shape(ct)}")


class Reverse:
    """A function transformed by the CHAD reverse macro.

    Calling it returns ``(value, pullback)``.  ``.source`` is the generated
    Python, ``.ir(stage)`` the IR of each stage, and in Jupyter the object
    shows its generated code.
    """

    __astad_reverse__ = True  # see source.reversed_function
    _MODE = "reverse"  # the decorator, as the object shows itself
    stages: tuple[str, ...] = pipeline.STAGES  # the stages .ir shows, in order

    def __init__(self, fn: Callable[..., Any]) -> None:
        root = fn._root if getattr(type(fn), "__astad_reverse__", False) else fn
        fn, fixed, wrap = calling.unwrap(root)  # a method or partial: its function, and what it fixes
        if getattr(type(fn), "__astad_program__", None) is not None:
            raise SourceUnavailableError(
                f"{fn!r} is a derivative made by astad: it has no source for astad.{type(self).__name__.lower()} "
                "to read (higher-order derivatives are taken by astad.grad, jvp, jacfwd, jacrev, hessian, hvp)",
                hint="astad.grad(astad.grad(f)) or astad.jvp(astad.grad(f), ...)")
        self.__astad_function__ = fn
        self._root = root  # the callable as given: what the names the derivative reads are looked up from
        self._code = getattr(fn, "__code__", None)  # the code whose source astad read (__code__ may be assigned)
        parsed = frontend.parse(fn)
        self._parsed = dataclasses.replace(parsed, fixed=fixed) if fixed else parsed
        if self._parsed.funcdef.params.posonly_params:
            raise UnsupportedSyntaxError("positional-only parameters (before `/`) are not supported in the "
                                         "function astad differentiates",
                                         self._parsed.loc(self._parsed.funcdef.params.posonly_params[0]),
                                         "plain positional parameters (a function it calls may have them)")
        self._binder = calling.Binder(fn, fixed, wrap, root)
        self._params = self._parsed.params
        self._fixed_key = tuple(fixed)
        #: (derivative, the checks of the names it read, their compiled check) by the arguments' kinds and wrt
        self._derivatives: LRU[tuple[Derivative, tuple, Any]] = LRU(_memory_size)
        self._tables: dict[Any, dict[tuple, tuple]] = {}  # the fast paths' entries (see remember)
        self._calls = self.table("call")
        self._jvps = self.table("jvp")  # (a Forward's: see api_forward.jvp_of_function)
        self._last: Derivative | None = None
        #: (wrt, a check that arguments have the last structured call's keys, that call's entry): see entry
        self._structured: tuple[Any, Callable[[Sequence[Any]], bool], Any] | None = None
        self._key_checks: LRU[Callable[[Sequence[Any]], bool]] = LRU(_memory_size)  # by keys
        #: the transforms of this method bound to each object, by the object's id (not by its __eq__,
        #: which may make two objects with other attributes equal): (a weak reference to it, the transform)
        self._bound: dict[int, tuple[weakref.ref, Reverse]] = {}
        functools.update_wrapper(self, fn)
        _LIVE.add(self)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        """A decorated method, bound to ``obj``: the transform of ``obj.method``."""
        if obj is None:
            return self
        entry = self._bound.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        found = type(self)(types.MethodType(self._root, obj))
        try:
            ref = weakref.ref(obj, lambda _, key=id(obj), table=self._bound: table.pop(key, None))
        except TypeError:  # an object that is not weak-referenceable: made again each time
            return found
        self._bound[id(obj)] = (ref, found)
        return found

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Pullback]:
        if not kwargs and self._calls:  # scalar arguments of types seen before: straight to the generated code
            n = len(args)  # (kinds(args), inline: this is the path a scalar call takes)
            hit = self._calls.get(type(args[0]) if n == 1 else (type(args[0]), type(args[1])) if n == 2 else kinds(args))
            if hit is not None and self.__astad_function__.__code__ is self._code and (hit[1] is None or hit[1]()):
                d = hit[0]
                value, residuals = d.forward(*args)
                # scalars own no memory; an array returned may be a residual too, and so may a constant array
                if type(value) is not float or d.changing:
                    residuals = kept(d, residuals, set() if type(value) is float else fresh.owners(value))
                return value, Pullback(d.backward, residuals, d.out_type)
        n = len(args)
        return self.vjp_at(self._binder(args, kwargs), n)

    def table(self, name: Any) -> dict[tuple, tuple]:
        """The entries of a fast path by the types of scalar arguments (see :func:`remember`)."""
        found = self._tables.get(name)
        if found is None:
            found = self._tables[name] = {}
        return found

    def vjp_at(self, args: tuple, n: int) -> tuple[Any, Pullback]:
        """``(value, pullback)`` at the values of the free parameters (see
        :meth:`positional`), differentiated with respect to the first ``n``."""
        d, _, holds = self.entry(args, None if n == len(args) else frozenset(range(n)))
        if n == len(args) == self._binder.fast_n:  # a call of the positional parameters, which __call__ may find
            remember(self._calls, args, (d, holds))
        value, residuals = d.forward(*args)
        # the pullback may be called after the caller changed an argument, the value or a constant array in place
        residuals = kept(d, residuals, fresh.owners(args, value))
        zero_d = {i: m for i in range(n) if type(args[i]) is not float and (m := fresh.zero_d_marks(args[i])) is not None}
        return value, Pullback(d.backward, residuals, d.out_type, None if n == len(args) else n, zero_d)

    def call_of(self, values: tuple) -> tuple[tuple, dict[str, Any]]:
        """``(args, kwargs)`` of a call whose free parameters are ``values`` (see :meth:`positional`)."""
        return self._binder.call_of(values)

    def primal(self, values: tuple) -> Any:
        """The function at the values of its free parameters (see :meth:`positional`)."""
        return self._binder.primal(values)

    def positional(self, args: tuple, kwargs: dict[str, Any]) -> tuple:
        """The arguments of a call, one per free parameter in order (the positional
        ones, then the keyword-only ones): placed as Python places them, omitted
        ones by their defaults (see :mod:`astad.calling`)."""
        return self._binder(args, kwargs)

    def check_code(self) -> None:
        """Refuse when the function's ``__code__`` was assigned since its source was read."""
        if self.__astad_function__.__code__ is not self._code:
            raise SourceUnavailableError(
                f"the code of {self._parsed.name} was replaced (its __code__ assigned) after astad read its source",
                hint=f"transform the function again: astad.{type(self).__name__.lower()}({self._parsed.name})")

    def transform(self, *args: Any) -> Derivative:
        """The derivative for arguments like ``args`` (generated code, functions, IR)."""
        return self.derivative(args)

    def derivative(self, args: Sequence[Any], wrt: frozenset[int] | None = None) -> Derivative:
        """The derivative at the abstract signature of ``args``, computing the
        cotangents of the parameters in ``wrt`` (all when None)."""
        return self.entry(args, wrt)[0]

    def entry(self, args: Sequence[Any], wrt: frozenset[int] | None = None) -> tuple[Any, tuple, Any]:
        """``(derivative, checks, holds)``: the derivative (as :meth:`derivative`),
        the checks of the names it read (see _dep_checks) and their compiled check
        (:func:`astad.calling.checker`; None when it read none)."""
        fast = self._structured
        if fast is not None and fast[0] == wrt and fast[1](args):  # the structured arguments of the last call's kind
            self.check_code()
            found = fast[2]
            if found[2] is None or found[2]():
                return found
        try:
            keys = tuple(map(_arg_key, args))
            key = (keys if None not in keys else self._types(args), wrt)
        except RecursionError:
            raise AstadTypeError(f"an argument of {self._parsed.name} is nested too deeply (or contains itself)",
                                 hint="tuples, lists and dicts of arrays, a few levels deep") from None
        self.check_code()
        found = self._derivatives.get(key)
        transformed = found is None or not (found[2] is None or found[2]())
        if transformed:
            found = self._transform(args, key, wrt)
        if (transformed or fast is not None) and key[0] is keys:  # (a function never called with structures: no cost)
            self._remember_structure(args, keys, wrt, found)
        return found

    def _remember_structure(self, args: Sequence[Any], keys: tuple, wrt: frozenset[int] | None, found: Any) -> None:
        """Make this call's entry the one ``entry`` finds first for arguments of its keys, when some
        argument is a structure (whose key is slow to build and hash: see calling.key_checker)."""
        if not any(type(a) is tuple or type(a) is list or type(a) is dict for a in args):
            return
        check = self._key_checks.get(keys)
        if check is None:
            check = calling.key_checker(keys, _TYPE_KEYS) or _never
            self._key_checks.put(keys, check)
        self._structured = (wrt, check, found)

    def _types(self, args: Sequence[Any]) -> tuple[Type, ...]:
        params = self._params
        if len(args) != len(params):
            names = ", ".join(p.name.value for p in params)
            raise AstadTypeError(f"{self._parsed.name} takes {len(params)} arguments ({names}), got {len(args)}")
        return tuple(self._abstract(a, p) for a, p in zip(args, params))

    def _abstract(self, arg: Any, param: Any) -> Type:
        """The abstract type of an argument; a refused one pointed at its parameter."""
        try:
            return frontend.abstract(arg, f"argument `{param.name.value}`")
        except AstadTypeError as e:
            raise AstadTypeError(e.message, self._parsed.loc(param), e.hint) from None

    def _transform(self, args: Sequence[Any], key: tuple, wrt: frozenset[int] | None) -> tuple[Derivative, tuple, Any]:
        types = self._types(args)
        backend = backends.of_args(args)  # part of the signature: a Dask call has its own derivative
        code = self.__astad_function__.__code__
        root = self._root
        # equal code objects may live in two files; a method or partial fixes some parameters
        mkey = (code, code.co_filename, code.co_firstlineno, types, wrt, self._fixed_key, backend)
        d = _MEMORY.get(mkey)
        if d is not None and not _deps_unchanged(root, d):
            d = None
        with backends.target(backend):
            if d is None and not self._fixed_key:  # the disk cache holds plain functions (and closures)
                d = cache.load(self._parsed, types, wrt)
            if d is None:
                d = pipeline.transform(self._parsed, types, wrt)
                if not self._fixed_key:
                    cache.store(self._parsed, types, d)
        _MEMORY.put(mkey, d)
        checks = _dep_checks(root, d.deps)
        found = (d, checks, calling.checker(checks))
        self._derivatives.put(key, found)
        if wrt is None or self._last is None:  # `.source` shows the full derivative once there is one
            self._last = d
        return found

    # ----------------------------------------------------------------- inspection

    def _current(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> Derivative:
        if args or kwargs:  # bound as a call binds them (defaults filled in), differentiated in those passed
            full = self._binder(tuple(args), kwargs or {})
            return self.derivative(full, None if len(full) == len(args) else frozenset(range(len(args))))
        if self._last is None:
            raise AstadError(f"{self._parsed.name} has not been called yet, so its argument types are unknown: "
                             "call it once, or pass example arguments (e.g. .ir('core', x, w))")
        return self._last

    @property
    def source(self) -> str:
        """The generated Python source for the most recent argument types."""
        return self._current(()).source

    def source_for(self, *args: Any, **kwargs: Any) -> str:
        """The generated Python source a call at ``args`` (and ``kwargs``) runs (:attr:`source` once called so)."""
        return self._current(args, kwargs).source

    def ir(self, stage: str = "optimised", *args: Any, **kwargs: Any) -> str:
        """The IR after a stage: 'core', 'structural' (with dup/drop), 'activity' (its
        inactive bindings marked), 'ad', or 'optimised'."""
        d = self._current(args, kwargs)
        if d.stages is None:
            d.stages = pipeline.stages_of(self._parsed, d.arg_types, d.wrt, d.deps)
        return d.stages.text(stage)

    def _repr_markdown_(self) -> str:
        if self._last is None:
            return (f"**astad.{self._MODE}({self._parsed.name})** — not called yet; the generated code appears "
                    f"after the first call.\n\n```python\n{self._parsed.source}```")
        return f"**astad.{self._MODE}({self._parsed.name})** — generated code:\n\n```python\n{self.source}```"

    def _repr_html_(self) -> str:
        """The generated code, highlighted, and each stage's IR (see :mod:`astad.display`)."""
        from .display import html_of  # Jupyter only
        return html_of(self)

    def __repr__(self) -> str:
        return f"<astad.{self._MODE} of {self._parsed.name} at {self._parsed.file}:{self._parsed.funcdef_line}>"


_REVERSED: "weakref.WeakKeyDictionary[Callable, Reverse]" = weakref.WeakKeyDictionary()


def reverse(fn: Callable[..., Any]) -> Reverse:
    """Transform ``fn`` by reverse-mode AD: the result, called with the same
    arguments, returns ``(value, pullback)``.  The same function gives the same object."""
    if type(fn) is Reverse:
        return fn
    try:
        found = _REVERSED.get(fn)
    except TypeError:  # not weak-referenceable: Reverse() explains what is wrong with it
        return Reverse(fn)
    if found is None or found._code is not calling.code_of(fn):
        found = _REVERSED[fn] = Reverse(fn)
    return found


def vjp(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Pullback]:
    """``(value, pullback)`` of ``fn`` at ``args`` (as ``jax.vjp``)."""
    return reverse(fn)(*args, **kwargs)


def _check_argnums(argnums: Any) -> None:
    """``argnums`` must be an int or a sequence of ints (checked when ``grad`` is made)."""
    def is_int(i: Any) -> bool:
        return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))

    if is_int(argnums):
        return
    if isinstance(argnums, (tuple, list)) and all(is_int(i) for i in argnums):
        return
    raise AstadTypeError(f"argnums must be an int or a tuple of ints, got {argnums!r}",
                         hint="argnums=0, or argnums=(0, 2)")


def _argnums(argnums: ArgNums, n: int, name: str, n_params: int | None = None) -> tuple[tuple[int, ...], bool]:
    """``argnums`` as indices of the ``n`` arguments passed by position (as in JAX:
    keyword arguments and defaults, ``n_params - n`` of them, are not differentiated)."""
    single = not isinstance(argnums, (tuple, list))
    nums = (argnums,) if single else tuple(argnums)  # type: ignore[arg-type]
    for i in nums:
        if not -n <= i < n:
            if n_params is not None and 0 <= i < n_params and n < n_params:
                raise AstadTypeError(
                    f"argnums {argnums!r} asks for the gradient with respect to positional argument {i} of {name}, "
                    f"but the call passed {n} by position: as in JAX, only arguments passed by position are "
                    "differentiated (keyword arguments and defaults are not)", hint="pass it by position")
            raise AstadTypeError(f"argnums {argnums!r} is out of range for {name}, which takes {n} arguments"
                                 + (f" (negative ones count from the last of the {n} passed by position, as in "
                                    "JAX)" if i < 0 else ""))
    return tuple(int(i) % n for i in nums), single


def clear_caches(memory: bool = True, disk: bool = True) -> None:
    """Forget generated derivatives (in this process, and/or on disk)."""
    if memory:
        _MEMORY.clear()
        for clear in CLEARERS:
            clear()
        frontend.clear_parse_cache()
        for r in snapshot(lambda: _LIVE):  # (another thread may be making one)
            r._derivatives.clear()
            r._structured = None
            r._key_checks.clear()
            for table in list(r._tables.values()):  # (a list made in one step: another thread may add one)
                table.clear()
    if disk:
        cache.clear_disk()
