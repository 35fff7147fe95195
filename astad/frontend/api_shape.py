"""The call table's family of shape and structure functions, joins, splits, constructors: each entry maps a name a user calls
to the primitive(s) it lowers to (see :mod:`.api_specs` for the spec makers).

Some lower to primitives that exist: ``swapaxes``/``moveaxis`` to ``transpose``,
``atleast_*`` to ``expand_dims``, ``hstack``/``vstack``/``column_stack``/``dstack``
to ``concatenate``, the splits to slices (a list of ``x[a:b]``), ``meshgrid`` to
``reshape`` and ``broadcast_to``, ``identity`` to ``eye``; the others have entries
of their own (rules/einsum.py, rules/structure.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import libcst as cst
import numpy as np

from ..errors import AstadTypeError
from ..ir import Atom, Const, ListT, Num, TupleT, Var
from ..values import PyTuple, Ref
from .abstract import literal_type
from .api_specs import ApiSpec, Lower, arrays_of_numbers, atoms, dtype_params, elementwise, sig, spec
from .core import LowererCore as Lowerer
from .scopes import Value

ALL = ("slice", None, None, None)


@dataclass(frozen=True)
class StarArgs(ApiSpec):
    """numpy's ``f(fixed..., *rest, key=default, ...)``: the positional arguments
    after the first ``fixed`` are gathered in the list named by the next parameter."""

    fixed: int = 0

    def bind(self, args: list, kwargs: dict) -> dict:
        names = [n for n, _ in self.params]
        star, keys = names[self.fixed], names[self.fixed + 1:]
        if len(args) < self.fixed:
            raise TypeError(f"missing argument `{names[len(args)]}`")
        bound: dict = dict(zip(names, args[:self.fixed]))
        bound[star] = list(args[self.fixed:])
        for k, v in kwargs.items():
            if k not in keys:
                raise TypeError(f"unsupported keyword argument `{k}` (supported: {', '.join(keys)})")
            bound[k] = v
        for n, default in self.params[self.fixed + 1:]:
            bound.setdefault(n, default)
        return bound


def star(signature: str, lower: Lower, fixed: int = 0) -> Callable[[str], ApiSpec]:
    return lambda title: StarArgs(title, sig(signature), lower, fixed)


def _static(lw: Lowerer, b: dict, node: cst.Call, name: str) -> Any:
    if isinstance(b[name], str):  # a default of the signature table ('raise', 'xy')
        return b[name]
    return lw.static(lw.const_or(b[name]), node, name)


def _array(lw: Lowerer, value: Value, node: cst.Call) -> Atom:
    """An argument as an atom; a list or tuple of numbers (``[0, 2]``) as an array."""
    if isinstance(value, PyTuple):
        return lw.emit("stack", [lw.atom(v, node) for v in value.items], {"axis": 0})
    return lw.atom(lw.const_or(value), node)


def _ndim(x: Atom) -> int:
    return x.type.ndim if isinstance(x.type, Num) else 0


def _shape_const(dims: tuple) -> Const:
    return Const.literal(dims, TupleT(tuple(literal_type(d) for d in dims)))


def _axis(lw: Lowerer, axis: Any, ndim: int, node: cst.Call) -> int:
    if not isinstance(axis, int) or not -ndim <= axis < ndim:
        raise lw.type_error(f"axis {axis!r} is out of bounds for an array of dimension {ndim}", node)
    return axis % max(ndim, 1)


# --------------------------------------------------------------------------- contractions


def _lower_einsum(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    subscripts = b["subscripts"]
    if not (isinstance(subscripts, Ref) and subscripts.kind == "string"):
        raise lw.type_error("np.einsum needs its subscripts as a string first", node,
                            "np.einsum('ij,jk->ik', a, b) (the form with lists of axis numbers is not supported)")
    optimize = _static(lw, b, node, "optimize")
    params = {"subscripts": subscripts.obj, **({"optimize": optimize} if optimize else {})}
    return lw.emit("einsum", [lw.atom(lw.const_or(v), node) for v in b["operands"]], params)


def _lower_tensordot(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    axes = _static(lw, b, node, "axes")
    if isinstance(axes, tuple):
        axes = tuple(a if isinstance(a, int) else tuple(a) for a in axes)
    return lw.emit("tensordot", atoms(lw, b, node, "a", "b"), {"axes": axes})


def _lower_inner(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x, y = arrays_of_numbers(lw, atoms(lw, b, node, "a", "b"))
    return lw.emit("mul" if 0 in (_ndim(x), _ndim(y)) else "inner", [x, y])


# --------------------------------------------------------------------------- movers


def _lower_transpose_to(lw: Lowerer, x: Atom, perm: list[int]) -> Value:
    return x if perm == sorted(perm) else lw.emit("transpose", [x], {"axes": tuple(perm)})


def _lower_swapaxes(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x = lw.atom(b["a"], node)
    nd = _ndim(x)
    i, j = (_axis(lw, _static(lw, b, node, n), nd, node) for n in ("axis1", "axis2"))
    perm = list(range(nd))
    perm[i], perm[j] = perm[j], perm[i]
    return _lower_transpose_to(lw, x, perm)


def zero_d(lw: Lowerer, x: Atom, node: cst.Call, what: str,
           hint: str = "the number itself, or the same of np.float64(x) (a numpy scalar)") -> None:
    """Refuse numpy's ``what`` of a Python number: a 0-d array (of a numpy scalar, for a mover, the scalar)."""
    if isinstance(x.type, Num) and x.type.ndim == 0 and x.type.py:
        raise lw.type_error(f"{what} of a Python number (a 0-d array) is not supported", node, hint)


def _lower_moveaxis(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x = lw.atom(b["a"], node)
    zero_d(lw, x, node, "np.moveaxis")
    nd = _ndim(x)
    src, dst = (_static(lw, b, node, n) for n in ("source", "destination"))
    src, dst = ((s,) if isinstance(s, int) else tuple(s) for s in (src, dst))
    if len(src) != len(dst):
        raise lw.type_error("np.moveaxis: `source` and `destination` must have the same number of elements", node)
    src, dst = [_axis(lw, a, nd, node) for a in src], [_axis(lw, a, nd, node) for a in dst]
    for name, axes in (("source", src), ("destination", dst)):
        if len(set(axes)) != len(axes):
            raise lw.type_error(f"np.moveaxis: repeated axis in `{name}` argument", node)
    perm = [i for i in range(nd) if i not in src]
    for d, s in sorted(zip(dst, src)):
        perm.insert(d, s)
    return _lower_transpose_to(lw, x, perm)


def _lower_flip(axis: Any = "given", least: int = 0) -> Lower:
    def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
        x = lw.atom(b["m"], node)
        if _ndim(x) < least:
            raise lw.type_error(f"{'np.fliplr' if least == 2 else 'np.flipud'} needs an array of at least {least} dimension(s)", node)
        ax = _static(lw, b, node, "axis") if axis == "given" else axis
        return lw.emit("flip", [x], {"axis": tuple(ax) if isinstance(ax, list) else ax})

    return lower


def _lower_roll(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    shift, axis = _static(lw, b, node, "shift"), _static(lw, b, node, "axis")
    if isinstance(shift, tuple) != isinstance(axis, tuple) or (isinstance(shift, tuple) and len(shift) != len(axis)):
        raise lw.type_error("np.roll: give one shift per axis", node, "np.roll(x, (1, 2), axis=(0, 1))")
    return lw.emit("roll", atoms(lw, b, node, "a"), {"shift": shift, "axis": axis})


def _lower_squeeze(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    return lw.emit("squeeze", atoms(lw, b, node, "a"), {"axis": _static(lw, b, node, "axis")})


def _lower_broadcast_to(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    shape = _static(lw, b, node, "shape")
    dims = (shape,) if isinstance(shape, int) else tuple(shape)
    return lw.emit("broadcast_to", [lw.atom(b["array"], node), _shape_const(dims)])


_ATLEAST = {  # ndim -> the axes atleast_kd inserts
    1: {0: (0,)},
    2: {0: (0, 1), 1: (0,)},
    3: {0: (0, 1, 2), 1: (0, 2), 2: (2,)},
}


def atleast(lw: Lowerer, x: Atom, k: int) -> Atom:
    axes = _ATLEAST[k].get(_ndim(x))
    if axes is None:
        return x
    return lw.emit("expand_dims", [x], {"axis": axes if len(axes) > 1 else axes[0]})


def _lower_atleast(k: int) -> Lower:
    def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
        out = [atleast(lw, lw.atom(lw.const_or(v), node), k) for v in b["arys"]]
        if not out:
            raise lw.type_error(f"np.atleast_{k}d needs at least one array", node)
        return out[0] if len(out) == 1 else PyTuple(tuple(out))

    return lower


# --------------------------------------------------------------------------- repeats and gathers


def _lower_tile(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    reps = _static(lw, b, node, "reps")
    return lw.emit("tile", atoms(lw, b, node, "A"), {"reps": reps})


def _lower_repeat(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x, axis = lw.atom(b["a"], node), _static(lw, b, node, "axis")
    r = _array(lw, b["repeats"], node)
    t = r.type
    if not (isinstance(t, Num) and np.dtype(t.dtype).kind in "iu"):
        raise lw.type_error("np.repeat needs an int or an array of ints as `repeats`", node)
    known = r.value if isinstance(r, Const) else t.value
    if not t.shape and isinstance(known, int):
        return lw.emit("repeat", [x], {"repeats": known, "axis": axis})
    return lw.emit("repeat", [x, r], {"axis": axis})


def _lower_take(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    for name, default in (("out", None), ("mode", "raise")):
        if _static(lw, b, node, name) != default:
            raise lw.type_error(f"np.take: `{name}=` is not supported", node, "leave it out (mode='raise', no out)")
    x, idx = lw.atom(b["a"], node), _array(lw, b["indices"], node)
    return lw.emit("take", [x, idx], {"axis": _static(lw, b, node, "axis")})


def _lower_take_along_axis(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x, idx = lw.atom(b["arr"], node), _array(lw, b["indices"], node)
    return lw.emit("take_along_axis", [x, idx], {"axis": _static(lw, b, node, "axis")})


def _lower_pad(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    mode = _static(lw, b, node, "mode")
    width = _static(lw, b, node, "pad_width")
    x = lw.atom(b["array"], node)
    c = lw.atom(lw.const_or(b["constant_values"]), node)
    zero = isinstance(c, Const) and c.name is None and c.value == 0
    if mode == "edge":
        if not zero:
            raise lw.type_error("np.pad: `constant_values` goes with mode='constant'", node)
        return lw.emit("pad", [x], {"pad_width": width, "mode": "edge"})
    if mode != "constant":
        raise lw.type_error(f"np.pad: mode={mode!r} is not supported", node, "mode='constant' or mode='edge'")
    return lw.emit("pad", [x] if zero else [x, c], {"pad_width": width, "mode": "constant"})


# --------------------------------------------------------------------------- joins and splits


def _items(lw: Lowerer, b: dict, node: cst.Call, name: str) -> list[Atom] | Var:
    seq = b[name]
    if isinstance(seq, Var) and isinstance(seq.type, ListT):
        return seq
    if not isinstance(seq, PyTuple) or not seq.items:
        raise lw.type_error(f"{node_name(node)} needs a non-empty list or tuple of arrays", node)
    return [lw.atom(lw.const_or(v), node) for v in seq.items]


def node_name(node: cst.Call) -> str:
    f = node.func
    return f"np.{f.attr.value}" if isinstance(f, cst.Attribute) else "this function"


def _join(k: int, axis_of: Callable[[int], int], list_op: Callable[[int], tuple[str, int] | None]) -> Lower:
    """Make each array at least ``k``-dimensional, then concatenate along ``axis_of(ndim)``;
    a run-time list by ``list_op(ndim of its elements)`` (None: not supported)."""

    def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
        xs = _items(lw, b, node, "tup")
        if isinstance(xs, Var):
            elem = xs.type.elem  # type: ignore[union-attr]
            how = list_op(elem.ndim) if isinstance(elem, Num) else None
            if how is None:
                raise lw.type_error(f"{node_name(node)} of a list built at run time is not supported for these elements",
                                    node, "np.concatenate(xs, axis=...) or np.stack(xs, axis=...)")
            return lw.emit(how[0], [xs], {"axis": how[1]})
        xs = [atleast(lw, x, k) for x in xs]
        return lw.emit("concatenate", xs, {"axis": axis_of(_ndim(xs[0]))})

    return lower


def _column(lw: Lowerer, x: Atom) -> Atom:
    if _ndim(x) >= 2:
        return x
    return lw.emit("expand_dims", [x], {"axis": (0, 1) if _ndim(x) == 0 else 1})


def _lower_column_stack(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    xs = _items(lw, b, node, "tup")
    if isinstance(xs, Var):
        return _join(2, lambda nd: 1, lambda nd: ("stack_list", 1) if nd == 1 else ("concatenate_list", 1) if nd == 2 else None)(lw, b, node)
    return lw.emit("concatenate", [_column(lw, x) for x in xs], {"axis": 1})


def _split(even: bool, axis_for: Callable[[int], int | None] | None = None) -> Lower:
    """A list of slices ``x[a:b]`` along the axis: ``sections`` equal parts (or, not
    ``even``, parts whose sizes differ by at most one), or cut at the given indices."""

    def lower(lw: Lowerer, b: dict, node: cst.Call) -> Value:
        x = lw.atom(b["ary"], node)
        nd = _ndim(x)
        axis = _static(lw, b, node, "axis") if axis_for is None else axis_for(nd)
        if axis is None or nd == 0:
            raise lw.type_error(f"{node_name(node)} needs an array of more dimensions", node)
        axis = _axis(lw, axis, nd, node)
        n = x.type.shape[axis]  # type: ignore[union-attr]
        if n is None:
            raise lw.type_error(f"{node_name(node)}: the size along axis {axis} must be known when transforming", node)
        cut = _static(lw, b, node, "indices_or_sections")
        if isinstance(cut, int):
            if cut <= 0 or (even and n % cut):
                raise lw.type_error(f"{node_name(node)}: {n} entries do not split into {cut} equal parts", node,
                                    "np.array_split for parts of unequal sizes")
            q, r = divmod(n, cut)
            bounds = [0]
            for i in range(cut):
                bounds.append(bounds[-1] + q + (i < r))
        else:
            bounds = [0, *cut, n]
        parts = []
        for start, stop in zip(bounds, bounds[1:]):
            s = ("slice", start or None, None if stop == n else stop, None)
            parts.append(lw.emit("getitem", [x], {"index": (ALL,) * axis + (s,)}))
        return lw.new_list(tuple(parts))  # a new list (of views of x)

    return lower


# --------------------------------------------------------------------------- constants


def _static_dims(lw: Lowerer, shape: Value, node: cst.Call) -> tuple | None:
    try:
        dims = lw.static(lw.const_or(shape), node, "shape")
    except AstadTypeError:  # a run-time size: not a static shape
        return None
    return (dims,) if isinstance(dims, int) else tuple(dims)


def _lower_full(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    fill = lw.atom(lw.const_or(b["fill_value"]), node)
    dims = _static_dims(lw, b["shape"], node)
    if dims is None:
        raise lw.type_error("np.full: the shape must be known when transforming", node, "v * np.ones(n)")
    return _full(lw, fill, _shape_const(dims), dtype_params(lw, b, node))


def _full(lw: Lowerer, fill: Atom, shape: Atom, params: dict) -> Value:
    """``np.full(shape, fill, dtype)``; the code prints no ``dtype=np.float64`` (a Python float's), so a fill of
    another dtype is made a float64 first (np.full_like(x64, True) is 1.0, not True)."""
    if params.get("dtype") == "float64" and isinstance(fill.type, Num) and fill.type.dtype != "float64":
        fill = lw.emit("convert_float", [fill], {"dtype": "float64", "py": False})
    return lw.emit("full", [fill, shape], params)


def _lower_full_like(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x, fill = lw.atom(b["a"], node), lw.atom(lw.const_or(b["fill_value"]), node)
    t = x.type
    if not (isinstance(t, Num) and t.known_shape):
        raise lw.type_error("np.full_like: the shape must be known when transforming", node, "v * np.ones_like(x)")
    return _full(lw, fill, _shape_const(tuple(t.shape)), dtype_params(lw, b, node) or {"dtype": t.dtype})


def _lower_linspace(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    for name, default in (("retstep", False), ("axis", 0)):
        if _static(lw, b, node, name) != default:
            raise lw.type_error(f"np.linspace: `{name}=` is not supported", node, "leave it out")
    dtype = dtype_params(lw, b, node).get("dtype")
    if dtype not in (None, "float64"):
        raise lw.type_error("np.linspace: only float64 results are supported", node, "leave `dtype` out")
    num = _static(lw, b, node, "num")
    if not isinstance(num, int) or num < 0:
        raise lw.type_error("np.linspace: `num` must be a non-negative int known when transforming", node)
    return lw.emit("linspace", atoms(lw, b, node, "start", "stop"), {"num": num, "endpoint": bool(_static(lw, b, node, "endpoint"))})


def _lower_meshgrid(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    indexing, sparse, copy = (_static(lw, b, node, n) for n in ("indexing", "sparse", "copy"))
    if indexing not in ("xy", "ij"):
        raise lw.type_error(f"np.meshgrid: indexing={indexing!r} is neither 'xy' nor 'ij'", node)
    xs = [lw.atom(lw.const_or(v), node) for v in b["xi"]]
    xs = [x if _ndim(x) == 1 else lw.emit("ravel", [x]) for x in xs]
    sizes = [x.type.shape[0] for x in xs]  # type: ignore[union-attr]
    if None in sizes:
        raise lw.type_error("np.meshgrid: the sizes must be known when transforming", node)
    where = list(range(len(xs)))
    if indexing == "xy" and len(xs) > 1:
        where[0], where[1] = 1, 0
    shape = [0] * len(xs)
    for i, w in enumerate(where):
        shape[w] = sizes[i]
    out = []
    for i, x in enumerate(xs):
        dims = [1] * len(xs)
        dims[where[i]] = sizes[i]
        v = x if len(xs) == 1 else lw.emit("reshape", [x, *[Const.literal(d, literal_type(d)) for d in dims]])
        if not sparse and len(xs) > 1:
            v = lw.emit("broadcast_to", [v, _shape_const(tuple(shape))])
        out.append(lw.copy(v) if copy else v)
    return PyTuple(tuple(out))


def _float_only(lw: Lowerer, b: dict, node: cst.Call) -> None:
    if dtype_params(lw, b, node).get("dtype") not in (None, "float64"):
        raise lw.type_error(f"{node_name(node)}: only float64 is supported", node, "leave `dtype` out")


def _lower_tri(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    _float_only(lw, b, node)
    dims = [lw.atom(lw.const_or(b[n]), node) for n in ("N", "M") if b[n] is not None]
    return lw.emit("tri", dims, {"k": _static(lw, b, node, "k")})


def _lower_identity(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    return lw.emit("eye", [lw.atom(lw.const_or(b["n"]), node)], dtype_params(lw, b, node))


#: numpy functions by name (as ``np.<name>``), merged into ``numpy_api.API``
FUNCTIONS: dict[str, Callable[[str], ApiSpec]] = {
    "einsum": star("subscripts, operands, optimize=False", _lower_einsum, fixed=1),
    "tensordot": spec("a, b, axes=2", _lower_tensordot),
    "inner": spec("a, b", _lower_inner),
    "vdot": elementwise("vdot", "a, b"),
    "kron": elementwise("kron", "a, b"),
    "swapaxes": spec("a, axis1, axis2", _lower_swapaxes),
    "moveaxis": spec("a, source, destination", _lower_moveaxis),
    "flip": spec("m, axis=None", _lower_flip()),
    "fliplr": spec("m", _lower_flip(1, 2)),
    "flipud": spec("m", _lower_flip(0, 1)),
    "roll": spec("a, shift, axis=None", _lower_roll),
    "squeeze": spec("a, axis=None", _lower_squeeze),
    "broadcast_to": spec("array, shape", _lower_broadcast_to),
    "atleast_1d": star("arys", _lower_atleast(1)),
    "atleast_2d": star("arys", _lower_atleast(2)),
    "atleast_3d": star("arys", _lower_atleast(3)),
    "tile": spec("A, reps", _lower_tile),
    "repeat": spec("a, repeats, axis=None", _lower_repeat),
    "take": spec("a, indices, axis=None, out=None, mode='raise'", _lower_take),
    "take_along_axis": spec("arr, indices, axis=-1", _lower_take_along_axis),
    "pad": spec("array, pad_width, mode='constant', constant_values=0", _lower_pad),
    "hstack": spec("tup", _join(1, lambda nd: 0 if nd == 1 else 1,
                                lambda nd: ("concatenate_list", 0 if nd == 1 else 1) if nd else None)),
    "vstack": spec("tup", _join(2, lambda nd: 0, lambda nd: ("stack_list", 0) if nd == 1 else ("concatenate_list", 0) if nd else None)),
    "dstack": spec("tup", _join(3, lambda nd: 2, lambda nd: None)),
    "column_stack": spec("tup", _lower_column_stack),
    "split": spec("ary, indices_or_sections, axis=0", _split(True)),
    "array_split": spec("ary, indices_or_sections, axis=0", _split(False)),
    "hsplit": spec("ary, indices_or_sections", _split(True, lambda nd: 1 if nd > 1 else 0)),
    "vsplit": spec("ary, indices_or_sections", _split(True, lambda nd: 0 if nd > 1 else None)),
    "dsplit": spec("ary, indices_or_sections", _split(True, lambda nd: 2 if nd > 2 else None)),
    "full": spec("shape, fill_value, dtype=None", _lower_full),
    "full_like": spec("a, fill_value, dtype=None", _lower_full_like),
    "linspace": spec("start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0", _lower_linspace),
    "meshgrid": star("xi, copy=True, sparse=False, indexing='xy'", _lower_meshgrid),
    "tri": spec("N, M=None, k=0, dtype=None", _lower_tri),
    "identity": spec("n, dtype=None", _lower_identity),
}
#: array methods by name (``x.<name>()``), merged into ``numpy_api.METHODS``
METHODS: dict[str, Callable[[str], ApiSpec]] = {
    "squeeze": FUNCTIONS["squeeze"],
    "repeat": FUNCTIONS["repeat"],
    "swapaxes": FUNCTIONS["swapaxes"],
    "take": FUNCTIONS["take"],
}
#: builtins by object (looked up by identity), merged into ``numpy_api.BUILTINS``
BUILTINS: dict[Any, ApiSpec] = {}
