"""Python lists of arrays: building, appending, reading, and stacking or
joining them into an array.  All are linear in the lists' elements: each is
given by its transpose."""

from __future__ import annotations


from typing import Any

import libcst as cst
import numpy as np

from .. import pyexpr as px
from ..ir import ListT, Num, Type
from . import emit
from .derive import explicit, linear, shape_atom, sum_to, zeros_of
from .table import DerivativeKind, Expr, Primitive, ShapeError, norm_axes, num, register
from .types import elementwise

RULE, DISCRETE = DerivativeKind.RULE, DerivativeKind.DISCRETE


def list_t(t: Type) -> ListT:
    if not isinstance(t, ListT):
        raise ShapeError(f"expected a list, got {t}")
    return t


def _list_infer(ts: list[Type], params: dict) -> Type:
    elem = ts[0] if ts else None
    for t in ts[1:]:
        if t != elem:
            raise ShapeError("the elements of a list that is built in a loop must have one type")
    return ListT(elem)


def append_infer(ts: list[Type], params: dict) -> Type:
    l, v = list_t(ts[0]), ts[1]
    if l.elem is not None and l.elem != v:
        if isinstance(l.elem, Num) and isinstance(v, Num) and l.elem.shape == v.shape:
            return ListT(Num(v.shape, np.result_type(l.elem.dtype, v.dtype).name))
        raise ShapeError(f"appending {v} to a list of {l.elem}")
    return ListT(v)


def list_set_infer(ts: list[Type], params: dict) -> Type:
    l = list_t(ts[0])
    if l.elem is None:
        raise ShapeError("assigning to an element of a list nothing has been appended to")
    return ListT(append_infer(ts[:2], params).elem, l.length)


def unknown_length(t: Type) -> Type:
    return ListT(t.elem) if isinstance(t, ListT) else t


def _list_of_length_infer(ts: list[Type], params: dict) -> Type:
    return ListT(list_t(ts[0]).elem, params["n"])


def list_elem(ts: list[Type], params: dict) -> Type:
    l = list_t(ts[0])
    if l.elem is None:
        raise ShapeError("reading an element of a list nothing has been appended to")
    return l.elem


def _stack_list_infer(ts: list[Type], params: dict) -> Type:
    e = num(list_elem(ts, params))
    nd = e.ndim + 1
    axis = norm_axes(params.get("axis", 0), nd)[0]
    shape = list(e.shape)
    shape.insert(axis, list_t(ts[0]).length)
    return Num(tuple(shape), e.dtype)


def _concat_list_infer(ts: list[Type], params: dict) -> Type:
    e = num(list_elem(ts, params))
    axis = norm_axes(params.get("axis", 0), e.ndim)[0]
    n = list_t(ts[0]).length
    size = None if n is None or e.shape[axis] is None else n * e.shape[axis]
    return Num(tuple(size if i == axis else d for i, d in enumerate(e.shape)), e.dtype)


_add_infer = elementwise(lambda x, y: x + y)


def _py_sum_infer(ts: list[Type], params: dict) -> Type:
    """``sum(xs, start)``: the type of ``start + x0 + x1 + ...`` (``0 +`` the elements without a start)."""
    e = num(list_elem(ts, params))
    start = ts[1] if len(ts) > 1 else Num((), "int64", py=True)
    out = _add_infer([start, e], {})
    if num(out).shape != e.shape:
        raise ShapeError(f"sum of a list of {e} with a start of {start}: the start broadcasts the elements")
    return _start_if_empty(_add_infer([out, e], {}), start, list_t(ts[0]).length)


def _emit_py_sum(a: list[Expr], ps: dict) -> Expr:
    return px.call("sum", a)


def _py_sum_rows_infer(ts: list[Type], params: dict) -> Type:
    """``sum(x, start)`` of an array: Python adds its rows (numpy scalars for a vector) left to
    right from ``start`` (0 without one): the type of ``start + x[0] + x[1] + ...``."""
    x = num(ts[0])
    if not x.shape:
        raise ShapeError(f"sum of a 0-d array ({x}): Python cannot iterate over it")
    row = Num(x.shape[1:], x.dtype)
    start = ts[1] if len(ts) > 1 else Num((), "int64", py=True)
    out = _add_infer([start, row], {})
    if num(out).shape != row.shape:
        raise ShapeError(f"sum of the rows of {x} with a start of {start}: the start broadcasts the rows")
    return _start_if_empty(_add_infer([out, row], {}), start, x.shape[0])


def _start_if_empty(out: Type, start: Type, length: int | None) -> Type:
    """A numpy scalar sum that is its Python start where there is nothing to add (``sum(x[mask])`` of no
    elements is the int 0): it may be a Python number when the code runs (``weak``)."""
    o, s = num(out), num(start)
    if not o.shape and not o.py and not o.weak and (s.py or s.weak) and not length:
        return Num((), o.dtype, weak=True)
    return out


def _py_sum_rows_transpose(b, p, out, ct):
    """Every row (and ``start``) gets the cotangent of the sum."""
    return [b.prim("broadcast_to", ct, shape_atom(b, p.args[0]))] + [sum_to(b, ct, s) for s in p.args[1:]]


# --------------------------------------------------------------------------- transposes


def _list_transpose(b, p, out, ct):
    return [b.prim("list_get", ct, b.const(k)) for k in range(len(p.args))]


def _list_jvp(b, p, out, ts):
    """The list of the elements' tangents (zeros for a missing one); where a numpy float64 tangent (that of
    ``math.cos(x)``, computed by numpy) stands beside a Python float's, every Python float one is made a numpy
    float64 too: the elements of a list have one type."""
    if all(t is None for t in ts):
        return None
    ts = [t if t is not None else zeros_of(b, a) for t, a in zip(ts, p.args)]
    if any(type(t.type) is Num and not t.type.py and not t.type.shape for t in ts):
        ts = [b.prim("convert_float", t, dtype=t.type.dtype, py=False) if type(t.type) is Num and t.type.py else t
              for t in ts]
    return b.prim("list", *ts)


def append_transpose(b, p, out, ct):
    return [b.prim("list_init", ct), b.prim("list_get", ct, b.const(-1))]


def _slice_of(ps: dict) -> slice:
    return slice(ps.get("lower"), ps.get("upper"), ps.get("step"))


def _list_slice_infer(ts: list[Type], params: dict) -> Type:
    """``xs[a:b:c]`` of bounds known when transforming: a list of the elements' type, of the slice's length
    where the list's is known."""
    l = list_t(ts[0])
    n = l.length
    return ListT(l.elem, None if n is None else len(range(n)[_slice_of(params)]))


def _emit_list_slice(a: list[Expr], ps: dict) -> Expr:
    bounds = [None if ps.get(k) is None else px.literal(ps[k]) for k in ("lower", "upper", "step")]
    return px.subscript(a[0], [px.slice_(*bounds)])


def _list_slice_transpose(b, p, out, ct):
    """Zeros like each element of the list, the cotangent's elements where the slice took theirs."""
    return [b.prim("list_unslice", p.args[0], ct, **dict(p.params))]


def _list_get_transpose(b, p, out, ct):
    return [b.prim("list_onehot", p.args[0], p.args[1], ct), None]


def list_set_value(l: list, v: Any, i: int) -> list:
    out = list(l)
    out[i] = v
    return out


def _stmts_list_set(target: Expr, a: list[Expr], ps: dict) -> list[cst.BaseSmallStatement]:
    """``xs_2 = xs[:]; xs_2[i] = v``: a new list with one element replaced (the old one may be
    kept, on a tape, for the backward pass; ``list_set_in_place`` where nothing reads it after:
    optimise/lists_in_place.py)."""
    l, v, i = a
    return [emit.assign(target, px.subscript(l, [px.slice_(None, None, None)])), emit.assign(px.subscript(target, [i]), v)]


def list_set_transpose(b, p, out, ct):
    """The replaced element's cotangent is dropped (zeros like the cotangent's element, so no
    primal value is kept); ``v`` gets the cotangent of the element it became."""
    i = p.args[2]
    ct_v = b.prim("list_get", ct, i)
    return [b.prim("list_set", ct, zeros_of(b, ct_v), i), ct_v, None]


def _stack_list_transpose(b, p, out, ct):
    return [b.prim("unstack", ct, axis=norm_axes(p.param("axis", 0), num(out.type).ndim)[0])]


def _py_sum_transpose(b, p, out, ct):
    """Every element (and ``start``) gets the cotangent of the sum: a list of it, as long as
    the list (its length read, not the list kept)."""
    l = p.args[0]
    n = list_t(l.type).length
    fill = b.prim("list_fill", ct, b.const(n) if n is not None else b.prim("list_len", l))
    return [fill] + [sum_to(b, ct, s) for s in p.args[1:]]


def _concat_list_transpose(b, p, out, ct):
    return [b.prim("split_like", ct, p.args[0], axis=norm_axes(p.param("axis", 0), num(out.type).ndim)[0])]


register(
    Primitive("list", lambda *xs: list(xs), _list_infer, emit.list_display, kind=RULE,
              **explicit(_list_jvp, _list_transpose)),
    Primitive("append", lambda l, v: l + [v], append_infer, lambda a, ps: px.binop("+", a[0], emit.list_display([a[1]], ps)),
              kind=RULE, **linear(append_transpose)),
    Primitive("list_get", lambda l, i: l[i], list_elem, lambda a, ps: px.subscript(a[0], [a[1]]), zero_in=(0,), kind=RULE,
              **linear(_list_get_transpose, 0)),
    # `xs[i] = v` on a list: a new list (linear in the list and v together)
    Primitive("list_set", list_set_value, list_set_infer, None, stmts=_stmts_list_set, kind=RULE,
              **linear(list_set_transpose, 0, 1)),
    # a list whose length is known when transforming (a comprehension over a range or an array's rows)
    Primitive("list_of_length", lambda l, n: l, _list_of_length_infer, lambda a, ps: a[0], zero_in=(0,), kind=RULE,
              **linear(lambda b, p, out, ct: [ct], 0)),
    # `xs[a:b:c]` of a run-time list, bounds known when transforming: a new list of some of the same elements
    Primitive("list_slice", lambda l, lower=None, upper=None, step=None: l[lower:upper:step], _list_slice_infer,
              _emit_list_slice, kind=RULE, **linear(_list_slice_transpose)),
    # `list(xs)` of a run-time list: a new list object holding the same elements
    Primitive("list_copy", list, lambda ts, ps: ts[0], lambda a, ps: px.subscript(a[0], [px.slice_(None, None, None)]),
              kind=RULE,
              **linear(lambda b, p, out, ct: [ct])),
    Primitive("list_len", len, lambda ts, ps: Num((), "int64", py=True), lambda a, ps: px.call("len", a), kind=DISCRETE),
    Primitive("stack_list", lambda l, axis=0: np.stack(l, axis=axis), _stack_list_infer, emit.sequence_value("stack"),
              kind=RULE, **linear(_stack_list_transpose)),
    # Python's `sum(xs)` / `sum(xs, start)` of a run-time list: added left to right, from 0
    Primitive("py_sum", lambda l, *start: sum(l, *start), _py_sum_infer, _emit_py_sum, kind=RULE,
              **linear(_py_sum_transpose)),
    # Python's `sum(x)` / `sum(x, start)` of an array: its rows added left to right, from 0 (not
    # np.sum's pairwise additions, nor its int64 for small ints)
    Primitive("py_sum_rows", lambda x, *start: sum(x, *start), _py_sum_rows_infer, _emit_py_sum, kind=RULE,
              **linear(_py_sum_rows_transpose)),
    Primitive("concatenate_list", lambda l, axis=0: np.concatenate(l, axis=axis), _concat_list_infer,
              emit.sequence_value("concatenate"), kind=RULE, **linear(_concat_list_transpose)),
)
