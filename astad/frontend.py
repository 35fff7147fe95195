"""Frontend: Python source (via libcst) -> typed core IR in A-normal form.

Two steps.  :func:`parse` reads and parses a function's source and checks it
against the supported subset (done at decoration time).  :func:`lower` turns
the parsed function, given the abstract types of its arguments (known at the
first call), into a :class:`~astad.ir.Function`: every intermediate value gets
a ``let``, reassignment makes a new variable, calls to the user's other
functions are inlined, and every primitive's type is inferred from the table.
"""

from __future__ import annotations

import ast
import builtins
import collections
import dataclasses
import functools
import inspect
import textwrap
import types
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence, Union

import libcst as cst
import numpy as np

from . import deep
from . import primitives as prims
from .aliases import CALLER, Aliases
from .values import PyDict, PyTuple, Ref
from .source import check_not_wrapped, read as read_source, reversed_function
from .errors import (AstadError, AstadTypeError, SourceUnavailableError, UnsupportedFunctionError,
                     UnsupportedSyntaxError)
from .ir import (BOOL, FLOAT, INT, App, Atom, Bind, Block, Const, Copy, FunT, Function, Lam, ListT, Loc, MakeTuple,
                 Num, NoneT, Prim, StructT, TupleT, Type, Unpack, Var, If, Loop, lam_free_vars, trip_count, vars_of)
from .names import Namer
from .positions import resolve as resolve_positions
from .numpy_api import API, BUILTINS, METHODS, ApiSpec, numpy_name

# --------------------------------------------------------------------------- parsing


@dataclass
class Parsed:
    """A function's source, parsed, with what is needed to point at its lines."""

    fn: Callable[..., Any]
    file: str
    funcdef: cst.FunctionDef
    positions: Any
    line_offset: int
    col_offset: int
    lines: list[str]
    source: str
    aliases: dict = field(default_factory=dict)  # a node astad made (a comprehension's loop) -> the user's node

    @property
    def name(self) -> str:
        return self.funcdef.name.value

    @property
    def funcdef_line(self) -> int:
        return self.positions[self.funcdef].start.line + self.line_offset

    def loc(self, node: cst.CSTNode) -> Loc:
        node = self.aliases.get(node, node)
        if isinstance(node, cst.SimpleStatementLine) and node not in self.positions and node.body:
            node = node.body[0]  # a line made from a one-line block (`if c: return x`)
        try:
            pos = self.positions[node].start
        except KeyError:
            pos = self.positions[self.funcdef].start
        line = pos.line + self.line_offset
        text = self.lines[pos.line - 1] if 0 < pos.line <= len(self.lines) else ""
        return Loc(self.file, line, pos.column + self.col_offset + 1, text)


_PARSED: dict[Any, Parsed] = {}


def clear_parse_cache() -> None:
    _PARSED.clear()
    _FOUND.clear()


def parse(fn: Callable[..., Any]) -> Parsed:
    """Read, parse and check ``fn``'s source (cached per code object)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise SourceUnavailableError(
            f"cannot differentiate {fn!r}: it is not a Python function with source code",
            hint="a function defined with `def` in a .py file (or a notebook cell)")
    check_not_wrapped(fn)
    key = (code, code.co_filename, code.co_firstlineno)
    found = _PARSED.get(key)
    if found is not None:  # the same code; another function object may have other globals
        return found if found.fn is fn else dataclasses.replace(found, fn=fn)
    if fn.__name__ == "<lambda>":
        raise SourceUnavailableError(
            f"cannot differentiate a lambda ({code.co_filename}:{code.co_firstlineno})",
            hint="define the function with `def` at module level")
    lines, start, file = read_source(fn)
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    col_offset = len(lines[0]) - len(lines[0].lstrip()) if dedented != source else 0
    try:
        module = deep.fresh(cst.parse_module, dedented)  # libcst recurses: give it a whole stack
    except cst.ParserSyntaxError as e:
        raise SourceUnavailableError(f"cannot parse the source of {fn.__qualname__}: {e.message}") from None
    except RecursionError:
        module = None
    positions = None if module is None else resolve_positions(module, dedented)
    if module is None or positions is None:
        line, col = _deepest(dedented)
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        raise UnsupportedSyntaxError(
            f"{fn.__qualname__} is nested too deeply for astad's parser (libcst), here",
            Loc(file, line + start - 1, col + col_offset + 1, text),
            "name the inner parts: `a = np.sin(x)`, `b = np.sin(a)`, ...")
    funcdef = next((s for s in module.body if isinstance(s, cst.FunctionDef)), None)
    if funcdef is None or funcdef.name.value != code.co_name:
        raise SourceUnavailableError(f"cannot find the `def` of {fn.__qualname__} in its source")
    parsed = Parsed(fn, file, funcdef, positions, start - 1, col_offset, lines, source)
    check_subset(parsed)
    _PARSED[key] = parsed
    return parsed


def _deepest(source: str) -> tuple[int, int]:
    """Line (1-based) and column (0-based) of the most deeply nested node of
    ``source`` (Python's own parser; an explicit stack)."""
    best, where = -1, (1, 0)
    todo = [(deep.parse_ast(source), 0)]
    while todo:
        node, depth = todo.pop()
        if depth > best and hasattr(node, "lineno"):
            best, where = depth, (node.lineno, node.col_offset)
        todo.extend((c, depth + 1) for c in ast.iter_child_nodes(node))
    return where


# What each unsupported construct is called and what to write instead.
_UNSUPPORTED: dict[type, tuple[str, str]] = {
    cst.Try: ("`try` is not supported", "straight-line code without exception handling"),
    cst.With: ("`with` is not supported", "straight-line code"),
    cst.ClassDef: ("class definitions are not supported", "module-level functions"),
    cst.DictComp: ("dict comprehensions are not supported", "arrays and tuples"),
    cst.SetComp: ("set comprehensions are not supported", "arrays and tuples"),
    cst.Dict: ("dicts are not supported yet", "arrays and tuples"),
    cst.Set: ("sets are not supported", "arrays and tuples"),
    cst.Yield: ("generators are not supported", "a function that returns its result"),
    cst.Await: ("`await` is not supported", "plain synchronous numpy code"),
    cst.Global: ("`global` is not supported", "module-level constants are read as constants; pass values as arguments"),
    cst.Nonlocal: ("`nonlocal` is not supported", "pass values as arguments and return results"),
    cst.Del: ("`del` is not supported", "simply stop using the variable"),
    cst.Raise: ("`raise` is not supported", "straight-line numpy code"),
    cst.Assert: ("`assert` is not supported", "check inputs before calling the differentiated function"),
    cst.Import: ("imports inside the function are not supported", "import at module level"),
    cst.ImportFrom: ("imports inside the function are not supported", "import at module level"),
    cst.NamedExpr: ("`:=` is not supported", "a separate assignment"),
    cst.FormattedString: ("strings are not supported", "numbers and arrays"),
    cst.ConcatenatedString: ("strings are not supported", "numbers and arrays"),
    cst.Imaginary: ("complex numbers are not supported", "real floats and arrays"),
    cst.StarredElement: ("`*` unpacking is not supported", "explicit arguments"),
}


class _SubsetChecker(cst.CSTVisitor):
    def __init__(self, parsed: Parsed) -> None:
        self.parsed = parsed
        self.depth = 0

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.FunctionDef):
            self.depth += 1
            self._check_signature(node)
            if node.decorators and self.depth > 1:
                raise UnsupportedSyntaxError("decorators on nested functions are not supported",
                                             self.parsed.loc(node.decorators[0]), "a plain nested `def`")
            if self.depth == 1:
                return True
        if isinstance(node, cst.Lambda):
            self._check_params(node.params)
        if isinstance(node, cst.Name) and unicodedata.normalize("NFKC", node.value) != node.value:
            plain = unicodedata.normalize("NFKC", node.value)
            raise UnsupportedSyntaxError(f"the name `{node.value}` is `{plain}` to Python (it normalises names "
                                         "to NFKC), so astad would read two names where Python reads one",
                                         self.parsed.loc(node), f"write `{plain}`")
        if isinstance(node, (cst.ListComp, cst.GeneratorExp)):
            f: Any = node.for_in
            while f is not None:
                if f.asynchronous is not None:
                    raise UnsupportedSyntaxError("`async for` is not supported", self.parsed.loc(f), "a plain `for`")
                f = f.inner_for_in
        entry = _UNSUPPORTED.get(type(node))
        if entry is not None:
            raise UnsupportedSyntaxError(entry[0], self.parsed.loc(node), entry[1])
        if isinstance(node, (cst.For, cst.While)) and node.orelse is not None:
            raise UnsupportedSyntaxError("a loop with an `else` block is not supported", self.parsed.loc(node),
                                         "a plain loop, followed by the code of the `else` block")
        if isinstance(node, cst.Comparison):
            for comp in node.comparisons:
                if not isinstance(comp.operator, (cst.LessThan, cst.LessThanEqual, cst.GreaterThan,
                                                  cst.GreaterThanEqual, cst.Equal, cst.NotEqual)):
                    raise UnsupportedSyntaxError("only the comparisons < <= > >= == != are supported",
                                                 self.parsed.loc(comp), "< <= > >= == !=")
        return True

    def on_leave(self, node: cst.CSTNode) -> None:
        if isinstance(node, cst.FunctionDef):
            self.depth -= 1

    def _check_signature(self, node: cst.FunctionDef) -> None:
        self._check_params(node.params, module_level=self.depth == 1)
        _check_returns_last(_stmts(node.body), self.parsed)

    def _check_params(self, ps: cst.Parameters, module_level: bool = False) -> None:
        extra = ps.star_arg if isinstance(ps.star_arg, cst.Param) else None
        # positional-only parameters: a module-level function (inlined by its signature) may have them
        posonly = ps.posonly_params[0] if ps.posonly_params and not module_level else None
        for bad, what in ((extra, "*args"), (ps.star_kwarg, "**kwargs"),
                          (ps.kwonly_params[0] if ps.kwonly_params else None, "keyword-only parameters"),
                          (posonly, "positional-only parameters (before `/`)")):
            if bad is not None:
                raise UnsupportedSyntaxError(f"{what} are not supported", self.parsed.loc(bad),
                                             "positional parameters (with constant defaults)")


def _check_returns_last(body: Sequence[cst.BaseStatement], parsed: Parsed) -> None:
    """A ``return`` ends its block: nothing may follow it there (dead code is
    more likely a mistake than intended)."""
    for i, stmt in enumerate(body):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Return) and (i != len(body) - 1 or small is not stmt.body[-1]):
                    raise UnsupportedSyntaxError("code after `return` is never run", parsed.loc(small),
                                                 "end the block with its `return`")
        elif isinstance(stmt, cst.If):
            _check_returns_last(_stmts(stmt.body), parsed)
            if isinstance(stmt.orelse, cst.If):
                _check_returns_last([stmt.orelse], parsed)
            elif stmt.orelse is not None:
                _check_returns_last(_stmts(stmt.orelse.body), parsed)


def check_subset(parsed: Parsed) -> None:
    deep.visit(parsed.funcdef, _SubsetChecker(parsed))


# --------------------------------------------------------------------------- abstract values


class Closure:
    """A ``lambda`` or nested ``def``: its code, the scope whose variables it
    reads when called (as Python does: their values at the call), and its
    defaults (evaluated where it is defined).  Compared by identity."""

    def __init__(self, node: cst.Lambda | cst.FunctionDef, scope: "_Scope", defaults: dict[str, "Value"],
                 site: "tuple[list[Bind], Bind | None, set[str]] | None" = None) -> None:
        self.node, self.scope, self.defaults = node, scope, defaults
        # where it was made: the bindings it is made among, the one before it, the
        # variables its body could read there (see Lowerer.function_value)
        self.site = site
        # the function values made of it: (argument types, captures) -> variable, or None
        # where its body could not be one (its calls with that key are inlined)
        self.values: dict[Any, Var | None] = {}

    @property
    def __name__(self) -> str:
        return self.node.name.value if isinstance(self.node, cst.FunctionDef) else "<lambda>"

    @functools.cached_property
    def reads(self) -> list[str]:
        """The names its body mentions that are not its parameters (what it may capture), sorted."""
        return sorted(_user_names(self.node.body) - {p.name.value for p in self.node.params.params})


Value = Union[Atom, PyTuple, PyDict, Ref]


#: numpy's scalar types of a float, int or bool dtype (an argument of one has that dtype)
_NUMPY_SCALARS = frozenset(t for t in set(np.sctypeDict.values())
                           if issubclass(t, np.generic) and np.dtype(t).kind in "fbiu")

#: array types astad runs like np.ndarray (np.memmap only adds where the memory is); any other
#: subclass may change what operators do (np.matrix: `*` is a matrix product; masked arrays skip
#: masked entries), so it is refused rather than differentiated as an ndarray
_ARRAY_TYPES = (np.ndarray, np.memmap)

#: dict types read like dict (an OrderedDict's order is its keys' order, as dict's)
_DICT_TYPES = (dict, collections.OrderedDict)


def abstract(value: Any, what: str) -> Type:
    """The abstract type of a run-time argument value (part of the cache key).
    Exact types only: a subclass of int, float, ndarray, tuple or dict may
    change what its operators do, which the generated code would not do."""
    t = type(value)
    if t is tuple or t is list or t in _DICT_TYPES or (isinstance(value, tuple) and hasattr(t, "_fields")):
        return _abstract_struct(value, what)
    if t is bool:
        return BOOL
    if t is int:
        return INT
    if t is float:
        return FLOAT
    if (t in _ARRAY_TYPES or t in _NUMPY_SCALARS) and value.dtype.kind in "fbiu":
        return Num(tuple(int(d) for d in value.shape), value.dtype.name)
    base = next((b for b in (bool, int, float, np.ndarray, tuple, list, dict) if isinstance(value, b)), None)
    if base is not None and t not in _ARRAY_TYPES and t not in _NUMPY_SCALARS:
        plain = {np.ndarray: "np.asarray(x)", tuple: "tuple(x)", list: "list(x)", dict: "dict(x)"}.get(
            base, f"{base.__name__}(x)")
        raise AstadTypeError(
            f"{what} is a {t.__name__}, a subclass of {base.__name__}: astad runs it as a plain {base.__name__}, "
            "which its own operators and methods may not be (np.matrix multiplies with *, masked arrays skip "
            "masked entries)", hint=f"pass a plain {base.__name__}: {plain}")
    of = f" of dtype {value.dtype}" if t in _ARRAY_TYPES else ""
    raise AstadTypeError(
        f"{what} is a {t.__name__}{of}; astad differentiates functions of floats, ints and numpy arrays",
        hint="float, int, bool, or a numpy array of a float, int or bool dtype")


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
    fields = type(value)._fields
    return StructT("namedtuple", tuple(fields), items, type(value).__qualname__, type(value))


def literal_type(value: Any) -> Type:
    """The type of a Python literal (discrete values keep their value, for shapes)."""
    if value is None:
        return NoneT()
    if isinstance(value, float):
        return FLOAT
    return Num((), "bool" if isinstance(value, bool) else "int64", py=True, value=value)


# --------------------------------------------------------------------------- naming


@functools.lru_cache(maxsize=4096)  # libcst nodes are immutable and hash by identity
def _user_names(node: cst.CSTNode) -> frozenset[str]:
    names: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.add(n.value)

    deep.visit(node, V())
    return frozenset(names)


# --------------------------------------------------------------------------- lowering


@dataclass
class _Scope:
    parsed: Parsed
    path: tuple[str, ...] = ()
    env: dict[str, Value] = field(default_factory=dict)
    call_key: Any = None  # the callee and what is known of the arguments when transforming
    parent: "_Scope | None" = None  # a nested function's: the scope it was defined in


class Lowerer:
    """Lowers one function (and, inlined, the user functions it calls)."""

    def __init__(self, parsed: Parsed) -> None:
        self.root = parsed
        self.namer = Namer(_user_names(parsed.funcdef), parsed.name)
        self.binds: list[Bind] = []
        self.stack: list[_Scope] = []
        self.node: cst.CSTNode = parsed.funcdef
        self.constants: dict[str, tuple[tuple[str, ...], Any]] = {}  # code name -> (path, value)
        self.const_names: dict[int, str] = {}
        self.deps: list[tuple[tuple[str, ...], Any]] = []  # every global read: (path, object)
        self.bound: set[str] = set()  # variables bound by this lowering (not arguments or constants)
        self.open_binds: list[list[Bind]] = []  # the bindings of the blocks around the one being lowered
        self.exits: list[Callable[..., Value]] = []  # per enclosing loop: the value of leaving its body
        self.aliases = Aliases()  # which values may share memory (for in-place updates)
        self.trying = 0  # > 0 while a body is lowered to see whether it can be a function value

    # ----------------------------------------------------------------- helpers

    @property
    def scope(self) -> _Scope:
        return self.stack[-1]

    def loc(self, node: cst.CSTNode | None = None) -> Loc:
        return self.scope.parsed.loc(node if node is not None else self.node)

    def syntax_error(self, message: str, hint: str, node: cst.CSTNode | None = None) -> UnsupportedSyntaxError:
        return UnsupportedSyntaxError(message, self.loc(node), hint)

    def type_error(self, message: str, node: cst.CSTNode | None = None, hint: str | None = None) -> AstadTypeError:
        return AstadTypeError(message, self.loc(node), hint)

    def emit(self, op: str, args: list[Atom], params: dict | None = None) -> Atom:
        """Bind ``op(args)`` to a fresh temporary (folding constant Python-scalar arithmetic)."""
        params = params or {}
        try:
            t = prims.infer(op, [a.type for a in args], params)
        except prims.ShapeError as e:
            empty = any(isinstance(a.type, ListT) and a.type.elem is None for a in args)
            raise self.type_error(f"{_describe(op)}: {e}", hint=e.hint or (
                "an `append` to the list earlier in the code than this read (astad learns the elements' type "
                "from it), e.g. `acc = [first]` or `acc.append(first)` before the loop" if empty else
                "operands whose shapes fit numpy's rules (reshape, transpose or index one of them)")) from None
        if _foldable(op, args):
            with np.errstate(all="ignore"):
                value = prims.TABLE[op].impl(*[a.value for a in args], **params)
            if isinstance(value, (int, float, bool)) and np.isfinite(value):
                return Const.literal(value, Num((), t.dtype, py=True, value=None if t.dtype == "float64" else value))  # type: ignore[union-attr]
        var = Var(self.namer.temp(), t)
        self.binds.append(Bind((var,), Prim(op, tuple(args), tuple(sorted(params.items()))), self.loc()))
        self.bound.add(var.name)
        self.aliases.prim(var, op, args, params, immutable=isinstance(t, Num) and t.py)
        return var

    def copy(self, x: Atom) -> Atom:
        """``x.copy()``: the same value in new memory (an in-place update of it changes nothing else)."""
        if not isinstance(x, Var) or (isinstance(x.type, Num) and x.type.py):
            return x
        return self.emit("copy", [x])

    def name_result(self, value: Value, name: str) -> Value:
        """Give the user's name to the value just computed for an assignment."""
        if not (isinstance(value, Var) and Namer.is_temp(value.name)):
            return value
        if any(_mentions(v, value) for s in self.stack for v in s.env.values()):
            return value  # also an element of a tuple or list a name holds: keep its name
        for i in range(len(self.binds) - 1, -1, -1):
            bind = self.binds[i]
            if bind.targets == (value,):
                new = Var(self.namer.fresh(name), value.type)
                self.binds[i] = Bind((new,), bind.rhs, bind.loc)
                self.bound.add(new.name)
                self.aliases.same(new, value)
                return new
            if value in vars_of(bind.rhs):
                break
        return value

    def atom(self, value: Value, node: cst.CSTNode) -> Atom:
        if isinstance(value, (Var, Const)):
            return value
        if isinstance(value, PyTuple):
            raise self.type_error("a tuple is used where a number or an array is expected", node,
                                  "np.stack or np.concatenate to make an array from several")
        if isinstance(value, PyDict):
            raise self.type_error("a dict is used where a number or an array is expected", node,
                                  "read its entries: d['w']")
        if isinstance(value, Ref) and value.kind == "string":
            raise self.syntax_error("strings are supported only as dict keys", "numbers and arrays", node)
        if isinstance(value, Ref) and value.kind == "after_loop":
            raise self.syntax_error(f"the loop variable `{value.obj}` is used after its loop", 
                                    "keep what you need in a variable assigned before the loop", node)
        raise self.type_error(f"{_ref_name(value)} is used as a value", node, "numbers and arrays as values")

    def static(self, value: Value, node: cst.CSTNode, what: str) -> Any:
        """A compile-time constant (axis, keepdims, k, dtype, ...)."""
        if isinstance(value, PyTuple):
            return tuple(self.static(v, node, what) for v in value.items)
        if isinstance(value, Const) and isinstance(value.value, (int, bool, float, type(None))):
            return value.value
        if isinstance(value, Var) and isinstance(value.type, Num) and value.type.value is not None:
            return value.type.value
        if isinstance(value, Ref) and value.kind in ("dtype", "string"):
            return value.obj
        raise self.type_error(f"`{what}` must be a constant known when the function is transformed", node,
                              "an integer literal or a module-level constant")

    # ----------------------------------------------------------------- functions

    def lower_function(self, arg_types: list[Type]) -> Function:
        fd = self.root.funcdef
        self.stack.append(_Scope(self.root))
        params: list[Var] = []
        for p, t in zip(fd.params.params, arg_types):
            self.scope.env[p.name.value] = self.parameter(p.name.value, t, params)
        self.scope.call_key = _call_key(self.root.fn, self.scope.env)
        result = self.lower_body(fd)
        atom = self.result_atom(result, self.node)
        return Function(self.root.name, tuple(params), Block(tuple(self.binds), atom))

    def parameter(self, name: str, t: Type, params: list[Var]) -> Value:
        """A parameter; a structured one as its structure, with one parameter per
        leaf (``params_w`` for ``params["w"]``)."""
        if not isinstance(t, StructT):
            v = Var(self.namer.fresh(name), t)
            params.append(v)
            self.aliases.made(v.name, () if isinstance(t, Num) and t.py else (CALLER,))
            return v
        keys = t.keys or tuple(range(len(t.items)))
        items = tuple(self.parameter(f"{name}_{k}" if str(k).isidentifier() or isinstance(k, int) else f"{name}_{i}",
                                     it, params) for i, (k, it) in enumerate(zip(keys, t.items)))
        if t.kind == "dict":
            return PyDict(t.keys, items)
        value = PyTuple(items, is_list=t.kind == "list", fields=t.keys if t.kind == "namedtuple" else None)
        if value.is_list:
            self.aliases.caller_list(value)
        return value

    def result_atom(self, value: Value, node: cst.CSTNode) -> Atom:
        if isinstance(value, PyTuple):
            items = tuple(self.result_atom(v, node) for v in value.items)
            var = Var(self.namer.temp(), TupleT(tuple(i.type for i in items)))
            self.binds.append(Bind((var,), MakeTuple(items), self.loc(node)))
            return var
        return self.atom(value, node)

    def lower_body(self, fd: cst.FunctionDef) -> Value:
        body = _stmts(fd.body)
        value = self.lower_stmts(body)
        if value is None:
            raise self.syntax_error("the function must end with `return <value>`",
                                    "return a float, an array or a tuple on every path", body[-1] if body else fd)
        return value

    def lower_stmts(self, stmts: list[cst.BaseStatement]) -> Value | None:
        """Lower statements in order; the returned value if they return, else None."""
        return deep.call(self._lower_stmts, stmts)  # a block in a block in ...: on with a fresh stack

    def _lower_stmts(self, stmts: list[cst.BaseStatement]) -> Value | None:
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, cst.If):
                if _exits(stmt):  # the rest of the block continues each branch that does not return/break/continue
                    return self.lower_if(stmt, stmts[i + 1:])
                self.lower_if(stmt, None)
                continue
            if isinstance(stmt, cst.FunctionDef):
                self.scope.env[stmt.name.value] = self.closure(stmt)
                continue
            if isinstance(stmt, (cst.For, cst.While)):
                returned = self.lower_for(stmt) if isinstance(stmt, cst.For) else self.lower_while(stmt)
                if returned is not None:  # `return` inside the loop: it or the rest of the block gives the value
                    return self.after_return(stmt, *returned, stmts[i + 1:])
                continue
            if not isinstance(stmt, cst.SimpleStatementLine):
                entry = _UNSUPPORTED.get(type(stmt), (f"`{type(stmt).__name__}` statements are not supported", ""))
                raise self.syntax_error(entry[0], entry[1] or "assignments, `if` and `return`", stmt)
            for small in stmt.body:
                self.node = small
                if isinstance(small, (cst.Break, cst.Continue)):
                    return self.exits[-1]("break" if isinstance(small, cst.Break) else "continue")
                if isinstance(small, cst.Return):
                    if small.value is None:
                        raise self.syntax_error("`return` without a value", "return a float, an array or a tuple",
                                                small)
                    return self.give_back(self.expr(small.value))
                self.statement(small)
        return None

    def give_back(self, value: Value) -> Value:
        """``return value``: the function's value, or, inside a loop body, leaving the loop with it."""
        return self.exits[-1]("return", value) if self.exits else value

    def after_return(self, stmt: cst.CSTNode, returned: Atom, value: Value,
                     rest: list[cst.BaseStatement]) -> Value:
        """After a loop that may have returned: its value if it did, else the rest of the block."""
        self.node = stmt
        if isinstance(returned, Const):  # `while True:` ends only by its `return`
            return self.give_back(value)
        (t_binds, _, t_val), (e_binds, _, e_val) = self.branches(lambda: self.give_back(value),
                                                                 lambda: self.lower_block(rest, True))
        self.node = stmt
        if e_val is None:
            raise self.syntax_error("not every path after this loop returns a value",
                                    "return a value after the loop too", stmt)
        return self.join(returned, [("the returned value", t_val, e_val)], t_binds, e_binds)[0]

    # ----------------------------------------------------------------- loops

    def lower_for(self, stmt: cst.For) -> tuple[Atom, Value] | None:
        """``for i in range(...)``: the names the body assigns that exist before the
        loop are carried from one iteration to the next and joined after it."""
        self.node = stmt
        if stmt.orelse is not None or stmt.asynchronous is not None:
            raise self.syntax_error("`for ... else` and `async for` are not supported", "a plain `for` loop", stmt)
        it = stmt.iter
        func = self.expr(it.func) if isinstance(it, cst.Call) else None
        kind = func.obj if isinstance(func, Ref) and func.kind == "iterator" else None
        if kind is builtins.range:
            if not isinstance(stmt.target, cst.Name):
                raise self.syntax_error("the loop variable must be a single name", "for i in range(n):", stmt.target)
            return self.lower_loop(stmt, stmt.target.value, tuple(self.range_bounds(it)), None)
        # over arrays (first axis), enumerate(...) or zip(...): a loop over the index
        if kind is None:
            seqs, names, index_target = [it], [stmt.target], None
        else:
            assert isinstance(it, cst.Call)
            targets = _target_names(stmt.target)
            if kind is builtins.enumerate:
                if len(it.args) != 1 or len(targets) != 2:
                    raise self.syntax_error("use `for i, v in enumerate(x):`", "for i, v in enumerate(x):", it)
                seqs, names, index_target = [it.args[0].value], [targets[1]], targets[0]
            else:
                if len(targets) != len(it.args):
                    raise self.syntax_error("name one loop variable per zipped array", "for a, b in zip(x, y):", it)
                seqs, names, index_target = [a.value for a in it.args], targets, None
        values = [self.expr(s) for s in seqs]
        if all(isinstance(v, (PyTuple, PyDict)) for v in values):
            self.unroll(stmt, values, names, index_target)
            return None
        arrays = [self.dynamic_list(v, s) if isinstance(v, PyTuple) else self.atom(v, s) for v, s in zip(values, seqs)]
        for a, s in zip(arrays, seqs):
            if not (isinstance(a.type, Num) and a.type.ndim >= 1 or isinstance(a.type, ListT)):
                raise self.type_error(f"a `for` loop runs over arrays (their first axis) and lists, not {a.type}", s,
                                      "for i in range(n), for row in x, enumerate(x), zip(x, y)")
        lengths = [self.emit("list_len", [a]) if isinstance(a.type, ListT) else self.shape_of(a).items[0]
                   for a in arrays]
        bound = lengths[0]
        for other in lengths[1:]:
            bound = self.emit_call_min(bound, other)
        for n in names:
            if not isinstance(n, cst.Name):
                raise self.syntax_error("the loop variables must be names", "for a, b in zip(x, y):", n)
        index_name = index_target.value if isinstance(index_target, cst.Name) else f"{names[0].value}_index"

        def elements(index: Var) -> None:
            for n, a in zip(names, arrays):
                element = (self.emit("list_get", [a, index]) if isinstance(a.type, ListT) else
                           self.emit("getitem", [a, index], {"index": (("arg", 1),)}))
                self.scope.env[n.value] = self.name_result(element, n.value)

        return self.lower_loop(stmt, index_name, (bound,), None, prelude=elements,
                        hidden=index_target is None, element_names=[n.value for n in names])

    def unroll(self, stmt: cst.For, values: list[Value], names: list[cst.BaseExpression],
               index_target: cst.BaseExpression | None) -> None:
        """A loop over tuples, lists or dicts known element by element (structured
        arguments): the body once per element (a dict gives its keys)."""
        if _exits(stmt):
            raise self.syntax_error("`break`, `continue` and `return` are not supported in a loop over a tuple, "
                                    "list or dict (it is unrolled)", "a loop without them, or a loop over an array",
                                    stmt)
        elements = [list(v.items) if isinstance(v, PyTuple) else
                    [Ref("string", k) if isinstance(k, str) else Const.literal(k, literal_type(k)) for k in v.keys]
                    for v in values]
        for k in range(min(map(len, elements))):
            if index_target is not None:
                self.assign(index_target, Const.literal(k, literal_type(k)))
            for name, items in zip(names, elements):
                self.assign(name, items[k])
            self.lower_stmts(_stmts(stmt.body))

    def emit_call_min(self, a: Value, b: Value) -> Atom:
        x, y = self.atom(a, self.node), self.atom(b, self.node)
        if isinstance(x.type, Num) and isinstance(y.type, Num) and x.type.value is not None and y.type.value is not None:
            v = min(x.type.value, y.type.value)
            return x if v == x.type.value else y
        return self.emit("minimum", [x, y])

    def lower_while(self, stmt: cst.While) -> tuple[Atom, Value] | None:
        """``while cond:``: a loop whose last carried value is the condition,
        computed before the loop and again at the end of each iteration."""
        self.node = stmt
        if stmt.orelse is not None:
            raise self.syntax_error("`while ... else` is not supported", "a plain `while` loop", stmt)
        go = self.condition(stmt.test)
        if go is False:
            return None
        return self.lower_loop(stmt, None, (), stmt.test, Const.literal(True, BOOL) if go is True else go)

    def lower_loop(self, stmt: cst.For | cst.While, index_name: str | None, bounds: tuple[Atom, ...],
                   test: cst.BaseExpression | None, go: Atom | None = None,
                   prelude: Callable[[Var], None] | None = None, hidden: bool = False,
                   element_names: Sequence[str] = ()) -> tuple[Atom, Value] | None:
        """A loop: the names its body assigns that exist before it are carried
        from one iteration to the next (a tuple as its items, a list as a run-time
        list).  ``break`` stops it; ``return`` stops it too, carrying whether it
        returned and the value, which it gives back as ``(returned, value)``."""
        before = self.scope.env
        carried = [n for n in _assigned_names(stmt.body) if n in before and n != index_name
                   and n not in element_names and not isinstance(before[n], Ref)]
        shapes, init, names = [], [], []
        for n in carried:
            shape, leaves = self.flatten(before[n], n, stmt)
            shapes.append(shape)
            init += leaves
            names += _slot_names(n, len(leaves))
        has_return = _returns(stmt)
        has_break = _breaks(stmt.body) or has_return
        running = has_break and test is None  # a `for` with `break` carries whether it still runs
        ret_shape: Any = None
        ret_slots = 0
        extra = ([go] if go is not None else []) + ([Const.literal(True, BOOL)] if running else [])
        extra_names = (["go"] if go is not None else []) + (["running"] if running else [])
        types = [_forget_value(a.type) for a in init + extra]
        for _ in range(4):  # until the carried types are stable (e.g. a Python float becoming np.float64)
            index = Var(self.namer.fresh(index_name), INT) if index_name is not None else None
            slot_names = names + (["returned"] + _slot_names("result", ret_slots) if ret_shape else []) + extra_names
            params = [Var(self.namer.fresh(n), t) for n, t in zip(slot_names, types)]
            n_state = len(names) + (1 + ret_slots if ret_shape else 0)

            for p, a in zip(params, init + extra):
                self.aliases.carried(p, a)
            if index is not None:
                self.aliases.made(index.name, ())

            def body() -> list[Atom]:
                if index is not None:
                    self.scope.env[index_name] = index  # type: ignore[index]
                    self.bound.add(index.name)
                if prelude is not None:
                    assert index is not None
                    prelude(index)
                it = iter(params)
                for n, shape in zip(carried, shapes):
                    self.scope.env[n] = _rebuild(shape, it)
                self.bound.update(v.name for v in params)
                if not running:
                    return iteration()
                t_binds, _, t_outs = self.branch(iteration)  # `if running:` the body, else nothing changes
                return [self.atom(v, stmt) for v in self.join(params[-1], [
                    (n, t, e) for n, t, e in zip(slot_names, t_outs, params)], t_binds, [])]

            def iteration() -> list[Atom]:
                def leave(kind: str, value: Value = None) -> Value:
                    """The loop's state where the body is left: by its end or `continue`,
                    `break`, or `return value`; and whether the loop stops."""
                    state: list[Atom] = []
                    for n, shape in zip(carried, shapes):
                        state += self.flatten(self.scope.env[n], n, stmt, shape)[1]
                    if kind == "return":
                        if ret_shape is None:
                            found, leaves = self.flatten(value, "the returned value", stmt)
                            raise _ReturnSeen(found, [a.type for a in leaves])
                        state += [Const.literal(True, BOOL)] + self.flatten(value, "the returned value", stmt,
                                                                            ret_shape)[1]
                    elif ret_shape is not None:
                        state += params[len(names):n_state]
                    stop = kind in ("break", "return")
                    if test is not None:  # a `while` goes on unless it stops here, if its condition holds now
                        state.append(Const.literal(False, BOOL) if stop else self.next_go(test, has_break))
                    elif running:
                        state.append(Const.literal(not stop, BOOL))
                    return PyTuple(tuple(state))

                self.exits.append(leave)
                try:
                    ended = self.lower_stmts(_stmts(stmt.body))
                finally:
                    self.exits.pop()
                items = (ended if isinstance(ended, PyTuple) else leave("end")).items
                return [self.atom(v, stmt) for v in items]

            snapshot = self.snapshot()
            self.aliases.enter_loop()
            try:
                binds, _, outs = self.branch(body)
            except _ReturnSeen as seen:  # the returned value's structure is known now: carry it
                self.aliases.loops.pop()
                self.restore(snapshot)
                ret_shape, ret_slots = seen.shape, len(seen.types)
                placeholders = [Const.literal(False, BOOL)] + [self.placeholder(t, stmt) for t in seen.types]
                init += placeholders
                types = types[:len(names)] + [_forget_value(a.type) for a in placeholders] + types[len(names):]
                continue
            new = [_forget_value(self.join_type(n, t, o.type)) for n, t, o in zip(slot_names, types, outs)]
            if new == types:
                break
            self.aliases.loops.pop()
            self.aliases.restore(snapshot[-1])  # this pass's checks are made again by the next
            types = new
        else:
            raise self.type_error("the types of the loop's variables do not settle", stmt)
        self.node = stmt
        tup = Var(self.namer.temp(), TupleT(tuple(o.type for o in outs)))
        block = Block(tuple(binds) + (Bind((tup,), MakeTuple(tuple(outs)), self.loc(stmt)),), tup)
        finals = tuple(Var(self.namer.fresh(n), t) for n, t in zip(slot_names, types))
        self.aliases.exit_loop(params, outs, list(finals))
        self.binds.append(Bind(finals, Loop(bounds, index, tuple(params), tuple(init + extra), block),
                               self.loc(stmt)))
        self.bound.update(v.name for v in finals)
        it = iter(finals)
        for n, shape in zip(carried, shapes):
            self.scope.env[n] = _rebuild(shape, it)
        for name in ([] if hidden or index_name is None else [index_name]) + list(element_names):
            self.scope.env[name] = Ref("after_loop", name)
        if ret_shape is None:
            return None
        returned = next(it)
        only_by_return = isinstance(go, Const) and go.value is True and not _breaks(stmt.body)  # `while True:`
        return (Const.literal(True, BOOL) if only_by_return else returned), _rebuild(ret_shape, it)

    def flatten(self, value: Value, name: str, node: cst.CSTNode, shape: Any = None) -> tuple[Any, list[Atom]]:
        """A value as the atoms a loop carries (a list as a run-time list) and its
        structure; with ``shape``, the value must have that structure."""
        leaves: list[Atom] = []

        def walk(v: Value, want: Any) -> Any:
            if isinstance(v, PyTuple) and not v.is_list and (want is None or (
                    isinstance(want, tuple) and want[:1] not in (("atom",), ("same",)) and len(want) == len(v.items))):
                return tuple(walk(x, None if want is None else w) for x, w in zip(v.items, want or [None] * len(v.items)))
            if isinstance(v, Ref):
                if want is None or want == ("same", v):
                    return ("same", v)
            elif want is None or want == ("atom",):
                leaves.append(self.dynamic_list(v, node) if isinstance(v, PyTuple) else self.atom(v, node))
                return ("atom",)
            raise self.type_error(f"`{name}` changes structure in the loop (a tuple of another length, a tuple "
                                  f"and a number, or another function)", node,
                                  "values of the same structure in every iteration")

        return walk(value, shape), leaves

    def placeholder(self, t: Type, node: cst.CSTNode) -> Atom:
        """A value of type ``t`` for a loop to carry before it has one (never read)."""
        if isinstance(t, Num) and not t.shape:
            value = np.zeros((), t.dtype).item()
            return Const.literal(value, Num((), t.dtype, py=True, value=None if t.dtype == "float64" else value))
        if isinstance(t, Num) and all(isinstance(d, int) for d in t.shape):
            return self.emit("zeros", [Const.literal(d, literal_type(d)) for d in t.shape], {"dtype": t.dtype})
        if isinstance(t, ListT):
            return self.emit("list", [])
        if isinstance(t, NoneT):
            return Const.literal(None, t)
        raise self.type_error(f"a {t} returned from inside a loop is not supported", node,
                              "assign the value to a variable, `break`, and return it after the loop")

    def snapshot(self) -> tuple:
        return set(self.namer.used), set(self.namer.taken), self.namer.temps, set(self.bound), self.aliases.snapshot()

    def restore(self, snapshot: tuple) -> None:
        used, taken, temps, bound, aliases = snapshot
        self.namer.used, self.namer.taken, self.namer.temps = set(used), set(taken), temps
        self.namer.taken |= set(self.constants)  # constants keep the names they were given (const_names)
        self.namer.used |= set(self.constants)
        self.bound = set(bound)
        self.aliases.restore(aliases)

    def next_go(self, test: cst.BaseExpression, can_stop: bool) -> Atom:
        """Whether a ``while`` loop runs again after an iteration that goes on: its
        condition, on the values the names have where the iteration ends."""
        c = self.condition(test)
        if c is True and not can_stop:
            raise self.syntax_error("this `while` loop never ends: its condition is always true",
                                    "a condition on the values the loop changes, or a `break`", test)
        return Const.literal(c, BOOL) if isinstance(c, bool) else c

    def range_bounds(self, node: cst.BaseExpression) -> list[Atom]:
        func = self.expr(node.func) if isinstance(node, cst.Call) else None
        if not (isinstance(func, Ref) and func.obj is builtins.range):
            raise self.syntax_error("only `for ... in range(...)` loops are supported yet", "for i in range(n):",
                                    node)
        assert isinstance(node, cst.Call)
        if not 1 <= len(node.args) <= 3 or any(a.keyword or a.star for a in node.args):
            raise self.type_error("range() takes one to three positional arguments", node)
        bounds = [self.atom(self.expr(a.value), a.value) for a in node.args]
        for a, arg in zip(bounds, node.args):
            if not (isinstance(a.type, Num) and a.type.shape == () and a.type.dtype in ("int64", "int32")):
                raise self.type_error(f"range() needs integers, not {a.type}", arg.value,
                                      "integers, e.g. from len(x) or x.shape[0]")
        return bounds

    # ----------------------------------------------------------------- conditionals

    def lower_block(self, stmts: list[cst.BaseStatement], to_the_end: bool) -> Value | None:
        """A branch; when it runs to the end of a loop body, that is a ``continue``."""
        value = self.lower_stmts(stmts)
        if value is None and to_the_end and self.exits:
            return self.exits[-1]("end")
        return value

    def condition(self, node: cst.BaseExpression) -> Atom | bool:
        """A branch condition: a scalar boolean atom, or a bool known statically
        (constants and shapes), in which case only the branch taken is lowered."""
        a = self.atom(self.expr(node), node)
        t = a.type
        if not (isinstance(t, Num) and t.shape == ()):
            raise self.type_error(f"a condition must be a scalar, not {t}", node,
                                  "np.where(condition, a, b) for elementwise choices on arrays")
        if isinstance(a, Const) and a.name is None:
            return bool(a.value)
        if t.value is not None:
            return bool(t.value)
        if t.dtype != "bool":
            zero = Const.literal(0, literal_type(0))
            a = self.emit("ne", [a, zero])
        return a

    def branch(self, lower: Callable[[], Any]) -> tuple[list[Bind], dict[str, Value], Any]:
        """Lower one branch into bindings of its own, starting from the current names."""
        saved_binds, saved_env = self.binds, self.scope.env
        self.binds, self.scope.env = [], dict(saved_env)
        self.open_binds.append(saved_binds)
        try:
            out = lower()
            return self.binds, self.scope.env, out
        finally:
            self.binds, self.scope.env = saved_binds, saved_env
            self.open_binds.pop()

    def branches(self, then: Callable[[], Any], orelse: Callable[[], Any]) -> tuple[tuple, tuple]:
        """The two branches of an ``if``, each from the names there are before it."""
        return self.branch(then), self.branch(orelse)

    def lower_if(self, stmt: cst.If, rest: list[cst.BaseStatement] | None) -> Value | None:
        """``if``/``elif``/``else``.  Without ``rest``, the names the branches assign are
        joined after it; with ``rest`` (a branch returns), the rest of the function
        continues each branch and the joined value is what the function returns."""
        then_stmts = _stmts(stmt.body) + (rest or [])
        else_stmts = _else_stmts(stmt) + (rest or [])
        self.node = stmt
        c = self.condition(stmt.test)
        if isinstance(c, bool):
            return self.lower_stmts(then_stmts if c else else_stmts)
        (t_binds, t_env, t_val), (e_binds, e_env, e_val) = self.branches(
            lambda: self.lower_block(then_stmts, rest is not None), lambda: self.lower_block(else_stmts, rest is not None))
        self.node = stmt
        if rest is not None:
            if t_val is None or e_val is None:
                raise self.syntax_error("not every path through this `if` returns a value",
                                        "return a value on every path", stmt)
            return self.join(c, [("the returned value", t_val, e_val)], t_binds, e_binds)[0]
        before = self.scope.env
        names = [k for k in list(t_env) + [k for k in e_env if k not in t_env]
                 if k in t_env and k in e_env and not (t_env[k] is before.get(k) and e_env[k] is before.get(k))]
        joined = self.join(c, [(k, t_env[k], e_env[k]) for k in names], t_binds, e_binds)
        for k, v in zip(names, joined):
            self.scope.env[k] = v
        return None

    def join(self, cond: Atom, values: list[tuple[str, Value, Value]], t_binds: list[Bind],
             e_binds: list[Bind]) -> list[Value]:
        """Bind ``if cond`` with the two branches' values joined into new variables."""
        pairs: list[tuple[str, Atom, Atom]] = []
        rebuilt = [self._pair_up(name, tv, ev, pairs, (t_binds, e_binds)) for name, tv, ev in values]
        outs = [Var(self.namer.fresh(name) if name.isidentifier() else self.namer.temp(),
                    self.join_type(name, a.type, b.type)) for name, a, b in pairs]

        def block(binds: list[Bind], atoms: list[Atom]) -> Block:
            tup = Var(self.namer.temp(), TupleT(tuple(a.type for a in atoms)))
            return Block(tuple(binds) + (Bind((tup,), MakeTuple(tuple(atoms)), self.loc()),), tup)

        self.binds.append(Bind(tuple(outs), If(cond, block(t_binds, [a for _, a, _ in pairs]),
                                                block(e_binds, [b for _, _, b in pairs])), self.loc()))
        self.bound.update(o.name for o in outs)
        for out, (_, a, b) in zip(outs, pairs):
            self.aliases.joined(out, a, b)
        it = iter(outs)
        results = [_rebuild(r, it) for r in rebuilt]
        for result, (_, tv, ev) in zip(results, values):
            self.aliases.joined(result, tv, ev)
        return results

    def _pair_up(self, name: str, tv: Value, ev: Value, pairs: list, binds: tuple[list[Bind], list[Bind]]) -> Any:
        """Match the structure of two branches' values; collect the atom pairs to
        join.  A list of another length in each branch (appended to in one of
        them) is joined as a list built at run time."""
        if isinstance(tv, PyTuple) and isinstance(ev, PyTuple) and len(tv.items) == len(ev.items):
            items = tuple(self._pair_up(name, a, b, pairs, binds) for a, b in zip(tv.items, ev.items))
            return ("list", items) if tv.is_list and ev.is_list else items
        if _is_list(tv) and _is_list(ev):
            pairs.append((name, *(self._in_branch(v, b) for v, b in zip((tv, ev), binds))))
            return ("atom",)
        if isinstance(tv, Ref) or isinstance(ev, Ref):
            if tv == ev:
                return ("same", tv)
            raise self.type_error(f"`{name}` is a different kind of value in each branch", None,
                                  "the same kind of value (number, array or tuple) in both branches")
        if isinstance(tv, PyTuple) or isinstance(ev, PyTuple):
            raise self.type_error(f"`{name}` is a tuple in one branch and not in the other (or of another length)",
                                  None, "values of the same structure in both branches")
        pairs.append((name, self.atom(tv, self.node), self.atom(ev, self.node)))
        return ("atom",)

    def _in_branch(self, value: Value, binds: list[Bind]) -> Atom:
        """A list as a run-time list, made (if it must be) at the end of a branch's bindings."""
        if not isinstance(value, PyTuple):
            return self.atom(value, self.node)
        saved, self.binds = self.binds, binds
        try:
            return self.dynamic_list(value, self.node)
        finally:
            self.binds = saved

    def join_type(self, name: str, a: Type, b: Type) -> Type:
        if a == b:
            return a
        if isinstance(a, ListT) and isinstance(b, ListT):
            if a.elem is None or b.elem is None:
                return ListT(a.elem if b.elem is None else b.elem)
            return ListT(self.join_type(name, a.elem, b.elem))
        if isinstance(a, Num) and isinstance(b, Num):
            if a.shape == b.shape and (a.dtype == b.dtype or not a.shape):
                dtype = np.result_type(a.dtype, b.dtype).name
                return Num(a.shape, dtype, a.py and b.py, a.value if a.value == b.value else None)
        raise self.type_error(f"`{name}` is {a} in one branch and {b} in the other", None,
                              "the same shape and dtype in both branches")

    def inline_call(self, fn: Callable[..., Any], path: tuple[str, ...], args: list[Value], kwargs: dict[str, Value],
                    node: cst.CSTNode) -> Value:
        try:
            parsed = parse(fn)
        except SourceUnavailableError as e:  # point at the call
            called = path[-1] if path else fn.__name__
            raise SourceUnavailableError(f"cannot inline the call to `{called}`: {e.message}", self.loc(node),
                                         e.hint) from None
        sig = inspect.signature(fn, follow_wrapped=False)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.type_error(f"call to {fn.__name__}: {e}", node,
                                  hint=f"call {fn.__name__}{sig} with the parameters it declares") from None
        scope = _Scope(parsed, path)
        for pname, param in sig.parameters.items():
            if pname in bound.arguments:
                scope.env[pname] = bound.arguments[pname]
            else:
                # a numpy default is named in the generated code like a module-level constant; its path
                # starts with a name no namespace has, so the disk cache never resolves it to another object
                scope.env[pname] = self.constant(param.default, f"default of {pname}", node, pname,
                                                 ("<default>", fn.__qualname__, pname))
        self.namer.mention(_user_names(parsed.funcdef))
        return self.run_call(fn, fn.__name__, scope, node, lambda: self.lower_body(parsed.funcdef))

    def run_call(self, callee: Any, name: str, scope: _Scope, node: cst.CSTNode, lower: Callable[[], Value]) -> Value:
        """Lower a call's body in the callee's scope.  A recursive call is unrolled:
        each call must differ from the calls it is inside in what is known when
        transforming (ints, shapes, the structure of tuples), so that the
        recursion ends while transforming; else it would never end."""
        scope.call_key = _call_key(callee, scope.env)
        if any(s.call_key == scope.call_key for s in self.stack):
            raise self.syntax_error(
                f"recursive call to {name} with the same shapes and integers as the call it is in: its depth is "
                "known only when running, which is not supported yet",
                "recursion on an integer, a shape or a tuple's structure that changes at each call", node)
        if len(self.stack) > MAX_CALL_DEPTH:
            raise self.syntax_error(f"calls nested more than {MAX_CALL_DEPTH} deep", "a shallower recursion", node)
        saved, saved_exits = self.node, self.exits
        self.stack.append(scope)
        self.exits = []  # the callee's `return` leaves the callee, not the caller's loop
        try:
            return deep.call(lower)  # a deep recursion goes on with a fresh stack
        finally:
            self.stack.pop()
            self.node, self.exits = saved, saved_exits

    # ----------------------------------------------------------------- statements

    def statement(self, node: cst.BaseSmallStatement) -> None:
        if isinstance(node, cst.Assign):
            value = self.expr(node.value)
            for target in node.targets:
                self.assign(target.target, value)
        elif isinstance(node, cst.AnnAssign):
            if node.value is None:
                return
            self.assign(node.target, self.expr(node.value))
        elif isinstance(node, cst.AugAssign):
            self.aug_assign(node)
        elif isinstance(node, cst.Expr) and isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
            return  # docstring
        elif isinstance(node, cst.Expr) and _is_append(node.value):
            self.append(node.value)
        elif isinstance(node, cst.Pass):
            return
        elif isinstance(node, cst.Expr):
            raise self.syntax_error("an expression statement has no effect astad can differentiate",
                                    "assign the value to a name, or remove the statement", node)
        else:
            raise self.syntax_error(f"`{type(node).__name__}` statements are not supported",
                                    "assignments and a final `return`", node)

    def assign(self, target: cst.BaseExpression, value: Value) -> None:
        if isinstance(target, cst.Name):
            self.scope.env[target.value] = self.name_result(value, target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            if not isinstance(value, PyTuple) or len(value.items) != len(target.elements):
                n = len(value.items) if isinstance(value, PyTuple) else "a non-tuple"
                raise self.type_error(f"cannot unpack {n} values into {len(target.elements)} names", target)
            for el, v in zip(target.elements, value.items):
                if isinstance(el, cst.StarredElement):
                    raise self.syntax_error("`*` in unpacking is not supported", "name each element", el)
                self.assign(el.value, v)
        elif isinstance(target, cst.Subscript):
            raise self.syntax_error("assigning to an element (`x[i] = v`) mutates an array, which is not supported",
                                    "build the array functionally: np.where, np.concatenate, np.stack", target)
        else:
            raise self.syntax_error("only names and tuples of names can be assigned to",
                                    "`name = ...` or `a, b = ...`", target)

    def aug_assign(self, node: cst.AugAssign) -> None:
        target = node.target
        if not isinstance(target, cst.Name):
            raise self.syntax_error("augmented assignment to an element mutates an array, which is not supported",
                                    "x = x + ... on a whole name", target)
        old = self.expr(target)
        op = _AUG_OPS.get(type(node.operator))
        if op is None:
            raise self.syntax_error("this augmented assignment is not supported", "+= -= *= /=", node)
        old_atom = self.atom(old, target)
        if isinstance(old_atom.type, Num) and not old_atom.type.py:  # a 0-d array changes in place too
            self.check_in_place(old_atom, target.value, _AUG_SYMBOL[op], node)
        value = self.emit(op, [old_atom, self.atom(self.expr(node.value), node.value)])
        if isinstance(old_atom.type, Num) and old_atom.type.shape and (
                value.type.shape != old_atom.type.shape or value.type.dtype != old_atom.type.dtype):  # type: ignore[union-attr]
            raise self.type_error(f"in-place `{_AUG_SYMBOL[op]}=` cannot change {old_atom.type} into {value.type}", node,
                                  f"{target.value} = {target.value} {_AUG_SYMBOL[op]} ...")
        self.scope.env[target.value] = self.name_result(value, target.value)

    def append(self, call: cst.Call) -> None:
        """``xs.append(v)``: the list named ``xs`` is rebound to the longer list."""
        assert isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Name)
        name = call.func.value.value
        if len(call.args) != 1 or call.args[0].keyword or call.args[0].star:
            raise self.type_error("list.append takes one argument", call)
        old = self.expr(call.func.value)
        loc = self.loc(call)

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"`{name}.append` changes the list in place, and {why}", loc,
                                          f"build a new list: {name} = {name} + [v]")

        if _is_list(old):
            self.aliases.update_list(old, self.readable_besides(name), fail)
        v = self.atom(self.expr(call.args[0].value), call.args[0].value)
        if isinstance(old, PyTuple) and old.is_list:
            new = self.scope.env[name] = PyTuple(old.items + (v,), is_list=True)
            self.aliases.new_list(new, self.aliases.list_identity(old))
        elif isinstance(old, Var) and isinstance(old.type, ListT):
            self.scope.env[name] = self.name_result(self.emit("append", [old, v]), name)
        else:
            raise self.type_error(f"`{name}` is not a list", call, "append to a list made by [] or [a, b]")

    def dynamic_list(self, value: PyTuple, node: cst.CSTNode) -> Atom:
        """A list known element by element, as a run-time list (to carry it through a loop)."""
        var = self.emit("list", [self.atom(v, node) for v in value.items])
        if value.is_list:
            self.aliases.converted(var, value)
        return var

    def check_in_place(self, x: Atom, name: str, symbol: str, node: cst.CSTNode) -> None:
        """``x += v`` changes the array in place: the functional reading is only
        right when nothing that can still be read shares its memory (another
        name, a view, a list or tuple holding it, a function's default, the
        caller's argument, a module constant): see :mod:`astad.aliases`."""
        loc = self.loc(node)

        def fail(why: str) -> Exception:
            return UnsupportedSyntaxError(f"`{name} {symbol}= ...` changes the array in place, and {why}", loc,
                                          f"{name} = {name} {symbol} ...")

        self.aliases.update_array(x, self.readable_besides(name), fail)

    def readable_besides(self, name: str) -> list[tuple[str, Value]]:
        """Every value that can still be read, but the current scope's ``name``:
        the names of the running scopes and of the scopes around them, and what
        the functions that can still be called hold."""
        seen: set[int] = set()
        found: list[tuple[str, Value]] = []
        for s in self.stack:
            for sc in _scopes(s):
                if id(sc) in seen:
                    continue
                seen.add(id(sc))
                env = self.scope.env if sc is self.scope else sc.env
                found += [(f"`{k}` shares its memory (the same object, a view of it, or a list or tuple holding it)", v)
                          for k, v in env.items() if not (sc is self.scope and k == name)]
        found += [("a function made earlier holds it (as a default, or as a variable it reads)", v)
                  for v in self.held_by_functions()]
        return found

    # ----------------------------------------------------------------- expressions

    def expr(self, node: cst.BaseExpression) -> Value:
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            entry = _UNSUPPORTED.get(type(node))
            message, hint = entry if entry else (f"`{type(node).__name__}` expressions are not supported",
                                                 "arithmetic, numpy calls, indexing")
            raise self.syntax_error(message, hint, node)
        saved = self.node
        self.node = node
        try:
            return deep.call(method, node)  # a deeply nested expression goes on with a fresh stack
        finally:
            self.node = saved

    def expr_Integer(self, node: cst.Integer) -> Value:
        v = int(node.evaluated_value)
        return Const.literal(v, literal_type(v))

    def expr_Float(self, node: cst.Float) -> Value:
        return Const.literal(float(node.evaluated_value), FLOAT)

    def expr_Tuple(self, node: cst.Tuple) -> Value:
        return PyTuple(tuple(self.element(e) for e in node.elements))

    def expr_List(self, node: cst.List) -> Value:
        value = PyTuple(tuple(self.element(e) for e in node.elements), is_list=True)
        self.aliases.new_list(value)
        return value

    def element(self, e: cst.BaseElement) -> Value:
        if isinstance(e, cst.StarredElement):
            raise self.syntax_error("`*` unpacking is not supported", "explicit elements", e)
        return self.expr(e.value)

    def expr_Lambda(self, node: cst.Lambda) -> Value:
        return self.closure(node)

    def closure(self, node: cst.Lambda | cst.FunctionDef) -> Ref:
        defaults = {p.name.value: self.expr(p.default) for p in node.params.params if p.default is not None}
        visible = {a.name for sc in self._chain() for v in sc.env.values() for a in _atoms_in(v)}
        site = (self.binds, self.binds[-1] if self.binds else None, visible)
        return Ref("closure", Closure(node, self.scope, defaults, site))

    def _chain(self) -> Iterator["_Scope"]:
        return _scopes(self.scope)

    def function_value(self, c: Closure, args: list[Value], kwargs: dict[str, Value], node: cst.Call) -> Value | None:
        """A call of a lambda or nested def as a call of a function value in the IR
        (CHAD's function types: the reverse pass gives it a copower cotangent,
        which the optimiser removes), when the function is one the IR can hold:
        called with numbers, its body straight-line code returning one number,
        reading only variables that existed where it was made (made among
        bindings still being lowered).  None: inline the call instead."""
        names = [p.name.value for p in c.node.params.params]
        live = c.site is not None and any(c.site[0] is lst for lst in [self.binds, *self.open_binds])
        if (not live or self.trying or c.defaults or kwargs or len(args) != len(names)
                or not all(isinstance(a, (Var, Const)) and isinstance(a.type, Num) for a in args)):
            return None
        key = (tuple(a.type for a in args), self.captures(c))  # type: ignore[union-attr]
        if key not in c.values:  # tried once per key: a failed try is not repeated at every call
            c.values[key] = self._make_function_value(c, names, list(key[0]), node)
        f = c.values[key]
        if f is None:
            return None
        y = Var(self.namer.temp(), f.type.result)  # type: ignore[union-attr]
        self.binds.append(Bind((y,), App(f, tuple(args)), self.loc(node)))  # type: ignore[arg-type]
        self.aliases.call(y, f, args)
        return y

    def captures(self, c: Closure) -> tuple:
        """What a call of ``c`` reads from outside it, now: the variables it names
        and, through the functions among them, what those read (their defaults
        too), transitively.  Two calls that read the same may share a function value."""
        found: list[tuple] = []
        todo, seen = [c], {id(c)}
        while todo:
            fn = todo.pop()
            found.append(("defaults", id(fn), tuple((k, _value_key(v)) for k, v in sorted(fn.defaults.items()))))
            for n in fn.reads:
                v = self._lookup(fn.scope, n)
                if v is None:
                    continue
                found.append((id(fn), n, _value_key(v)))
                for inner in _closures_in(v):
                    if id(inner) not in seen:
                        seen.add(id(inner))
                        todo.append(inner)
        return tuple(found)

    def _make_function_value(self, c: Closure, names: list[str], types: list[Type], node: cst.Call) -> Var | None:
        params = tuple(Var(self.namer.fresh(n), _forget_value(t)) for n, t in zip(names, types))
        for p in params:
            self.aliases.made(p.name, ("F:" + p.name,))
        scope = _Scope(c.scope.parsed, c.scope.path, dict(zip(names, params)), parent=c.scope)
        body = c.node.body
        depth, waiting = len(self.aliases.loops), len(self.aliases.pending)
        self.trying += 1  # the calls in it are inlined: one try lowers the body once, not once per nested try
        try:
            binds, _, value = self.branch(lambda: self.run_call(
                c, c.__name__, scope, node, (lambda: self.expr(body)) if isinstance(body, cst.BaseExpression)
                else (lambda: self.lower_body(c.node))))  # type: ignore[arg-type]
        except AstadError:  # what this try left is dropped: the inlined call checks again
            del self.aliases.loops[depth:], self.aliases.pending[waiting:]
            return None  # inlined, the call gives the error where it is made
        finally:
            self.trying -= 1
        assert c.site is not None
        site, before, visible = c.site
        block = Block(tuple(binds), value) if isinstance(value, Var) else None
        if (block is None or not isinstance(value.type, Num)  # type: ignore[union-attr]
                or any(not isinstance(b.rhs, (Prim, MakeTuple, Unpack, Copy)) for b in binds)
                or any(v.name not in visible for v in lam_free_vars(Lam(params, block)))):
            return None
        name = next((k for sc in self._chain() for k, v in sc.env.items()
                     if isinstance(v, Ref) and v.obj is c), c.__name__.strip("<>"))
        fname = self.namer.fresh(name)
        f = Var(fname, FunT(tuple(p.type for p in params), value.type, fname))  # type: ignore[union-attr]
        at = 0 if before is None else next(i for i, b in enumerate(site) if b is before) + 1
        site.insert(at, Bind((f,), Lam(params, block), self.loc(c.node)))
        self.bound.add(f.name)
        self.aliases.function(f, params, value)
        return f

    def _lookup(self, scope: "_Scope | None", name: str) -> Value | None:
        """What ``name`` is in ``scope`` or the scopes around it (as a nested function reads it)."""
        return next((s.env[name] for s in _scopes(scope) if name in s.env), None)

    def held_by_functions(self) -> list[Value]:
        """The values the lambdas and nested defs that can still be called hold
        apart from the running scopes: their defaults, and the variables of the
        calls that made them."""
        held: list[Value] = []
        todo = [c for s in self.stack for v in s.env.values() for c in _closures_in(v)]  # reachable ones
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
            todo += [d for v in values for d in _closures_in(v)]
        return held

    def call_closure(self, c: Closure, args: list[Value], kwargs: dict[str, Value], node: cst.Call) -> Value:
        """A call of a lambda or nested def: a call of a function value, or its
        body, inlined, in a scope of its own that reads the defining scope's
        variables as they are now."""
        value = self.function_value(c, args, kwargs, node)
        if value is not None:
            return value
        names = [p.name.value for p in c.node.params.params]
        given = dict(zip(names, args))
        if len(args) > len(names) or any(k not in names or k in given for k in kwargs):
            raise self.type_error(f"call to {c.__name__}: the arguments do not match its parameters "
                                  f"({', '.join(names)})", node)
        given.update(kwargs)
        missing = [n for n in names if n not in given and n not in c.defaults]
        if missing:
            raise self.type_error(f"call to {c.__name__}: missing argument `{missing[0]}`", node)
        scope = _Scope(c.scope.parsed, c.scope.path, {n: given.get(n, c.defaults.get(n)) for n in names},  # type: ignore[misc]
                       parent=c.scope)
        body = c.node.body
        return self.run_call(c, c.__name__, scope, node, (lambda: self.expr(body)) if isinstance(body, cst.BaseExpression)
                             else (lambda: self.lower_body(c.node)))  # type: ignore[arg-type]

    def expr_ListComp(self, node: cst.ListComp) -> Value:
        return self.comprehension(node, node.elt, node.for_in)

    def expr_GeneratorExp(self, node: cst.GeneratorExp) -> Value:
        return self.comprehension(node, node.elt, node.for_in)  # consumed as a list

    def comprehension(self, node: cst.CSTNode, elt: cst.BaseExpression, for_in: cst.CompFor) -> Value:
        """``[e for x in xs if c]``: the loop ``items = []; for x in xs: if c:
        items.append(e)`` (over ``range``, arrays, lists or structured values),
        its names local to it as in Python."""
        key = self.namer.hidden("items")
        body: cst.BaseStatement = cst.SimpleStatementLine([cst.Expr(cst.Call(
            cst.Attribute(cst.Name(key), cst.Name("append")), [cst.Arg(elt)]))])
        clauses = []
        f: cst.CompFor | None = for_in
        while f is not None:
            clauses.append(f)
            f = f.inner_for_in
        for clause in reversed(clauses):
            for cond in reversed(clause.ifs):
                body = cst.If(test=cond.test, body=cst.IndentedBlock([body]))
            body = cst.For(target=clause.target, iter=clause.iter, body=cst.IndentedBlock([body]))
        self.alias(body, node)
        # a scope of its own: its variables are not the enclosing function's (nor its functions')
        items = PyTuple((), is_list=True)
        self.aliases.new_list(items)
        scope = _Scope(self.scope.parsed, self.scope.path, {key: items}, parent=self.scope)
        self.stack.append(scope)
        start = len(self.binds)
        try:
            self.lower_stmts([body])
        finally:
            self.stack.pop()
        items = scope.env[key]
        n = _trip_count(self.binds[start:]) if len(clauses) == 1 and not clauses[0].ifs else None
        if n is not None and isinstance(items, Var) and isinstance(items.type, ListT):
            return self.emit("list_of_length", [items], {"n": n})  # np.stack of it has a known first axis
        return items

    def alias(self, made: cst.CSTNode, user: cst.CSTNode) -> None:
        """Point errors and line comments of the nodes astad made at the user's node."""
        positions, aliases = self.scope.parsed.positions, self.scope.parsed.aliases

        class V(cst.CSTVisitor):
            def on_visit(self, n: cst.CSTNode) -> bool:
                if n not in positions:
                    aliases[n] = user
                    return True
                return False

        deep.visit(made, V())

    def expr_SimpleString(self, node: cst.SimpleString) -> Value:
        return Ref("string", node.evaluated_value)  # only as a dict key

    def expr_Name(self, node: cst.Name) -> Value:
        for_name = node.value
        found = self._lookup(self.scope, for_name)  # a nested function reads its enclosing functions' names now
        if found is not None:
            return found
        if for_name in ("True", "False", "None"):
            v = {"True": True, "False": False, "None": None}[for_name]
            return Const.literal(v, literal_type(v))
        fn = self.scope.parsed.fn
        if for_name in fn.__code__.co_freevars:
            raise self.syntax_error(f"`{for_name}` is captured from an enclosing function; closures are not "
                                    "supported yet", "pass the value as an argument, or define it at module level",
                                    node)
        g = fn.__globals__
        if for_name in g:
            obj = g[for_name]
        elif hasattr(builtins, for_name):
            obj = getattr(builtins, for_name)
        else:
            raise self.type_error(f"name `{for_name}` is not defined", node,
                                  hint="a parameter, a variable assigned earlier, or a module-level name")
        path = self.scope.path + (for_name,)
        self.deps.append((path, obj))
        value = self.global_value(for_name, obj, node, path)
        return value

    def global_value(self, name: str, obj: Any, node: cst.CSTNode, path: tuple[str, ...] = ()) -> Value:
        if obj is np:
            return Ref("module", np)
        if isinstance(obj, types.ModuleType):
            if obj.__name__.startswith("numpy"):
                return Ref("module", obj)
            raise UnsupportedFunctionError(f"module `{obj.__name__}` is not supported", self.loc(node),
                                           "numpy (import numpy as np) and your own functions")
        if _builtin(obj) is not None:
            return Ref("builtin", obj)
        if any(obj is it for it in _ITERATORS):
            return Ref("iterator", obj)
        if obj is builtins.map or obj is builtins.list or obj is builtins.isinstance:
            return Ref(obj.__name__, obj)
        if any(obj is t for t in _TYPES):
            return Ref("type", obj)
        if numpy_name(obj) is not None:
            return Ref("numpy", obj)
        inner = reversed_function(obj)
        if inner is not None:
            return Ref("user", inner, path=path)
        if getattr(type(obj), "__astad_program__", None) is not None:
            raise SourceUnavailableError(
                f"`{name}` is {obj!r}: calling a derivative inside a function astad differentiates (a higher-order "
                "derivative inside the code) is not supported yet", self.loc(node),
                "differentiate the derivative itself (astad.grad(astad.grad(f))), or compute it outside")
        if isinstance(obj, types.FunctionType):
            return Ref("user", obj, path=path)
        if any(obj is k for k in _PY_DTYPES):
            return Ref("dtype", _PY_DTYPES[obj])
        return self.constant(obj, f"`{name}`", node, name, path)

    def const_or(self, value: Any) -> Value:
        """A call argument's value, or a Python default from a signature table as a literal."""
        if isinstance(value, (Var, Const, PyTuple, PyDict, Ref)):
            return value
        return Const.literal(value, literal_type(value))

    def constant(self, obj: Any, what: str, node: cst.CSTNode, name: str | None = None,
                 path: tuple[str, ...] = ()) -> Const:
        """A module-level constant (or a default value) read as a constant."""
        if isinstance(obj, (bool, int, float, np.ndarray, np.generic)) and not isinstance(obj, complex):
            try:
                t = abstract(obj, what)
            except AstadTypeError as e:
                raise self.type_error(e.message, node, e.hint) from None
            if isinstance(t, Num) and t.py and t.dtype != "float64":
                t = Num((), t.dtype, py=True, value=obj)
            if name is None or not path or (type(obj) in (bool, int, float) and path[0] == "<default>"):
                return Const.literal(obj, t)
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

    def expr_Attribute(self, node: cst.Attribute) -> Value:
        base = self.expr(node.value)
        attr = node.attr.value
        if isinstance(base, Ref) and base.kind == "module":
            if not hasattr(base.obj, attr):
                raise UnsupportedFunctionError(f"`{base.obj.__name__}.{attr}` does not exist", self.loc(node))
            obj = getattr(base.obj, attr)
            if isinstance(obj, type) and issubclass(obj, np.generic):
                return Ref("dtype", np.dtype(obj).name)
            if isinstance(obj, float):
                return Const(obj, FLOAT, f"np.{attr}", ("np", attr))
            return self.global_value(f"np.{attr}", obj, node)
        if isinstance(base, (Var, Const)) and isinstance(base.type, Num):
            return self.array_attribute(base, attr, node)
        if isinstance(base, PyTuple) and base.fields is not None and attr in base.fields:
            return base.items[base.fields.index(attr)]
        raise self.syntax_error(f"attribute `.{attr}` is not supported here", "array attributes .T .shape .ndim .size",
                                node)

    def array_attribute(self, x: Atom, attr: str, node: cst.CSTNode) -> Value:
        t = x.type
        assert isinstance(t, Num)
        if attr == "T":
            return self.emit("transpose", [x])
        if attr == "shape":
            return self.shape_of(x)
        if attr == "ndim":
            return Const.literal(t.ndim, Num((), "int64", py=True, value=t.ndim))
        if attr == "size":
            return self.emit("size", [x])
        if attr in METHODS:
            return Ref("method", METHODS[attr], x)
        raise self.syntax_error(f"array attribute `.{attr}` is not supported",
                                "attributes .T .shape .ndim .size and methods " + ", ".join(sorted(METHODS)), node)

    def shape_of(self, x: Atom) -> PyTuple:
        t = x.type
        assert isinstance(t, Num)
        return PyTuple(tuple(self.emit("dim", [x], {"axis": i}) for i in range(t.ndim)))

    def expr_UnaryOperation(self, node: cst.UnaryOperation) -> Value:
        if isinstance(node.operator, cst.Not):
            c = self.bool_atom(self.expr(node.expression), node)
            return Const.literal(not c, literal_type(not c)) if isinstance(c, bool) else self.emit("not_", [c])
        operand = self.atom(self.expr(node.expression), node.expression)
        if isinstance(node.operator, cst.Minus):
            return self.emit("neg", [operand])
        if isinstance(node.operator, cst.Plus):
            return operand
        raise self.syntax_error("this unary operator is not supported", "unary - and +", node)

    def expr_BinaryOperation(self, node: cst.BinaryOperation) -> Value:
        op = _BIN_OPS.get(type(node.operator))
        if op is None:
            raise self.syntax_error("this operator is not supported", "+ - * / // % ** @ & |", node)
        left = self.atom(self.expr(node.left), node.left)
        right = self.atom(self.expr(node.right), node.right)
        return self.emit(op, [left, right])

    def expr_Comparison(self, node: cst.Comparison) -> Value:
        """``a < b``; a chain ``a < b < c`` means ``a < b and b < c`` (``b`` evaluated once)."""
        left = self.atom(self.expr(node.left), node.left)
        result: Value | None = None
        for comp in node.comparisons:
            op = _CMP_OPS.get(type(comp.operator))
            if op is None:
                raise self.syntax_error("this comparison is not supported", "< <= > >= == !=", comp)
            right = self.atom(self.expr(comp.comparator), comp.comparator)
            test = self.emit(op, [left, right])
            result = test if result is None else self.short_circuit(result, lambda t=test: t, is_and=True)
            left = right
        assert result is not None
        return result

    def expr_IfExp(self, node: cst.IfExp) -> Value:
        c = self.condition(node.test)
        if isinstance(c, bool):
            return self.expr(node.body if c else node.orelse)
        t_binds, _, t_val = self.branch(lambda: self.expr(node.body))
        e_binds, _, e_val = self.branch(lambda: self.expr(node.orelse))
        return self.join(c, [("the value of the conditional expression", t_val, e_val)], t_binds, e_binds)[0]

    def expr_BooleanOperation(self, node: cst.BooleanOperation) -> Value:
        is_and = isinstance(node.operator, cst.And)
        left = self.expr(node.left)
        return self.short_circuit(left, lambda: self.expr(node.right), is_and, node)

    def short_circuit(self, left: Value, right: Callable[[], Value], is_and: bool,
                      node: cst.CSTNode | None = None) -> Value:
        """``a and b`` / ``a or b`` on booleans, evaluating ``b`` only when Python would."""
        c = self.bool_atom(left, node)
        if isinstance(c, bool):
            if c != is_and:
                return Const.literal(c, literal_type(c))
            r = self.bool_atom(right(), node)
            return Const.literal(r, literal_type(r)) if isinstance(r, bool) else r
        r_binds, _, r_val = self.branch(lambda: self.bool_atom(right(), node))
        fixed = Const.literal(not is_and, literal_type(not is_and))
        t_binds, e_binds = (r_binds, []) if is_and else ([], r_binds)
        if isinstance(r_val, bool):
            r_val = Const.literal(r_val, literal_type(r_val))
        t_val, e_val = (r_val, fixed) if is_and else (fixed, r_val)
        return self.join(c, [("the value of `and`/`or`", t_val, e_val)], t_binds, e_binds)[0]

    def bool_atom(self, value: Value, node: cst.CSTNode | None) -> Atom | bool:
        a = self.atom(value, node or self.node)
        if not (isinstance(a.type, Num) and a.type.shape == () and a.type.dtype == "bool"):
            raise self.type_error(f"`and`/`or`/`not` need booleans, not {a.type}", node,
                                  "comparisons combined with and/or/not; `&`/`|` on boolean arrays")
        if isinstance(a, Const) and a.name is None:
            return bool(a.value)
        if a.type.value is not None:
            return bool(a.type.value)
        return a

    def expr_Subscript(self, node: cst.Subscript) -> Value:
        base = self.expr(node.value)
        if isinstance(base, PyTuple):
            return self.tuple_subscript(base, node)
        if isinstance(base, PyDict):
            return self.dict_subscript(base, node)
        x = self.atom(base, node.value)
        if isinstance(x.type, ListT):
            if len(node.slice) != 1 or isinstance(node.slice[0].slice, cst.Slice):
                raise self.type_error("a list takes a single integer index", node, "xs[i]")
            i = self.atom(self.expr(node.slice[0].slice.value), node)
            return self.emit("list_get", [x, i])
        index: list[Any] = []
        args: list[Atom] = [x]
        for el in node.slice:
            index.append(self.index_item(el.slice, args))
        if len(args) == 1:
            composed = self.compose_index(x, tuple(index))
            if composed is not None:
                args, index = [composed[0]], list(composed[1])
        return self.emit("getitem", args, {"index": tuple(index)})

    def compose_index(self, x: Atom, index: tuple) -> tuple[Atom, tuple] | None:
        """``y[a:b][i]`` (first axis, constant bounds) as one index of ``y``: the
        cotangent then goes to ``y`` in one step, not through a chain of slices."""
        if len(index) != 1 or not isinstance(x, Var):
            return None
        d = next((b for b in reversed(self.binds) if b.targets == (x,)), None)
        if d is None or not (isinstance(d.rhs, Prim) and d.rhs.op == "getitem" and len(d.rhs.args) == 1):
            return None
        inner = d.rhs.param("index")
        y = d.rhs.args[0]
        n = y.type.shape[0] if isinstance(y.type, Num) and y.type.shape else None
        if not (isinstance(n, int) and len(inner) == 1 and isinstance(inner[0], tuple) and inner[0][0] == "slice"
                and all(v is None or isinstance(v, int) for v in inner[0][1:])):
            return None
        outer = index[0]
        rows = range(n)[slice(*inner[0][1:])]
        if isinstance(outer, int) and not isinstance(outer, bool):
            return (y, (rows[outer],)) if -len(rows) <= outer < len(rows) else None
        if isinstance(outer, tuple) and outer[0] == "slice" and all(v is None or isinstance(v, int) for v in outer[1:]):
            r = rows[slice(*outer[1:])]
            stop = r.stop if r.stop >= 0 else None
            return y, (("slice", r.start, stop, r.step if r.step != 1 else None),)
        return None

    def dict_subscript(self, base: PyDict, node: cst.Subscript) -> Value:
        s = node.slice[0].slice if len(node.slice) == 1 else None
        if not isinstance(s, cst.Index):
            raise self.syntax_error("a dict takes a single key", "d['w']", node)
        key = self.static(self.expr(s.value), s.value, "dict key")
        if key not in base.keys:
            raise self.type_error(f"the dict has no key {key!r}; its keys are {', '.join(map(repr, base.keys))}", node)
        return base.items[base.keys.index(key)]

    def tuple_subscript(self, base: PyTuple, node: cst.Subscript) -> Value:
        if len(node.slice) != 1:
            raise self.syntax_error("a tuple takes a single index", "t[i] or t[a:b]", node)
        s = node.slice[0].slice
        if isinstance(s, cst.Slice):
            bounds = [None if b is None else self.static(self.expr(b), b, "slice bound") for b in (s.lower, s.upper, s.step)]
            return PyTuple(base.items[slice(*bounds)])
        index_value = self.expr(s.value)
        if base.is_list and isinstance(index_value, Var):
            return self.emit("list_get", [self.dynamic_list(base, node), index_value])
        i = self.static(index_value, s.value, "tuple index")
        if not isinstance(i, int) or not -len(base.items) <= i < len(base.items):
            raise self.type_error(f"tuple index {i!r} is out of range for a tuple of {len(base.items)}", node)
        return base.items[i]

    def index_item(self, s: cst.BaseSlice, args: list[Atom]) -> Any:
        if isinstance(s, cst.Slice):
            return ("slice", *(self.index_int(b, args) for b in (s.lower, s.upper, s.step)))
        v = s.value
        if isinstance(v, cst.Name) and v.value == "None":
            return None
        if isinstance(v, cst.Ellipsis):
            return Ellipsis
        return self.index_int(v, args)

    def index_int(self, node: cst.BaseExpression | None, args: list[Atom]) -> Any:
        if node is None:
            return None
        a = self.atom(self.expr(node), node)
        t = a.type
        if not (isinstance(t, Num) and t.shape == () and np.dtype(t.dtype).kind in "iu"):
            raise self.type_error(f"indices must be integers, not {t}", node,
                                  "integer indices and slices (indexing with arrays is not supported)")
        if isinstance(a, Const) and a.name is None:
            return int(a.value)
        args.append(a)
        return ("arg", len(args) - 1)

    def expr_Call(self, node: cst.Call) -> Value:
        func = self.expr(node.func)
        args: list[Value] = []
        kwargs: dict[str, Value] = {}
        for arg in node.args:
            if arg.star:
                raise self.syntax_error("`*args`/`**kwargs` in calls are not supported", "explicit arguments", arg)
            if arg.keyword is not None:
                kwargs[arg.keyword.value] = self.expr(arg.value)
            else:
                args.append(self.expr(arg.value))
        if not isinstance(func, Ref):
            raise self.type_error("this value is not callable", node.func)
        if func.kind == "user":
            return self.inline_call(func.obj, func.path, args, kwargs, node)
        if func.kind == "closure":
            return self.call_closure(func.obj, args, kwargs, node)
        if func.kind == "map":
            return self.map_call(node)
        if func.kind == "isinstance":
            return self.isinstance_call(args, node)
        if func.kind == "list":
            if len(args) != 1 or kwargs or not (isinstance(args[0], PyTuple) or (
                    isinstance(args[0], Var) and isinstance(args[0].type, ListT))):
                raise self.type_error("list() takes one list, tuple or comprehension", node, "list(map(f, xs))")
            return PyTuple(args[0].items, is_list=True) if isinstance(args[0], PyTuple) else args[0]
        if func.kind == "method":
            return self.apply(func.obj, [func.self_value, *args], kwargs, node)
        if func.kind == "builtin":
            return self.apply(_builtin(func.obj), args, kwargs, node)  # type: ignore[arg-type]
        if func.kind == "numpy":
            spec = API.get(numpy_name(func.obj))  # type: ignore[arg-type]
            if spec is None:
                raise UnsupportedFunctionError(
                    f"np.{numpy_name(func.obj)} is not supported", self.loc(node.func),
                    "numpy functions " + ", ".join(sorted(f"np.{k}" for k in API)))
            return self.apply(spec, args, kwargs, node)
        raise self.type_error(f"{_ref_name(func)} is not callable", node.func)

    def isinstance_call(self, args: list[Value], node: cst.Call) -> Value:
        """``isinstance(v, tuple)``: known when transforming (for recursion over tuples)."""
        classes = args[1] if len(args) == 2 else None
        kinds = classes.items if isinstance(classes, PyTuple) else (classes,)
        if not all(isinstance(k, Ref) and k.kind in ("type", "list") for k in kinds):
            raise self.type_error("isinstance takes a value and a type (or a tuple of types)", node,
                                  "isinstance(t, tuple), with tuple, list, dict, float, int, bool or np.ndarray")
        result = isinstance(_sample_of(args[0]), tuple(k.obj for k in kinds))  # type: ignore[union-attr]
        return Const.literal(result, literal_type(result))

    def map_call(self, node: cst.Call) -> Value:
        """``map(f, xs, ...)``: the comprehension ``[f(x, ...) for x, ... in zip(xs, ...)]``."""
        if len(node.args) < 2 or any(a.keyword or a.star for a in node.args):
            raise self.type_error("map takes a function and one or more sequences", node, "map(f, xs)")
        names = [cst.Name(self.namer.hidden("element")) for _ in node.args[1:]]
        call = cst.Call(node.args[0].value, [cst.Arg(n) for n in names])
        seqs = [a.value for a in node.args[1:]]
        if len(seqs) == 1:
            target: cst.BaseAssignTargetExpression = names[0]
            it = seqs[0]
        else:
            target = cst.Tuple([cst.Element(n) for n in names])
            zip_name = self.namer.hidden("zip")  # the builtin, whatever the user's code calls `zip`
            it = cst.Call(cst.Name(zip_name), [cst.Arg(s) for s in seqs])
            self.scope.env[zip_name] = Ref("iterator", builtins.zip)
        comp = cst.ListComp(call, cst.CompFor(target=target, iter=it))
        self.alias(comp, node)
        return self.comprehension(node, call, comp.for_in)

    def apply(self, spec: ApiSpec, args: list[Value], kwargs: dict[str, Value], node: cst.Call) -> Value:
        """Bind a call's arguments to a numpy function's signature and lower it."""
        try:
            bound = spec.bind(args, kwargs)
        except TypeError as e:
            raise self.type_error(f"{spec.title}: {e}", node) from None
        return spec.lower(self, bound, node)


def _closures_in(value: Any) -> list[Closure]:
    if isinstance(value, (PyTuple, PyDict)):
        return [c for v in value.items for c in _closures_in(v)]
    if isinstance(value, Ref) and value.kind == "closure":
        return [value.obj]
    return []


def _scopes(scope: "_Scope | None") -> Iterator["_Scope"]:
    """A scope and the scopes it is nested in, innermost first."""
    while scope is not None:
        yield scope
        scope = scope.parent


def _is_list(value: Any) -> bool:
    return (isinstance(value, PyTuple) and value.is_list) or (isinstance(value, Var) and isinstance(value.type, ListT))


def _atoms_in(value: Any) -> list[Atom]:
    """The atoms a value is made of (a tuple's items, a bound method's array)."""
    if isinstance(value, (PyTuple, PyDict)):
        return [a for v in value.items for a in _atoms_in(v)]
    if isinstance(value, Ref):
        return _atoms_in(value.self_value) if value.self_value is not None else []
    return [value] if isinstance(value, Var) else []


def _value_key(value: Any) -> Any:
    """What identifies a value when transforming (variables by name, constants by value, the rest by identity)."""
    if isinstance(value, (PyTuple, PyDict)):
        return tuple(_value_key(v) for v in value.items)
    if isinstance(value, Var):
        return ("var", value.name)
    if isinstance(value, Const):
        return ("const", value.key if value.name is None else value.name)
    if isinstance(value, Ref):
        return ("ref", id(value.obj), _value_key(value.self_value))
    return ("other", id(value))


def _mentions(value: Value, x: Atom) -> bool:
    if isinstance(value, (PyTuple, PyDict)):
        return any(_mentions(v, x) for v in value.items)
    if isinstance(value, Ref):
        return value.self_value == x
    return value == x


_ITERATORS = (builtins.range, builtins.enumerate, builtins.zip)


def _is_append(value: cst.BaseExpression) -> bool:
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value == "append" and isinstance(value.func.value, cst.Name))


#: how deep calls (recursion, unrolled) may nest
MAX_CALL_DEPTH = 1000


_TYPES = (tuple, list, dict, float, int, bool, np.ndarray)


def _sample_of(v: Any) -> Any:
    """A Python object of the kind ``v`` stands for (for ``isinstance``)."""
    if isinstance(v, PyTuple):
        return [] if v.is_list else ()
    if isinstance(v, PyDict):
        return {}
    t = getattr(v, "type", None)
    if isinstance(t, ListT):
        return []
    if isinstance(t, Num):
        if t.shape:
            return np.zeros(0)
        return np.zeros((), t.dtype).item() if t.py else np.zeros((), t.dtype)[()]
    return v


def _call_key(callee: Any, env: dict[str, Any]) -> tuple:
    return id(callee), tuple(sorted((k, _static_key(v)) for k, v in env.items()))


def _static_key(v: Any) -> Any:
    """What is known of a value when transforming: constants, types (with the
    values of ints and shapes), the structure of tuples, which function."""
    if isinstance(v, Const):
        return "c", v.key if v.name is None else v.name
    if isinstance(v, Var):
        return "v", v.type
    if isinstance(v, PyTuple):
        return "t", v.is_list, tuple(_static_key(i) for i in v.items)
    if isinstance(v, PyDict):
        return "d", v.keys, tuple(_static_key(i) for i in v.items)
    if isinstance(v, Ref):
        return "r", v.kind, id(v.obj)
    return "o", repr(v)


def _name_nodes(target: cst.BaseExpression) -> list[cst.Name]:
    """Every name a (possibly nested tuple) target binds."""
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for el in target.elements for n in _name_nodes(el.value)]
    return []


def _target_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [el.value for el in target.elements]
    return [target]


def _forget_value(t: Type) -> Type:
    """A loop-carried value changes between iterations: its static value (a list: its length) is unknown."""
    if isinstance(t, ListT) and t.length is not None:
        return ListT(t.elem)
    return Num(t.shape, t.dtype, t.py) if isinstance(t, Num) and t.value is not None else t


def _trip_count(binds: list[Bind]) -> int | None:
    """How often the ``for`` loop among ``binds`` (a comprehension's) runs, when its bounds are known."""
    loops = [b.rhs for b in binds if isinstance(b.rhs, Loop)]
    return trip_count(loops[0]) if len(loops) == 1 else None


@functools.lru_cache(maxsize=4096)
def _assigned_names(node: cst.CSTNode) -> tuple[str, ...]:
    """Names assigned anywhere in a statement block, in order of first assignment."""
    names: list[str] = []

    class V(cst.CSTVisitor):
        def _add(self, target: cst.BaseExpression) -> None:
            if isinstance(target, cst.Name):
                if target.value not in names:
                    names.append(target.value)
            elif isinstance(target, (cst.Tuple, cst.List)):
                for el in target.elements:
                    self._add(el.value)

        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            self._add(n.target)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            self._add(n.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            self._add(n.target)

        def visit_For(self, n: cst.For) -> None:
            self._add(n.target)

        def visit_Call(self, n: cst.Call) -> None:
            if _is_append(n):
                self._add(n.func.value)  # type: ignore[attr-defined]

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            self._add(n.name)
            return False  # its assignments are its own

        def visit_Lambda(self, n: cst.Lambda) -> bool:
            return False

        def visit_CompFor(self, n: cst.CompFor) -> bool:
            return False  # a comprehension's variables are its own

    deep.visit(node, V())
    return tuple(names)


def _breaks(body: cst.CSTNode) -> bool:
    """Whether a loop body has a ``break`` of its own (not of a loop nested in it)."""
    return _loop_exit_found(body, (cst.Break,))


def _exits(stmt: cst.CSTNode) -> bool:
    """Whether a statement can leave its block: ``return``, or ``break``/``continue``
    of the enclosing loop."""
    return _returns(stmt) or _loop_exit_found(stmt, (cst.Break, cst.Continue))


def _loop_exit_found(node: cst.CSTNode, kinds: tuple[type, ...]) -> bool:
    return deep.found_below(node, kinds, (cst.For, cst.While, cst.FunctionDef, cst.Lambda),
                            _FOUND.setdefault(kinds, {}))


def _returns(stmt: cst.CSTNode) -> bool:
    """Whether a statement contains a ``return`` (a nested def's `return` is its own)."""
    return deep.found_below(stmt, (cst.Return,), (cst.FunctionDef,), _FOUND.setdefault((cst.Return,), {}))


#: what deep.found_below found, per kinds of node looked for (cleared with the parse cache)
_FOUND: dict[tuple[type, ...], dict[cst.CSTNode, bool]] = {}


def _stmts(suite: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block; a one-line block (``if c: return x``) as one line."""
    if isinstance(suite, cst.SimpleStatementSuite):
        return [cst.SimpleStatementLine(body=suite.body)]
    return list(suite.body)


def _else_stmts(stmt: cst.If) -> list[cst.BaseStatement]:
    if stmt.orelse is None:
        return []
    if isinstance(stmt.orelse, cst.If):  # elif
        return [stmt.orelse]
    return _stmts(stmt.orelse.body)


class _ReturnSeen(Exception):
    """Raised the first time a loop body is lowered, at a ``return``: the loop
    then carries a value of this structure and types."""

    def __init__(self, shape: Any, types: list[Type]) -> None:
        super().__init__("return in a loop")
        self.shape, self.types = shape, types


def _slot_names(name: str, n: int) -> list[str]:
    """The names of the atoms a loop carries for one variable (``state_0``,
    ``state_1`` for a tuple)."""
    return [name] if n == 1 else [f"{name}_{i}" for i in range(n)]


def _rebuild(shape: Any, outs: Any) -> Value:
    if shape[:1] == ("atom",):
        return next(outs)
    if shape[:1] == ("same",):
        return shape[1]
    if shape[:1] == ("list",):  # a list joined item by item stays a list
        return PyTuple(tuple(_rebuild(s, outs) for s in shape[1]), is_list=True)
    return PyTuple(tuple(_rebuild(s, outs) for s in shape))


def _builtin(obj: Any) -> ApiSpec | None:
    """The spec of a supported builtin (looked up by identity: ``obj`` may be an array)."""
    return next((spec for k, spec in BUILTINS.items() if k is obj), None)


def _foldable(op: str, args: list[Atom]) -> bool:
    return (op in _FOLDABLE and all(isinstance(a, Const) and a.name is None and isinstance(a.type, Num)
                                    and a.type.py for a in args))


_PY_DTYPES = {builtins.float: "float64", builtins.int: "int64", builtins.bool: "bool"}

_FOLDABLE = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg"}


def _describe(op: str) -> str:
    return {"matmul": "@", "getitem": "indexing", "add": "+", "sub": "-", "mul": "*", "div": "/"}.get(op, op)


def _ref_name(ref: Ref) -> str:
    return getattr(ref.obj, "__name__", repr(ref.obj))


_BIN_OPS: dict[type, str] = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div", cst.FloorDivide: "floordiv",
    cst.Modulo: "mod", cst.Power: "pow", cst.MatrixMultiply: "matmul", cst.BitAnd: "and_", cst.BitOr: "or_",
}
_AUG_OPS: dict[type, str] = {
    cst.AddAssign: "add", cst.SubtractAssign: "sub", cst.MultiplyAssign: "mul", cst.DivideAssign: "div",
    cst.PowerAssign: "pow", cst.MatrixMultiplyAssign: "matmul",
}
_AUG_SYMBOL = {"add": "+", "sub": "-", "mul": "*", "div": "/", "pow": "**", "matmul": "@"}
_CMP_OPS: dict[type, str] = {
    cst.LessThan: "lt", cst.LessThanEqual: "le", cst.GreaterThan: "gt", cst.GreaterThanEqual: "ge",
    cst.Equal: "eq", cst.NotEqual: "ne",
}


def lower(parsed: Parsed, arg_types: list[Type]) -> tuple[Function, dict[str, Any]]:
    """Lower a parsed function at the given argument types.  Returns the core
    IR and the module-level constants it reads (name -> value)."""
    lowerer = Lowerer(parsed)
    fn = lowerer.lower_function(arg_types)
    return drop_dead_temporaries(fn), {n: obj for n, (_, obj) in lowerer.constants.items()}


def drop_dead_temporaries(fn: Function) -> Function:
    """Remove bindings of temporaries the lowering made and nothing reads
    (e.g. the dimensions of ``x.shape`` that are not used).  Unused *user*
    variables stay: the structural pass ends them with an explicit ``drop``."""
    return Function(fn.name, fn.params, _drop_dead(fn.body))


def _drop_dead(block: Block) -> Block:
    used = {block.result.name} if isinstance(block.result, Var) else set()
    kept = []
    for b in reversed(block.binds):
        if b.targets and all(Namer.is_temp(t.name) and t.name not in used for t in b.targets):
            continue
        if isinstance(b.rhs, If):
            b = Bind(b.targets, If(b.rhs.cond, _drop_dead(b.rhs.then), _drop_dead(b.rhs.orelse)), b.loc)
        elif isinstance(b.rhs, Loop):
            r = b.rhs
            b = Bind(b.targets, Loop(r.bounds, r.index, r.carried, r.init, _drop_dead(r.body)), b.loc)
        kept.append(b)
        used.update(v.name for v in vars_of(b.rhs))
    return Block(tuple(reversed(kept)), block.result)
