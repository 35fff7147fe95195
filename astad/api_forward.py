"""Forward mode at the API: ``astad.forward`` and ``astad.jvp``.

``@astad.forward`` gives a :class:`Forward`: calling it returns ``(value,
pushforward)`` (like ``jax.linearize``): the value from the primal (forward mode
with no tangents, i.e. the primal alone), and a :class:`Pushforward` that runs
the JVP specialised to the tangents it is given, on copies of the arguments.
Derivatives are cached per abstract signature and set of tangents, in memory
only (the disk cache holds reverse derivatives).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from typing import Any, Callable, Sequence

import numpy as np

from . import backends, calling, fresh, guards, kind_checks, outputs, pipeline, programs, tree_guards
from .api import (_SCALAR_KEYS, CLEARERS, Reverse, _arg_key, _checks_hold, _dep_checks, _deps_unchanged, _memory_size,
                  remember)
from .errors import AstadError, AstadTypeError
from .frontend.abstract import abstract
from .ir import NoneT, Num, StructT, TupleT, Type
from .memo import LRU
from .pipeline import ForwardDerivative

#: forward derivatives by code object, argument types and tangents, shared by every Forward
_MEMORY: "LRU[ForwardDerivative]" = LRU(_memory_size)


CLEARERS.extend([_MEMORY.clear, programs.clear, lambda: LATEST.__setitem__(0, (_NOBODY, None))])


class Forward(Reverse):
    """A function transformed by the CHAD forward macro.

    Calling it returns ``(value, pushforward)``; ``pushforward(*tangents)``
    (one per positional parameter, None for a discrete or constant one) returns
    the output's tangent.  ``.source`` is the generated code (tangents of every
    differentiable parameter), ``.ir(stage)`` each stage: core, structural,
    forward, optimised.  ``grad(forward(f))`` is ``grad(f)``: the object stands
    for its function, as a :class:`~astad.api.Reverse` does."""

    _MODE = "forward"
    stages = pipeline.FORWARD_STAGES

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, "Pushforward"]:  # type: ignore[override]
        n = len(args)
        args = self._binder(args, kwargs)
        d = self.derivative(args, frozenset())
        value = d.jvp(*args)[0]
        return value, Pushforward(self, _copy_arrays(args), _held_globals(self._root, d.deps), n)

    def all_wrt(self, types: Sequence[Type]) -> frozenset[int]:
        return frozenset(i for i, t in enumerate(types) if t.differentiable)

    def derivative(self, args: Sequence[Any], wrt: frozenset[int] | None = None) -> ForwardDerivative:  # type: ignore[override]
        """The forward derivative at the signature of ``args``, with tangents for
        the parameters in ``wrt`` (all differentiable ones when None)."""
        return self.entry(args, wrt)[0]

    def entry(self, args: Sequence[Any], wrt: frozenset[int] | None = None) -> tuple[Any, tuple, Any]:
        if wrt is None:
            wrt = self.all_wrt(self._types(args))
        return super().entry(args, wrt)

    def _transform(self, args: Sequence[Any], key: tuple, wrt: frozenset[int] | None) -> tuple[Any, tuple]:
        types = self._types(args)
        assert wrt is not None
        fn = self._root
        code = self.__astad_function__.__code__
        backend = backends.of_args(args)  # part of the signature (astad.backends)
        mkey = (code, code.co_filename, code.co_firstlineno, types, wrt, self._fixed_key, backend)
        d = _MEMORY.get(mkey)
        if d is None or not _deps_unchanged(fn, d):
            with backends.target(backend):
                d = pipeline.transform_forward(self._parsed, types, wrt)
            _MEMORY.put(mkey, d)
        checks = _dep_checks(fn, d.deps)
        found = (d, checks, calling.checker(checks))
        self._derivatives.put(key, found)
        if wrt == self.all_wrt(types) or self._last is None:
            self._last = d  # type: ignore[assignment]
        return found

    # ----------------------------------------------------------------- inspection

    def _current(self, args: Sequence[Any],  # type: ignore[override]
                 kwargs: dict[str, Any] | None = None) -> ForwardDerivative:
        if args or kwargs:  # bound as a call binds them; tangents of the differentiable ones passed
            full = self._binder(tuple(args), kwargs or {})
            return self.derivative(full, None if len(full) == len(args) else
                                   self.all_wrt(self._types(full)) & frozenset(range(len(args))))
        d = super()._current((), None)
        full = self.all_wrt(d.arg_types)
        if d.wrt != full:  # called, but no pushforward yet: show the code with every tangent
            d = self._full(d.arg_types, full)
        return d  # type: ignore[return-value]

    def _full(self, types: tuple[Type, ...], wrt: frozenset[int]) -> ForwardDerivative:
        fn = self.__astad_function__
        mkey = (fn.__code__, fn.__code__.co_filename, fn.__code__.co_firstlineno, types, wrt, self._fixed_key)
        d = _MEMORY.get(mkey)
        if d is None:
            d = pipeline.transform_forward(self._parsed, types, wrt)
            _MEMORY.put(mkey, d)
        self._last = d  # type: ignore[assignment]
        return d

    def ir(self, stage: str = "optimised", *args: Any, **kwargs: Any) -> str:
        """The IR after a stage: 'core', 'structural' (with dup/drop), 'activity' (its
        inactive bindings marked), 'forward', or 'optimised'."""
        d = self._current(args, kwargs)
        assert d.stages is not None
        return d.stages.text(stage)



class Pushforward:
    """The linear map of one call: ``pushforward(*tangents)``, one tangent per
    argument passed by position (None for discrete or constant ones), returns the
    output's tangent (an array of its own).  It holds copies of the arguments; it
    refuses to run when a global the function reads is another object, or an
    array with other values, than at the call (it would differentiate another
    function than the one whose value the call returned)."""

    __slots__ = ("_fwd", "_args", "_globals", "_n")

    def __init__(self, fwd: Forward, args: tuple, held: tuple = ((), ()), n: int | None = None) -> None:
        self._fwd = fwd
        self._args = args
        self._globals = held
        self._n = len(args) if n is None else n  # the arguments passed by position: those with a tangent

    def __call__(self, *tangents: Any, **keywords: Any) -> Any:
        if keywords:
            raise AstadTypeError(f"a pushforward takes its tangents by position, got keywords {', '.join(keywords)}",
                                 hint="one tangent per argument passed by position, None for discrete or constant ones")
        _check_globals(self._fwd._parsed.name, self._globals)
        return jvp_at(self._fwd, self._args, padded(tangents, self._n, len(self._args), self._fwd._parsed.name))[1]

    def __repr__(self) -> str:
        return f"<astad pushforward of {self._fwd._parsed.name}: tangents of the arguments -> tangent of the value>"


def padded(tangents: tuple, n: int, n_params: int, name: str) -> tuple:
    """One tangent per argument passed by position (``n``), padded with None for
    the parameters passed by keyword or left to their defaults (not differentiated)."""
    if n == n_params:
        return tangents
    if len(tangents) != n:
        raise AstadTypeError(f"{name} was called with {n} arguments by position, but {len(tangents)} tangents were "
                             "given", hint="one tangent per argument passed by position (as in JAX, keyword "
                                           "arguments and defaults are not differentiated)")
    return tuple(tangents) + (None,) * (n_params - n)


def _held_globals(fn: Callable, deps: Sequence[tuple[tuple[str, ...], Any]]) -> tuple[tuple, tuple]:
    """The globals ``fn``'s derivative read (see ``api._dep_checks``) and copies of those that are arrays,
    and of the arrays among the defaults of the functions it calls (changed in place, they change it too)."""
    checks = _dep_checks(fn, deps)
    arrays = []
    for p, o in deps:
        if isinstance(o, np.ndarray):
            arrays.append((".".join(p), o, o.copy()))
        elif p[-1] == "__defaults__" and type(o) is tuple:
            arrays += [(f"{'.'.join(p)}[{i}]", a, a.copy()) for i, a in enumerate(o) if isinstance(a, np.ndarray)]
    return checks, tuple(arrays)


def _check_globals(name: str, held: tuple[tuple, tuple]) -> None:
    checks, arrays = held
    # (an array's kind, calling.ARRAY_KIND, is compared with its copy below, under the array's name)
    # (a partial's keywords changed: the pushforward runs at the arguments the call bound)
    changed = [c[2] for c in checks if c[2] not in (calling.ARRAY_KIND, calling.PARTIAL_KEYWORDS)
               and not _checks_hold((c,))]
    changed += [n for n, o, copy in arrays if o.shape != copy.shape or
                not np.array_equal(o, copy, equal_nan=o.dtype.kind in "fc")]
    if changed:
        raise AstadError(f"the global {', '.join(changed)} that {name} reads changed between the call and the "
                         "pushforward (a module-level name, a captured variable or an attribute of self), which "
                         "would give the tangent of another function than the value's",
                         hint="call the forwarded function again after changing a global")


def _copy_arrays(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.copy()
    if type(value) is tuple or type(value) is list:
        return type(value)(_copy_arrays(v) for v in value)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return type(value)(*(_copy_arrays(v) for v in value))
    if isinstance(value, dict):
        return type(value)((k, _copy_arrays(v)) for k, v in value.items())
    return value


def param_names(fwd: Reverse, n: int) -> list[str]:
    params = fwd._params
    return [f"`{p.name.value}`" for p in params] if len(params) == n else [f"{i}" for i in range(n)]


def checked_tangents(types: Sequence[Type], tangents: Sequence[Any], names: Sequence[str],
                     fn_name: str) -> list[Any]:
    """The tangents, one per parameter, checked against the parameters' types:
    None for a discrete one (a zero tangent of a discrete one becomes None)."""
    if len(tangents) != len(types):
        raise AstadTypeError(f"{fn_name} takes {len(types)} arguments, but {len(tangents)} tangents were given",
                             hint="one tangent per positional parameter, None for discrete or constant ones")
    return [None if tv is None else _check_tangent(t, tv, f"the tangent of argument {name} of {fn_name}")
            for t, tv, name in zip(types, tangents, names)]


def _check_tangent(t: Type, tv: Any, what: str) -> Any:
    if isinstance(t, StructT):
        try:
            leaves = t.flatten(tv)
            if not _same_structure(t.unflatten(iter(leaves)), tv):
                raise TypeError
        except (TypeError, KeyError, IndexError, AttributeError):
            raise AstadTypeError(f"{what} must have the structure {t}, got {type(tv).__name__}") from None
        if len(leaves) != sum(1 for _ in t.paths()):
            raise AstadTypeError(f"{what} must have the structure {t}")
        checked = [_leaf(lt, lv, f"{what}{p}") for lt, lv, p in zip(pipeline._leaf_types(t), leaves, t.paths())]
        if all(c is None for c in checked):
            return None
        if any(c is not None and c is not lv for c, lv in zip(checked, leaves)):  # a float made the argument's dtype
            return t.unflatten(iter([lv if c is None else c for c, lv in zip(checked, leaves)]))
        return tv
    if isinstance(t, TupleT):
        raise AstadTypeError(f"{what}: an argument of type {t} takes no tangent here")
    return _leaf(t, tv, what)


def _same_structure(a: Any, b: Any) -> bool:
    """Whether ``b`` has the structure of ``a`` (the same containers, dict keys and lengths; an
    ``OrderedDict`` is a dict, as an argument is)."""
    if type(a) is not type(b) and not (type(a) is dict and type(b) is OrderedDict):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_structure(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_structure(x, y) for x, y in zip(a, b))
    return True


def _leaf(t: Type, tv: Any, what: str) -> Any:
    if not isinstance(t, Num):
        if tv is None and isinstance(t, NoneT):  # (the leaf of a structured tangent at a None: {'b': None})
            return None
        raise AstadTypeError(f"{what}: an argument of type {t} takes no tangent (give None)")
    if not t.differentiable:  # no tangent: None (a leaf of a structured tangent too), or zeros of its shape
        if tv is None or (_is_zero(tv) and _fits(t.shape, np.shape(tv))):
            return None
        got = f"{tv!r}" if np.ndim(tv) == 0 else f"a {type(tv).__name__} of shape {np.shape(tv)}"
        raise AstadTypeError(f"{what} must be None (or zero, of the argument's shape): the argument is {t}, which "
                             f"is discrete (it has no tangent); got {got}", hint="None")
    if isinstance(tv, (bool, np.bool_)) or not (isinstance(tv, (float, int, np.floating, np.integer, np.ndarray))
                                                or backends.array_backend(tv) is not None):
        raise AstadTypeError(f"{what} must be a float or an array of floats like the argument ({t}), "
                             f"got {type(tv).__name__}")
    if type(tv) is not float:  # a subclass (np.matrix, a masked array) is refused as an argument is: its * is not numpy's
        abstract(tv, what)
    shape = np.shape(tv)
    if not _fits(t.shape, shape):
        expected = tuple("?" if d is None else d for d in t.shape)
        raise AstadTypeError(f"{what} must have shape {expected} like the argument, got shape {shape}")
    dtype = tv.dtype if backends.array_backend(tv) is not None else np.asarray(tv).dtype  # a Dask one uncomputed
    # a Python float is weak (it takes the argument's dtype); any other tangent has the argument's dtype, else
    # numpy computes the tangent at the lower precision of the two (a float32 tangent of a float64 argument)
    if dtype.kind != "f" or (type(tv) is not float and dtype != np.dtype(t.dtype)):
        raise AstadTypeError(f"{what} must have dtype {t.dtype} like the argument, got {dtype}")
    if type(tv) is float and not t.py:  # a Python float is weak in every operation, the argument (a numpy scalar,
        return np.dtype(t.dtype).type(tv)  # a 0-d array) is not: as it is, x32 * tv would round a float64 tangent
    return tv


def _fits(shape: tuple, given: tuple) -> bool:
    """Whether a tangent's shape ``given`` is the argument's ``shape`` (None: a size known at run time)."""
    return len(given) == len(shape) and all(d is None or d == s for d, s in zip(shape, given))


def _is_zero(tv: Any) -> bool:
    try:
        return bool(np.all(np.asarray(tv) == 0))
    except (TypeError, ValueError):
        return False


#: the types a fast call of ``astad.jvp`` finds its entry by: scalar arguments, scalar or None tangents
_JVP_KINDS = _SCALAR_KEYS | {type(None)}


def check_pairs(primals: Any, tangents: Any) -> None:
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise AstadTypeError("jvp takes a tuple of primals and a tuple of tangents, one per positional argument",
                             hint="astad.jvp(f, (x, w), (tx, None))")


def jvp_of_function(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple[Any, Any]:
    """``astad.jvp`` of a callable not made by astad (a call of scalar primals and
    tangents of types seen before never gets here: see :func:`astad.api_higher.jvp`)."""
    check_pairs(primals, tangents)
    if len(primals) != len(tangents):
        raise AstadTypeError(f"jvp got {len(primals)} primals but {len(tangents)} tangents",
                             hint="one tangent per primal, None for one held constant")
    primals, tangents = tuple(primals), tuple(tangents)
    fwd = forward_of(fn)
    n = len(primals)
    args = fwd._binder(primals, {})  # defaults filled in
    out = jvp_at(fwd, args, padded(tangents, n, len(args), fwd._parsed.name), fast=n == fwd._binder.fast_n)
    entry = _BY_ID.get(id(fn))
    if entry is not None and entry[0]() is fn and entry[5]:  # the checked function of these kinds (astad.guards)
        LATEST[0] = (fn, entry[5][None])
    return out


#: no callable (what LATEST holds before a call): no argument of astad.jvp is this object
_NOBODY = object()

#: the latest call's callable and the function of its kinds of arguments that checks them itself
#: (astad.guards): what astad.jvp tries first, without a lookup by the callable's id.  The callable
#: is held, not weakly referenced (a weak reference is a call more, and _BY_ID's Forward holds it
#: anyway, by its ``_root``), until another callable's call or astad.clear_caches.
#: One tuple, replaced whole: a thread reads a pair that belongs together.
LATEST: list[tuple[Any, Any]] = [(_NOBODY, None)]


def jvp_at(fwd: Forward, args: Sequence[Any], tangents: Sequence[Any], check: bool = True,
           fast: bool = False) -> tuple[Any, Any]:
    """``(value, tangent)`` of the function of ``fwd`` at ``args`` along ``tangents``
    (``check=False``: tangents astad made itself, like the arguments, None for discrete leaves;
    ``fast``: the arguments are a call's own, which :func:`jvp_of_function` may find next time)."""
    tree_table = fwd._tables.get(_GUARDS) if check else None
    last = tree_table.get(_LAST) if tree_table else None  # (guard, entry, key) of the last call, a tree of tuples
    if last is not None and last[0](args, tangents):  # arguments and tangents of its kinds: its entry
        found, key = last[1], last[2]
    else:
        key = fast_key(args, tangents) if check else None
        found = fwd._derivatives.get(key) if key is not None else None
        if found is not None and tuple in map(type, args):
            _remember_guard(fwd.table(_GUARDS), key, found, args, tangents)  # type: ignore[arg-type]
    if found is not None and (found[2] is None or found[2]()):  # arguments and tangents of kinds seen before
        d, order, *cast = found[0]
        if cast:  # Python-float tangents of numpy scalars: made numpy scalars (see _leaf), the checked code not used
            tangents = [tangents[i] if k is None else k(tangents[i]) for i, k in enumerate(cast[0])]
        elif fast:
            _check_next(fwd, key, found)
        value, tangent = d.jvp(*args, *[tangents[i] for i in order])
        if tangent is None or not order:
            tangent = zeros_like_type(d.out_type, value)
        return value, tangent if type(tangent) is float else _owned(tangent, args, tangents)
    if check:
        types = fwd._types(args)
        checked = checked_tangents(types, tangents, param_names(fwd, len(types)), fwd._parsed.name)
    else:
        checked = list(tangents)
    wrt = frozenset(i for i, tv in enumerate(checked) if tv is not None)
    fwd._tables.get(_GUARDS, {}).pop(_LAST, None)  # (another call's entry, or its checks failed: made again below)
    d = fwd.derivative(args, wrt)
    cast = _casts(tangents, checked)
    if key is not None and cast is not None and \
            all(all_differentiable(types[i]) for i in wrt):  # the check depends on the key alone
        checks = _dep_checks(fwd._root, d.deps)
        order = tuple(sorted(wrt))
        holds = calling.checker(checks)
        found = ((d, order, cast) if cast else (d, order), checks, holds)
        fwd._derivatives.put(key, found)
        if fast and not cast:
            both = (*args, *tangents)
            entry = (d.jvp, None if order == tuple(range(len(args))) and order else order, holds, d.out_type)
            remember(fwd._jvps, both, entry, _JVP_KINDS)
            _check_next(fwd, key, found)
    value, tangent = d.jvp(*args, *(checked[i] for i in sorted(wrt)))
    if tangent is None or not wrt:
        tangent = zeros_like_type(d.out_type, value)
    return value, _owned(tangent, args, tangents)


def _casts(tangents: Sequence[Any], checked: Sequence[Any]) -> tuple | None:
    """``()`` where the check gave the tangents as they are; where it made Python floats numpy scalars
    (:func:`_leaf`), the numpy scalar type of each (None for the others); None for any other change."""
    if all(c is tv for tv, c in zip(tangents, checked)):
        return ()
    if not all(c is tv or (type(tv) is float and type(c) in _SCALAR_KEYS) for tv, c in zip(tangents, checked)):
        return None
    return tuple(None if c is tv else type(c) for tv, c in zip(tangents, checked))


def _check_next(fwd: Forward, key: tuple, found: tuple) -> None:
    """Make the generated JVP of ``found`` (the entry of ``key``), compiled again with checks of the
    kinds ``key`` records at its top (astad.guards.guard_jvp), the function ``astad.jvp`` tries first
    (compiled once per key and entry; none for structured arguments, which the tree guards serve)."""
    made = fwd.table(_CHECKED)
    hit = made.get(key)
    if hit is None or hit[0] is not found:
        if len(made) > 16:
            made.clear()
        hit = made[key] = (found, _checked_jvp(fwd, key, found) if _memory_size() > 0 else None)
    latest = fwd.table("latest jvp")
    if hit[1] is not None:
        latest[None] = hit[1]
    else:
        latest.clear()


def _checked_jvp(fwd: Forward, key: tuple, found: tuple) -> Any:
    (d, order), _, holds = found
    plain = getattr(d.plain_jvp, "__wrapped__", d.plain_jvp)  # (outputs.scalar_tangents: made again below)
    if not order or plain is not d.leaf_jvp:  # (no tangent: zeros; structures: the leaves' code takes leaves)
        return None
    arrays = any(kind_checks.is_array_key(k) for k in key)  # (the tangent of scalars owns no memory of theirs)
    found = guards.guard_jvp(d.leaf_jvp, d.source, key, _PLAIN, order, fwd.__astad_function__, fwd._code, holds,
                             lambda value, t=d.out_type: zeros_like_type(t, value), _owned if arrays else None)
    if found is not None:
        found = outputs.guarded_scalar_tangents(found, d.out_type)
    return found if found is None or d.out_lists is None else outputs.guarded_jvp(found, d.out_lists)


#: the table (Reverse.table) of the checked JVPs (_check_next) by key: (entry, checked JVP or None)
_CHECKED = "checked jvps"


#: the table (Reverse.table) of the guards of a Forward's calls whose arguments are trees of tuples
#: (astad/tree_guards.py), by key, and under ``_LAST`` the last call's (guard, entry, key)
_GUARDS, _LAST = "guards", "last"


def _remember_guard(table: dict, key: tuple, found: tuple, args: Sequence[Any], tangents: Sequence[Any]) -> None:
    """The guard of ``key`` (printed once per key) made the first thing the next call tries (for calls
    where an argument is a tuple: any other key is cheap to build and hash)."""
    guard = table.get(key, False)
    if guard is False:
        if len(table) > 8:
            table.clear()
        guard = table[key] = tree_guards.guard_of(args, tangents, _PLAIN)
    if guard is None:
        table.pop(_LAST, None)
    else:
        table[_LAST] = (guard, found, key)


def fast_key(args: Sequence[Any], tangents: Sequence[Any]) -> tuple | None:
    """A key of the arguments and tangents that determines the derivative and the
    outcome of the tangents' check (exact ndarrays, scalars, tuples, lists, dicts), or None.
    It runs on every call: scalars and None are keyed by their types alone, arrays by
    shape and dtype, anything else by ``api._arg_key``."""
    if len(args) != len(tangents):
        return None
    try:
        keys = tuple(map(_leaf_key, (*args, *tangents)))
    except RecursionError:
        return None
    return None if None in keys else keys


def _leaf_key(a: Any) -> Any:
    t = type(a)
    if t is np.ndarray:
        return a.shape, a.dtype.num
    if t is tuple:
        return _tuple_key(a)
    return t if t in _PLAIN else _arg_key(a)


def _tuple_key(a: tuple) -> Any:
    """``api._arg_key`` of a tuple, one loop per level (a tree of tuples of arrays is keyed on every call)."""
    keys = []
    for x in a:
        t = type(x)
        k = (x.shape, x.dtype.num) if t is np.ndarray else _tuple_key(x) if t is tuple else t if t in _PLAIN \
            else _arg_key(x)
        if k is None:
            return None
        keys.append(k)
    return tuple, tuple(keys)


#: the kinds of arguments and tangents whose type alone determines their abstract type (no tangent: None)
_PLAIN = _SCALAR_KEYS | {type(None)}


def all_differentiable(t: Type) -> bool:
    leaves = pipeline._leaf_types(t) if isinstance(t, StructT) else [t]
    return all(isinstance(lt, Num) and lt.differentiable for lt in leaves)


def _owned(tangent: Any, args: Sequence[Any], tangents: Sequence[Any]) -> Any:
    """The output tangent, copied where it shares memory with an argument or a tangent."""
    if type(tangent) is float or type(tangent) is np.float64:
        return tangent
    return fresh.distinct((tangent,), fresh.owners(args, tangents))[0]


def zeros_like_type(t: Type | None, value: Any) -> Any:
    """The zero tangent of a value (None for a discrete one)."""
    if isinstance(value, tuple):
        return type(value)(zeros_like_type(t, v) for v in value) if not hasattr(type(value), "_fields") else \
            type(value)(*(zeros_like_type(t, v) for v in value))
    if isinstance(value, list):
        return [zeros_like_type(t, v) for v in value]
    if isinstance(value, dict):
        return {k: zeros_like_type(t, v) for k, v in value.items()}
    a = np.asarray(value)
    if a.dtype.kind not in "fc":
        return None
    if isinstance(value, np.generic):  # (a numpy scalar's: one; np.float64 is a float too)
        return value.dtype.type(0)
    return 0.0 if isinstance(value, float) else np.zeros_like(a)


_FORWARDED: "weakref.WeakKeyDictionary[Callable, Forward]" = weakref.WeakKeyDictionary()


def forward(fn: Callable[..., Any]) -> Forward:
    """Transform ``fn`` by forward-mode AD: the result, called with the same
    arguments, returns ``(value, pushforward)``."""
    return forward_of(fn)


#: the Forward of a callable by its id (the fast paths of forward_of and astad.jvp): (a weakref to the
#: callable, the function whose source was read, its code then, the Forward's jvp table, the Forward,
#: the table of the function a call tries first (under None; see astad.guards))
_BY_ID: dict[int, tuple[weakref.ref, Any, Any, dict, Forward, dict]] = {}


def forward_of(fn: Callable[..., Any]) -> Forward:
    """The (cached) Forward of a plain function."""
    if type(fn) is Forward:
        return fn
    entry = _BY_ID.get(id(fn))
    if entry is not None and entry[0]() is fn and entry[1].__code__ is entry[2]:
        return entry[4]
    found = _forward_of(fn)
    try:
        ref = weakref.ref(fn, lambda _, key=id(fn), table=_BY_ID: table.pop(key, None))
    except TypeError:
        return found
    _BY_ID[id(fn)] = (ref, found.__astad_function__, found._code, found._jvps, found, found.table("latest jvp"))
    return found


def _forward_of(fn: Callable[..., Any]) -> Forward:
    fn = fn._root if getattr(type(fn), "__astad_reverse__", False) else fn  # type: ignore[union-attr]
    try:
        found = _FORWARDED.get(fn)
    except TypeError:  # not weak-referenceable: Forward() explains what is wrong with it
        return Forward(fn)
    if found is None or found._code is not calling.code_of(fn):
        found = _FORWARDED[fn] = Forward(fn)
    return found
