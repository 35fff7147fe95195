"""The call table's family of reductions and scans (and their array methods): each entry maps a name a user calls
to the primitive(s) it lowers to (see :mod:`.api_specs` for the spec makers).

Most are one primitive with numpy's keyword arguments as static parameters;
others lower to several, as numpy computes them: ``ptp`` is ``max - min``,
``average`` with weights ``sum(a * w) / sum(w)``, ``nansum``/``nanmean`` sum
``np.where(np.isnan(a), 0.0, a)`` (so the nans get a zero cotangent), ``median``
is the mean of the middle of ``np.sort`` (where a line has a nan, that nan: the cotangent goes to it)."""

from __future__ import annotations

from typing import Any, Callable

import libcst as cst
import numpy as np

from ..ir import Atom, Const, Num, TupleT
from ..values import PyTuple, Ref
from .api_specs import ApiSpec, Refused, dtype_params, elementwise, refuse_axis_list, sig, stacked_list
from .core import LowererCore as Lowerer
from .scopes import Value

_NOT_GIVEN = ("dtype", "out", "order", "initial", "where")


def _given(b: dict, name: str) -> bool:
    v = b.get(name)
    return not (v is None or (isinstance(v, Const) and v.value is None))


def _refuse_unsupported(lw: Lowerer, b: dict, node: cst.Call, title: str) -> None:
    for name in _NOT_GIVEN:
        if _given(b, name):
            hint = {"dtype": "leave it out, or cast with .astype(...) first"}.get(name, "leave it out")
            raise lw.type_error(f"{title}: `{name}=` is not supported", node, hint)


def _statics(lw: Lowerer, b: dict, node: cst.Call, names: tuple[str, ...]) -> dict:
    params = {n: lw.static(lw.const_or(b[n]), node, n) for n in names}
    if "keepdims" in params:
        params["keepdims"] = bool(params["keepdims"])
    if params.get("stable"):
        params["kind"] = "stable"
    params.pop("stable", None)
    return params


def _array(lw: Lowerer, b: dict, node: cst.Call, title: str, method: bool) -> Atom:
    """The array reduced (a list or tuple of numbers or arrays as numpy reads it: :func:`.api_specs.stacked_list`)."""
    x = lw.atom(stacked_list(lw, lw.const_or(b["a"]), node), node)
    if method and isinstance(x.type, Num) and x.type.py:
        name = title.strip(".()")
        hint = {"item": "the number itself", "astype": "np.float64(x) or int(x)", "squeeze": "the number itself"}
        raise lw.type_error(f"{title}: a Python number has no such method", node, hint.get(name, f"np.{name}(x)"))
    return x


def op_spec(op: str, signature: str, statics: tuple[str, ...] = (),
            build: Callable[..., Value] | None = None) -> Callable[[str], ApiSpec]:
    """``op(a, **statics)`` (or ``build(lw, x, params, b, node)``): the arguments in
    :data:`_NOT_GIVEN` refused when given; also the array method of the same name."""

    def make(title: str) -> ApiSpec:
        def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
            _refuse_unsupported(lw, b, node, title)
            if title not in ("np.median", "np.average"):  # (those two take a list too)
                refuse_axis_list(lw, b, node)
            x = _array(lw, b, node, title, title.startswith("."))
            params = _statics(lw, b, node, statics)
            if build is not None:
                return build(lw, x, params, b, node)
            return lw.emit(op, [x], params)

        return ApiSpec(title, sig(signature), lower)

    return make


# --------------------------------------------------------------------------- lowerings to several primitives


def _ptp(lw: Lowerer, x: Atom, params: dict, b: dict, node: cst.Call) -> Value:
    return lw.emit("sub", [lw.emit("max", [x], params), lw.emit("min", [x], params)])


def _nan_to_zero(lw: Lowerer, x: Atom) -> tuple[Atom, Atom]:
    nan = lw.emit("isnan", [x])
    return lw.emit("where", [nan, Const.literal(0.0, Num((), "float64", py=True)), x]), nan


def _is_float(x: Atom) -> bool:
    return isinstance(x.type, Num) and np.dtype(x.type.dtype).kind == "f"


def _nansum(lw: Lowerer, x: Atom, params: dict, b: dict, node: cst.Call) -> Value:
    return lw.emit("sum", [_nan_to_zero(lw, x)[0] if _is_float(x) else x], params)


def _nanmean(lw: Lowerer, x: Atom, params: dict, b: dict, node: cst.Call) -> Value:
    if not _is_float(x):
        return lw.emit("mean", [x], params)
    zeroed, nan = _nan_to_zero(lw, x)
    nans = lw.emit("sum", [nan], params)
    t = x.type
    assert isinstance(t, Num)
    axis = params["axis"]
    axes = range(t.ndim) if axis is None else [a % t.ndim for a in (axis if isinstance(axis, tuple) else (axis,))]
    dims = [t.shape[a] for a in axes]
    if None in dims:
        n: Atom = lw.emit("div", [lw.emit("size", [x]), lw.emit("size", [nans])])
    else:
        n = Const.integer(int(np.prod(dims, dtype=int)))
    mean = lw.emit("div", [lw.emit("sum", [zeroed], params), lw.emit("sub", [n, nans])])
    if t.dtype == "float64":
        return mean
    # (a float32 sum over an int64 count is float64: numpy divides so and rounds back to x's dtype)
    return lw.emit("astype", [mean], {"dtype": t.dtype, "scalar": not mean.type.shape})


def _diff(lw: Lowerer, x: Atom, params: dict, b: dict, node: cst.Call) -> Value:
    """``np.diff(a, n, axis, prepend=p, append=q)``: ``p`` and ``q`` joined to ``a`` along ``axis`` first
    (a scalar broadcast to ``a``'s shape with length 1 along it), as numpy does."""
    if params["n"] == 0:
        return x  # (numpy returns `a` before it looks at prepend and append)
    ends = [_diff_end(lw, b, name, x, params["axis"], node) for name in ("prepend", "append")]
    if ends[0] is not None or ends[1] is not None:
        x = lw.emit("concatenate", [a for a in (ends[0], x, ends[1]) if a is not None], {"axis": params["axis"]})
    return lw.emit("diff", [x], params)


def _diff_end(lw: Lowerer, b: dict, name: str, x: Atom, axis: Any, node: cst.Call) -> Atom | None:
    """``prepend=``/``append=`` of ``np.diff``: an array of ``x``'s dimensions, a scalar broadcast to
    ``x``'s shape with length 1 along ``axis``, or None where not given."""
    if b.get(name, ...) is ...:
        return None
    v = lw.atom(lw.const_or(b[name]), node)
    t, vt = x.type, v.type
    assert isinstance(t, Num)
    if not isinstance(vt, Num) or vt.dtype == "bool" or not t.ndim or not isinstance(axis, int) \
            or not -t.ndim <= axis < t.ndim:
        raise lw.type_error(f"np.diff: `{name}=` needs a number or an array, and an axis of `a`", node,
                            f"np.diff(x, {name}=0.0)")
    if vt.ndim == t.ndim:
        return v
    if vt.ndim == 0:
        k = axis % t.ndim
        shape = tuple(1 if i == k else d for i, d in enumerate(t.shape))
        if None in shape:
            raise lw.type_error(f"np.diff: `{name}=` of a number needs the shape of `a` known when transforming",
                                node, f"an array of a's dimensions with length 1 along the axis: {name}=np.zeros(...)")
        return lw.emit("broadcast_to", [v, Const.literal(shape, TupleT(tuple(Num((), "int64", py=True, value=d)
                                                                              for d in shape)))])
    raise lw.type_error(f"np.diff: `{name}=` has {vt.ndim} dimensions, `a` has {t.ndim}", node,
                        "a number, or an array of a's dimensions with length 1 along the axis")


def _one_axis(lw: Lowerer, x: Atom, params: dict, b: dict, node: cst.Call, op: str) -> Value:
    if isinstance(params.get("axis"), tuple):
        raise lw.type_error(f"np.{op}: `axis` must be an integer or None", node, f"one axis, or np.{op} of a reshaped array")
    return lw.emit(op, [x], params)


def _average(lw: Lowerer, x: Atom, params: dict, b: dict, node: cst.Call) -> Value:
    """``np.average``: the mean, or with weights ``sum(a * w, axis) / sum(w, axis)`` (1-D weights along ``axis``)."""
    if params.pop("returned"):
        raise lw.type_error("np.average: `returned=True` is not supported", node,
                            "returned=False, and np.sum(weights) beside it for the sum of the weights")
    if not _given(b, "weights"):
        return lw.emit("mean", [x], params)
    w = lw.atom(lw.const_or(b["weights"]), node)
    xt, wt = x.type, w.type
    assert isinstance(xt, Num) and isinstance(wt, Num)
    # numpy computes in result_type(a, w) (float64 at least for an integer a): int8 weights of float32 values
    # are float32 weights (sum(w) of int8s would be an int64, and the average a float64)
    dtype = np.result_type(xt.dtype, wt.dtype, *(("float64",) if np.dtype(xt.dtype).kind in "biu" else ())).name
    if xt.dtype != dtype and xt.shape:
        x = lw.emit("astype", [x], {"dtype": dtype})
    if wt.dtype != dtype and wt.shape:
        w = lw.emit("astype", [w], {"dtype": dtype})
    xt, wt = x.type, w.type
    assert isinstance(xt, Num) and isinstance(wt, Num)
    axis = params["axis"]
    if wt.ndim == xt.ndim:
        if any(None not in (d, e) and d != e for d, e in zip(xt.shape, wt.shape)):
            raise lw.type_error("np.average: the weights' shape differs from the shape of `a`", node,
                                "weights of a's shape, or 1-D weights with axis=k")
        return lw.emit("div", [lw.emit("sum", [lw.emit("mul", [x, w])], params), lw.emit("sum", [w], params)])
    if not isinstance(axis, int) or wt.ndim != 1:
        raise lw.type_error("np.average: weights shaped differently from `a` need one `axis` and 1-D weights", node,
                            "weights of a's shape, or 1-D weights with axis=k")
    ndim = xt.ndim
    k = axis % ndim if -ndim <= axis < ndim else axis
    if not 0 <= k < ndim:
        raise lw.type_error(f"np.average: axis {axis} is out of bounds for an array of dimension {ndim}", node)
    n = xt.shape[k]
    if None not in (n, wt.shape[0]) and n != wt.shape[0]:
        raise lw.type_error("np.average: the length of the weights differs from the length of `a` along `axis`", node)
    dims = [Const.integer(-1 if i == k else 1) for i in range(ndim)]
    placed = lw.emit("reshape", [w, *dims])
    return lw.emit("div", [lw.emit("sum", [lw.emit("mul", [x, placed])], params), lw.emit("sum", [w])])


def _median(lw: Lowerer, x: Atom, params: dict, b: dict, node: cst.Call) -> Value:
    """``np.median``: the mean of the middle one or two entries of ``np.sort(a, axis)``, the line's last entry
    where the sorted line ends with a nan (numpy's rule: nan; the cotangent goes to that nan, so a nan in the
    value is a nan or a nonzero in the derivative, never a silent 0); its derivative goes through the sorting
    permutation."""
    t = x.type
    assert isinstance(t, Num)
    axis, keep = params["axis"], params["keepdims"]
    if isinstance(axis, tuple):
        raise lw.type_error("np.median: `axis` must be an integer or None", node, "one axis, or np.median of a reshaped array")
    s = lw.emit("sort", [x], {"axis": axis})
    st = s.type
    assert isinstance(st, Num)
    k = 0 if axis is None else axis % max(t.ndim, 1)
    n = st.shape[k] if st.ndim else None
    if n is None or n == 0:
        raise lw.type_error("np.median: the length along `axis` must be known (and not 0) when transforming", node,
                            "np.sort(a, axis) and index its middle")
    lead = (("slice", None, None, None),) * k
    middle = lw.emit("getitem", [s], {"index": lead + (("slice", (n - 1) // 2, n // 2 + 1, None),)})
    med = lw.emit("mean", [middle], {"axis": k, "keepdims": False})
    if _is_float(x):
        last = lw.emit("getitem", [s], {"index": lead + (-1,)})  # (a nan where the line has one: numpy's median;
        med = lw.emit("where", [lw.emit("isnan", [last]), last, med])  # its cotangent goes to that nan, as np.max's)
        if not med.type.shape and not keep:  # (np.where gives a 0-d array; numpy's median a numpy scalar)
            med = lw.emit("astype", [med], {"dtype": med.type.dtype, "scalar": True})
    if keep:
        ones = [Const.integer(1)] * t.ndim
        if axis is None:
            return lw.emit("reshape", [med, *ones])
        return lw.emit("expand_dims", [med], {"axis": k})
    return med


# --------------------------------------------------------------------------- array methods only


def _refusal(message: str, hint: str) -> Callable[[str], ApiSpec]:
    def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
        raise lw.type_error(message, node, hint)

    return lambda title: Refused(title, sig("a"), lower)


#: array methods that change the array in place: refused by their entries (``x.sort()``: ``np.sort(x)``)
IN_PLACE = ("sort",)


def in_place_method(expr: cst.BaseExpression) -> bool:
    """Whether ``expr`` is ``x.sort()`` (a statement the lowerer lowers to refuse it with its hint)."""
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in IN_PLACE


class _ItemSpec(ApiSpec):
    """``x.item(*index)``: numpy's index is variadic: none (an array of one element), one flat index in C
    order, or one per axis (also as one tuple)."""

    def bind(self, args: list, kwargs: dict) -> dict:
        if kwargs:
            raise TypeError(f"takes no keyword arguments (`{next(iter(kwargs))}=` given)")
        return {"a": args[0], "index": args[1:]}


def _item(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    """``x.item()``; ``x.item(i)`` is ``x.ravel()[i].item()`` and ``x.item(i, j)`` is ``x[i, j].item()``, as numpy
    reads them (differentiated as that indexing)."""
    x = _array(lw, b, node, ".item()", True)
    given = list(b["index"])
    if len(given) == 1 and isinstance(given[0], PyTuple) and not given[0].is_list:
        given = list(given[0].items)  # x.item((i, j))
    if not given:
        return lw.emit("item", [x])
    ndim = x.type.ndim if isinstance(x.type, Num) else None
    if len(given) > 1 and len(given) != ndim:
        raise lw.type_error(f".item() takes one flat index or one index per axis: {len(given)} indices for an "
                            f"array of {ndim} dimension{'s' if ndim != 1 else ''}", node,
                            "x.item(i) for the i-th element in C order, or x.item(i, j, ...) with one index per axis")
    args: list[Atom] = [x if len(given) > 1 or ndim == 1 else lw.emit("ravel", [x])]
    index: list[Any] = []
    for v in given:
        a = lw.atom(lw.const_or(v), node)
        if not (isinstance(a.type, Num) and a.type.shape == () and np.dtype(a.type.dtype).kind in "iu"):
            raise lw.type_error(f".item() takes integer indices, not {a.type}", node,
                                "x.item(i) with an int i, or x.item(i, j, ...) with one int per axis")
        if isinstance(a, Const) and a.name is None:
            index.append(int(a.value))
        else:
            args.append(a)
            index.append(("arg", len(args) - 1))
    return lw.emit("item", [lw.emit("getitem", args, {"index": tuple(index)})])


def _astype(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x = _array(lw, b, node, ".astype()", True)
    given = b["dtype"]
    if isinstance(given, Ref) and given.obj in (int, float, bool):  # the Python types as dtypes
        given = Ref("dtype", np.dtype(given.obj).name)
    dtype = dtype_params(lw, {"dtype": given}, node)["dtype"]
    kind = np.dtype(dtype).kind
    if kind == "c":
        raise lw.type_error(".astype(): complex dtypes are not supported", node, "np.float64 or np.float32")
    assert isinstance(x.type, Num)
    # (x.astype of a 0-d array is a 0-d array, of a numpy scalar a numpy scalar: the method keeps which)
    return lw.emit("astype" if kind == "f" else "astype_discrete", [x], {"dtype": dtype})


def _squeeze(lw: Lowerer, x: Atom, params: dict, b: dict, node: cst.Call) -> Value:
    """``x.squeeze(axis)``: a reshape to the shape without those axes of length 1."""
    t = x.type
    assert isinstance(t, Num)
    axis = params["axis"]
    axes = range(t.ndim) if axis is None else [a % t.ndim if -t.ndim <= a < t.ndim else a
                                                for a in (axis if isinstance(axis, tuple) else (axis,))]
    if axis is None and None in t.shape:
        raise lw.type_error(".squeeze(): the array's shape is not known when transforming", node,
                            "name the axes: x.squeeze(axis=0), or index: x[0]")
    for a in axes:
        if not 0 <= a < t.ndim or (axis is not None and t.shape[a] not in (1, None)):
            raise lw.type_error(f".squeeze(): axis {a} is not an axis of length 1 of this {t.ndim}-d array", node)
    gone = {a for a in axes if t.shape[a] == 1 or axis is not None}
    dims = [d if d is not None else lw.emit("dim", [x], {"axis": i}) for i, d in enumerate(t.shape) if i not in gone]
    return lw.emit("reshape", [x, *[lw.atom(lw.const_or(d), node) for d in dims]])


_REDUCE = "a, axis=None, out=None, keepdims=False"
_VAR = "a, axis=None, dtype=None, out=None, ddof=0, keepdims=False"
_CUM = "a, axis=None, dtype=None, out=None"
_SORT = "a, axis=-1, kind=None, order=None, stable=None"
_TRACE = "a, offset=0, axis1=0, axis2=1, dtype=None, out=None"
_AXIS_KEEP = ("axis", "keepdims")


def _one(op: str) -> Callable[..., Value]:
    return lambda lw, x, params, b, node: _one_axis(lw, x, params, b, node, op)


#: numpy functions by name (as ``np.<name>``), merged into ``numpy_api.API``
FUNCTIONS: dict[str, Callable[[str], ApiSpec]] = {
    "var": op_spec("var", _VAR, ("axis", "ddof", "keepdims")),
    "std": op_spec("std", _VAR, ("axis", "ddof", "keepdims")),
    "average": op_spec("mean", "a, axis=None, weights=None, returned=False, keepdims=False",
                       ("axis", "returned", "keepdims"), _average),
    "cumsum": op_spec("cumsum", _CUM, ("axis",)),
    "cumprod": op_spec("cumprod", _CUM, ("axis",)),
    "diff": op_spec("diff", "a, n=1, axis=-1, prepend=..., append=...", ("n", "axis"), _diff),  # (`...`: not given;
    # numpy joins an explicit None, and fails)
    "trace": op_spec("trace", _TRACE, ("offset", "axis1", "axis2")),
    "ptp": op_spec("max", _REDUCE, _AXIS_KEEP, _ptp),
    "nansum": op_spec("sum", "a, axis=None, dtype=None, out=None, keepdims=False", _AXIS_KEEP, _nansum),
    "nanmean": op_spec("mean", "a, axis=None, dtype=None, out=None, keepdims=False", _AXIS_KEEP, _nanmean),
    "median": op_spec("sort", "a, axis=None, out=None, overwrite_input=False, keepdims=False", _AXIS_KEEP, _median),
    "nanmax": op_spec("nanmax", _REDUCE, _AXIS_KEEP),
    "nanmin": op_spec("nanmin", _REDUCE, _AXIS_KEEP),
    "argmax": op_spec("argmax", _REDUCE, _AXIS_KEEP, _one("argmax")),
    "argmin": op_spec("argmin", _REDUCE, _AXIS_KEEP, _one("argmin")),
    "argsort": op_spec("argsort", _SORT, ("axis", "kind", "stable"), _one("argsort")),
    "sort": op_spec("sort", _SORT, ("axis", "kind", "stable"), _one("sort")),
    "all": op_spec("all", _REDUCE, _AXIS_KEEP),
    "any": op_spec("any", _REDUCE, _AXIS_KEEP),
    "count_nonzero": op_spec("count_nonzero", "a, axis=None, keepdims=False", _AXIS_KEEP),
}

#: array methods by name (``x.<name>()``), merged into ``numpy_api.METHODS``
METHODS: dict[str, Callable[[str], ApiSpec]] = {
    **{n: FUNCTIONS[n] for n in ("var", "std", "cumsum", "cumprod", "trace", "argmax", "argmin", "argsort", "all", "any")},
    "clip": elementwise("clip", "a, min=None, max=None"),
    "item": lambda title: _ItemSpec(title, sig("a"), _item),
    "astype": lambda title: ApiSpec(title, sig("a, dtype"), _astype),
    "squeeze": op_spec("reshape", "a, axis=None", ("axis",), _squeeze),
    "sort": _refusal("x.sort() sorts the array in place", "y = np.sort(x) (a sorted copy, differentiated through the order)"),
    "ptp": _refusal("ndarray.ptp() was removed in numpy 2", "np.ptp(x)"),
}

#: builtins by object (looked up by identity), merged into ``numpy_api.BUILTINS``
BUILTINS: dict[Any, ApiSpec] = {}

__all__ = ["FUNCTIONS", "METHODS", "BUILTINS", "op_spec", "in_place_method"]
