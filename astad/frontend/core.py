"""The lowerer's state and the steps every part of it takes: binding a
primitive (``emit``), turning a value into an atom or a static constant,
naming a result, lowering a branch into bindings of its own, errors that
point at the node being lowered.
"""

from __future__ import annotations

import ast
import math
import operator
import sys
from typing import Any, Callable

import libcst as cst
import numpy as np

from .. import rules
from ..aliases import Aliases
from ..values import PyDict, PyTuple, Ref
from ..errors import AstadTypeError, UnsupportedFunctionError, UnsupportedSyntaxError
from ..ir import Atom, Bind, Const, ListT, Loc, NoneT, Num, Prim, Var, vars_of
from ..names import Namer
from ..positions import Starts
from ..source import reversed_function
from .syntax import user_names
from .parse import Parsed
from .abstract import literal_type
from .scopes import Env, Value, Scope, mentions


class LowererCore:
    """The state of one lowering and the steps every room of the lowerer uses."""

    def __init__(self, parsed: Parsed) -> None:
        self.root = parsed
        self.namer = Namer(user_names(parsed.funcdef), parsed.name)
        self.binds: list[Bind] = []
        self.stack: list[Scope] = []
        self.open_calls: dict[Any, Scope] = {}  # call key -> the outermost running call with it (Calls.open_call)
        self.node: cst.CSTNode = parsed.funcdef
        # per node class, the method lowering such an expression (``expr_`` and the class's name), per lowerer class
        self.expr_methods: dict[type, Callable] = _EXPR_METHODS.setdefault(type(self), {})
        # (Expressions.expr) the recursion limit leaves room for a few levels of expressions between looks at the
        # stack's depth (a lower one, set before the lowering: a look at every level)
        self.roomy = sys.getrecursionlimit() >= 1000
        self.expr_depth = 0  # how many expressions the one being lowered is nested in (Expressions.expr)
        self.constants: dict[str, tuple[tuple[str, ...], Any]] = {}  # code name -> (path, value)
        self.function_value_names: set[str] = set()  # the names of the function values made (calls.py)
        self.const_names: dict[int, str] = {}
        self.deps: list[tuple[tuple[str, ...], Any]] = []  # every global read: (path, object), each once
        self._dep_keys: set[tuple[tuple[str, ...], int]] = set()
        self.open_binds: list[list[Bind]] = []  # the bindings of the blocks around the one being lowered
        self.exits: list[Callable[..., Value]] = []  # per enclosing loop: the value of leaving its body
        self.aliases = Aliases()  # which values may share memory (for in-place updates)
        self.iterated: list[tuple[str, Any]] = []  # what the `for` loops being lowered run over (they read it)
        self.trying = 0  # > 0 while a body is lowered to see whether it can be a function value
        self.restores = 0  # how many lowerings were undone (a call whose lowering undid one is not replayed)
        self.truth_only: set[int] = set()  # ids of the nodes whose truth alone matters (an `if`'s test, its and/or, chains)
        self.exact_numbers: set[str] = set()  # Python-number parameters and loop indices (calls.exact_number)
        self.definitions_read: list[str] = []  # the variables whose binding the lowering read (definition_of)
        self.templates: dict[tuple, Any] = {}  # recorded calls by key (frontend/replay.py); False: not replayable
        self.recording = 0  # how many calls are being recorded (one inside another)
        self.functions = False  # reverse mode: a recursion's calls made functions of their own (replay.as_function)
        self.function_names: dict[str, int] = {}  # the last number given to a function of each name
        # per node lowered: (node, parsed, its Loc); a loop's body lowered again, or many bindings made
        # for one expression, ask for the same node's position (keyed by id, the node kept alive with it)
        self._locs: dict[int, tuple[cst.CSTNode, Parsed, Loc]] = {}
        # the globals read by name, per (id of the parsed function, scope path, name): (parsed, value)
        # (what a name that is no variable is does not change while a function is lowered)
        self._globals: dict[tuple, tuple[Parsed, Any]] = {}
        # a module's attributes read, per (id of the module, path, attribute): (module, value)
        self._attributes: dict[tuple, tuple[Any, Any]] = {}
        self._static_keys: dict[int, tuple[Any, Any]] = {}  # the static keys of tuples and dicts (make_call_key)
        self.literals: dict[str, Const] = {}  # the numbers written in the code by their text (expr_Float, ...)
        self.loop_locals: dict[tuple, int] = {}  # (scope path, name) assigned only inside a loop: the loop's line
        self.branch_locals: dict[tuple, int] = {}  # (scope path, name) assigned in one branch of an `if` only: its line
        self.named: Var | None = None  # the last variable emit bound to a name given it (astad.frontend.fast)

    def depend(self, path: tuple[str, ...], obj: Any) -> None:
        """Note that the code read ``obj`` by ``path`` (a global, captured or fixed name): once per
        pair, though an inlined recursion reads its globals at every level."""
        key = (path, id(obj))
        if key not in self._dep_keys:
            self._dep_keys.add(key)
            self.deps.append((path, obj))

    @property
    def scope(self) -> Scope:
        return self.stack[-1]

    def loc(self, node: cst.CSTNode | None = None) -> Loc:
        if node is None:
            node = self.node
        parsed = self.stack[-1].parsed
        key = id(node)
        found = self._locs.get(key)
        if found is not None and found[0] is node and found[1] is parsed:
            return found[2]
        loc = parsed.loc(node)
        self._locs[key] = (node, parsed, loc)
        return loc

    def syntax_error(self, message: str, hint: str, node: cst.CSTNode | None = None) -> UnsupportedSyntaxError:
        return UnsupportedSyntaxError(message, self.loc(node), hint)

    def type_error(self, message: str, node: cst.CSTNode | None = None, hint: str | None = None) -> AstadTypeError:
        return AstadTypeError(message, self.loc(node), hint)

    def emit(self, op: str, args: list[Atom], params: dict | None = None, name: str | None = None) -> Atom:
        """Bind ``op(args)`` to a fresh temporary (folding constant Python-scalar arithmetic).

        ``name``: (:mod:`.fast`, an assignment's value, aliases unfollowed) the user's name, which
        :meth:`name_result` would give the binding: given here, the temporary drawn (in the same order)
        but no variable or binding made of it to be thrown away; :attr:`named` is then the variable."""
        params = params or {}
        try:
            n = len(args)  # (the types listed by hand where there are one or two: a third of the time of list(map(...)))
            t = _TABLE[op].infer([args[0].type, args[1].type] if n == 2 else [args[0].type] if n == 1 else
                                 list(map(_TYPE, args)), params)  # (rules.infer; map: no frame of a comprehension)
        except rules.ShapeError as e:
            empty = any(isinstance(a.type, ListT) and a.type.elem is None for a in args)
            raise self.type_error(f"{_describe(op)}: {e}", hint=e.hint or (
                "an `append` to the list earlier in the code than this read (astad learns the elements' type "
                "from it), e.g. `acc = [first]` or `acc.append(first)` before the loop" if empty else
                "operands whose shapes fit numpy's rules (reshape, transpose or index one of them)")) from None
        if op in _FOLDABLE and type(args[0]) is Const and _foldable(args):  # (_foldable's first test, inline)
            try:
                with np.errstate(all="ignore"):
                    value = rules.TABLE[op].impl(*[a.value for a in args], **params)
            except (ArithmeticError, ValueError):  # (1.0 / 0.0, 1e300 ** 2: left to run, where Python raises)
                value = None
            if isinstance(value, (int, float, bool)) and _finite(value):
                return Const.literal(value, Num((), t.dtype, py=True, value=None if t.dtype == "float64" else value))  # type: ignore[union-attr]
        temp = self.namer.temp()  # (drawn where a name is given too: the names drawn as name_result's renaming)
        if name is not None and not (op == "pow" and _may_be_complex(args)):  # (a power tested: its test reads it)
            var = self.named = Var(self.namer.fresh(name), t)
        else:
            var = Var(temp, t)
        node, parsed = self.node, self.stack[-1].parsed  # (self.loc(), inline: this runs at every binding)
        positions = parsed.positions
        if type(positions) is not Starts or parsed.aliases:
            at = None
        elif type(node) in _AST_EXPRESSIONS:  # (a node of Python's tree, astad.frontend.fast: where it starts)
            at = (node.lineno, node.col_offset)  # type: ignore[attr-defined]
        else:
            at = positions.get(id(node))
        if at is not None:  # (parsed.loc(node), inline: its Locs are kept by where nodes start)
            loc = parsed.locs.get(at)
            if loc is None:
                loc = parsed.loc_at(at)
        else:
            found = self._locs.get(id(node))
            if found is not None and found[0] is node and found[1] is parsed:
                loc = found[2]
            else:
                loc = parsed.loc(node)
                self._locs[id(node)] = (node, parsed, loc)
        # (bind_prim, inline)
        self.binds.append(Bind((var,), Prim(op, tuple(args), tuple(sorted(params.items())) if params else ()), loc))
        self.aliases.prim(var, op, args, params, isinstance(t, Num) and t.py)  # (immutable: by position, a faster call)
        if op == "pow" and _may_be_complex(args):
            self._real_power(args, var, loc)  # (after the binding: the test reads it)
        return var

    def _real_power(self, args: list[Atom], var: Var, loc: Loc) -> None:
        """A Python power that may be complex (a negative base, a non-integer float exponent): refused here
        where both are known, else tested where it runs (``complex_power``: astad does not differentiate
        complex numbers; a numpy float's power is nan there, as numpy's, and needs no test)."""
        base, exponent = args
        if type(base) is Const and type(exponent) is Const and base.value < 0:
            raise AstadTypeError(rules.python.COMPLEX_POWER, loc, rules.python.COMPLEX_POWER_HINT)
        self.emit("real_power", [var], {"file": loc.file, "line": loc.line, "col": loc.col})

    def bind_prim(self, var: Var, prim: Prim, loc: Any) -> None:
        """``var = prim``, with the facts a binding gives (bound here; what it aliases)."""
        self.binds.append(Bind((var,), prim, loc))
        self.aliases.prim(var, prim.op, list(prim.args), dict(prim.params),
                          immutable=isinstance(var.type, Num) and var.type.py)

    def definition_of(self, x: Var) -> Bind | None:
        """The binding of ``x`` among those being lowered (a lowering that reads one depends on more
        than its arguments' types: :mod:`.replay` notes it)."""
        self.definitions_read.append(x.name)
        return next((b for b in reversed(self.binds) if b.targets == (x,)), None)

    def copy(self, x: Atom) -> Atom:
        """``x.copy()``: the same value in new memory (an in-place update of it changes nothing else)."""
        if not isinstance(x, Var) or (isinstance(x.type, Num) and x.type.py):
            return x
        return self.emit("copy", [x])

    def name_result(self, value: Value, name: str) -> Value:
        """Give the user's name to the value just computed for an assignment."""
        if not (isinstance(value, Var) and Namer.is_temp(value.name)):
            return value
        if self._held(value):
            return value  # also an element of a tuple or list a name holds: keep its name
        for i in range(len(self.binds) - 1, -1, -1):
            bind = self.binds[i]
            if bind.targets == (value,):
                new = Var(self.namer.fresh(name), value.type)
                self.binds[i] = Bind((new,), bind.rhs, bind.loc)
                self.aliases.same(new, value)
                return new
            if value in vars_of(bind.rhs):
                break
        return value

    def _held(self, value: Var) -> bool:
        """Whether a name in scope holds ``value`` (or a tuple, list or dict holding it):
        the variables among them compared by name first (a program has thousands).  The running
        scope first: where it does not hold it, the answer (and the renaming of ``value``'s binding)
        reads the callers' state, which a recorded call's key does not hold (:mod:`.replay` notes it)."""
        name = value.name  # (variables are equal when their names are)
        for s in reversed(self.stack):
            if _scope_holds(s.env, name, value):
                return True
            if s is self.stack[-1] and self.recording:
                self.definitions_read.append(name)
        return False

    def atom(self, value: Value, node: cst.CSTNode) -> Atom:
        if isinstance(value, (Var, Const)):
            return value
        if isinstance(value, PyTuple) and value.is_list:
            raise self.type_error("a list is used where a number or an array is expected (astad does not turn "
                                  "it into an array)", node, "np.array(xs) to make an array of a list of numbers, "
                                  "np.stack or np.concatenate of a list of arrays")
        if isinstance(value, PyTuple) and len(value.items) == 2 and isinstance(value.items[1], Ref) and (
                value.items[1].kind == "derivative"):
            raise derivative_used(value.items[1], self.loc(node), pair=True)
        if isinstance(value, PyTuple):
            raise self.type_error("a tuple is used where a number or an array is expected", node,
                                  "np.stack or np.concatenate to make an array from several")
        if isinstance(value, PyDict):
            raise self.type_error("a dict is used where a number or an array is expected", node,
                                  "read its entries: d['w']")
        if isinstance(value, Ref) and value.kind == "string":
            raise self.syntax_error("strings are supported only as dict keys", "numbers and arrays", node)
        if isinstance(value, Ref) and value.kind == "derivative":
            raise derivative_used(value, self.loc(node))
        if isinstance(value, Ref) and value.kind == "after_loop":
            raise self.syntax_error(f"the loop variable `{value.obj}` is used after its loop", 
                                    "keep what you need in a variable assigned before the loop", node)
        raise self.type_error(f"{ref_name(value)} is used as a value", node, "numbers and arrays as values")

    def static(self, value: Value, node: cst.CSTNode, what: str) -> Any:
        """A compile-time constant (axis, keepdims, k, dtype, ...)."""
        if isinstance(value, PyTuple):
            return tuple(self.static(v, node, what) for v in value.items)
        if isinstance(value, Const) and isinstance(value.value, (int, bool, float, type(None))):
            return value.value
        if isinstance(value, Var) and isinstance(value.type, Num) and value.type.value is not None:
            return value.type.value
        if isinstance(value, Var) and isinstance(value.type, NoneT):  # (an argument `axis=None`: None by its type)
            return None
        if isinstance(value, Ref) and (value.kind in ("dtype", "string") or (
                value.kind == "builtin" and value.obj in (float, int, bool))):  # dtype=float
            return value.obj
        raise self.type_error(f"`{what}` must be a constant known when the function is transformed", node,
                              "an integer literal or a module-level constant")

    def const_or(self, value: Any) -> Value:
        """A call argument's value, or a Python default from a signature table as a literal."""
        if isinstance(value, (Var, Const, PyTuple, PyDict, Ref)):
            return value
        return Const.literal(value, literal_type(value))

    def new_list(self, items: tuple) -> PyTuple:
        """A new Python list of ``items`` (known element by element; no other list is it: the aliases are told)."""
        value = PyTuple(items, is_list=True)
        self.aliases.new_list(value)
        return value

    def rows(self, x: Atom, n: int) -> tuple[Var, ...]:
        """``x[0], ..., x[n - 1]``: the rows of an array (views of a matrix, numpy scalars of a vector), as
        Python's iteration gives them (``list(x)``, ``a, b = x``)."""
        return tuple(self.emit("getitem", [x], {"index": (i,)}) for i in range(n))

    def shape_of(self, x: Atom) -> PyTuple:
        t = x.type
        assert isinstance(t, Num)
        return PyTuple(tuple(self.emit("dim", [x], {"axis": i}) for i in range(t.ndim)))

    def snapshot(self) -> tuple:
        """The names and aliases to go back to: marks in undo logs, no copies (one is taken at
        every level of a recursion unrolled)."""
        return self.namer.mark(), self.aliases.snapshot()

    def restore(self, snapshot: tuple) -> None:
        names, aliases = snapshot
        self.restores += 1
        self.namer.back_to(names)
        # constants keep the names they were given (const_names), function values theirs (bound where the
        # function is made, before the code undone)
        kept = set(self.constants) | self.function_value_names
        self.namer.taken |= kept
        self.namer.used |= kept
        self.aliases.restore(aliases)

    def branch(self, lower: Callable[[], Any]) -> tuple[list[Bind], dict[str, Value], Any]:
        """Lower one branch into bindings of its own, starting from the current names."""
        saved_binds, saved_env = self.binds, self.scope.env
        self.binds, self.scope.env = [], Env(saved_env)
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


#: per lowerer class, per node class: the method lowering such an expression (LowererCore.expr_methods)
_EXPR_METHODS: dict[type, dict[type, Callable]] = {}


def _foldable(args: list[Atom]) -> bool:
    for a in args:  # (a loop, not all(...) of a generator: this runs at every binding)
        if not (isinstance(a, Const) and a.name is None and isinstance(a.type, Num) and a.type.py):
            return False
    return True


_TYPE = operator.attrgetter("type")
#: the nodes of Python's tree the lowering of straight-line code binds values at (astad.frontend.fast), whose
#: starts (those of the libcst nodes they stand for) are their own, not noted in the function's Starts
_AST_EXPRESSIONS = frozenset({ast.BinOp, ast.UnaryOp, ast.Call, ast.Attribute})
_TABLE = rules.TABLE

_FOLDABLE = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg"}


def _may_be_complex(args: list[Atom]) -> bool:
    """Whether Python's ``base ** exponent`` may be complex: Python numbers, a float exponent not known to be
    an integer, a base not known to be >= 0 (``x ** 2.0``, ``2.0 ** x`` and a numpy float's power are real)."""
    base, exponent = args
    bt, et = base.type, exponent.type
    # a numpy scalar's type that may hold a Python number when the code runs (``weak``: ``sum(x[mask])`` of no
    # elements is the int 0; an ``if`` joining a Python float and an np.float64): its power is tested too
    if not (type(bt) is Num and (bt.py and bt.dtype != "bool" or bt.weak) and type(et) is Num and et.py
            and et.dtype == "float64"):
        return False
    if type(exponent) is Const and float(exponent.value).is_integer():
        return False
    return not (type(base) is Const and base.value >= 0)


def _finite(value: Any) -> bool:
    """Whether a folded number is finite (an int too large for a float is: np.isfinite would raise)."""
    return not isinstance(value, float) or math.isfinite(value)


def _describe(op: str) -> str:
    return {"matmul": "@", "getitem": "indexing", "add": "+", "sub": "-", "mul": "*", "div": "/"}.get(op, op)


def ref_name(ref: Ref) -> str:
    return getattr(ref.obj, "__name__", repr(ref.obj))


def derivative_used(ref: Ref, loc: Any, pair: bool = False) -> UnsupportedFunctionError:
    """The pullback (or pushforward) that an ``@astad.reverse`` (``@astad.forward``) function returns as
    its second item, used inside a function astad differentiates: a derivative inside the code."""
    name = reversed_function(ref.obj).__name__
    kind = "pushforward" if getattr(type(ref.obj), "_MODE", "") == "forward" else "pullback"
    if pair:  # `np.sum(helper(x))`: Python's TypeError too
        return UnsupportedFunctionError(
            f"`{name}` is decorated with astad.{getattr(type(ref.obj), '_MODE', 'reverse')}: `{name}(...)` returns a "
            f"pair (value, {kind}), as in Python, not its value", loc,
            f"its value, `{name}(...)[0]` (differentiated through), or the undecorated function")
    return UnsupportedFunctionError(
        f"the {kind} that `{name}(...)` returns (its second item) is not supported inside a function astad "
        "differentiates (a derivative inside the code)", loc,
        f"its value, `{name}(...)[0]` (differentiated through); for a higher-order derivative differentiate the "
        "derivative itself (astad.grad(astad.grad(f)))")


def _scope_holds(env: Any, name: str, value: Var) -> bool:
    """Whether a name in ``env`` holds ``value`` (a variable named ``name``), or a tuple, list or dict
    holding it; an :class:`Env` looks at the names that may hold it only (this runs at every assignment)."""
    if type(env) is Env:
        if name in env.vars and any(type(v) is Var and v.name == name for v in env.values()):
            return True
        return bool(env.others) and any(mentions(env[k], value) for k in env.others if k in env)
    for v in env.values():
        if type(v) is Var:
            if v.name == name:
                return True
        elif type(v) is not Const and mentions(v, value):
            return True
    return False
