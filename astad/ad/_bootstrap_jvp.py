"""Bootstrap JVP rules, until the primitive table carries its own (``Primitive.jvp``).

A rule is called as ``jvp(b, p, out, tangents)`` (the shared contract): ``b``
the builder, ``p`` the ``Prim``, ``out`` its output variable, ``tangents``
one entry per argument (an atom, or None where statically zero or discrete).
It returns the output's tangent, or None where it is statically zero.  The
forward macro prefers the table's ``jvp`` and falls back to :data:`JVPS`;
this module is deleted once every entry of the table has one.

Most rules are one of four shapes: a function linear in some arguments (the
same primitive applied to their tangents, zeros standing in for a missing
one), a bilinear one (``op(tx, y) + op(x, ty)``), an elementwise function
given by its derivative ``f'(x)`` (``t * f'(x)``), or a rule of its own.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from ..ir import Atom, Const, ListT, Num, Prim, Var
from ..vjp_rules import expand_reduced, num

JvpRule = Callable[[Any, Prim, Var, Sequence[Optional[Atom]]], Optional[Atom]]


def zeros_of(b: Any, a: Atom) -> Atom:
    """A materialised zero tangent shaped like ``a`` (a literal for a scalar)."""
    t = a.type
    if isinstance(t, Num) and not t.shape:
        return Const.literal(0.0, Num((), t.dtype if t.differentiable else "float64", py=t.py))
    if isinstance(t, ListT):
        return b.prim("list_zeros_like", a)
    if isinstance(t, Num):
        return b.prim("zeros_like", a, **({} if t.differentiable else {"dtype": "float64"}))
    raise TypeError(f"no zero tangent for {t}")


def _params(p: Prim) -> dict:
    return dict(p.params)


def _same_shape(b: Any, t: Atom, out: Var) -> Atom:
    """``t`` broadcast to the output's shape (the tangent of an argument that was broadcast)."""
    ts, os_ = num(t.type).shape, num(out.type).shape
    if ts == os_ and None not in ts:
        return t
    shape = b.const(tuple(os_)) if None not in os_ else b.prim("shape", out)
    return b.prim("broadcast_to", t, shape)


def linear(*which: int, fill: bool = True) -> JvpRule:
    """The JVP of a primitive linear in the arguments ``which`` (all when none
    are given) and constant in the others: the primitive at their tangents."""

    def rule(b, p, out, ts):
        idx = which or tuple(range(len(p.args)))
        if all(ts[i] is None for i in idx):
            return None
        args = [((ts[i] if ts[i] is not None else zeros_of(b, a)) if i in idx else a) for i, a in enumerate(p.args)]
        return b.prim(p.op, *args, **_params(p))

    return rule


def _add(b, p, out, ts):
    tx, ty = ts
    if tx is None or ty is None:
        t = tx if tx is not None else (ty if p.op == "add" else b.prim("neg", ty))
        return _same_shape(b, t, out)
    return _same_shape(b, b.prim(p.op, tx, ty), out)


def bilinear(b, p, out, ts):
    x, y = p.args
    tx, ty = ts
    parts = []
    if tx is not None:
        parts.append(b.prim(p.op, tx, y, **_params(p)))
    if ty is not None:
        parts.append(b.prim(p.op, x, ty, **_params(p)))
    return parts[0] if len(parts) == 1 else b.prim("add", *parts)


def _div(b, p, out, ts):
    x, y = p.args
    tx, ty = ts
    if ty is None:
        return b.prim("div", tx, y)
    num_ = b.prim("mul", out, ty)
    num_ = b.prim("sub", tx, num_) if tx is not None else b.prim("neg", num_)
    return _same_shape(b, b.prim("div", num_, y), out)


def _pow(b, p, out, ts):
    x, y = p.args
    tx, ty = ts
    parts = []
    if tx is not None and _literal(y):  # a constant exponent: its derivative written out
        k = y.value  # type: ignore[union-attr]
        if k == 1:
            parts.append(tx)
        elif k != 0:
            d = x if k == 2 else b.prim(p.op, x, b.const(k - 1))
            parts.append(b.prim("mul", tx, b.prim("mul", b.const(k), d)))
    elif tx is not None:  # y * x ** (y - 1), taken as 0 where y == 0 (no 0 * inf at x = 0)
        ym1 = b.prim("sub", y, b.const(1.0))
        d = b.prim("mul", y, b.prim(p.op, x, ym1))
        d = b.prim("where", b.prim("eq", y, b.const(0.0)), b.const(0.0), d)
        parts.append(b.prim("mul", tx, d))
    if ty is not None:  # out * log(x), 0 where out == 0
        lg = b.prim("log", b.prim("where", b.prim("eq", out, b.const(0.0)), b.const(1.0), x))
        parts.append(b.prim("mul", ty, b.prim("mul", out, lg)))
    if not parts:
        return None
    t = parts[0] if len(parts) == 1 else b.prim("add", *parts)
    return _same_shape(b, t, out)


def _literal(a: Atom) -> bool:
    return isinstance(a, Const) and a.name is None and isinstance(a.value, (int, float)) and not isinstance(a.value, bool)


def _modlike(rounding: str) -> JvpRule:
    def rule(b, p, out, ts):
        x, y = p.args
        tx, ty = ts
        t = tx
        if ty is not None:
            q = b.prim(rounding, b.prim("div", x, y))
            qt = b.prim("mul", q, ty)
            t = b.prim("sub", tx, qt) if tx is not None else b.prim("neg", qt)
        return _same_shape(b, t, out)

    return rule


def unary(deriv: Callable[[Any, Atom, Var], Atom]) -> JvpRule:
    """An elementwise function by its derivative: ``t * f'(x)``."""

    def rule(b, p, out, ts):
        return b.prim("mul", ts[0], deriv(b, p.args[0], out))

    return rule


def _log(b, p, out, ts):
    return b.prim("div", ts[0], p.args[0])


def _picked(b, p, out, ts, mask_x: Atom) -> Atom | None:
    """``where(mask, tx, ty)`` (the tangent of the argument numpy returns)."""
    tx, ty = ts[0], ts[1]
    zero = b.const(0.0)
    t = b.prim("where", mask_x, tx if tx is not None else zero, ty if ty is not None else zero)
    return _same_shape(b, t, out)


def _extremum(cmp: str) -> JvpRule:
    def rule(b, p, out, ts):
        x, y = p.args
        mask = b.prim("or_", b.prim(cmp, x, y), b.prim("isnan", x))  # ties and nans: x's, as numpy returns x
        return _picked(b, p, out, ts, mask)

    return rule


def _where(b, p, out, ts):
    c, x, y = p.args
    return _picked(b, Prim("where", (x, y)), out, ts[1:], c)


def _clip(b, p, out, ts):
    x = p.args[0]
    if any(t is not None for t in ts[1:]):
        return _refuse(p)
    if ts[0] is None:
        return None
    return _same_shape(b, b.prim("where", b.prim("eq", out, x), ts[0], b.const(0.0)), out)


def _maxmin(b, p, out, ts):
    """The tangent at the extremum (averaged over ties, as the VJP shares the cotangent)."""
    x = p.args[0]
    (tx,) = ts
    hit = b.prim("eq", x, expand_reduced(b, out, p))
    params = {"axis": p.param("axis"), "keepdims": p.param("keepdims", False)}
    total = b.prim("sum", b.prim("where", hit, tx, b.const(0.0)), **params)
    count = b.prim("sum", hit, **params)
    return b.prim("div", total, count)


def _prod(b, p, out, ts):
    x = p.args[0]
    others = b.prim("prod_vjp", x, b.const(1.0), axis=p.param("axis"))
    return b.prim("sum", b.prim("mul", ts[0], others), axis=p.param("axis"), keepdims=p.param("keepdims", False))


def _mean(b, p, out, ts):
    return b.prim("mean", ts[0], **_params(p))


def _prod_vjp(b, p, out, ts):
    if ts[0] is not None:
        return _refuse(p)
    return b.prim("prod_vjp", p.args[0], ts[1], **_params(p))


def _log_domain(b, p, out, ts):
    return ts[0]


def _refuse(p: Prim) -> Atom:
    from ..errors import UnsupportedFunctionError
    raise UnsupportedFunctionError(f"forward mode: {p.op} has no tangent rule in this argument",
                                   hint="differentiate it in reverse mode (astad.grad) only")


def _arange(b, p, out, ts):
    if all(t is None for t in ts):
        return None
    return _refuse(p)


JVPS: dict[str, JvpRule] = {
    "add": _add, "sub": _add, "mul": bilinear, "div": _div, "pow": _pow, "power": _pow,
    "mod": _modlike("floor"), "fmod": _modlike("trunc"), "neg": linear(),
    "matmul": bilinear, "dot": bilinear, "outer": bilinear,
    "exp": unary(lambda b, x, out: out), "log": _log,
    "sin": unary(lambda b, x, out: b.prim("cos", x)),
    "cos": unary(lambda b, x, out: b.prim("neg", b.prim("sin", x))),
    "tan": unary(lambda b, x, out: b.prim("add", b.const(1.0), b.prim("mul", out, out))),
    "tanh": unary(lambda b, x, out: b.prim("sub", b.const(1.0), b.prim("mul", out, out))),
    "sqrt": unary(lambda b, x, out: b.prim("div", b.const(0.5), out)),
    "abs": unary(lambda b, x, out: b.prim("sign", x)),
    "maximum": _extremum("ge"), "minimum": _extremum("le"), "where": _where, "clip": _clip,
    "sum": linear(0), "mean": _mean, "max": _maxmin, "min": _maxmin, "prod": _prod,
    "transpose": linear(0), "reshape": linear(0), "ravel": linear(0), "expand_dims": linear(0),
    "concatenate": linear(), "stack": linear(), "diag": linear(0), "tril": linear(0), "triu": linear(0),
    "getitem": linear(0), "arange": _arange, "broadcast_to": linear(0), "to_float": linear(0),
    "sum_to": linear(0), "copy": linear(0),
    # lists
    "list": linear(), "append": linear(0, 1), "list_get": linear(0), "list_of_length": linear(0),
    "stack_list": linear(0), "concatenate_list": linear(0),
    # made only by the reverse macro and the optimiser (forward over reverse: Hessians): linear in their cotangents
    "reshape_like": linear(0), "select": linear(1), "full": linear(0), "scatter": linear(0),
    "scatter_add": linear(0, 1), "prod_vjp": _prod_vjp, "log_domain": _log_domain, "diag_embed": linear(0),
    "list_init": linear(0), "append_in_place": linear(0, 1), "list_pop": linear(0), "list_popped": linear(0),
    "list_onehot": linear(2), "list_scatter_add": linear(0, 2), "unstack": linear(0), "split_like": linear(0),
    "or_zeros_like": linear(0), "list_zeros_like": lambda b, p, out, ts: None,
}

__all__ = ["JVPS", "JvpRule", "zeros_of", "linear", "bilinear", "unary"]
