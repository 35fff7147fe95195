"""What a name means: a variable of the running scopes or of the scopes
around them, ``True``/``False``/``None``, or a global (numpy, a numpy
function, a builtin, the user's function, a module-level constant); and
what can still read a value (for in-place updates).
"""

from __future__ import annotations

import builtins
import functools
import symtable
import math
import types
from typing import Any

import libcst as cst
import numpy as np

from ..calling import ARRAY_KIND, array_kind
from ..values import Ref
from ..source import reversed_function
from ..errors import AstadTypeError, SourceUnavailableError, UnsupportedFunctionError
from ..ir import Const, Num, NoneT
from .numpy_api import numpy_name, builtin_spec, math_names
from .abstract import abstract, literal_type
from .scopes import Value, Scope, closures_in, scope_chain
from .core import LowererCore


class Lookup(LowererCore):
    """Names, globals and constants."""

    def unassigned(self, name: str, node: cst.CSTNode) -> AstadTypeError:
        """The refusal of a read of a local variable that is not assigned on every path to it (Python reads a
        function's local, assigned anywhere in it, never a global of the same name)."""
        at = (self.scope.path, name)
        if at in self.loop_locals:
            line = self.loop_locals[at]
            return self.type_error(f"`{name}` is assigned only inside the loop at line {line}: "
                                   "astad carries out of a loop only the variables assigned before it", node,
                                   hint=f"assign `{name}` before the loop (`{name} = 0.0`, or an array of its "
                                        "shape) and update it in the loop")
        if at in self.branch_locals:
            return self.type_error(f"`{name}` is assigned in only one branch of the `if` at line "
                                   f"{self.branch_locals[at]}, so it is not defined after it on every path (astad "
                                   "also carries from one loop iteration to the next only what is defined on every "
                                   "path)", node, hint=f"assign `{name}` before the `if` (`{name} = 0.0`, or an "
                                                       "array of its shape), or in both branches")
        return self.type_error(f"`{name}` is a local variable of the function, read here before it is assigned "
                               "(Python raises UnboundLocalError; a global of the same name is not read)", node,
                               hint=f"assign `{name}` before this line, or give the local another name")

    def expr_Name(self, node: cst.Name) -> Value:
        for_name = node.value
        found = self._lookup(self.scope, for_name)  # a nested function reads its enclosing functions' names now
        if found is not None:
            return found
        if for_name in ("True", "False", "None"):
            v = {"True": True, "False": False, "None": None}[for_name]
            return Const.literal(v, literal_type(v))
        scope = self.scope
        if scope.parent is not None and any(for_name in s.own for s in scope_chain(scope)):
            raise self.unassigned(for_name, node)  # a nested function's local not assigned on this path
        if for_name in _locals_of(scope.parsed.fn.__code__) and _local(scope.parsed.source, for_name):
            raise self.unassigned(for_name, node)  # a local not assigned on this path: never the global of that name
        key = (id(scope.parsed), scope.path, for_name)
        known = self._globals.get(key)
        if known is not None and known[0] is scope.parsed:
            return known[1]  # (read before: what it is, and that the code depends on it, are known)
        fn = self.scope.parsed.fn
        g = fn.__globals__
        if for_name in fn.__code__.co_freevars:  # captured from an enclosing function: read as a global is
            cell = fn.__closure__[fn.__code__.co_freevars.index(for_name)]
            try:
                obj = cell.cell_contents
            except ValueError:
                raise self.type_error(f"`{for_name}` is captured from an enclosing function that has not assigned "
                                      "it yet", node, hint="assign it before making the function") from None
        elif for_name in g:
            obj = g[for_name]
        elif for_name in (own_builtins := _builtins_of(fn)):  # the function's own, as Python reads them
            obj = own_builtins[for_name]
        elif (self.scope.path, for_name) in self.loop_locals or (self.scope.path, for_name) in self.branch_locals:
            raise self.unassigned(for_name, node)
        else:
            raise self.type_error(f"name `{for_name}` is not defined", node,
                                  hint="a parameter, a variable assigned earlier, or a module-level name")
        path = self.scope.path + (for_name,)
        self.depend(path, obj)
        value = self.object_value(for_name, obj, node, path)
        if type(value) is Ref or type(value) is Const:
            self._globals[key] = (scope.parsed, value)
        return value

    def global_value(self, name: str, obj: Any, node: cst.CSTNode, path: tuple[str, ...] = ()) -> Value:
        if obj is np:
            return Ref("module", np, path=path)
        if isinstance(obj, types.ModuleType):
            if obj.__name__.startswith("numpy") or obj is math:
                return Ref("module", obj, path=path)
            if obj.__name__.split(".")[0] == "astad":  # astad.grad(f)(x) in the code: a derivative inside
                raise _astad_inside(f"module `{obj.__name__}`", self.loc(node))
            raise UnsupportedFunctionError(f"module `{obj.__name__}` is not supported", self.loc(node),
                                           "numpy (import numpy as np), math, and your own functions")
        if builtin_spec(obj) is not None:
            return Ref("builtin", obj)
        if callable(obj) and getattr(obj, "__module__", None) == "math":
            raise UnsupportedFunctionError(f"math.{obj.__name__} is not supported", self.loc(node),
                                           "math functions " + ", ".join(math_names()))
        if any(obj is it for it in _ITERATORS):
            return Ref("iterator", obj)
        if obj is builtins.map or obj is builtins.list or obj is builtins.isinstance or obj is builtins.print:
            return Ref(obj.__name__, obj)
        if isinstance(obj, type) and issubclass(obj, BaseException):
            return Ref("exception", obj)
        if any(obj is t for t in _TYPES):
            return Ref("type", obj)
        if numpy_name(obj) is not None:
            return Ref("numpy", obj)
        if reversed_function(obj) is not None:  # @astad.reverse / @astad.forward: calls give (value, derivative)
            return Ref("decorated", obj, path=path)
        if getattr(type(obj), "__astad_program__", None) is not None:
            raise SourceUnavailableError(
                f"`{name}` is {obj!r}: calling a derivative inside a function astad differentiates (a higher-order "
                "derivative inside the code) is not supported yet", self.loc(node),
                "differentiate the derivative itself (astad.grad(astad.grad(f))), or compute it outside")
        if isinstance(obj, types.FunctionType):
            if str(getattr(obj, "__module__", "")).split(".")[0] == "astad":  # (from astad import grad): not read
                raise _astad_inside(f"`{name}`, astad's {obj.__module__}.{obj.__name__},", self.loc(node))
            return Ref("user", obj, path=path)
        if any(obj is k for k in _PY_DTYPES):
            return Ref("dtype", _PY_DTYPES[obj])
        if obj is builtins.any or obj is builtins.all:  # (Python stops at the first true/false element)
            raise UnsupportedFunctionError(
                f"`{name}` is not supported: Python stops at the first element that decides it (one after it, "
                "never evaluated, could raise)", self.loc(node),
                "a `while` loop that stops there: i = 0; while i < len(xs) and not cond(xs[i]): i += 1; "
                "then i < len(xs)")
        return self.constant(obj, f"`{name}`", node, name, path)

    def fixed_value(self, name: str, obj: Any, node: cst.CSTNode) -> Value:
        """A parameter a method (``self``) or a partial fixes: read as a global is."""
        self.depend((name,), obj)
        return self.object_value(name, obj, node, (name,))

    def object_value(self, name: str, obj: Any, node: cst.CSTNode, path: tuple[str, ...]) -> Value:
        """A global, or an object whose attributes are read as globals are (``self``)."""
        try:  # (a property of the object's class may raise: what astad asks of it first)
            obj.__class__, getattr(obj, "__dict__", None)
        except Exception as e:
            raise UnsupportedFunctionError(
                f"`{'.'.join(path) or name}`: reading its __class__ or __dict__ raised {type(e).__name__}: {e}",
                self.loc(node), "pass the values it holds as arguments") from None
        if _is_plain_object(obj):
            return Ref("object", obj, path=path)
        return self.global_value(name, obj, node, path)

    def object_attribute(self, base: Ref, attr: str, node: cst.CSTNode) -> Value:
        """``obj.attr`` of an object read as a global (``self.c``): the attribute, read as a
        global is (constants at transform time, checked on each call)."""
        what = f"`{'.'.join(base.path)}.{attr}`"
        if _own_getattribute(type(base.obj)):  # Python asks it, not __dict__
            raise UnsupportedFunctionError(
                f"{what}: {type(base.obj).__name__} defines __getattribute__, so its attributes are not the values "
                "its __dict__ and class hold, which astad reads", self.loc(node),
                "read the attribute before the call and pass it as an argument")
        in_class = [vars(c)[attr] for c in type(base.obj).__mro__ if attr in vars(c)]
        own = attr in vars(base.obj)
        if not own and not in_class:
            raise self.type_error(f"{what} does not exist", node, hint="an attribute the object has when transforming")
        obj = vars(base.obj)[attr] if own else in_class[0]
        kind = type(in_class[0]) if in_class else None
        if hasattr(kind, "__get__") and (hasattr(kind, "__set__") or hasattr(kind, "__delete__")):
            own, obj = False, in_class[0]  # a property (a data descriptor) comes before the object's own, as in Python
        if not own and hasattr(type(obj), "__get__"):  # a method, a property, ...
            raise UnsupportedFunctionError(
                f"{what} is a method or property of {type(base.obj).__name__}: astad reads the attributes of "
                "`self` as constants, but cannot call its methods", self.loc(node),
                "a module-level function called with the values it needs (or read the attribute it returns)")
        path = base.path + (attr,)
        self.depend(path, obj)
        return self.object_value(attr, obj, node, path)

    def constant(self, obj: Any, what: str, node: cst.CSTNode, name: str | None = None,
                 path: tuple[str, ...] = ()) -> Const:
        """A module-level constant (or a default value) read as a constant."""
        if isinstance(obj, (bool, int, float, np.ndarray, np.generic)) and not isinstance(obj, complex):
            # (an array's shape and dtype, which may be assigned in place, read before its type is made of them)
            kind = array_kind(obj) if isinstance(obj, np.ndarray) else None
            try:
                t = abstract(obj, what)
            except AstadTypeError as e:
                raise self.type_error(e.message, node, e.hint) from None
            if isinstance(t, Num) and t.py and t.dtype != "float64":
                t = Num((), t.dtype, py=True, value=obj)
            if name is None or not path or (type(obj) in (bool, int, float) and path[0] == "<default>"):
                return Const.literal(obj, t)
            if isinstance(obj, np.ndarray) and path[0] != "<default>":  # its shape may be assigned in place
                self.depend((*path, ARRAY_KIND), kind)
            code_name = self.const_names.get(id(obj))
            if code_name is None:
                code_name = self.const_names[id(obj)] = self.namer.fresh(name)
                self.constants[code_name] = (path, obj)
            return Const(obj, t, code_name, ("global", code_name))
        if obj is None:
            return Const.literal(None, NoneT())
        raise UnsupportedFunctionError(
            f"{what} is a {type(obj).__name__}, which astad cannot use", self.loc(node),
            "numbers and numpy arrays as constants, numpy functions, and your own functions")

    def _lookup(self, scope: "Scope | None", name: str) -> Value | None:
        """What ``name`` is in ``scope`` or the scopes around it (as a nested function reads it)."""
        while scope is not None:
            env = scope.env
            if name in env:
                return env[name]
            if name in scope.own:
                return None  # a nested function's local it has not assigned: not the enclosing function's
            scope = scope.parent
        return None

    def readable_besides(self, name: str) -> list[tuple[str, Value]]:
        """Every value that can still be read, but the current scope's ``name``:
        the names of the running scopes and of the scopes around them, and what
        the functions that can still be called hold."""
        seen: set[int] = set()
        found: list[tuple[str, Value]] = []
        for s in self.stack:
            for sc in scope_chain(s):
                if id(sc) in seen:
                    continue
                seen.add(id(sc))
                env = self.scope.env if sc is self.scope else sc.env
                found += [(f"`{k}` shares its memory (the same object, a view of it, or a list or tuple holding it)", v)
                          for k, v in env.items() if not (sc is self.scope and k == name)]
        found += [("a function made earlier holds it (as a default, or as a variable it reads)", v)
                  for v in self.held_by_functions()]
        return found + self.iterated

    def held_by_functions(self) -> list[Value]:
        """The values the lambdas and nested defs that can still be called hold
        apart from the running scopes: their defaults, and the variables of the
        calls that made them."""
        held: list[Value] = []
        todo = [c for s in self.stack for v in s.env.values() for c in closures_in(v)]  # reachable ones
        seen: set[int] = set()
        while todo:
            c = todo.pop()
            if id(c) in seen:
                continue
            seen.add(id(c))
            values = list(c.defaults.values())
            scope = c.scope
            while scope is not None and all(scope is not s for s in self.stack):
                values += scope.env.values()
                scope = scope.parent
            held += values
            todo += [d for v in values for d in closures_in(v)]
        return held


def _is_plain_object(obj: Any) -> bool:
    """An instance of a user's class (read as ``self`` is), not a value, function or module."""
    return (hasattr(obj, "__dict__") and not isinstance(obj, (type, types.ModuleType, types.FunctionType,
                                                              types.MethodType, types.BuiltinFunctionType))
            and not callable(obj) and type(obj).__module__ not in ("builtins", "numpy"))


def _builtins_of(fn: Any) -> dict[str, Any]:
    """The builtins a function reads (``fn.__builtins__``: those of the globals it was made with)."""
    found = getattr(fn, "__builtins__", None)
    return found if type(found) is dict else vars(builtins)


def _own_getattribute(cls: type) -> bool:
    """Whether ``cls`` (or a base) defines ``__getattribute__`` in Python (a C type's slot is the generic one)."""
    found = next(vars(c)["__getattribute__"] for c in cls.__mro__ if "__getattribute__" in vars(c))
    return not isinstance(found, types.WrapperDescriptorType)


_ITERATORS = (builtins.range, builtins.enumerate, builtins.zip, builtins.reversed)


_TYPES = (tuple, list, dict, float, int, bool, np.ndarray)


_PY_DTYPES = {builtins.float: "float64", builtins.int: "int64", builtins.bool: "bool"}


def _astad_inside(what: str, loc: Any) -> UnsupportedFunctionError:
    """astad itself called in the code it differentiates (``astad.grad(f)(x)``): its source is not read."""
    return UnsupportedFunctionError(f"{what} is not supported inside a function astad differentiates (a "
                                    "derivative inside the code)", loc,
                                    "differentiate the derivative itself (astad.grad(astad.grad(f))), or compute "
                                    "it outside")


@functools.lru_cache(maxsize=256)
def _locals_of(code: types.CodeType) -> frozenset[str]:
    """The names a code object keeps as locals (a set: every global name read asks; a tuple is searched)."""
    return frozenset(code.co_varnames + code.co_cellvars)


def _local(source: str, name: str) -> bool:
    """Whether ``name`` is a local variable of the function whose text is ``source`` (Python's symbol table:
    a name the function assigns anywhere; not a comprehension's own variable, which Python 3.12 keeps among
    the function's ``co_varnames`` too)."""
    try:
        table = symtable.symtable(source, "<astad>", "exec").get_children()[0]
        return table.lookup(name).is_local()
    except (SyntaxError, IndexError, KeyError):
        return True  # (the code object's answer)
