"""Parameter types from annotations (``astad show-derivative`` without ``--arg``).

Read, in order: the annotation object (``float``, ``int``, ``bool``, numpy
scalar types, jaxtyping arrays such as ``Float64[np.ndarray, "n 64"]`` and
aliases of them, ``tuple[...]``, NamedTuple and TypedDict classes); when the
annotation is a string that does not evaluate (``from __future__ import
annotations`` with jaxtyping imported under ``TYPE_CHECKING``), its source
text, read by the same rules; else a default value's type.  jaxtyping itself is
never imported: its annotation objects are read by their attributes.
"""

from __future__ import annotations

import ast
import inspect
import typing
from typing import Any, Callable

import numpy as np

from .cli_types import PYTHON, CliError, Described, dims_of
from .frontend import abstract
from .errors import AstadTypeError
from .ir import Num, StructT, Type

#: jaxtyping's dtype classes -> numpy dtypes (``Float``, any float dtype, is taken as float64)
JAXTYPING = {"Float": "float64", "Float64": "float64", "Float32": "float32", "Float16": "float16",
             "Int": "int64", "Int64": "int64", "Int32": "int32", "Int16": "int16", "Int8": "int8",
             "UInt": "uint64", "UInt64": "uint64", "UInt32": "uint32", "UInt16": "uint16", "UInt8": "uint8",
             "Bool": "bool"}
_NUMPY_SCALARS = {"float64": "float64", "float32": "float32", "float16": "float16", "double": "float64",
                  "int64": "int64", "int32": "int32", "int16": "int16", "int8": "int8", "bool_": "bool",
                  "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64"}
_SHAPE_HINT = "annotate the shape, e.g. Float64[np.ndarray, \"n 64\"] (jaxtyping), or give --arg {name}=f64[n,64]"
_MISSING = object()


def annotated_type(fn: Callable[..., Any], name: str) -> Described | None:
    """The type of parameter ``name`` of ``fn`` by its annotation or default (None: not known)."""
    ann = getattr(fn, "__annotations__", {}).get(name, _MISSING)
    if ann is not _MISSING:
        reader = _Annotation(name, fn)
        try:
            return Described(reader.object(ann), reader.sizes)
        except CliError:
            raise
        except Exception as e:  # a NamedTuple's annotations that name nothing, say
            raise reader.fail(repr(ann), f"{type(e).__name__}: {e}".splitlines()[0], "give --arg") from None
    default = _default(fn, name)
    if default is not _MISSING:
        try:
            return Described(abstract(default, name))
        except AstadTypeError:
            return None
    return None


def _default(fn: Callable[..., Any], name: str) -> Any:
    try:
        p = inspect.signature(fn).parameters.get(name)
    except (TypeError, ValueError):
        return _MISSING
    return _MISSING if p is None or p.default is inspect.Parameter.empty else p.default


class _Annotation:
    """Reads one parameter's annotation (objects and source text by the same rules)."""

    def __init__(self, param: str, fn: Callable[..., Any]) -> None:
        self.param, self.fn = param, fn
        self.sizes: dict[str, list[str]] = {}

    def fail(self, shown: str, why: str, hint: str = "") -> CliError:
        hint = hint or _SHAPE_HINT.format(name=self.param)
        return CliError(f"cannot tell the type of parameter `{self.param}` of {self.fn.__name__} from its "
                        f"annotation {shown}: {why}; {hint}")

    # ----------------------------------------------------------------- objects

    def object(self, ann: Any, where: str = "") -> Type:
        where = where or self.param
        if isinstance(ann, typing.ForwardRef):  # a NamedTuple's field under `from __future__ import annotations`
            ann = ann.__forward_arg__
        if isinstance(ann, str):
            try:
                value = eval(ann, getattr(self.fn, "__globals__", {}))  # noqa: S307 - as typing.get_type_hints does
            except Exception:
                return self.text(ann, where)
            return self.object(value, where)
        if ann in (float, int, bool):
            return PYTHON[ann.__name__]
        if isinstance(ann, type) and issubclass(ann, np.generic) and ann.__name__ in _NUMPY_SCALARS:
            return Num((), _NUMPY_SCALARS[ann.__name__])
        if hasattr(ann, "dim_str") and hasattr(ann, "array_type") and hasattr(ann, "dtype"):  # jaxtyping
            return self.array(ann.dtype.__name__, ann.array_type.__name__, ann.array_type is np.ndarray,
                              ann.dim_str, repr(ann), where)
        origin, args = typing.get_origin(ann), typing.get_args(ann)
        if origin is typing.Annotated:
            return self.object(args[0], where)
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                raise self.fail(repr(ann), "a tuple of any length", f"give --arg {self.param}=(f64, f64[3])")
            return StructT("tuple", (), tuple(self.object(a, f"{where}[{i}]") for i, a in enumerate(args)))
        if isinstance(ann, type) and issubclass(ann, tuple) and hasattr(ann, "_fields"):  # a NamedTuple
            fields = _fields(ann)
            return StructT("namedtuple", tuple(ann._fields), tuple(self.object(fields.get(f), f"{where}.{f}")
                                                                   for f in ann._fields), ann.__qualname__, ann)
        if typing.is_typeddict(ann):
            fields = _fields(ann)
            return StructT("dict", tuple(fields), tuple(self.object(t, f"{where}[{k!r}]") for k, t in fields.items()))
        return self.unknown(getattr(ann, "__name__", repr(ann)), repr(ann))

    def unknown(self, name: str, shown: str) -> Type:
        if name in ("ndarray", "NDArray", "ArrayLike", "list", "List", "dict", "Dict", "Sequence"):
            raise self.fail(shown, "it does not say the shape (or length) of the value")
        raise self.fail(shown, "astad reads float, int, bool, numpy scalar types, jaxtyping arrays "
                        "(Float64[np.ndarray, \"n 64\"]), tuple[...], NamedTuple and TypedDict classes",
                        f"give --arg {self.param}=TYPE")

    def array(self, dtype: str, array_name: str, is_numpy: bool, dim_str: str, shown: str, where: str) -> Type:
        if not is_numpy:
            raise self.fail(shown, f"astad differentiates numpy arrays, not {array_name}",
                            f"annotate it Float64[np.ndarray, \"{dim_str}\"]")
        if dtype not in JAXTYPING:
            raise self.fail(shown, f"{dtype} does not name one dtype",
                            f"one of {', '.join(JAXTYPING)}, e.g. Float64[np.ndarray, \"{dim_str}\"]")
        words = dim_str.split()
        bad = next((w for w in words if w.startswith("*") or w == "..."), None)
        if bad is not None:
            raise self.fail(shown, f"{bad!r} stands for any number of dimensions",
                            f"name each dimension, or give --arg {self.param}=f64[n,64]")
        words = [w.split("=", 1)[1] if "=" in w else w for w in words]  # "rows=3": documented size 3
        words = [w[1:] if w.startswith("#") else w for w in words]  # "#n": n or 1, known at run time
        words = [w if w.isdigit() or w.isidentifier() else "?" for w in words]  # "n+1": known at run time
        return Num(dims_of(words, dtype, where, self.sizes), JAXTYPING[dtype])

    # ----------------------------------------------------------------- source text

    def text(self, source: str, where: str) -> Type:
        try:
            node = ast.parse(source.strip(), mode="eval").body
        except SyntaxError:
            raise self.fail(repr(source), "it is not a Python expression") from None
        return self.node(node, source, where)

    def node(self, node: ast.expr, source: str, where: str) -> Type:
        name = _last_name(node)
        if name in PYTHON and isinstance(node, ast.Name):
            return PYTHON[name]
        if name in _NUMPY_SCALARS and isinstance(node, ast.Attribute):
            return Num((), _NUMPY_SCALARS[name])
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return self.text(node.value, where)
        if isinstance(node, ast.Subscript):
            base = _last_name(node.value)
            items = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
            if base in ("tuple", "Tuple"):
                if len(items) == 2 and isinstance(items[1], ast.Constant) and items[1].value is Ellipsis:
                    raise self.fail(repr(source), "a tuple of any length", f"give --arg {self.param}=(f64, f64[3])")
                return StructT("tuple", (), tuple(self.node(n, source, f"{where}[{i}]") for i, n in enumerate(items)))
            if base == "Annotated":
                return self.node(items[0], source, where)
            if base in JAXTYPING or (len(items) == 2 and isinstance(items[1], ast.Constant)
                                     and isinstance(items[1].value, str)):
                if len(items) != 2 or not isinstance(items[1], ast.Constant) or not isinstance(items[1].value, str):
                    raise self.fail(repr(source), "expected Dtype[array type, \"dims\"]")
                array = _last_name(items[0]) or ast.unparse(items[0])
                return self.array(base or ast.unparse(node.value), array, array == "ndarray", items[1].value,
                                  repr(source), where)
        return self.unknown(name or "", repr(source))


def _fields(cls: type) -> dict[str, Any]:
    """A NamedTuple's or TypedDict's field annotations: objects, or their text when they do not evaluate."""
    try:
        return typing.get_type_hints(cls)
    except Exception:
        return dict(getattr(cls, "__annotations__", {}))


def _last_name(node: ast.expr) -> str | None:
    """``np.float64`` -> ``float64``, ``Float`` -> ``Float`` (None for any other expression)."""
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None
