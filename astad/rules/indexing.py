"""Basic indexing (ints, slices, ``None``, ``...``; dynamic ints as
arguments) and its transpose, the scatter of a cotangent into zeros: both
linear, so each is given by the other.

An index is a static template: a tuple of items, each an int, ``None``,
``Ellipsis``, ``("slice", start, stop, step)`` or ``("arg", k)`` (the k-th
argument of the primitive, 0 being the array itself)."""

from __future__ import annotations

from typing import Any, Sequence

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import Num, Type, Zero
from . import emit
from .derive import linear
from .table import DerivativeKind, Expr, Primitive, ShapeError, num, register
from .types import broadcast_shapes

RULE, BACKWARD = DerivativeKind.RULE, DerivativeKind.BACKWARD_ONLY


#: index items read from the primitive's arguments: a scalar int, an integer array, a boolean mask
_ARG_ITEMS = ("arg", "array", "mask")


def is_arg_item(it: Any) -> bool:
    return isinstance(it, tuple) and bool(it) and it[0] in _ARG_ITEMS


def is_advanced(index: tuple) -> bool:
    """Whether an index template has an integer array or a mask (numpy's advanced indexing)."""
    return any(isinstance(it, tuple) and it[:1] in (("array",), ("mask",)) for it in index)


def gathers(index: tuple) -> bool:
    """Whether an index may select one element twice (an integer array): its transpose adds (``np.add.at``)."""
    return any(isinstance(it, tuple) and it[:1] == ("array",) for it in index)


def shift_index(index: tuple, by: int) -> tuple:
    """The template with its argument numbers moved by ``by`` (for a primitive with other leading arguments)."""
    def one(it: Any) -> Any:
        if is_arg_item(it):
            return it[0], it[1] + by
        if isinstance(it, tuple) and it[:1] == ("slice",):
            return ("slice", *(one(b) for b in it[1:]))
        return it

    return tuple(one(it) for it in index)


def index_shape(shape: tuple, index: tuple, arg_types: Sequence[Type]) -> tuple:
    """The shape of ``x[index]`` for an index template (see ``getitem``): basic
    indexing, and numpy's advanced indexing by integer arrays and boolean masks
    (a mask selects a number of elements known only at run time: ``None``)."""

    def consumed(it: Any) -> int:
        if it is None or it is Ellipsis:
            return 0
        return num(arg_types[it[1]]).ndim if isinstance(it, tuple) and it[0] == "mask" else 1

    if sum(it is Ellipsis for it in index) > 1:
        raise ShapeError("an index can only have a single ellipsis ('...')")
    n_consumed = sum(consumed(it) for it in index)
    if n_consumed > len(shape):
        raise ShapeError(f"too many indices for an array of dimension {len(shape)}")
    items: list = []
    for it in index:
        if it is Ellipsis:
            items.extend([("slice", None, None, None)] * (len(shape) - n_consumed))
        else:
            items.append(it)
    items.extend([("slice", None, None, None)] * (len(shape) - sum(consumed(it) for it in items)))
    advanced = is_advanced(tuple(items))
    out: list = []
    adv_shapes: list[tuple] = []
    adv_items: list[int] = []  # positions in ``items`` of the advanced indices
    adv_out = 0  # where in ``out`` the first advanced index is
    k = 0

    def value(spec: Any) -> Any:
        if isinstance(spec, tuple) and spec and spec[0] == "arg":
            return num(arg_types[spec[1]]).value
        return spec

    for j, it in enumerate(items):
        if it is None:
            out.append(1)
            continue
        if isinstance(it, tuple) and it[0] == "slice":
            d = shape[k]
            k += 1
            bounds = [value(s) for s in it[1:]]
            given = [s for s in it[1:]]
            if d is None or any(b is None and g is not None for b, g in zip(bounds, given)):
                out.append(None)
            else:
                out.append(len(range(*slice(*bounds).indices(d))))
            continue
        if not adv_items:
            adv_out = len(out)
        if isinstance(it, tuple) and it[0] == "mask":
            m = num(arg_types[it[1]])
            if m.ndim == 0:
                raise ShapeError("a 0-d boolean index is not supported", "np.where(cond, x, 0.0)")
            dims = shape[k:k + m.ndim]
            if any(a is not None and b is not None and a != b for a, b in zip(m.shape, dims)):
                raise ShapeError(f"a boolean index of shape {m.shape} does not match the indexed axes {dims}")
            k += m.ndim
            adv_shapes.append((None,))
        elif isinstance(it, tuple) and it[0] == "array":
            k += 1
            adv_shapes.append(num(arg_types[it[1]]).shape)
        else:
            d = shape[k]
            k += 1
            v = value(it)
            if v is not None and d is not None and not -d <= v < d:
                raise ShapeError(f"index {v} is out of bounds for an axis of size {d}")
            if not advanced:
                continue
            adv_shapes.append(())
        adv_items.append(j)
    if advanced:
        together = adv_items == list(range(adv_items[0], adv_items[-1] + 1))
        at = adv_out if together else 0
        out[at:at] = list(broadcast_shapes(*adv_shapes))
    return tuple(out)


def _getitem_infer(ts: list[Type], params: dict) -> Type:
    x = num(ts[0])
    if x.ndim == 0:
        raise ShapeError("cannot index a scalar")
    return Num(index_shape(x.shape, params["index"], ts), x.dtype)


def index_exprs(index: tuple, args: list[Expr]) -> list[Any]:
    """libcst subscript items for an index template; ``args`` are the dynamic indices."""

    def one(spec: Any) -> Expr | None:
        if spec is None:
            return None
        if is_arg_item(spec):
            return args[spec[1]]
        return px.literal(spec)

    items: list[Any] = []
    for it in index:
        if it is None:
            items.append(px.name("None"))
        elif it is Ellipsis:
            items.append(cst.Ellipsis())
        elif isinstance(it, tuple) and it[0] == "slice":
            items.append(px.slice_(one(it[1]), one(it[2]), one(it[3])))
        else:
            items.append(one(it))
    return items


def index_value(index: tuple, args: Sequence[Any]) -> Any:
    """The numpy index a template means, given the run-time values of the arguments."""

    def one(spec: Any) -> Any:
        if is_arg_item(spec):
            return args[spec[1]]
        return spec

    out = []
    for it in index:
        if isinstance(it, tuple) and it[0] == "slice":
            out.append(slice(one(it[1]), one(it[2]), one(it[3])))
        else:
            out.append(one(it))
    return tuple(out)


def _emit_getitem(a: list[Expr], ps: dict) -> Expr:
    return px.subscript(a[0], index_exprs(ps["index"], a))


# --------------------------------------------------------------------------- the transpose: scatter


def add_at_expr(target: Expr, index: tuple, items: list[Any], value: Expr) -> cst.BaseSmallStatement:
    """``np.add.at(target, idx, value)``: ``target[idx] += value`` with a repeated index added each time."""
    at = items[0] if len(items) == 1 and not isinstance(items[0], cst.Slice) and index[0] is not Ellipsis \
        and index[0] is not None else px.subscript(px.name("np.s_"), items)
    return cst.Expr(px.call("np.add.at", [target, at, value]))


def _scatter_value(ct: Any, x: Any, *args: Any, index: tuple, zeros: Any = None) -> Any:
    out = np.zeros_like(x)
    if gathers(index):
        np.add.at(out, index_value(index, (x, *args)), ct)
    else:
        out[index_value(index, (x, *args))] = ct
    return out


def _stmts_scatter(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``x_ct = np.zeros_like(x); x_ct[index] = ct``: the transpose of basic indexing
    (``np.add.at(x_ct, index, ct)`` for an integer array, whose elements may repeat)."""
    ct, x, *rest = a
    index = index_exprs(ps["index"], [x, *rest])
    zeros = px.call("np.zeros_like", [x]) if ps.get("zeros") is None else emit.constructor("zeros")(
        [px.literal(d) for d in ps["zeros"][0]], {"dtype": ps["zeros"][1]})
    if gathers(ps["index"]):
        return [emit.assign(target, zeros), add_at_expr(target, ps["index"], index, ct)]
    return [emit.assign(target, zeros), emit.assign(px.subscript(target, index), ct)]


def _scatter_add_value(acc: Any, ct: Any, x: Any, *args: Any, index: tuple) -> Any:
    if gathers(index):
        np.add.at(acc, index_value(index, (x, *args)), ct)
    else:
        acc[index_value(index, (x, *args))] += ct
    return acc


def _stmts_scatter_add(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``acc[index] += ct``: a read ``x[index]`` inside a loop, accumulated in place."""
    acc, ct, x, *rest = a
    index = index_exprs(ps["index"], [x, *rest])
    if gathers(ps["index"]):
        return [emit.assign(target, acc), add_at_expr(target, ps["index"], index, ct)]
    return [emit.assign(target, acc),
            cst.AugAssign(target=px.subscript(target, index), operator=cst.AddAssign(), value=ct)]


def shape_only(x: Any) -> Any:
    """``x`` where only its shape and dtype are read: a zero of its type when they are
    known statically, so that the backward pass keeps no array for them (a loop's tape
    would otherwise hold every iteration's array)."""
    return Zero(x.type) if isinstance(x.type, Num) and x.type.known_shape else x


def _getitem_transpose(b, p, out, ct):
    return [b.prim("scatter", ct, shape_only(p.args[0]), *p.args[1:], index=p.param("index"))] + [None] * (len(p.args) - 1)


def _scatter_transpose(b, p, out, ct):
    """``getitem`` of the cotangent: its dynamic indices are numbered as ``scatter``'s ``(x, *rest)``."""
    ct_in, x, *rest = p.args
    return [b.prim("getitem", ct, *rest, index=p.param("index"))] + [None] * (len(p.args) - 1)


def _scatter_add_transpose(b, p, out, ct):
    acc, ct_in, x, *rest = p.args
    return [ct, b.prim("getitem", ct, *rest, index=p.param("index"))] + [None] * (len(p.args) - 2)


register(
    Primitive("getitem", lambda x, *ix, index: x[index_value(index, (x, *ix))], _getitem_infer, _emit_getitem, zero_in=(0,),
              kind=RULE, **linear(_getitem_transpose, 0)),
    # made only in derivative code: the cotangent of a read, into zeros or accumulated in place
    Primitive("scatter", _scatter_value, lambda ts, ps: Num(num(ts[1]).shape, num(ts[0]).dtype), None, zero_in=(0,),
              stmts=_stmts_scatter, kind=BACKWARD, **linear(_scatter_transpose, 0)),
    Primitive("scatter_add", _scatter_add_value, lambda ts, ps: ts[0], None, stmts=_stmts_scatter_add, kind=BACKWARD,
              **linear(_scatter_add_transpose, 0, 1)),
)
