"""Lowering calls: numpy functions, array methods and builtins (through
:mod:`.numpy_api`), ``map``, ``isinstance``, ``list``, the user's
functions (inlined) and lambdas and nested defs (function values of
the IR, or inlined).
"""

from __future__ import annotations

import builtins
import inspect
import types
from typing import Any, Callable, Iterator

import libcst as cst
import numpy as np

from .. import deep
from ..calling import ATTRIBUTES, keyword_default
from ..rules import has_effect
from ..values import PyTuple, Ref
from ..source import reversed_function
from ..errors import AstadError, SourceUnavailableError, UnsupportedFunctionError
from ..ir import (App, Bind, Block, Const, Copy, FunT, Lam, ListT, MakeTuple, Num, Prim, Type, Unpack, Var,
                  lam_free_vars)
from .numpy_api import API, ApiSpec, numpy_name, builtin_spec
from .api_python import scalar_type
from .syntax import user_names
from . import lazy, recursion, replay
from .recursion import RuntimeDepth
from .parse import parse
from .abstract import literal_type
from .scopes import (Closure, Value, Scope, scope_chain, closures_in, atoms_in, value_key, sample_of, make_call_key,
                     forget_value)
from .core import LowererCore, derivative_used, ref_name
from .unused import has_unread_raising


#: operations that give a Python number of one type whatever the Python numbers they take
_EXACT_RESULT = frozenset({"convert_float", "convert_discrete", "to_float", "div", "item", "len", "list_len", "dim", "size",
                           "lt", "le", "gt", "ge", "eq", "ne", "not_", "py_round"})
#: operations whose result is a float where one operand is a float, else of their operands' type (but an int
#: power of ints: an int, or a float where the power is < 0)
_EXACT_AS_OPERANDS = frozenset({"add", "sub", "mul", "floordiv", "mod", "neg", "positive", "py_abs", "abs", "and_", "or_",
                                "py_round_digits", "pow", "power"})


class Calls(LowererCore):
    """Calls, lambdas and nested defs."""

    def expr_Call(self, node: cst.Call) -> Value:
        func = self.expr(node.func)
        if isinstance(func, Ref) and func.kind == "print":  # its arguments may be f-strings
            return self.print_call(node)
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
        if func.kind == "numpy":  # (first: the most common)
            spec = API.get(numpy_name(func.obj))  # type: ignore[arg-type]
            if spec is None:
                raise UnsupportedFunctionError(
                    f"np.{numpy_name(func.obj)} is not supported", self.loc(node.func),
                    "numpy functions " + ", ".join(sorted(f"np.{k}" for k in API)))
            return self.apply(spec, args, kwargs, node)
        if func.kind == "user":
            return self.inline_call(func.obj, func.path, args, kwargs, node)
        if func.kind == "closure":
            return self.call_closure(func.obj, args, kwargs, node)
        if func.kind == "decorated":  # as in Python: (value, pullback or pushforward); the value is differentiated
            value = self.inline_call(reversed_function(func.obj), func.path, args, kwargs, node)
            return PyTuple((value, Ref("derivative", func.obj)))
        if func.kind == "derivative":
            raise derivative_used(func, self.loc(node.func))
        if func.kind == "map":
            return self.map_call(node)
        if func.kind == "isinstance":
            return self.isinstance_call(args, node)
        if func.kind == "list":
            if len(args) == 1 and not kwargs and isinstance(args[0], (Var, Const)) and isinstance(args[0].type, Num) \
                    and args[0].type.shape and args[0].type.shape[0] is not None:
                x = args[0]  # list(x) of an array of known length: its rows (numpy scalars of a vector), as Python
                return self.new_list(self.rows(x, x.type.shape[0]))
            if len(args) != 1 or kwargs or not (isinstance(args[0], PyTuple) or (
                    isinstance(args[0], Var) and isinstance(args[0].type, ListT))):
                raise self.type_error("list() takes one list, tuple or comprehension", node, "list(map(f, xs))")
            if not isinstance(args[0], PyTuple):
                return self.emit("list_copy", [args[0]])  # a run-time list: a new list of the same elements
            return self.new_list(args[0].items)  # a new list holding the same elements
        if func.kind == "method":
            return self.apply(func.obj, [func.self_value, *args], kwargs, node)
        if func.kind == "builtin":
            return self.apply(builtin_spec(func.obj), args, kwargs, node)  # type: ignore[arg-type]
        if func.kind == "dtype" and scalar_type(func.obj) is not None:  # np.float64(x)
            return self.apply(scalar_type(func.obj), args, kwargs, node)  # type: ignore[arg-type]
        if func.kind in ("type", "dtype", "exception"):  # callable in Python, not here
            name = f"np.{func.obj}" if func.kind == "dtype" else ref_name(func)
            raise self.type_error(f"calling `{name}` is not supported", node.func,
                                  "float(x), int(x), bool(x), np.float64(x), np.int64(x), list(...); "
                                  "`raise ValueError(...)` for an exception")
        if func.kind == "iterator":  # range, enumerate, zip, reversed: only what a loop runs over
            raise self.type_error(f"`{ref_name(func)}(...)` is supported only as what a `for` loop or a "
                                  "comprehension runs over", node.func,
                                  "for v in reversed(x):, [f(a, b) for a, b in zip(x, y)], or x[::-1] for the "
                                  "reversed array")
        raise self.type_error(f"{ref_name(func)} is not callable", node.func)

    def isinstance_call(self, args: list[Value], node: cst.Call) -> Value:
        """``isinstance(v, tuple)``: known when transforming (for recursion over tuples)."""
        classes = args[1] if len(args) == 2 else None
        kinds = classes.items if isinstance(classes, PyTuple) else (classes,)
        if not all(isinstance(k, Ref) and k.kind in ("type", "list", "builtin") and isinstance(k.obj, type)
                   for k in kinds):
            raise self.type_error("isinstance takes a value and a type (or a tuple of types)", node,
                                  "isinstance(t, tuple), with tuple, list, dict, float, int, bool or np.ndarray")
        types = tuple(k.obj for k in kinds)  # type: ignore[union-attr]
        result = isinstance(sample_of(args[0]), types)
        t = getattr(args[0], "type", None)
        if isinstance(t, Num) and t.py and not t.shape and len({isinstance(s, types) for s in (0.0, 0, False)}) > 1 \
                and not self.exact_number(args[0]):
            raise self.type_error(f"isinstance of a Python number that may be an int or a float when it runs (typed "
                                  f"{t}: one on one path and the other on another, `max(n, 1.0)`, or an int "
                                  "power of ints)", node, "isinstance of a parameter, or of float(v) or int(v)")
        if isinstance(t, Num) and not t.py and not t.shape and isinstance(np.zeros((), t.dtype), types) != result:
            raise self.type_error(f"isinstance of a numpy {t}: astad reads a numpy scalar and a 0-d array alike, "
                                  "and they differ here", node,
                                  "a Python float (float(x)) or an array of at least one dimension")
        return Const.literal(result, literal_type(result))

    def exact_number(self, v: Value, depth: int = 0) -> bool:
        """Whether ``v``, a Python number, is at run time of the Python type (int, float, bool) its type says:
        a parameter, a constant, or what operations of one result type (``float(v)``, ``len(x)``, ``a / b``,
        comparisons) or of their operands' type (``a + b``, ``2.0 ** n``) compute from them; not a join of
        an int and a float, Python's ``max`` of both, nor an int power of ints (a float where it is < 0)."""
        if not isinstance(v, Var) or not (isinstance(v.type, Num) and v.type.py):
            return True
        if v.name in self.exact_numbers:
            return True
        bind = self.definition_of(v) if depth < 64 else None
        rhs = bind.rhs if bind is not None else None
        if not isinstance(rhs, Prim):
            return False
        if rhs.op in _EXACT_RESULT or rhs.op.startswith("math_"):
            return True
        if rhs.op in ("py_max", "py_min"):  # (the operand it picks, as it is: all of one type, that type)
            kinds = {(a.type.dtype, a.type.py) if isinstance(a.type, Num) else None for a in rhs.args}
            return len(kinds) == 1 and None not in kinds and all(self.exact_number(a, depth + 1) for a in rhs.args)
        if rhs.op not in _EXACT_AS_OPERANDS:
            return False
        exact = [self.exact_number(a, depth + 1) for a in rhs.args]
        if any(e and isinstance(a.type, Num) and a.type.dtype == "float64" for a, e in zip(rhs.args, exact)):
            return True  # (with a float, a float)
        power = rhs.args[-1]  # (an int power of ints: a float where it is < 0)
        return all(exact) and (rhs.op not in ("pow", "power") or isinstance(power, Const) and power.value >= 0)

    def map_call(self, node: cst.Call) -> Value:
        """``map(f, xs, ...)``: the comprehension ``[f(x, ...) for x, ... in zip(xs, ...)]``."""
        if len(node.args) < 2 or any(a.keyword or a.star for a in node.args):
            raise self.type_error("map takes a function and one or more sequences", node, "map(f, xs)")
        lazy.check(self, node, "`map(...)`")  # (Python evaluates it lazily)
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
            raise self.type_error(f"{spec.title}: {e}", node, getattr(e, "hint", None)) from None
        return spec.lower(self, bound, node)

    def inline_call(self, fn: Callable[..., Any], path: tuple[str, ...], args: list[Value], kwargs: dict[str, Value],
                    node: cst.CSTNode) -> Value:
        path = self._recursion_path(fn, path)
        seen = self.__dict__.setdefault("_callees", {})  # id -> (fn, parsed, signature): a recursion's calls read once
        found = seen.get(id(fn))
        if found is not None and found[0] is fn:
            parsed, sig = found[1], found[2]
        else:
            # what may be assigned in place (see calling.ATTRIBUTES), read once, before anything is made of it:
            # what the derivative records is then what it was made from, or older (the next call makes it again)
            read = {a: getattr(fn, a) for a in ATTRIBUTES} if isinstance(fn, types.FunctionType) else None
            attributes = read and {**read, "__kwdefaults__": read["__kwdefaults__"] and dict(read["__kwdefaults__"])}
            try:
                parsed = parse(fn)
            except SourceUnavailableError as e:  # point at the call
                called = path[-1] if path else fn.__name__
                raise SourceUnavailableError(f"cannot inline the call to `{called}`: {e.message}", self.loc(node),
                                             e.hint) from None
            sig = _code_signature(fn, attributes)
            seen[id(fn)] = (fn, parsed, sig)
            if path and read is not None and attributes is not None:
                for attribute in ATTRIBUTES:
                    self.depend((*path, attribute), read[attribute])
                for param, value in (attributes["__kwdefaults__"] or {}).items():  # (the dict is changed in place too)
                    self.depend((*path, keyword_default(param)), value)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise self.type_error(f"call to {fn.__name__}: {e}", node,
                                  hint=f"call {fn.__name__}{sig} with the parameters it declares") from None
        scope = Scope(parsed, path)
        for pname, param in sig.parameters.items():
            if pname in bound.arguments:
                scope.env[pname] = bound.arguments[pname]
            else:
                # a numpy default is named in the generated code like a module-level constant; its path
                # starts with a name no namespace has, so the disk cache never resolves it to another object
                scope.env[pname] = self.constant(param.default, f"default of {pname}", node, pname,
                                                 ("<default>", fn.__qualname__, pname))
        mentioned = user_names(parsed.funcdef)
        if not mentioned <= self.namer.used:  # (each inlined call of a recursion mentions the same names)
            self.namer.mention(mentioned)
        return self.replayed_call(fn, scope, lambda: self.run_call(
            fn, fn.__name__, scope, node, lambda: self.lower_body(parsed.funcdef),
            lambda found: self.lower_as_loops(parsed, found)))

    def _recursion_path(self, fn: Callable[..., Any], path: tuple[str, ...]) -> tuple[str, ...]:
        """For a call of ``fn`` reached through the path of its first call (a recursion: ``_f._f._f``),
        that path (``_f``): the checks that both lead to ``fn`` are noted, so what is read through one is
        what is read through the other; the paths a recursion reads stay as long at every level, not as
        long as it is deep (each level's globals noted again, each a key hashed at every read)."""
        firsts = self.__dict__.setdefault("_first_paths", {})  # id -> (fn, the path of its first call)
        first = firsts.get(id(fn))
        if first is None or first[0] is not fn:
            if path:
                firsts[id(fn)] = (fn, path)
            return path
        p = first[1]
        if (len(p) < len(path) and path[:len(p)] == p and (p, id(fn)) in self._dep_keys
                and (path, id(fn)) in self._dep_keys):
            return p
        return path

    def replayed_call(self, fn: Callable[..., Any], scope: Scope, lower: Callable[[], Value]) -> Value:
        """``lower()``, or the replay of an earlier call's lowering with the same static key
        (:mod:`.replay`: a recursion over a tree lowers its body once per depth, not once per node)."""
        call_key = make_call_key(fn, scope.env, self._static_keys)  # (not the path: the globals it reads are noted by the first)
        found = replay.key_of(call_key, scope.env, self.trying > 0)
        if found is None:
            return lower()
        key, inputs = found
        templates = self.templates
        template = templates.get(key)
        if template:
            if len(self.stack) <= MAX_CALL_DEPTH and self.open_call(call_key) is None:
                if template.function is not None:
                    return replay.call(self, template, inputs, self.loc())
                return replay.replay(self, template, inputs)
            return lower()  # (it says why it cannot be)
        if template is False or self.recording >= replay.MAX_NESTED:
            return lower()
        recording = replay.start(self, key, inputs)
        self.recording += 1
        value = None
        lowered = False
        try:
            value = lower()
            lowered = True
            return value
        finally:
            self.recording -= 1
            made = replay.finish(self, recording, value, self.recording == 0)
            if made is not None and lowered and self._a_function(fn, scope):
                made = replay.as_function(self, recording, made, lambda: self._function_name(fn), self.loc(),
                                           scope.env) or made
            templates[key] = made or False

    def _a_function(self, fn: Callable[..., Any], scope: Scope) -> bool:
        """Whether a call is made a function of its own (:func:`replay.as_function`), in reverse mode: a
        call of a function that calls itself at more than one place (a recursion over a tree), from
        inside a call of that function (the outermost call is inlined)."""
        return (self.functions and replay.FUNCTIONS and self.trying == 0 and scope.parsed.self_call_sites > 1
                and any(s.parsed is scope.parsed for s in self.stack))

    def _function_name(self, fn: Callable[..., Any]) -> str:
        """``tree_node_1``, ``tree_node_2``, ...: names no variable has, nor their generated functions."""
        base = getattr(fn, "__name__", "call")
        k = self.function_names.get(base, 0)
        while True:
            k += 1
            name = f"{base}_{k}"
            made = (name, f"{name}_forward", f"{name}_backward")
            if not any(n in self.namer.used for n in made):
                break
        self.function_names[base] = k
        self.namer.mention(set(made))
        return name

    def run_call(self, callee: Any, name: str, scope: Scope, node: cst.CSTNode, lower: Callable[[], Value],
                 as_loops: Callable[[RuntimeDepth], Value] | None = None) -> Value:
        """Lower a call's body in the callee's scope.  A recursive call is unrolled:
        each call must differ from the calls it is inside in what is known when
        transforming (ints, shapes, the structure of tuples), so that the
        recursion ends while transforming.  A call that repeats the key of one it
        is inside recurses to a depth known only when running: the outer call is
        lowered again ``as_loops`` (:mod:`.recursion`), where it can be."""
        scope.call_key = make_call_key(callee, scope.env, self._static_keys)
        again = self.open_call(scope.call_key)
        if again is not None:
            raise RuntimeDepth(
                f"recursive call to {name} with the same shapes and integers as the call it is in: its depth is "
                "known only when running",
                self.loc(node), recursion.HINT, again)
        if len(self.stack) > MAX_CALL_DEPTH:
            raise self.syntax_error(f"calls nested more than {MAX_CALL_DEPTH} deep", "a shallower recursion", node)
        saved, saved_exits = self.node, self.exits
        self.stack.append(scope)
        noted = self.note_open_call(scope)
        self.exits = []  # the callee's `return` leaves the callee, not the caller's loop
        try:
            return self.unrolled_or_loops(scope, lower, as_loops)
        finally:
            self.stack.pop()
            if noted:
                del self.open_calls[scope.call_key]
            self.node, self.exits = saved, saved_exits

    def open_call(self, key: Any) -> Scope | None:
        """The outermost running call with this key: a dict, not a scan of the stack (a recursion
        unrolled 800 deep asks at every level)."""
        try:
            return self.open_calls.get(key)
        except TypeError:  # (a key that cannot be hashed: the stack scanned)
            return next((s for s in self.stack if s.call_key == key), None)

    def note_open_call(self, scope: Scope) -> bool:
        """Note ``scope`` as the running call with its key (none is yet); False where the key cannot be hashed."""
        try:
            self.open_calls[scope.call_key] = scope
        except TypeError:
            return False
        return True

    def unrolled_or_loops(self, scope: Scope, lower: Callable[[], Value],
                          as_loops: Callable[[RuntimeDepth], Value] | None) -> Value:
        """``lower()`` (a deep recursion goes on with a fresh stack); where a call
        inside repeats this one, everything it lowered is undone and ``as_loops`` is lowered instead."""
        # only a function calling itself is lowered as loops: only then is there anything to undo
        saved = (self.snapshot(), len(self.binds), dict(scope.env)) if scope.parsed.calls_itself else None
        try:
            return deep.call(lower)
        except RuntimeDepth as e:
            if e.scope is not scope or as_loops is None:
                raise
            found = e
        if saved is not None:
            state, n_binds, env = saved
            self.restore(state)
            del self.binds[n_binds:]
            scope.env, self.exits = env, []
        return deep.call(as_loops, found)

    def lower_as_loops(self, parsed: Any, found: RuntimeDepth) -> Value:
        """The body of a linear recursion as a descent loop, its base case and an ascent loop."""
        try:
            form = recursion.loop_form(parsed.funcdef, user_names(parsed.funcdef))
        except recursion.NotLinear as e:
            raise recursion.refusal(e, parsed.loc, found) from None
        parsed.aliases.update(form.aliases)
        self._locs.clear()  # (the user's nodes the loop form reuses now point at the node they stand for)
        self.namer.mention(user_names(form.funcdef))
        return self.lower_body(form.funcdef)

    def expr_Lambda(self, node: cst.Lambda) -> Value:
        return self.closure(node)

    def closure(self, node: cst.Lambda | cst.FunctionDef) -> Ref:
        defaults = {p.name.value: self.expr(p.default) for p in node.params.params if p.default is not None}
        visible = {a.name for sc in self._chain() for v in sc.env.values() for a in atoms_in(v)}
        site = (self.binds, self.binds[-1] if self.binds else None, visible)
        return Ref("closure", Closure(node, self.scope, defaults, site))

    def _chain(self) -> Iterator["Scope"]:
        return scope_chain(self.scope)

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
            found.append(("defaults", id(fn), tuple((k, value_key(v)) for k, v in sorted(fn.defaults.items()))))
            for n in fn.reads:
                v = self._lookup(fn.scope, n)
                if v is None:
                    continue
                found.append((id(fn), n, value_key(v)))
                for inner in closures_in(v):
                    if id(inner) not in seen:
                        seen.add(id(inner))
                        todo.append(inner)
        return tuple(found)

    def _make_function_value(self, c: Closure, names: list[str], types: list[Type], node: cst.Call) -> Var | None:
        params = tuple(Var(self.namer.fresh(n), forget_value(t)) for n, t in zip(names, types))
        for p in params:
            self.aliases.made(p.name, ("F:" + p.name,))
        scope = Scope(c.scope.parsed, c.scope.path, dict(zip(names, params)), parent=c.scope, own=c.locals)
        body = c.node.body
        depth, waiting = len(self.aliases.loops), len(self.aliases.pending)
        self.trying += 1  # the calls in it are inlined: one try lowers the body once, not once per nested try
        self.aliases.enter_body()
        try:
            binds, _, value = self.branch(lambda: self.run_call(
                c, c.__name__, scope, node, (lambda: self.expr(body)) if isinstance(body, cst.BaseExpression)
                else (lambda: self.lower_body(c.node))))  # type: ignore[arg-type]
        except AstadError:  # what this try left is dropped: the inlined call checks again
            del self.aliases.loops[depth:], self.aliases.pending[waiting:]
            return None  # inlined, the call gives the error where it is made
        finally:
            self.trying -= 1
            made = self.aliases.exit_body()
        assert c.site is not None
        site, before, visible = c.site
        block = Block(tuple(binds), value) if isinstance(value, Var) else None
        if (block is None or not isinstance(value.type, Num)  # type: ignore[union-attr]
                or any(not isinstance(b.rhs, (Prim, MakeTuple, Unpack, Copy)) or has_effect(b.rhs) for b in binds)
                or any(v.name not in visible for v in lam_free_vars(Lam(params, block)))
                or has_unread_raising(block)):  # (inlined, the statement is kept: it raises as in Python)
            return None
        name = next((k for sc in self._chain() for k, v in sc.env.items()
                     if isinstance(v, Ref) and v.obj is c), c.__name__.strip("<>"))
        fname = self.namer.fresh(name)
        self.function_value_names.add(fname)
        f = Var(fname, FunT(tuple(p.type for p in params), value.type, fname))  # type: ignore[union-attr]
        at = 0 if before is None else next(i for i, b in enumerate(site) if b is before) + 1
        site.insert(at, Bind((f,), Lam(params, block), self.loc(c.node)))
        self.aliases.function(f, params, value, made)
        return f

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
        scope = Scope(c.scope.parsed, c.scope.path, {n: given.get(n, c.defaults.get(n)) for n in names},  # type: ignore[misc]
                       parent=c.scope, own=c.locals)
        body = c.node.body
        return self.run_call(c, c.__name__, scope, node, (lambda: self.expr(body)) if isinstance(body, cst.BaseExpression)
                             else (lambda: self.lower_body(c.node)))  # type: ignore[arg-type]


def _code_signature(fn: Callable[..., Any], attributes: dict[str, Any] | None = None) -> inspect.Signature:
    """The parameters Python binds a call of ``fn`` to: its code's and defaults (``inspect.signature``
    reads a ``__signature__`` attribute first, which a call does not); ``attributes``: its ``__code__``,
    ``__defaults__`` and ``__kwdefaults__`` as read before."""
    if isinstance(fn, types.FunctionType):
        a = attributes or {n: getattr(fn, n) for n in ATTRIBUTES}
        bare = types.FunctionType(a["__code__"], fn.__globals__, fn.__name__, a["__defaults__"], fn.__closure__)
        bare.__kwdefaults__ = a["__kwdefaults__"]
        fn = bare
    return inspect.signature(fn, follow_wrapped=False)


#: how deep calls (recursion, unrolled) may nest
MAX_CALL_DEPTH = 1000

