"""A call of a function the frontend lowered once per static key (:class:`astad.ir.KeyFunction`).

``call(args, fn=k)`` is the primal: ``k``'s body at ``args``.  The reverse macro
(:mod:`astad.ad.calls`) splits it into ``call_forward(args, fn=k, mask=m, name=n)``,
printed ``n_forward(args)`` and giving the pair ``(value, residuals)``, and
``call_backward(residuals, ct, ...)``, printed ``n_backward(residuals, ct)`` and
giving the cotangents of the arguments ``m`` makes active: the
generated functions of ``k``'s own reverse program.  Neither is differentiated
again: forward mode and derivatives of derivatives lower the user's function
with every call inlined (:attr:`astad.frontend.Lowerer.functions` is off there).
"""

from __future__ import annotations

from typing import Any, Callable

from .. import pyexpr as px
from ..errors import InternalError
from ..ir import TupleT, Type
from .table import DerivativeKind, Expr, Primitive, register


def _call_infer(ts: list[Type], params: dict) -> Type:
    return params["fn"].fn.body.result.type


#: what the interpreter runs these with: ``run`` (an IR function), ``run_reverse`` (a reverse program) and
#: ``derive(fn, mask)`` (a function's reverse program), set by :mod:`astad.ad.calls` (the table imports neither)
HOOKS: dict[str, Callable[..., Any]] = {}


def _call_impl(*args: Any, fn: Any, **params: Any) -> Any:
    return HOOKS["run"](fn.fn, *args)


def _forward_infer(ts: list[Type], params: dict) -> Type:
    return TupleT((params["fn"].fn.body.result.type, TupleT(())))


def _forward_impl(*args: Any, fn: Any, mask: tuple[bool, ...], name: str) -> Any:
    """(The interpreter's residuals are the arguments: its backward runs the reverse program whole.)"""
    return HOOKS["run"](fn.fn, *args), args


def _backward_infer(ts: list[Type], params: dict) -> Type:
    fn, mask = params["fn"], params["mask"]
    return TupleT(tuple(p.type for p, m in zip(fn.fn.params, mask) if m))


def _backward_impl(residuals: Any, ct: Any, fn: Any, mask: tuple[bool, ...], name: str) -> Any:
    return HOOKS["run_reverse"](HOOKS["derive"](fn, mask), residuals, ct)[1]


def _no_jvp(b: Any, p: Any, out: Any, tangents: Any) -> Any:
    raise InternalError(f"{p.op}: forward mode lowers calls inlined, never as `call`")


def _no_vjp(b: Any, p: Any, out: Any, ct: Any) -> Any:
    raise InternalError(f"{p.op}: the reverse macro splits a call (astad.ad.calls), never by the table's VJP")


def _emit_forward(a: list[Expr], ps: dict) -> Expr:
    return px.call(f"{ps['name']}_forward", a)


def _emit_backward(a: list[Expr], ps: dict) -> Expr:
    return px.call(f"{ps['name']}_backward", a)


def _emit_call(a: list[Expr], ps: dict) -> Expr:
    raise InternalError("call: printed only as call_forward and call_backward (reverse mode)")


register(
    Primitive("call", _call_impl, _call_infer, _emit_call, vjp=_no_vjp, kind=DerivativeKind.RULE, jvp=_no_jvp),
    Primitive("call_forward", _forward_impl, _forward_infer, _emit_forward, vjp=_no_vjp,
              kind=DerivativeKind.BACKWARD_ONLY, jvp=_no_jvp),
    Primitive("call_backward", _backward_impl, _backward_infer, _emit_backward, vjp=_no_vjp,
              kind=DerivativeKind.BACKWARD_ONLY, jvp=_no_jvp),
)
