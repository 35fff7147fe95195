"""The Jacobian by whichever mode needs fewer passes, Hessians and
Hessian-vector products: compositions of the derived callables of
:mod:`astad.api_higher` (``jacfwd``, ``jacrev``, ``grad``), forward over reverse."""

from __future__ import annotations

import functools
from types import FunctionType
from typing import Any, Callable, Sequence

import numpy as np

from . import fresh
from .api_forward import forward_of, padded
from .api_higher import ArgNums, Derived, Grad, Plain, _bind, _nums, _output_of, grad
from .api_jacobians import Jac, jacfwd, jacrev
from .argnums import counted_from_first
from .errors import AstadTypeError
from .jacobians import basis, out_basis
from .programs import Program


class Jacobian(Derived):
    """``jacobian(f)``: forward mode when the inputs have no more elements than the outputs, else reverse."""

    def __init__(self, fn: Any, argnums: ArgNums) -> None:
        self.fwd, self.rev = jacfwd(fn, argnums), jacrev(fn, argnums)
        self._picked: dict[Any, Jac] = {}
        self.argnums = argnums
        self.name = f"jacobian({self.fwd.inner.name})"
        functools.update_wrapper(self, getattr(self.fwd.inner, "fn", self.fwd.inner), updated=())

    def _pick(self, args: Sequence[Any]) -> Jac:
        inner = self.fwd.inner
        key = inner.rev._types(args) if isinstance(inner, Plain) else None
        found = self._picked.get(key) if key is not None else None
        if found is None:  # the sizes follow from the types: the primal runs once per signature
            nums, _ = _nums(self.argnums, len(args), self.name)
            n_in = len(basis(args, nums))
            found = self.fwd if n_in <= len(out_basis(_output_of(inner, args))) else self.rev
            if key is not None:
                self._picked[key] = found
        return found

    def _jvps(self, primals: tuple, tangent_list: list) -> list[tuple[Any, Any]]:
        return self._pick(primals)._jvps(primals, tangent_list)

    def program(self, args: Sequence[Any]) -> tuple[Program, tuple]:
        return self._pick(args).program(args)

    def _assembly(self, args: Sequence[Any]) -> Any:
        return self._pick(args)._assembly(args)

    def _part_label(self, args: Sequence[Any], n: int) -> str:
        return self._pick(args)._part_label(args, n)

    def with_argnums(self, fn: Any, argnums: ArgNums) -> "Jacobian":
        """This Jacobian of ``fn`` with respect to ``argnums`` (see api_higher.counted_from_first)."""
        return Jacobian(fn, argnums)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        twin = counted_from_first(self, len(args))
        if twin is not self:
            return twin(*args, **kwargs)
        args = _bind(self.fwd, self.argnums, args, kwargs)
        self._remember(args)
        return self._pick(args).at(args)


def jacobian(fn: Callable[..., Any], argnums: ArgNums = 0) -> Jacobian:
    """The Jacobian, by forward or reverse mode, whichever needs fewer passes."""
    return Jacobian(fn, argnums)


def hessian(fn: Callable[..., Any], argnums: ArgNums = 0) -> Jac:
    """The Hessian of a real-scalar-valued function, forward over reverse (``jacfwd(grad(fn))``):
    shape ``in.shape + in.shape``."""
    j = jacfwd(grad(fn, argnums), argnums)
    j.name = f"hessian({j.inner.inner.name})"  # type: ignore[attr-defined]
    return j


def hvp(fn: Callable[..., Any], primals: Sequence[Any], tangents: Sequence[Any]) -> tuple:
    """The Hessian-vector product of a real-scalar-valued function without forming the
    Hessian (forward over reverse): one entry per argument, ``H v`` for those with a
    tangent and None for those held constant (tangent None)."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)) or \
            len(primals) != len(tangents):
        raise AstadTypeError("hvp takes a tuple of primals and a tuple of tangents, one per positional argument",
                             hint="astad.hvp(loss, (w, x), (v, None))")
    # (an int or bool argument takes None or a zero, as in jvp: the check of the tangents refuses another)
    nums = tuple(i for i, t in enumerate(tangents) if t is not None and not _discrete(primals[i]))
    if not nums:
        for i, t in enumerate(tangents):
            if t is not None and (np.shape(t) != np.shape(primals[i]) or np.any(np.asarray(t) != 0)):
                raise AstadTypeError(f"the tangent of argument {i} of hvp must be None (or zero, of the argument's "
                                     f"shape): the argument is {type(primals[i]).__name__}, which is discrete (it "
                                     f"has no tangent); got {t!r}", hint="None for an int or bool argument")
        return tuple(None for _ in primals)
    g = _grad_for_hvp(fn, nums)
    args = _bind(g, None, tuple(primals), {})  # defaults filled in
    _, hv = g.jvp(args, padded(tuple(tangents), len(primals), len(args), g.name))
    out: list[Any] = [None] * len(primals)
    for i, h in zip(nums, hv):  # (H v of a 0-d array: a 0-d array, as grad's)
        out[i] = fresh.zero_d(fresh.zero_d_marks(primals[i]), h)
    return tuple(out)


def _discrete(x: Any) -> bool:
    """An int or bool argument (a Python or numpy one, or an array of them): it has no tangent."""
    return isinstance(x, (int, np.integer, np.bool_)) or isinstance(x, np.ndarray) and x.dtype.kind in "biu"


def _grad_for_hvp(fn: Callable[..., Any], nums: tuple[int, ...]) -> Grad:
    """``grad(fn, nums)``, made once per plain function (kept by its Forward, which forward_of caches)."""
    if type(fn) is not FunctionType:
        return grad(fn, nums)
    grads = forward_of(fn).__dict__.setdefault("_hvp_grads", {})
    found = grads.get(nums)
    if found is None:
        found = grads[nums] = grad(fn, nums)
    return found
