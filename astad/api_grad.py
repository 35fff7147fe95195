"""``grad`` and ``value_and_grad`` of a function astad reads, called: :class:`Gradient`
(reverse mode, or forward mode for one Python-float argument; the fast calls of
scalar arguments, see :mod:`astad.guards` and :mod:`astad.fused`)."""

from __future__ import annotations

import weakref
from typing import Any, Callable, Sequence

import numpy as np

from . import cache, fresh, fused, guards, pipeline
from .api import _SCALAR_KEYS, ArgNums, Reverse, _all_floats, _argnums, _check_argnums, kinds, remember, reverse, seed
from .errors import AstadTypeError, NonScalarOutputError
from .ir import Num, Type
from .pipeline import Derivative


def by_forward_mode(args: Sequence[Any], nums: Sequence[int]) -> bool:
    """Whether a gradient at ``args`` in ``nums`` is one to take by forward mode: in one Python-float
    argument, every argument a scalar (:mod:`astad.scalar_grad`, where it accepts the function)."""
    return len(nums) == 1 and type(args[nums[0]]) is float and _SCALAR_KEYS.issuperset(map(type, args))


class Gradient:
    """``grad`` or ``value_and_grad`` (``with_value``) of a function astad reads.
    A call of scalar arguments of types seen before finds, in one table (see
    :func:`remember`), one function that returns what the caller gets (see
    :func:`_runner`); any other call binds its arguments and looks the derivative
    up by their kinds."""

    #: a method ``(reverse, args, i, pick) -> (run, holds) | None``: the gradient in the one Python-float
    #: argument ``i`` of scalar arguments by forward mode (astad.api_higher.PlainGrad; see astad.scalar_grad)
    _by_forward: Callable[..., Any] | None = None

    def __init__(self, fn: Callable[..., Any], argnums: ArgNums, with_value: bool) -> None:
        _check_argnums(argnums)
        rev = self._rev = reverse(fn)
        self._argnums, self._with_value = argnums, with_value
        single = not isinstance(argnums, (tuple, list))
        # (run, holds) of calls whose derivative's types were checked, by the types of the arguments
        key = ("grad", argnums if single else tuple(argnums), with_value)
        self._table = rev.table(key)  # type: ignore[arg-type]
        self._latest = rev.table(("latest", key))  # the function a call tries first (see _keep)
        # (for .source) under None, what the last call that looked its derivative up ran, in any grad of the
        # function that shares the table: the reverse Derivative, or (arguments, i) where forward mode ran
        self._ran: dict[None, Any] = rev.table(("ran", key))  # type: ignore[assignment]
        self._function, self._code = rev.__astad_function__, rev._code
        self._types_checked: "weakref.WeakSet[Derivative]" = weakref.WeakSet()  # derivatives whose types were checked
        # argnums by the number of arguments passed by position
        self._nums: dict[int, tuple[tuple[int, ...], bool, frozenset[int]]] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not kwargs:
            fast = self._latest.get(None)  # the latest entry's function, which checks its arguments itself
            if fast is not None:
                out = fast(*args)
                if out is not _MISS:
                    return out
            hit = self._table.get(type(args[0]) if len(args) == 1 else (type(args[0]), type(args[1])) if
                            len(args) == 2 else tuple(map(type, args)))
            if hit is not None and self._function.__code__ is self._code and (hit[1] is None or hit[1]()):
                return hit[0](*args)
        return self._call(args, kwargs)

    def ran(self, what: Any) -> None:
        """Note what the call ran, for ``.source`` (:mod:`astad.shown`); nothing where memory caches are
        off (``astad.config.memory_cache_size`` 0: the fast tables stay empty)."""
        if cache.config.memory_cache_size > 0:
            self._ran[None] = what
        else:  # (what .source shows is no cache: kept by this gradient alone)
            self.__dict__["_ran_own"] = what

    def _keep(self, args: tuple, entry: tuple) -> None:
        """``entry`` in the table (see :func:`remember`), and its function, made to check its
        arguments itself (astad.guards.guard), as the one a call tries first."""
        table = self._table
        remember(table, args, entry)
        if table.get(kinds(args)) is entry:
            fast = guards.guard(entry[0], tuple(map(type, args)), self._function, self._code, entry[1], _SCALAR_KEYS)
            if fast is not None:
                self._latest[None] = fast
            else:
                self._latest.clear()

    def _call(self, args: tuple, kwargs: dict[str, Any]) -> Any:
        rev, binder = self._rev, self._rev._binder
        n = len(args)
        args = binder(args, kwargs)
        nums, one, wrt = self._nums.get(n) or self._found_argnums(n, len(args))
        remembered = not kwargs and n == binder.fast_n
        pick = (nums, one, self._with_value)
        if self._by_forward is not None and by_forward_mode(args, nums):
            rev.check_code()  # (forward mode would read the new code)
            found = self._by_forward(rev, args, nums[0], pick)
            if found is not None:
                if remembered:
                    self._keep(args, found)
                return found[0](*args)
        d, _, holds = rev.entry(args, wrt)
        self.ran(d)
        if d not in self._types_checked:
            _check_grad_types(rev, d, nums)
            self._types_checked.add(d)
        if remembered:
            self._keep(args, (_runner(d, pick), holds))
        value, residuals = d.forward(*args)
        cts = d.backward(residuals, seed(d.out_type))
        picked = tuple(cts[i] if type(args[i]) is float or type(args[i]) is np.ndarray and args[i].shape
                       else fresh.zero_d(fresh.zero_d_marks(args[i]), cts[i]) for i in nums)  # 0-d arrays': 0-d arrays
        if not _all_floats(picked):  # Python floats are immutable: nothing to copy
            picked = fresh.distinct(picked, d.arg_owners(args))  # (a structure's leaves walked without recursion)
        g = picked[0] if one else picked
        return (value, g) if self._with_value else g

    def _found_argnums(self, n: int, n_params: int) -> tuple:
        nums, one = _argnums(self._argnums, n, self._rev._parsed.name, n_params)
        found = self._nums[n] = (nums, one, frozenset(nums))
        return found


_MISS = guards.MISS  # what a guarded function returns for a call it was not made for


def _python_float(t: Type) -> bool:
    return isinstance(t, Num) and t.py and t.shape == () and t.dtype == "float64"


def _runner(d: Derivative, pick: tuple[tuple[int, ...], bool, bool]) -> Callable[..., Any]:
    """The function a call of scalar arguments runs: ``(*args) ->`` what the caller of
    ``grad`` gets (``pick``: the cotangents ``nums``, one when ``single``, after the value
    when ``with_value``).  Where each is a Python float (the cotangent of a float argument,
    see optimise/outputs.finish), forward and backward joined (astad.fused), returning them
    as they are; otherwise the generated functions, and a copy of a cotangent that shares
    memory with another."""
    nums, single, with_value = pick
    if all(_python_float(d.arg_types[i]) for i in nums):
        found = fused.of(d, pick)
        if found is not None:
            return found
    joined = fused.of(d)
    forward, backward, one = d.forward, d.backward, seed(d.out_type)
    every = nums == tuple(range(len(d.arg_types)))

    def run(*args: Any) -> Any:
        if joined is not None:
            value, cts = joined(*args)
        else:
            value, residuals = forward(*args)
            cts = backward(residuals, one)
        if single:  # scalar arguments own no memory: one cotangent needs no copy
            return (value, cts[nums[0]]) if with_value else cts[nums[0]]
        picked = cts if every and type(cts) is tuple else tuple(map(cts.__getitem__, nums))
        if not _all_floats(picked):  # Python floats are immutable: nothing to copy
            picked = fresh.distinct(picked, set())
        return (value, picked) if with_value else picked

    return run


def _check_grad_types(rev: Reverse, d: Derivative, nums: Sequence[int]) -> None:
    if not pipeline.is_real_scalar(d.out_type):
        raise NonScalarOutputError(
            f"grad of {rev._parsed.name} needs a real scalar output, but it returns {d.out_type}",
            hint="astad.vjp(fn, *args) for a non-scalar output, or reduce it (e.g. np.sum)")
    for i in nums:
        if not d.arg_types[i].differentiable:
            raise AstadTypeError(f"argument {i} of {rev._parsed.name} is {d.arg_types[i]}, which has no gradient",
                                 hint="differentiate with respect to float arguments (argnums)")
