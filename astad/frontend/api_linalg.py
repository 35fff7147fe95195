"""The call table's family of `np.linalg` functions (keys "linalg.<name>"): each entry maps a name a user calls
to the primitive(s) it lowers to (see :mod:`.api_specs` for the spec makers).

A decomposition with several results (``eigh``, ``qr``, ``svd``, ``slogdet``) is a tuple of one primitive per part,
with numpy's field names (``np.linalg.eigh(a).eigenvectors``); the parts not used are never computed.  Norms lower to
the ``norm`` entry (ord 2 and other p: exact, with the subgradient 0 at 0) or to reductions (``ord`` 1 and inf: sums and
maxima of ``abs``; the matrix norms 'nuc' and 2: the sum and the maximum of the singular values)."""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import libcst as cst
import numpy as np

from ..ir import Atom, Const, Num, Prim, Var
from ..values import PyTuple
from .api_specs import ApiSpec, atoms, elementwise, spec
from .core import LowererCore as Lowerer
from .scopes import Value


def _static(lw: Lowerer, b: dict, node: cst.Call, name: str) -> Any:
    value = b[name]
    if isinstance(value, str):  # a default: 'L', 'reduced'
        return value
    negated = _negated_constant(lw, value)
    return negated if negated is not None else lw.static(lw.const_or(value), node, name)


def _negated_constant(lw: Lowerer, value: Any) -> float | None:
    """``-c`` of a named float constant (``ord=-np.inf``), which the lowerer keeps as ``neg(np.inf)``."""
    if not isinstance(value, Var):
        return None
    bind = lw.definition_of(value)
    if bind is not None:
        rhs = bind.rhs
        if isinstance(rhs, Prim) and rhs.op == "neg" and isinstance(rhs.args[0], Const) \
                and isinstance(rhs.args[0].value, float):
            return -rhs.args[0].value
    return None


def _refuse_unless(lw: Lowerer, b: dict, node: cst.Call, name: str, allowed: tuple, hint: str) -> Any:
    value = _static(lw, b, node, name)
    if value not in allowed:
        raise lw.type_error(f"`{name}={value!r}` is not supported here", node, hint)
    return value


def _matrix(lw: Lowerer, b: dict, node: cst.Call, name: str = "a") -> Atom:
    (a,) = atoms(lw, b, node, name)
    return a


def _inexact(lw: Lowerer, x: Atom) -> Atom:
    """``x`` as numpy's norms take it: an integer or bool array converted to float64 (np.abs of int8 -128 is -128)."""
    if isinstance(x.type, Num) and np.dtype(x.type.dtype).kind in "biu":
        return lw.emit("astype", [x], {"dtype": "float64", "scalar": not x.type.shape})
    return x


def _int(n: int) -> Const:
    return Const.integer(n)


# --------------------------------------------------------------------------- decompositions


def _lower_eigh(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    a, uplo = _matrix(lw, b, node), _refuse_unless(lw, b, node, "UPLO", ("L", "U"), "UPLO='L' or UPLO='U'")
    parts = (lw.emit("eigvalsh", [a], {"UPLO": uplo}), lw.emit("eigh_vectors", [a], {"UPLO": uplo}))
    return PyTuple(parts, fields=("eigenvalues", "eigenvectors"), cls=_result_class("eigh"))


def _lower_eigvalsh(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    uplo = _refuse_unless(lw, b, node, "UPLO", ("L", "U"), "UPLO='L' or UPLO='U'")
    return lw.emit("eigvalsh", [_matrix(lw, b, node)], {"UPLO": uplo})


def _lower_cholesky(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    _refuse_unless(lw, b, node, "upper", (False,), "np.linalg.cholesky(a).T for the upper factor")
    return lw.emit("cholesky", [_matrix(lw, b, node)])


def _lower_qr(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    mode = _refuse_unless(lw, b, node, "mode", ("reduced", "r"), "mode='reduced' (the default) or mode='r'")
    a = _matrix(lw, b, node)
    if mode == "r":
        return lw.emit("qr_r", [a])
    return PyTuple((lw.emit("qr_q", [a]), lw.emit("qr_r", [a])), fields=("Q", "R"), cls=_result_class("qr"))


def _lower_svd(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    _refuse_unless(lw, b, node, "hermitian", (False,), "leave `hermitian` out")
    a = _matrix(lw, b, node)
    if not _static(lw, b, node, "compute_uv"):
        return lw.emit("svdvals", [a])
    shape = a.type.shape if isinstance(a.type, Num) else ()
    square = len(shape) == 2 and shape[0] is not None and shape[0] == shape[1]
    if _static(lw, b, node, "full_matrices") and not square:
        raise lw.type_error("np.linalg.svd with full_matrices=True of a matrix that is not square is not "
                            "differentiable (the extra singular vectors are not unique)", node,
                            "np.linalg.svd(a, full_matrices=False)")
    parts = (lw.emit("svd_u", [a]), lw.emit("svdvals", [a]), lw.emit("svd_vh", [a]))
    return PyTuple(parts, fields=("U", "S", "Vh"), cls=_result_class("svd"))


def _lower_slogdet(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    a = _matrix(lw, b, node)
    return PyTuple((lw.emit("slogdet_sign", [a]), lw.emit("slogdet_logabsdet", [a])), fields=("sign", "logabsdet"),
                   cls=_result_class("slogdet"))


@functools.cache
def _result_class(name: str) -> Any:
    """The NamedTuple class of ``np.linalg.<name>``'s results (``SlogdetResult``; None where numpy returns a plain
    tuple), so that a function returning one returns one too."""
    cls = type(getattr(np.linalg, name)(np.eye(1)))
    return cls if cls is not tuple and hasattr(cls, "_fields") else None


def _lower_pinv(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    _refuse_unless(lw, b, node, "rcond", (None,), "leave `rcond` out (the derivative is that of a matrix of full rank)")
    _refuse_unless(lw, b, node, "hermitian", (False,), "leave `hermitian` out")
    return lw.emit("pinv", [_matrix(lw, b, node)])


# --------------------------------------------------------------------------- matrix_power, trace


def _lower_matrix_power(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    """``a @ a @ ...`` by repeated squaring (``inv(a)``'s powers for n < 0), so the derivative is that of the products."""
    a, n = _matrix(lw, b, node), _static(lw, b, node, "n")
    if not isinstance(n, int) or isinstance(n, bool):
        raise lw.type_error("np.linalg.matrix_power needs an integer `n` known when transforming", node,
                            "an integer literal or a module-level int")
    shape = a.type.shape if isinstance(a.type, Num) else ()
    if n == 0:
        if len(shape) != 2 or shape[0] is None:
            raise lw.type_error("np.linalg.matrix_power(a, 0) is supported for one matrix of known size", node,
                                "np.eye(n)")
        dtype = a.type.dtype  # type: ignore[union-attr]
        return lw.emit("eye", [_int(shape[0])], {"dtype": dtype} if dtype != "float64" else None)  # (numpy: of a's dtype)
    base = lw.emit("inv", [a]) if n < 0 else a
    result, n = None, abs(n)
    while n:
        if n & 1:
            result = base if result is None else lw.emit("matmul", [result, base])
        n >>= 1
        if n:
            base = lw.emit("matmul", [base, base])
    return result


def _lower_trace(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    if _static(lw, b, node, "dtype") is not None:
        raise lw.type_error("`dtype=` is not supported in np.linalg.trace", node, "leave it out")
    x, offset = _matrix(lw, b, node, "x"), _static(lw, b, node, "offset")
    if not isinstance(x.type, Num) or x.type.ndim != 2:
        raise lw.type_error("np.linalg.trace is supported for one matrix (2-D)", node, "a loop over the stack")
    return lw.emit("sum", [lw.emit("diag", [x], {"k": offset})], {"axis": None, "keepdims": False})


# --------------------------------------------------------------------------- norm


def _reduce(lw: Lowerer, op: str, x: Atom, axis: Any, keepdims: bool) -> Atom:
    return lw.emit(op, [x], {"axis": axis, "keepdims": keepdims})


def _empty_norms_are_zero() -> bool:
    """numpy >= 2.3 gives 0 for the norms that are maxima (vector ord=inf, matrix 1, inf, 2) of an empty array
    (``max(..., initial=0)``); older numpy raises numpy's ValueError, as the plain maximum does."""
    try:
        return float(np.linalg.norm(np.zeros(0), np.inf)) == 0.0
    except ValueError:
        return False


_EMPTY_NORMS_ARE_ZERO = _empty_norms_are_zero()


def _max_or_zero(lw: Lowerer, x: Atom, axis: Any, keepdims: bool) -> Atom:
    """The maximum of ``x >= 0`` over ``axis`` as numpy's norms take it (see above): where a reduced axis may be
    empty, a zero is put before ``x`` along it (the maximum of entries >= 0 is unchanged; of none it is 0)."""
    t = x.type
    assert isinstance(t, Num)
    axes = range(t.ndim) if axis is None else axis if isinstance(axis, tuple) else (axis,)
    empty = {a % t.ndim for a in axes if t.shape[a % t.ndim] in (0, None)}
    if _EMPTY_NORMS_ARE_ZERO and empty:
        width = tuple((1, 0) if i in empty else (0, 0) for i in range(t.ndim))
        x = lw.emit("pad", [x], {"pad_width": width, "mode": "constant"})
    return _reduce(lw, "max", x, axis, keepdims)


def _vector_norm(lw: Lowerer, x: Atom, order: Any, axis: Any, keep: bool, node: cst.Call) -> Atom:
    if order is None or order == 2:
        return lw.emit("norm", [x], {"ord": 2, "axis": axis, "keepdims": keep})
    if isinstance(order, str) or isinstance(order, bool) or not isinstance(order, (int, float)):
        raise lw.type_error(f"np.linalg.norm: ord={order!r} is not a vector norm", node, "ord=1, 2, np.inf or a number p")
    if order == 0:
        raise lw.type_error("np.linalg.norm with ord=0 (the number of non-zero entries) is not supported", node,
                            "np.sum(x != 0)")
    if order == 1:
        return _reduce(lw, "sum", lw.emit("abs", [x]), axis, keep)
    if math.isinf(order):
        if order > 0:
            return _max_or_zero(lw, lw.emit("abs", [x]), axis, keep)
        return _reduce(lw, "min", lw.emit("abs", [x]), axis, keep)
    return lw.emit("norm", [x], {"ord": order, "axis": axis, "keepdims": keep})


def _matrix_norm(lw: Lowerer, x: Atom, order: Any, axes: tuple[int, int], keep: bool, node: cst.Call) -> Atom:
    row, col = axes
    if order is None or order == "fro":
        return lw.emit("norm", [x], {"ord": 2, "axis": axes, "keepdims": keep})
    if order in (1, -1, math.inf, -math.inf) and not isinstance(order, bool):
        summed = _reduce(lw, "sum", lw.emit("abs", [x]), row if abs(order) == 1 else col, True)
        return _max_or_zero(lw, summed, axes, keep) if order > 0 else _reduce(lw, "min", summed, axes, keep)
    if order in ("nuc", 2, -2) and not isinstance(order, bool):
        if x.type.ndim != 2:  # type: ignore[union-attr]
            raise lw.type_error(f"np.linalg.norm with ord={order!r} is supported for one matrix (2-D)", node,
                                "a loop over the stack of matrices")
        s = lw.emit("svdvals", [x])
        total = _max_or_zero(lw, s, None, False) if order == 2 else _reduce(lw, {"nuc": "sum", -2: "min"}[order], s, None, False)
        return lw.emit("reshape", [total, _int(1), _int(1)]) if keep else total
    raise lw.type_error(f"np.linalg.norm: ord={order!r} is not a matrix norm", node, "'fro', 'nuc', 1, -1, 2, -2, np.inf")


def _lower_norm(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    x = _inexact(lw, _matrix(lw, b, node, "x"))
    order, axis, keep = (_static(lw, b, node, k) for k in ("ord", "axis", "keepdims"))
    ndim = x.type.ndim if isinstance(x.type, Num) else 0
    keep = bool(keep)
    if axis is None and (order is None or (order == "fro" and ndim == 2)):  # (numpy: sqrt(x.ravel() @ x.ravel()),
        return lw.emit("norm", [x], {"ord": 2, "axis": None, "keepdims": keep})  # not a sum over the axes)
    if axis is None and ndim == 1:
        return _vector_norm(lw, x, order, None, keep, node)
    if axis is None and ndim == 2:
        axis = (0, 1)
    if isinstance(axis, int) and not isinstance(axis, bool):
        return _vector_norm(lw, x, order, axis, keep, node)
    if isinstance(axis, tuple) and len(axis) == 2 and all(-ndim <= a < ndim for a in axis) and axis[0] % ndim != axis[1] % ndim:
        return _matrix_norm(lw, x, order, (axis[0] % ndim, axis[1] % ndim), keep, node)
    raise lw.type_error(f"np.linalg.norm of an array of {ndim} dimensions with axis={axis!r}", node,
                        "axis=None for a vector or a matrix, an int for vector norms, a pair of axes for matrix norms")


def _lower_vector_norm(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    """numpy 2's ``np.linalg.vector_norm``: over all entries when ``axis`` is None, whatever the dimensions."""
    x = _inexact(lw, _matrix(lw, b, node, "x"))
    order, axis, keep = (_static(lw, b, node, k) for k in ("ord", "axis", "keepdims"))
    ndim = x.type.ndim if isinstance(x.type, Num) else 0
    if isinstance(axis, tuple) and order != 2:
        raise lw.type_error("np.linalg.vector_norm over several axes is supported for ord=2", node,
                            "move the axes together and reshape them into one")
    if axis is None and ndim > 1 and order != 2:
        flat = _vector_norm(lw, lw.emit("ravel", [x]), order, 0, False, node)
        return lw.emit("reshape", [flat, *[_int(1)] * ndim]) if keep else flat
    return _vector_norm(lw, x, order, axis, bool(keep), node)


def _lower_matrix_norm(lw: Lowerer, b: dict, node: cst.Call) -> Value:
    """numpy 2's ``np.linalg.matrix_norm``: over the last two axes."""
    x = _inexact(lw, _matrix(lw, b, node, "x"))
    ndim = x.type.ndim if isinstance(x.type, Num) else 0
    if ndim < 2:
        raise lw.type_error("np.linalg.matrix_norm needs a matrix", node, "np.linalg.vector_norm for a vector")
    order, keep = _static(lw, b, node, "ord"), bool(_static(lw, b, node, "keepdims"))
    return _matrix_norm(lw, x, order, (ndim - 2, ndim - 1), keep, node)


#: numpy functions by name (as ``np.<name>``), merged into ``numpy_api.API``
FUNCTIONS: dict[str, Callable[[str], ApiSpec]] = {
    "linalg.inv": elementwise("inv", "a"),
    "linalg.det": elementwise("det", "a"),
    "linalg.solve": elementwise("solve", "a, b"),
    "linalg.slogdet": spec("a", _lower_slogdet),
    "linalg.pinv": spec("a, rcond=None, hermitian=False", _lower_pinv),
    "linalg.cholesky": spec("a, upper=False", _lower_cholesky),
    "linalg.eigh": spec("a, UPLO='L'", _lower_eigh),
    "linalg.eigvalsh": spec("a, UPLO='L'", _lower_eigvalsh),
    "linalg.qr": spec("a, mode='reduced'", _lower_qr),
    "linalg.svd": spec("a, full_matrices=True, compute_uv=True, hermitian=False", _lower_svd),
    "linalg.matrix_power": spec("a, n", _lower_matrix_power),
    "linalg.norm": spec("x, ord=None, axis=None, keepdims=False", _lower_norm),
}
if hasattr(np.linalg, "svdvals"):  # numpy >= 2
    FUNCTIONS["linalg.svdvals"] = spec("x", lambda lw, b, node: lw.emit("svdvals", [_matrix(lw, b, node, "x")]))
if hasattr(np.linalg, "vector_norm"):
    FUNCTIONS["linalg.vector_norm"] = spec("x, axis=None, keepdims=False, ord=2", _lower_vector_norm)
    FUNCTIONS["linalg.matrix_norm"] = spec("x, keepdims=False, ord='fro'", _lower_matrix_norm)
if hasattr(np.linalg, "trace"):
    FUNCTIONS["linalg.trace"] = spec("x, offset=0, dtype=None", _lower_trace)
#: array methods by name (``x.<name>()``), merged into ``numpy_api.METHODS``
METHODS: dict[str, Callable[[str], ApiSpec]] = {}
#: builtins by object (looked up by identity), merged into ``numpy_api.BUILTINS``
BUILTINS: dict[Any, ApiSpec] = {}
