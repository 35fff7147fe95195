"""Abstract types: of a run-time argument (part of the cache key) and of a
Python literal.
"""

from __future__ import annotations

import collections
import functools
import inspect
from typing import Any

import numpy as np

from .. import backends
from ..errors import AstadTypeError
from ..ir import BOOL, FLOAT, INT, Num, NoneT, StructT, Type


#: numpy's scalar types of a float, int or bool dtype (an argument of one has that dtype)
_NUMPY_SCALARS = frozenset(t for t in set(np.sctypeDict.values())
                           if issubclass(t, np.generic) and np.dtype(t).kind in "fbiu")


#: numpy's complex scalar types (refused: complex numbers are not supported)
_COMPLEX_SCALARS = frozenset(t for t in set(np.sctypeDict.values()) if issubclass(t, np.complexfloating))


#: array types astad runs like np.ndarray (np.memmap only adds where the memory is); any other
#: subclass may change what operators do (np.matrix: `*` is a matrix product; masked arrays skip
#: masked entries), so it is refused rather than differentiated as an ndarray
_ARRAY_TYPES = (np.ndarray, np.memmap)


#: dict types read like dict (an OrderedDict's order is its keys' order, as dict's)
_DICT_TYPES = (dict, collections.OrderedDict)


def abstract(value: Any, what: str) -> Type:
    """The abstract type of a run-time argument value (part of the cache key).
    Exact types only: a subclass of int, float, ndarray, tuple or dict may
    change what its operators do, which the generated code would not do.  (``issubclass`` of the type,
    not ``isinstance``, which asks an object's ``__class__``: a property that may raise.)"""
    t = type(value)
    if t is tuple or t is list or t in _DICT_TYPES or (issubclass(t, tuple) and hasattr(t, "_fields")):
        return _abstract_struct(value, what)
    if t is bool:
        return BOOL
    if t is int:
        return INT
    if t is float:
        return FLOAT
    if value is None:  # (a `mask=None` argument: `mask is None` is known when transforming, as in tests/test_is_none.py)
        return NoneT()
    if (t in _ARRAY_TYPES or t in _NUMPY_SCALARS) and value.dtype.kind in "fbiu":
        return Num(tuple(int(d) for d in value.shape), _dtype_name(value.dtype))
    if backends.array_backend(value) is not None:  # a Dask or CuPy array: its backend is the signature's
        return _backend_array(value, what)
    base = next((b for b in (bool, int, float, np.ndarray, tuple, list, dict) if issubclass(t, b)), None)
    if base is not None and t not in _ARRAY_TYPES and t not in _NUMPY_SCALARS:
        plain = {np.ndarray: "np.asarray(x)", tuple: "tuple(x)", list: "list(x)", dict: "dict(x)"}.get(
            base, f"{base.__name__}(x)")
        raise AstadTypeError(
            f"{what} is a {t.__name__}, a subclass of {base.__name__}: astad runs it as a plain {base.__name__}, "
            "which its own operators and methods may not be (np.matrix multiplies with *, masked arrays skip "
            "masked entries)", hint=f"pass a plain {base.__name__}: {plain}")
    if t is complex or ((t in _ARRAY_TYPES or t in _COMPLEX_SCALARS) and value.dtype.kind == "c"):
        of = f"a numpy array of dtype {value.dtype}" if t in _ARRAY_TYPES else f"a {t.__name__}"
        raise AstadTypeError(f"{what} is {of}: complex numbers are not supported (astad differentiates real "
                             "floats)", hint="real arguments: the real and imaginary parts as two float arrays "
                             "(x.real, x.imag)")
    of = f" of dtype {value.dtype}" if t in _ARRAY_TYPES else ""
    raise AstadTypeError(
        f"{what} is a {t.__name__}{of}; astad differentiates functions of floats, ints and numpy arrays "
        "(or Dask and CuPy arrays)", hint="float, int, bool, None, or a numpy array of a float, int or bool dtype")


#: a dtype's name by the dtype (numpy computes ``dtype.name`` anew each time, ~10 µs: a tree of 256
#: leaves read it 256 times)
_DTYPE_NAMES: dict[np.dtype, str] = {}


def _dtype_name(dtype: np.dtype) -> str:
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = dtype.name
    return name


def _backend_array(value: Any, what: str) -> Num:
    """A Dask or CuPy array: a Num of its shape and dtype, as a numpy array's."""
    if any(d != d for d in value.shape):  # nan: a Dask array whose chunk sizes are unknown
        raise AstadTypeError(f"{what} is a Dask array of unknown shape {value.shape}: astad needs every "
                             "dimension when transforming", hint="x.compute_chunk_sizes() first")
    if value.dtype.kind not in "fbiu":
        raise AstadTypeError(f"{what} is an array of dtype {value.dtype}; astad differentiates real floats",
                             hint="an array of a float, int or bool dtype")
    return Num(tuple(int(d) for d in value.shape), value.dtype.name)


def _abstract_struct(value: tuple | list | dict, what: str) -> StructT:
    """A tuple, list, dict or NamedTuple argument: the types of its items."""
    if isinstance(value, dict):
        bad = next((k for k in value if type(k) is not str and type(k) is not int), None)
        if bad is not None:
            shown = repr(bad) if type(bad) in (float, bool, complex, bytes) or bad is None else "of another type"
            raise AstadTypeError(f"{what} is a dict with a key {shown} ({type(bad).__name__}); astad reads "
                                 "dicts by string or integer keys (exactly str or int: not enums or subclasses)",
                                 hint="a dict with str keys, e.g. {'w': w, 'b': b}")
        keys: tuple = tuple(value)
        items = tuple(abstract(v, f"{what}[{k!r}]") for k, v in value.items())
        return StructT("dict", keys, items)
    items = tuple(abstract(v, f"{what}[{i}]") for i, v in enumerate(value))
    if type(value) is tuple or type(value) is list:
        return StructT("tuple" if type(value) is tuple else "list", (), items)
    bad = _changed_tuple_behaviour(type(value))
    if bad is not None:
        raise AstadTypeError(
            f"{what} is a {type(value).__name__}, a NamedTuple whose class {bad}: astad reads a NamedTuple as "
            "its fields in order (p[0], p.a, unpacking, iterating), which its own methods may not be",
            hint="a NamedTuple class with fields only (methods that read them are fine), or pass tuple(x)")
    fields = type(value)._fields
    return StructT("namedtuple", tuple(fields), items, type(value).__qualname__, type(value))


#: what ``collections.namedtuple`` defines of tuple's attributes, and a class may define besides:
#: none changes what the tuple holds or how it is read
_NAMEDTUPLE_MADE = frozenset({"__new__", "__getnewargs__", "__repr__", "__doc__"})
_HARMLESS = frozenset({"__repr__", "__str__", "__format__", "__doc__"})
_TUPLE_ATTRIBUTES = frozenset(dir(tuple))
_TUPLEGETTER = type(collections.namedtuple("_Probe", "a").__dict__["a"])


@functools.lru_cache(maxsize=256)
def _changed_tuple_behaviour(cls: type) -> str | None:
    """What a NamedTuple class (or a subclass of one) changes of how a tuple is read (``__getitem__``,
    ``__iter__``, ``__len__``, an operator, a field that is not its item, a ``__new__`` of its own), or
    None for a plain one."""
    for klass in cls.__mro__[:cls.__mro__.index(tuple)]:
        allowed = _NAMEDTUPLE_MADE if "_make" in vars(klass) else _HARMLESS
        changed = sorted(set(vars(klass)) & _TUPLE_ATTRIBUTES - allowed)
        if changed:
            return f"defines {changed[0]}"
    for i, field in enumerate(cls._fields):
        found = inspect.getattr_static(cls, field, None)
        if type(found) is not _TUPLEGETTER or found.__reduce__()[1][0] != i:
            return f"reads `.{field}` otherwise than as its item {i}"
    return None


def literal_type(value: Any) -> Type:
    """The type of a Python literal (discrete values keep their value, for shapes)."""
    if value is None:
        return NoneT()
    if isinstance(value, float):
        return FLOAT
    return Num((), "bool" if isinstance(value, bool) else "int64", py=True, value=value)
