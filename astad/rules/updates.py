"""Array updates, ``y[index] = v``, as the functional ``setitem(y, v, *ix,
index=...)``: a copy of ``y`` with the indexed part replaced by ``v``
(broadcast).  The index template is :mod:`astad.rules.indexing`'s, its
arguments numbered in ``(y, v, *ix)``.

``setitem`` is linear in ``(y, v)`` together, so one transpose gives both
directions: the JVP is ``setitem`` of the tangents; the VJP gives ``y`` the
cotangent with the overwritten part zeroed (``setitem(ct, 0.0)``) and ``v``
the cotangent gathered at the index, summed down to ``v``'s shape.  With an
integer array an element may be written twice (``y[[0, 0]] = v``): only the
write numpy keeps gets the cotangent (``last_writes``: which of the selected
positions hold their value after the assignment, found by the same assignment
of their numbers, so whatever order numpy writes in, the derivative follows
it).  ``y[idx] += v`` is lowered by the frontend as
``setitem(y, y[idx] + v)``, numpy's own reading (a repeated index adds once).
"""

from __future__ import annotations

from typing import Any

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import Const, Num, Type
from . import emit
from .derive import linear, sum_to
from .indexing import add_at_expr, gathers, index_exprs, index_shape, index_value, shape_only, shift_index
from .table import DerivativeKind, Expr, Primitive, ShapeError, num, register, runtime

RULE, DISCRETE = DerivativeKind.RULE, DerivativeKind.DISCRETE


def fits(v: tuple, selection: tuple) -> bool:
    """Whether a value of shape ``v`` broadcasts to ``selection`` (``None``: known only at run time)."""
    if len(v) > len(selection):
        return False
    return all(a in (1, None) or b is None or a == b for a, b in zip(reversed(v), reversed(selection)))


def _setitem_infer(ts: list[Type], ps: dict) -> Type:
    y, v = num(ts[0]), num(ts[1])
    if y.ndim == 0:
        raise ShapeError("cannot assign to an element of a scalar", "assign the whole name: y = v")
    selection = index_shape(y.shape, ps["index"], ts)
    if not fits(v.shape, selection):
        raise ShapeError(f"a value of shape {v.shape} cannot be assigned to a selection of shape {selection}")
    if v.differentiable and not y.differentiable:
        raise ShapeError(f"assigning floats into an array of {y.dtype} would truncate them",
                         "make the array a float one: np.zeros(n) (not dtype=int)")
    return Num(y.shape, y.dtype)


def _setitem_value(y: Any, v: Any, *ix: Any, index: tuple) -> Any:
    out = np.array(y, copy=True)
    out[index_value(index, (y, v, *ix))] = v
    return out


def _stmts_setitem(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``y_new = y.copy(); y_new[index] = v`` (the printer updates ``y`` itself where nothing else reads it)."""
    y, v, *_ = a
    return [emit.assign(target, y if ps.get("in_place") else px.method(y, "copy")), emit.assign(px.subscript(target, index_exprs(ps["index"], a)), v)]


def _setitem_transpose(b, p, out, ct):
    """The overwritten part's cotangent is dropped; ``v`` gets what its elements were written to."""
    y, v, *ix = p.args
    index = p.param("index")
    ct_v = b.prim("getitem", ct, *ix, index=shift_index(index, -1))  # read first: then ct_y may be ct, changed in place
    if gathers(index):
        known = num(y.type).known_shape
        won = b.prim("last_writes", shape_only(y), *ix, index=shift_index(index, -1),
                     **({"shape": tuple(num(y.type).shape)} if known else {}))
        ct_v = b.prim("where", won, ct_v, Const.literal(0.0, Num((), "float64", py=True)))
    ct_v = sum_to(b, ct_v, v)
    if isinstance(v.type, Num) and v.type.py and num(ct_v.type).shape == ():
        ct_v = b.prim("to_float", ct_v)
    zero = Const.literal(0.0, Num((), num(ct.type).dtype, py=True))
    ct_y = b.prim("setitem", ct, zero, *ix, index=index)
    return [ct_y, ct_v] + [None] * len(ix)


def _add_at_infer(ts: list[Type], ps: dict) -> Type:
    y, v = num(ts[0]), num(ts[1])
    selection = index_shape(y.shape, ps["index"], ts)
    if not fits(v.shape, selection):
        raise ShapeError(f"np.add.at: values of shape {v.shape} do not fit the selection's shape {selection}")
    if not np.can_cast(np.result_type(y.dtype, v.dtype), y.dtype, "same_kind"):
        raise ShapeError(f"np.add.at: numpy cannot add {v.dtype} values into an array of {y.dtype}")
    return Num(y.shape, y.dtype)


def _add_at_value(y: Any, v: Any, *ix: Any, index: tuple) -> Any:
    out = np.array(y, copy=True)
    np.add.at(out, index_value(index, (y, v, *ix)), v)
    return out


def _stmts_add_at(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``y_new = y.copy(); np.add.at(y_new, index, v)`` (``y_new[index] += v`` where no element can
    be selected twice; the printer updates ``y`` itself where nothing else reads it)."""
    y, v, *_ = a
    first = emit.assign(target, y if ps.get("in_place") else px.method(y, "copy"))
    items = index_exprs(ps["index"], a)
    if gathers(ps["index"]):
        return [first, add_at_expr(target, ps["index"], items, v)]
    return [first, cst.AugAssign(target=px.subscript(target, items), operator=cst.AddAssign(), value=v)]


def _add_at_transpose(b, p, out, ct):
    """``y`` gets the cotangent as it is; ``v`` what it was added to, ``ct[index]`` (an element
    added twice gets its cotangent twice), summed down to ``v``'s shape."""
    y, v, *ix = p.args
    ct_v = sum_to(b, b.prim("getitem", ct, *ix, index=shift_index(p.param("index"), -1)), v)
    return [ct, ct_v] + [None] * len(ix)


@runtime
def last_writes(shape: tuple, index: Any) -> Any:
    """Which elements of the selection ``index`` of an array of ``shape`` keep their
    value after ``y[index] = values`` (an integer array may name an element twice:
    numpy keeps one write): the same assignment, of their numbers, tells."""
    ids = np.full(shape, -1, dtype=np.int64)
    selected = ids[index].shape
    numbers = np.arange(int(np.prod(selected)), dtype=np.int64).reshape(selected)
    ids[index] = numbers
    return ids[index] == numbers


@runtime
def add_where(acc: Any, mask: Any, share: Any) -> None:
    """``acc += mask * share`` in place, without making the array ``mask * share``
    (generated code's sum of a cotangent and ``np.max``'s share): the same numbers
    where ``share`` is finite (``0 * share`` adds nothing), the product itself where not."""
    if np.isfinite(share).all():
        np.add(acc, share, out=acc, where=mask)
    else:
        acc += mask * share


def _last_writes_value(y: Any, *ix: Any, index: tuple, shape: tuple | None = None) -> Any:
    return last_writes(np.shape(y), index_value(index, (y, *ix)))


def _emit_last_writes(a: list[Expr], ps: dict) -> Expr:
    items = index_exprs(ps["index"], a)
    at = items[0] if len(items) == 1 and not isinstance(items[0], cst.Slice) and ps["index"][0] is not Ellipsis \
        and ps["index"][0] is not None else px.subscript(px.name("np.s_"), items)
    shape = px.literal(ps["shape"]) if ps.get("shape") is not None else px.call("np.shape", [a[0]])
    return px.call("last_writes", [shape, at])


def _last_writes_infer(ts: list[Type], ps: dict) -> Type:
    return Num(index_shape(num(ts[0]).shape, ps["index"], ts), "bool")


register(
    Primitive("setitem", _setitem_value, _setitem_infer, None, stmts=_stmts_setitem, kind=RULE,
              **linear(_setitem_transpose, 0, 1)),
    # ``np.add.at(y, idx, v)`` (a repeated index added each time): ``y`` with ``v`` added at ``idx``
    Primitive("add_at", _add_at_value, _add_at_infer, None, stmts=_stmts_add_at, kind=RULE,
              **linear(_add_at_transpose, 0, 1)),
    # made only in derivative code: which writes of ``y[idx] = v`` an integer array ``idx`` keeps
    Primitive("last_writes", _last_writes_value, _last_writes_infer, _emit_last_writes, kind=DISCRETE),
)
