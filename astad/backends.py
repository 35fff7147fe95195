"""Array backends: numpy, Dask and CuPy arrays through one generated code.

A function written against ``np.`` is differentiated once per abstract
signature; the signature's *backend* is the kind of array its arguments are
(``"numpy"``, ``"dask"`` or ``"cupy"``: :func:`of_args`), so a Dask call gets its
own derivative, cached beside the numpy one, and numpy arguments keep exactly
today's generated code.

How the generated code reaches the arguments' library: through numpy's own
dispatch protocols (NEP 13 ``__array_ufunc__`` and NEP 18
``__array_function__``), not through ``array-api-compat``'s
``array_namespace``.  The generated code is numpy code (``np.einsum``,
``np.add.at``, ``x.sum(axis=1, keepdims=True)``, ``np.broadcast_to``, ``.T``,
``np.s_``, dtype names): Dask and CuPy implement both protocols, so
``np.exp(x)`` on a Dask array is a Dask array and ``np.sum(x)`` on a CuPy array
runs on the GPU, while the array API standard names and semantics differ
(``concat``, ``pow``, no ``dot``, no ``ufunc.at``, ``.T`` on 2-D only), which
would mean a second printer for every rule, and a numpy fast path that is no
longer the same code.  What the protocols do not dispatch is *creating* an
array from a shape (``np.zeros(shape)``, ``np.ones``, ``np.full``, ``np.eye``;
CuPy also ``np.array``, ``np.arange``): the generated module of a Dask or CuPy
signature imports as ``np`` a namespace (:class:`Namespace`, :func:`namespace`)
that is numpy's but for those, which come from ``dask.array`` or ``cupy``.

In-place updates: numpy and CuPy arrays are mutable, Dask arrays are not
(``np.add(a, b, out=a)`` with a Dask ``out`` and ``a += b`` rebind rather than
write).  :func:`allows_in_place` is the one predicate every pass that writes
into an existing buffer (``t += v``, ``out=``, a scatter deferred into an
accumulator) asks; for Dask the printer writes ``t = a + b`` instead.  An
index assignment ``y[i] = v`` into an array the generated code made itself is
kept: Dask implements it as a new graph bound to the same object, which is the
numpy semantics the printer relies on.

Nothing is converted behind the user's back: the generated code calls no
``np.asarray``, ``float`` or ``.item()`` on an argument's arrays; results of a
Dask signature stay lazy Dask arrays until the user computes them.  Python
control flow on a value (``if x.sum() > 0``, ``while err > tol``) asks Dask for
the boolean, which computes it, as the user's own function does when run on Dask
arrays: that is the meaning of their code, so it is kept, not refused.  A numpy
function that ``dask.array`` does not implement computes its arguments (Dask's
own fallback, with a ``FutureWarning``), as it would in the user's function.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import sys
import types
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np

NUMPY = "numpy"


@dataclass(frozen=True)
class Backend:
    """An array library: the module of its array type, whether its arrays may be
    updated in place, and the functions the generated code takes from it
    rather than from numpy (array creation, which numpy does not dispatch)."""

    name: str
    module: str  # where its array type lives (``module.array_type``)
    array_type: str
    in_place: bool
    creation: tuple[str, ...]


_DASK_CREATION = ("zeros", "ones", "empty", "full", "eye")

BACKENDS: dict[str, Backend] = {
    NUMPY: Backend(NUMPY, "numpy", "ndarray", True, ()),
    "dask": Backend("dask", "dask.array", "Array", False, _DASK_CREATION),
    "cupy": Backend("cupy", "cupy", "ndarray", True,
                    _DASK_CREATION + ("array", "asarray", "arange", "linspace", "tri", "identity")),
}


def array_backend(value: Any) -> str | None:
    """The backend of an array of a library other than numpy (None for anything
    else).  A library not imported yet cannot have made ``value``: nothing is imported here."""
    for b in BACKENDS.values():
        if b.name == NUMPY:
            continue
        module = sys.modules.get(b.module)
        if module is not None and type(value) is getattr(module, b.array_type, None):
            return b.name
    return None


def of_args(args: Any) -> str:
    """The backend of a call: that of its non-numpy arrays (searched in tuples,
    lists and dicts), numpy when it has none.  Two libraries in one call are refused."""
    found: set[str] = set()
    _collect(args, found)
    if len(found) > 1:
        from .errors import AstadTypeError
        raise AstadTypeError(f"the arguments mix arrays of {' and '.join(sorted(found))}: one call runs on one "
                             "array library", hint="convert them to one library first")
    return found.pop() if found else NUMPY


def _collect(value: Any, found: set[str]) -> None:
    t = type(value)
    if t is tuple or t is list or isinstance(value, tuple):
        for v in value:
            _collect(v, found)
    elif isinstance(value, dict):
        for v in value.values():
            _collect(v, found)
    elif t is not np.ndarray:
        b = array_backend(value)
        if b is not None:
            found.add(b)


def array_key(value: Any) -> Any:
    """A cache key of a non-numpy array (its backend, shape and dtype), or None."""
    b = array_backend(value)
    return None if b is None else (b, value.shape, value.dtype.str)


# --------------------------------------------------------------------------- the backend being generated for

_TARGET: contextvars.ContextVar[str] = contextvars.ContextVar("astad_backend", default=NUMPY)


@contextlib.contextmanager
def target(name: str) -> Iterator[None]:
    """Transform for arrays of backend ``name`` meanwhile (codegen asks :func:`current`)."""
    token = _TARGET.set(name)
    try:
        yield
    finally:
        _TARGET.reset(token)


def current() -> str:
    """The backend the code being generated is for (numpy outside :func:`target`)."""
    return _TARGET.get()


def allows_in_place(backend: str | None = None) -> bool:
    """Whether generated code may write into an array it holds (``t += v``,
    ``np.negative(t, out=t)``, ``acc[i] += ct`` deferred into an accumulator):
    true for numpy and CuPy, false for Dask, whose arrays are immutable.  The
    one test every pass that updates in place asks (``backend``: the current one)."""
    return BACKENDS[backend or current()].in_place


def import_line(backend: str | None = None) -> str:
    """The line binding ``np`` in a generated module of ``backend``."""
    name = backend or current()
    return "import numpy as np\n" if name == NUMPY else f"from astad.backends import {name}_numpy as np\n"


# --------------------------------------------------------------------------- namespaces


def _holds(xs: Any, kind: type) -> bool:
    """Whether a list (of lists) ``xs`` holds an array of type ``kind``."""
    return isinstance(xs, kind) or (type(xs) in (list, tuple) and any(_holds(x, kind) for x in xs))


def _dask_array(xs: Any, dtype: Any = None, **kw: Any) -> Any:
    """``np.array(xs)`` on Dask: a list holding Dask arrays (lazy scalars, rows) stacked
    by Dask, never computed; a list of numbers stays a numpy array (an index, say)."""
    import dask.array as da
    return da.array(xs, dtype=dtype, **kw) if _holds(xs, da.Array) else np.array(xs, dtype=dtype, **kw)


class _DaskAdd:
    """``np.add`` on Dask: numpy's ufunc (which dispatches), and ``np.add.at(a, idx, v)``,
    which Dask lacks, for an index of integers along the first axis: ``v`` summed into
    ``a`` by a one-hot product (repeated indices add up, as numpy's), ``a``'s graph
    replaced by the sum (Dask's index assignment; the generated code reads ``a`` after)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return np.add(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(np.add, name)

    @staticmethod
    def at(a: Any, index: Any, values: Any) -> None:
        import dask.array as da
        if not isinstance(a, da.Array):
            return np.add.at(a, index, values)
        idx = np.asarray(index) if isinstance(index, (list, np.ndarray)) else None
        if idx is None or idx.dtype.kind not in "iu" or idx.ndim != 1:
            from .errors import AstadError
            raise AstadError(f"the derivative of indexing a Dask array by {type(index).__name__} {index!r} adds into "
                             "repeated places (np.add.at), which Dask does not implement",
                             hint="index a Dask array along its first axis by a 1-D integer array, or by slices")
        onehot = (idx[:, None] % a.shape[0] == np.arange(a.shape[0])).astype(a.dtype)
        values = da.broadcast_to(values, (len(idx),) + a.shape[1:])
        a[...] = a + da.tensordot(onehot, values, axes=(0, 0))


#: functions of a backend's namespace that are astad's (not the backend module's)
_OWN: dict[str, dict[str, Any]] = {"dask": {"array": _dask_array, "asarray": _dask_array, "add": _DaskAdd()}}


class Namespace(types.ModuleType):
    """numpy, but for the creation functions, taken from the backend's module:
    ``np.zeros(shape)`` makes a Dask (CuPy) array; ``np.sin``, ``np.einsum``,
    ``np.linalg.solve`` are numpy's own, which dispatch on their arguments."""

    def __init__(self, backend: Backend) -> None:
        super().__init__(f"astad.backends.{backend.name}_numpy", f"numpy with {backend.name}'s array creation")
        module = importlib.import_module(backend.module)
        self.__dict__.update({name: getattr(module, name) for name in backend.creation})
        self.__dict__.update(_OWN.get(backend.name, {}))
        self.backend = backend.name

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


_NAMESPACES: dict[str, Namespace] = {}


def namespace(name: str) -> Any:
    """The ``np`` of code generated for backend ``name``."""
    if name == NUMPY:
        return np
    if name not in _NAMESPACES:
        _NAMESPACES[name] = Namespace(BACKENDS[name])
    return _NAMESPACES[name]


def __getattr__(attr: str) -> Any:
    """``astad.backends.dask_numpy``: the namespace, made on first use (Dask imported then)."""
    if attr.endswith("_numpy") and attr[:-len("_numpy")] in BACKENDS:
        return namespace(attr[:-len("_numpy")])
    raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
