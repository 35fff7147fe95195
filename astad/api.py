"""The public API: ``reverse`` and the JAX-style helpers built on it."""

from __future__ import annotations

import builtins
import functools
import html
import weakref
from typing import Any, Callable, Sequence, Union

import numpy as np

from . import cache, frontend, pipeline
from .errors import AstadError, AstadTypeError, NonScalarOutputError
from .ir import Num, TupleT, Type
from .pipeline import Derivative

ArgNums = Union[int, Sequence[int]]

_MEMORY: dict[tuple, Derivative] = {}
_LIVE: "weakref.WeakSet[Reverse]" = weakref.WeakSet()


def _arg_key(a: Any) -> Any:
    t = type(a)
    if t is np.ndarray:
        return a.shape, a.dtype.num
    if t is tuple or t is list or isinstance(a, tuple):
        return t, tuple([_arg_key(x) for x in a])
    if t is dict:
        return dict, tuple(a), tuple([_arg_key(x) for x in a.values()])
    return t


def _dep_checks(fn: Callable, deps: Sequence[tuple[tuple[str, ...], Any]]) -> tuple:
    """(namespace, name, object) triples to check, on each call, that the globals a
    derivative was built from are still the same objects (else: transform again)."""
    checks = []
    for path, obj in deps:
        owner = cache.resolve(fn, path[:-1]) if len(path) > 1 else fn
        g = getattr(owner, "__astad_function__", owner).__globals__
        checks.append((g if path[-1] in g else builtins.__dict__, path[-1], obj))
    return tuple(checks)


def _deps_unchanged(fn: Callable, d: Derivative) -> bool:
    try:
        return all(cache.resolve(fn, p) is o for p, o in d.deps)
    except (KeyError, AttributeError):
        return False


class Pullback:
    """The linear backward map of one call: ``pullback(ct)`` returns one
    cotangent per positional parameter (``None`` for discrete ones)."""

    __slots__ = ("_backward", "_residuals", "_out_type")

    def __init__(self, backward: Callable, residuals: Any, out_type: Type) -> None:
        self._backward = backward
        self._residuals = residuals
        self._out_type = out_type

    def __call__(self, ct: Any) -> tuple:
        _check_cotangent(self._out_type, ct, "the output")
        return self._backward(self._residuals, ct)

    def __repr__(self) -> str:
        return f"<astad pullback: cotangent of type {self._out_type} -> cotangents of the arguments>"


def _check_cotangent(t: Type, ct: Any, what: str) -> None:
    if isinstance(t, TupleT):
        if not isinstance(ct, (tuple, list)) or len(ct) != len(t.items):
            raise AstadTypeError(f"the cotangent of {what} must be a tuple of {len(t.items)}, got {type(ct).__name__}")
        for i, (ti, ci) in enumerate(zip(t.items, ct)):
            _check_cotangent(ti, ci, f"{what}[{i}]")
    elif isinstance(t, Num) and t.differentiable:
        shape = np.shape(ct)
        if len(shape) != len(t.shape) or any(d is not None and d != s for d, s in zip(t.shape, shape)):
            expected = tuple("?" if d is None else d for d in t.shape)
            raise AstadTypeError(f"the cotangent of {what} must have shape {expected}, got shape {shape}")


class Reverse:
    """A function transformed by the CHAD reverse macro.

    Calling it returns ``(value, pullback)``.  ``.source`` is the generated
    Python, ``.ir(stage)`` the IR of each stage, and in Jupyter the object
    shows its generated code.
    """

    def __init__(self, fn: Callable[..., Any]) -> None:
        fn = getattr(fn, "__astad_function__", fn)
        self.__astad_function__ = fn
        self._parsed = frontend.parse(fn)
        self._derivatives: dict[tuple, tuple[Derivative, tuple]] = {}
        self._last: Derivative | None = None
        functools.update_wrapper(self, fn)
        _LIVE.add(self)

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, Pullback]:
        if kwargs:
            raise AstadTypeError(f"{self._parsed.name}: pass arguments by position (keyword arguments: "
                                 f"{', '.join(kwargs)})")
        d = self.derivative(args)
        value, residuals = d.forward(*args)
        return value, Pullback(d.backward, residuals, d.out_type)

    def transform(self, *args: Any) -> Derivative:
        """The derivative for arguments like ``args`` (generated code, functions, IR)."""
        return self.derivative(args)

    def derivative(self, args: Sequence[Any], wrt: frozenset[int] | None = None) -> Derivative:
        """The derivative at the abstract signature of ``args``, computing the
        cotangents of the parameters in ``wrt`` (all when None)."""
        key = (tuple(map(_arg_key, args)), wrt)
        found = self._derivatives.get(key)
        if found is None or not all(g.get(n) is o for g, n, o in found[1]):
            found = self._transform(args, key, wrt)
        return found[0]

    def _types(self, args: Sequence[Any]) -> tuple[Type, ...]:
        params = self._parsed.funcdef.params.params
        if len(args) != len(params):
            raise AstadTypeError(f"{self._parsed.name} takes {len(params)} positional arguments, got {len(args)} "
                                 "(pass every parameter, by position)")
        return tuple(frontend.abstract(a, f"argument `{p.name.value}`") for a, p in zip(args, params))

    def _transform(self, args: Sequence[Any], key: tuple, wrt: frozenset[int] | None) -> tuple[Derivative, tuple]:
        types = self._types(args)
        fn = self.__astad_function__
        code = fn.__code__
        mkey = (code, code.co_filename, code.co_firstlineno, types, wrt)  # equal code objects may live in two files
        d = _MEMORY.get(mkey)
        if d is not None and not _deps_unchanged(fn, d):
            d = None
        if d is None:
            d = cache.load(self._parsed, types, wrt)
        if d is None:
            d = pipeline.transform(self._parsed, types, wrt)
            cache.store(self._parsed, types, d)
        _MEMORY[mkey] = d
        found = (d, _dep_checks(fn, d.deps))
        self._derivatives[key] = found
        if wrt is None or self._last is None:  # `.source` shows the full derivative once there is one
            self._last = d
        return found

    # ----------------------------------------------------------------- inspection

    def _current(self, args: Sequence[Any]) -> Derivative:
        if args:
            return self.transform(*args)
        if self._last is None:
            raise AstadError(f"{self._parsed.name} has not been called yet, so its argument types are unknown: "
                             "call it once, or pass example arguments (e.g. .ir('core', x, w))")
        return self._last

    @property
    def source(self) -> str:
        """The generated Python source for the most recent argument types."""
        return self._current(()).source

    def ir(self, stage: str = "optimised", *args: Any) -> str:
        """The IR after a stage: 'core', 'structural' (with dup/drop), 'ad', or 'optimised'."""
        d = self._current(args)
        if d.stages is None:
            d.stages = pipeline.run_stages(self._parsed, d.arg_types, d.wrt)[0]
        return d.stages.text(stage)

    def _repr_markdown_(self) -> str:
        if self._last is None:
            return (f"**astad.reverse({self._parsed.name})** — not called yet; the generated code appears "
                    f"after the first call.\n\n```python\n{self._parsed.source}```")
        return f"**astad.reverse({self._parsed.name})** — generated code:\n\n```python\n{self._last.source}```"

    def _repr_html_(self) -> str:
        code = self._last.source if self._last is not None else self._parsed.source
        title = f"astad.reverse({html.escape(self._parsed.name)})"
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import PythonLexer

            body = highlight(code, PythonLexer(), HtmlFormatter(noclasses=True))
        except ImportError:
            body = f"<pre>{html.escape(code)}</pre>"
        note = "" if self._last is not None else " (not called yet: showing the source)"
        return f"<div><b>{title}</b>{note}{body}</div>"

    def __repr__(self) -> str:
        return f"<astad.reverse of {self._parsed.name} at {self._parsed.file}:{self._parsed.funcdef_line}>"


_REVERSED: "weakref.WeakKeyDictionary[Callable, Reverse]" = weakref.WeakKeyDictionary()


def reverse(fn: Callable[..., Any]) -> Reverse:
    """Transform ``fn`` by reverse-mode AD: the result, called with the same
    arguments, returns ``(value, pullback)``.  The same function gives the same object."""
    if isinstance(fn, Reverse):
        return fn
    try:
        found = _REVERSED.get(fn)
    except TypeError:  # not weak-referenceable: Reverse() explains what is wrong with it
        return Reverse(fn)
    if found is None or found.__astad_function__.__code__ is not fn.__code__:
        found = _REVERSED[fn] = Reverse(fn)
    return found


def vjp(fn: Callable[..., Any], *args: Any) -> tuple[Any, Pullback]:
    """``(value, pullback)`` of ``fn`` at ``args`` (as ``jax.vjp``)."""
    return reverse(fn)(*args)


def _argnums(argnums: ArgNums, n: int, name: str) -> tuple[tuple[int, ...], bool]:
    single = isinstance(argnums, int)
    nums = (argnums,) if single else tuple(argnums)  # type: ignore[arg-type]
    for i in nums:
        if not isinstance(i, int) or not -n <= i < n:
            raise AstadTypeError(f"argnums {argnums!r} is out of range for {name}, which takes {n} arguments")
    return tuple(i % n for i in nums), single


def value_and_grad(fn: Callable[..., Any], argnums: ArgNums = 0) -> Callable[..., tuple[Any, Any]]:
    """A function returning ``(value, gradient)``; ``argnums`` as in JAX (an
    int gives one gradient, a tuple a tuple of gradients)."""
    rev = reverse(fn)
    checked: "weakref.WeakSet[Derivative]" = weakref.WeakSet()  # derivatives whose types were checked

    @functools.wraps(rev.__astad_function__)
    def wrapper(*args: Any) -> tuple[Any, Any]:
        nums, single = _argnums(argnums, len(args), rev._parsed.name)
        d = rev.derivative(args, frozenset(nums))
        if d not in checked:
            _check_grad_types(rev, d, nums)
            checked.add(d)
        value, residuals = d.forward(*args)
        cts = d.backward(residuals, 1.0)
        return value, (cts[nums[0]] if single else tuple(cts[i] for i in nums))

    return wrapper


def _check_grad_types(rev: Reverse, d: Derivative, nums: Sequence[int]) -> None:
    if not pipeline.is_real_scalar(d.out_type):
        raise NonScalarOutputError(
            f"grad of {rev._parsed.name} needs a real scalar output, but it returns {d.out_type}",
            hint="astad.vjp(fn, *args) for a non-scalar output, or reduce it (e.g. np.sum)")
    for i in nums:
        if not d.arg_types[i].differentiable:
            raise AstadTypeError(f"argument {i} of {rev._parsed.name} is {d.arg_types[i]}, which has no gradient",
                                 hint="differentiate with respect to float arguments (argnums)")


def grad(fn: Callable[..., Any], argnums: ArgNums = 0) -> Callable[..., Any]:
    """The gradient of a real-scalar-valued function (as ``jax.grad``)."""
    vg = value_and_grad(fn, argnums)

    @functools.wraps(vg)
    def wrapper(*args: Any) -> Any:
        return vg(*args)[1]

    return wrapper


def clear_caches(memory: bool = True, disk: bool = True) -> None:
    """Forget generated derivatives (in this process, and/or on disk)."""
    if memory:
        _MEMORY.clear()
        frontend.clear_parse_cache()
        for r in list(_LIVE):
            r._derivatives.clear()
    if disk:
        cache.clear_disk()
