"""How the numpy functions, array methods and builtins a user calls map onto
primitives: the core tables here, and one module per family of functions
(``api_elementwise``, ``api_reductions``, ``api_shape``, ``api_linalg``,
``api_python``), each adding its own ``FUNCTIONS``, ``METHODS`` and ``BUILTINS``.
The machinery (:class:`ApiSpec` and the spec makers) is in :mod:`.api_specs`."""

from __future__ import annotations

import builtins
from typing import Any, Callable

import libcst as cst
import numpy as np

from ..ir import Atom, Const, ListT, Num, Var
from ..values import PyTuple, Ref
from . import api_elementwise, api_linalg, api_python, api_reductions, api_shape
from .api_specs import (ApiSpec, arrays_of_numbers, atoms, constructor, dims, dtype_params, elementwise, like, numpy_scalars,  # noqa: F401
                        reduction, sequence, sig, spec, static_params)
from .core import LowererCore as Lowerer
from .scopes import Value

_FAMILIES = (api_elementwise, api_reductions, api_shape, api_linalg, api_python)


def _lower_reshape(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    return lw.emit("reshape", [lw.atom(b["a"], node), *dims(lw, b["shape"], node)])


def _lower_reshape_method(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    dims = b["shape"]
    if len(dims) == 1 and hasattr(dims[0], "items"):
        dims = dims[0].items
    return lw.emit("reshape", [lw.atom(b["a"], node), *[lw.atom(d, node) for d in dims]])


def _transpose(lw: "Lowerer", x: Atom, params: dict) -> "Value":
    if isinstance(x.type, Num) and x.type.ndim < 2 and params.get("axes") is None:
        return x  # the identity (and a Python float has no `.T`)
    return lw.emit("transpose", [x], params)


def _lower_transpose(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    axes = lw.static(lw.const_or(b["axes"]), node, "axes")
    api_shape.zero_d(lw, lw.atom(b["a"], node), node, "np.transpose")
    return _transpose(lw, lw.atom(b["a"], node), {"axes": axes} if axes is not None else {})


def _lower_transpose_method(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    axes = b["axes"]
    if len(axes) == 1 and hasattr(axes[0], "items"):
        axes = axes[0].items
    params = {"axes": tuple(lw.static(a, node, "axes") for a in axes)} if axes else {}
    return _transpose(lw, lw.atom(b["a"], node), params)


def _lower_shape(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    return lw.shape_of(lw.atom(b["a"], node))


def _lower_len(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    x = b["a"]
    if isinstance(x, Var) and isinstance(x.type, ListT):
        n = 0 if x.type.elem is None else x.type.length  # no append on any path yet: empty
        if n is not None:
            return Const.integer(n)
        return lw.emit("list_len", [x])
    if hasattr(x, "items"):
        n = len(x.items)
        return Const.integer(n)
    items = lw.shape_of(lw.atom(x, node)).items
    if not items:
        raise lw.type_error("len() of a scalar", node)
    return items[0]


def _lower_dot(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    x, y = arrays_of_numbers(lw, atoms(lw, b, node, "a", "b"))
    scalar = any(isinstance(t.type, Num) and t.type.ndim == 0 for t in (x, y))
    return lw.emit("mul" if scalar else "dot", [x, y])


def _lower_square(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    two = Const.integer(2)
    return lw.emit("pow", [*numpy_scalars(lw, atoms(lw, b, node, "x")), two])


def _numpy_elementwise(op: str, signature: str = "x") -> Callable[[str], ApiSpec]:
    """``elementwise``, with Python numbers made numpy's first (``numpy_scalars``)."""
    names = [n for n, _ in sig(signature)]
    return lambda title: ApiSpec(title, sig(signature),
                                 lambda lw, b, node: lw.emit(op, numpy_scalars(lw, atoms(lw, b, node, *names))))


def _lower_copy(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    x = lw.atom(b["a"], node)
    api_shape.zero_d(lw, x, node, "np.copy", "the number itself (a number is never changed in place), or "
                     "np.array([x]) for a 1-d array")
    return lw.copy(x)


def _lower_np_copy(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    """``np.copy(x)``: ``x.copy()``, but a 0-d array of a numpy scalar (whose ``.copy()`` is a scalar) as numpy's."""
    x = lw.atom(b["a"], node)
    if isinstance(x.type, Num) and x.type.ndim == 0 and not x.type.py:
        return lw.emit("copy", [x], {"array": True})
    return _lower_copy(lw, b, node)


def _lower_array(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    """``np.array(xs, dtype=None)``: a list or tuple stacked; an array copied (numpy's default, copy=True);
    converted to ``dtype`` when given (a conversion is a copy of its own)."""
    x = b["object"]
    dtype = _dtype(lw, b, node, "np.array")
    if isinstance(x, (Var, Const)) and isinstance(x.type, Num) and x.type.ndim >= 1:
        return lw.copy(x) if dtype in (None, x.type.dtype) else _converted(lw, x, dtype)
    if isinstance(x, (Var, Const)) and isinstance(x.type, Num):
        raise lw.type_error("np.array of a number (a 0-d array) is not supported", node,
                            "the number itself, np.float64(x), or np.array([x]) for a 1-d array")
    if isinstance(x, PyTuple) and not x.items:  # (the stack of nothing was refused as "array shapes  do not fit")
        raise lw.type_error("np.array of an empty list or tuple is not supported", node,
                            "np.zeros(0), or np.zeros(0, dtype=int) for an empty index")
    if isinstance(x, PyTuple) and any(isinstance(v, PyTuple) or _run_time_list(v) for v in x.items):
        # nested lists or tuples (``[[a], [b]]``, ``[xs, ys]``): each inner one an array, as numpy reads a regular
        # nesting; a ragged one is refused (numpy raises too)
        x = PyTuple(tuple(_lower_array(lw, {"object": v, "dtype": None}, node)
                          if isinstance(v, PyTuple) or _run_time_list(v) else v for v in x.items), x.is_list)
        shapes = sorted({t.shape for t in (getattr(v, "type", None) for v in x.items)
                         if isinstance(t, Num) and t.known_shape}, key=lambda s: (len(s), s))
        if len(shapes) > 1:
            raise lw.type_error(f"np.array of a ragged nesting: its elements have the shapes {shapes[0]} and "
                                f"{shapes[-1]} (numpy refuses it too)", node,
                                "lists of one length at each level, or np.concatenate to join them")
    stacked = sequence("stack")("np.array").lower(lw, {"arrays": x, "axis": 0}, node)
    return _converted(lw, lw.atom(stacked, node), dtype)


def _lower_asarray(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    """``np.asarray(x, dtype=None)``: an array of that dtype is the array itself (numpy's: no copy, so
    an update of one is an update of the other, as after ``y = x``); another dtype, a conversion (a copy);
    a list or tuple, stacked as by ``np.array``."""
    x = b["a"]
    if isinstance(x, (Var, Const)) and isinstance(x.type, Num) and x.type.ndim >= 1:
        dtype = _dtype(lw, b, node, "np.asarray")
        return x if dtype in (None, x.type.dtype) else _converted(lw, x, dtype)
    if isinstance(x, (Var, Const)) and isinstance(x.type, Num):
        raise lw.type_error("np.asarray of a number (a 0-d array) is not supported", node,
                            "the number itself, np.float64(x), or np.asarray([x]) for a 1-d array")
    return _lower_array(lw, {"object": x, "dtype": b["dtype"]}, node)


def _dtype(lw: "Lowerer", b: dict, node: cst.Call, title: str) -> str | None:
    """The name of the ``dtype=`` given (``float``, ``np.float32``, ``"float64"``), or None."""
    given = b["dtype"]
    if given is None:
        return None
    if isinstance(given, Ref) and given.obj in (int, float, bool):  # the Python types as dtypes
        given = Ref("dtype", np.dtype(given.obj).name)
    dtype = dtype_params(lw, {"dtype": given}, node)["dtype"]
    if np.dtype(dtype).kind not in "fiub":
        raise lw.type_error(f"{title}: dtype {dtype} is not supported", node, "np.float64, np.float32, int or bool")
    return dtype


def _converted(lw: "Lowerer", x: Atom, dtype: str | None) -> "Value":
    """``x.astype(dtype)`` (a copy), or ``x`` when ``dtype`` is None or already its dtype."""
    assert isinstance(x.type, Num)
    if dtype is None or dtype == x.type.dtype:
        return x
    kind = np.dtype(dtype).kind
    return lw.emit("astype" if kind == "f" else "astype_discrete", [x], {"dtype": dtype, "scalar": not x.type.shape})


def _run_time_list(v: Any) -> bool:
    return isinstance(v, Var) and isinstance(v.type, ListT)


def _lower_arange(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    given = [b[n] for n in ("start", "stop", "step") if b[n] is not None]
    return lw.emit("arange", [lw.atom(lw.const_or(v), node) for v in given])


def _lower_eye(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    dims = [b["N"]] + ([b["M"]] if b["M"] is not None else [])
    return lw.emit("eye", [lw.atom(lw.const_or(d), node) for d in dims], dtype_params(lw, b, node))


_FUNCTIONS: dict[str, Callable[[str], ApiSpec]] = {
    **{n: elementwise(n) for n in ("exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "abs", "sign", "floor", "ceil",
                                   "trunc", "rint", "isnan")},
    "absolute": elementwise("abs"),
    "negative": _numpy_elementwise("neg"),
    "square": spec("x", _lower_square),
    "maximum": elementwise("maximum", "x1, x2"),
    "minimum": elementwise("minimum", "x1, x2"),
    "power": elementwise("pow", "x1, x2"),
    "add": _numpy_elementwise("add", "x1, x2"),
    "subtract": _numpy_elementwise("sub", "x1, x2"),
    "multiply": _numpy_elementwise("mul", "x1, x2"),
    "divide": _numpy_elementwise("div", "x1, x2"),
    "true_divide": _numpy_elementwise("div", "x1, x2"),
    "floor_divide": _numpy_elementwise("floordiv", "x1, x2"),
    "mod": _numpy_elementwise("mod", "x1, x2"),
    "remainder": _numpy_elementwise("mod", "x1, x2"),
    "fmod": elementwise("fmod", "x1, x2"),
    "where": elementwise("where", "condition, x, y"),
    "clip": elementwise("clip", "a, a_min, a_max"),
    **{n: reduction(n) for n in ("sum", "mean", "max", "min", "prod")},
    "amax": reduction("max"),
    "amin": reduction("min"),
    "matmul": elementwise("matmul", "a, b"),
    "dot": spec("a, b", _lower_dot),
    "outer": elementwise("outer", "a, b"),
    "transpose": spec("a, axes=None", _lower_transpose),
    "reshape": spec("a, shape", _lower_reshape),
    "ravel": elementwise("ravel", "a"),
    "copy": spec("a", _lower_np_copy),
    "expand_dims": static_params("expand_dims", "a, axis", ("a",), ("axis",)),
    "concatenate": sequence("concatenate"),
    "stack": sequence("stack"),
    "diag": static_params("diag", "v, k=0", ("v",), ("k",)),
    "tril": static_params("tril", "m, k=0", ("m",), ("k",)),
    "triu": static_params("triu", "m, k=0", ("m",), ("k",)),
    "zeros": constructor("zeros"),
    "ones": constructor("ones"),
    "zeros_like": like("zeros_like"),
    "ones_like": like("ones_like"),
    "eye": spec("N, M=None, dtype=None", _lower_eye),
    "arange": spec("start, stop=None, step=None", _lower_arange),
    "shape": spec("a", _lower_shape),
    "array": spec("object, dtype=None", _lower_array),
    "asarray": spec("a, dtype=None", _lower_asarray),
}
for _family in _FAMILIES:
    _FUNCTIONS.update(_family.FUNCTIONS)

#: numpy functions by name (``"linalg.norm"`` for ``np.linalg.norm``).
API: dict[str, ApiSpec] = {name: make(f"np.{name}") for name, make in _FUNCTIONS.items()}

_METHODS: dict[str, Callable[[str], ApiSpec]] = {
    **{n: reduction(n) for n in ("sum", "mean", "max", "min", "prod")},
    "dot": spec("a, b", _lower_dot),
    "ravel": elementwise("ravel", "a"),
    "flatten": spec("a", lambda lw, b, node: lw.copy(lw.emit("ravel", [lw.atom(b["a"], node)]))),  # a copy
    "copy": spec("a", _lower_copy),
}
for _family in _FAMILIES:
    _METHODS.update(_family.METHODS)

#: array methods (``x.sum(...)``); the array is bound to the first parameter.
METHODS: dict[str, ApiSpec] = {name: make(f".{name}()") for name, make in _METHODS.items()}


class _VarArgs(ApiSpec):
    """A method taking ``*args`` after the array (``x.reshape(2, 3)``, ``x.transpose(1, 0)``)."""

    def bind(self, args: list, kwargs: dict) -> dict:
        if kwargs:
            raise TypeError("keyword arguments are not supported here")
        first, rest = self.params[0][0], self.params[1][0]
        return {first: args[0], rest: list(args[1:])}


METHODS["reshape"] = _VarArgs(".reshape()", sig("a, shape"), _lower_reshape_method)
METHODS["transpose"] = _VarArgs(".transpose()", sig("a, axes"), _lower_transpose_method)

#: builtins the subset allows.
def _lower_builtin_sum(lw: "Lowerer", b: dict, node: cst.Call) -> "Value":
    """Python's ``sum(xs, start=0)``: ``start + x0 + x1 + ...``, left to right, as Python adds
    (numpy's ``.sum()`` adds pairwise: other roundings).  A list known when transforming: the
    additions (``x0 + x1 + ...`` from a start of 0); a list built at run time: Python's own
    ``sum`` (``py_sum``); an array: summed along its first axis."""
    xs, start = b["iterable"], lw.atom(lw.const_or(b["start"]), node)
    no_start = isinstance(start, Const) and type(start.value) is int and start.value == 0
    if hasattr(xs, "items"):
        if not xs.items:
            return start
        total = lw.atom(xs.items[0], node)
        if not no_start or not (type(total) is Const and type(total.value) in (int, float) and total.value != 0):
            # (from 0, as Python: 0 + -0.0 is 0.0, 0 + True is 1 and 0 + np.True_ + np.True_ is 2, not True)
            total = lw.emit("add", [start, total])
        for x in xs.items[1:]:
            total = lw.emit("add", [total, lw.atom(x, node)])
        return total
    if isinstance(xs, Var) and isinstance(xs.type, ListT):
        elem = xs.type.elem
        if (xs.type.length is None and isinstance(elem, Num) and elem.shape
                and getattr(start.type, "shape", None) != elem.shape):
            raise lw.type_error(f"sum of a list of {elem} whose length is known only when it runs: where it is "
                                f"empty, Python's sum is the start ({start}), not an array of the elements' shape",
                                node, "sum(xs, start) with a start of the elements' shape (sum(xs, np.zeros(...)))")
        return lw.emit("py_sum", [xs] if no_start else [xs, start])
    x = lw.atom(xs, node)
    if isinstance(x.type, Num) and x.type.shape and x.type.shape[0] == 0:
        return start  # (Python adds no row: the start, an int 0 without one)
    if (isinstance(x.type, Num) and len(x.type.shape) > 1 and x.type.shape[0] is None
            and getattr(start.type, "shape", None) != x.type.shape[1:]):
        raise lw.type_error(f"sum of the rows of an array of {x.type}, whose number of rows is known only when it "
                            f"runs: where it has none, Python's sum is the start ({start}), not a row", node,
                            "np.sum(x, axis=0) (a row of zeros where x has no rows), or sum(x, start) with a row start")
    # Python adds the rows left to right (np.sum adds pairwise, and sums small ints as int64)
    return lw.emit("py_sum_rows", [x] if no_start else [x, start])


BUILTINS: dict[Any, ApiSpec] = {
    builtins.len: ApiSpec("len", sig("a"), _lower_len),
    builtins.sum: ApiSpec("sum", sig("iterable, start=0"), _lower_builtin_sum),
    builtins.abs: elementwise("abs")("abs"),
}
for _family in _FAMILIES:
    BUILTINS.update(_family.BUILTINS)


def math_names() -> list[str]:
    """The supported ``math`` functions, as ``math.<name>``."""
    return sorted(spec.title for spec in BUILTINS.values() if spec.title.startswith("math."))


def builtin_spec(obj: Any) -> ApiSpec | None:
    """The spec of a supported builtin (looked up by identity: ``obj`` may be an array)."""
    if len(_BUILTIN_IDS) != len(BUILTINS):
        _BUILTIN_IDS.clear()
        _BUILTIN_IDS.update((id(k), k) for k in BUILTINS)
    key = _BUILTIN_IDS.get(id(obj), _BUILTIN_IDS)
    return BUILTINS.get(key) if key is obj else None


_BUILTIN_IDS: dict[int, Any] = {}  # id -> key of BUILTINS (the keys are kept alive there)


def _numpy_names() -> dict[int, str]:
    names: dict[int, str] = {}
    for name in list(_FUNCTIONS)[::-1]:
        obj = getattr(np, name, None)
        if obj is not None:
            names[id(obj)] = name
    return names


_NAMES = _numpy_names()


def numpy_name(obj: Any) -> str | None:
    """The numpy name of a numpy function object (also ones astad does not support), else None.  A function
    of another numpy module (``np.ma.log``, ``np.emath.sqrt``, ``np.matlib.zeros``) or a ufunc that is not
    numpy's (``scipy.special.log1p``) has a name of its own (``ma.log``), never that of the numpy function it
    is named like: their values differ (masked entries, complex results, matrices)."""
    name = _NAMES.get(id(obj))
    if name is not None:
        return name
    module = getattr(obj, "__module__", None)
    module = module if isinstance(module, str) else ""
    if not isinstance(obj, np.ufunc) and not (callable(obj) and module.startswith("numpy") and not isinstance(obj, type)):
        return None
    title = getattr(obj, "__name__", None)
    title = title if isinstance(title, str) else type(obj).__name__  # (np.test is an object without one)
    for sub in ("linalg", "fft", "random"):
        if getattr(getattr(np, sub), title, None) is obj:
            return f"{sub}.{title}"
    if getattr(np, title, None) is obj:
        return title
    parts = [p for p in module.split(".")[1:] if not p.startswith("_")]
    return f"{parts[0] if parts else 'other'}.{title}"
