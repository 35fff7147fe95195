"""Where a generator expression or ``map(...)`` is read: only where Python consumes it at once.

Python evaluates ``(x * i for i in range(3))`` and ``map(f, xs)`` lazily: each
element when it is asked for, with the values its names have *then*, once.
astad lowers either as the list it yields, evaluated where it is written.  The
two agree only where the iterator is consumed, whole, before anything can
change what it reads:

- as the first argument of ``sum``, ``list``, ``tuple``, ``min``, ``max`` or
  ``sorted`` (``sum(x * i for i in range(3))``; ``any`` and ``all``, which stop at
  the element that decides them, are refused: :mod:`astad.frontend.lookup`);
- as what a comprehension runs over (``[g(v) for v in map(f, xs)]``);
- unpacked by an assignment (``a, b = (f(v) for v in xs)``);
- assigned to a name read once in the whole function, by the next statement,
  which is one such call of it (``ys = map(f, x2)`` then ``w = sum(ys)``, CHAD's
  Fig. 2);
- what a ``for`` statement runs over (itself, or an argument of ``enumerate`` or
  ``zip`` there; or ``g`` of ``g = ...`` read once in the function, by the next
  statement, that loop), where the loop runs to its end (no ``break``, ``return``
  or ``raise`` in its body: Python would read no element after) and nothing it
  reads can change before it reads it:
  Python reads one element before each iteration, so where no name it reads (nor
  one that a function it calls, bound by a ``lambda`` or ``def`` here, reads) is
  assigned by the loop's target or body, nor updated there (``a[i] = v``,
  ``xs.append(v)``), each element is the one read up front.

A consumer is the builtin of that name, not a function of the user's that
shadows it (which may consume its argument twice, or not at all).  Anywhere else
(``g = (x * i ...)`` read after ``x`` is reassigned, consumed twice, the
iterable of a ``for`` statement whose body reassigns what it reads, an argument
of ``np.array``, which makes an array of one generator object) the lowering
refuses it (:func:`check`).
"""

from __future__ import annotations

import builtins
from typing import Any

import libcst as cst

from .. import deep
from ..deep import syntax_children
from ..ir import ListT
from ..values import PyTuple, Ref
from .syntax import FOUND, assigned_names, bound_by, breaks_out, contains_return, stmts_of

#: the builtins that consume an iterator at once (by name: see the module docstring)
CONSUMERS = frozenset({"sum", "list", "tuple", "min", "max", "sorted"})
#: the builtins a ``for`` statement may run over that read their arguments' elements in step with it
STEPPERS = frozenset({"enumerate", "zip"})


def check(lw: Any, node: cst.CSTNode, what: str) -> None:
    """Refuse ``node`` (a generator expression or a ``map`` call: ``what``) unless Python
    consumes it at once where it is (see the module docstring)."""
    funcdef = lw.scope.parsed.funcdef
    known = lw.__dict__.setdefault("_consumed_at_once", {})  # id of the def -> (def, ids of the nodes)
    found = known.get(id(funcdef))
    if found is None or found[0] is not funcdef:
        found = known[id(funcdef)] = (funcdef, consumed_at_once(funcdef))
    consumers = found[1].get(id(node))
    if consumers is None or not all(_is_builtin(lw, c) for c in consumers):
        raise lw.syntax_error(
            f"{what} is evaluated by Python lazily (when consumed, with the values its names have then, once): "
            "astad reads it only where it is consumed at once (by the builtins sum, list, min or max, a "
            "comprehension, a `for` that runs to its end, whose target and body change nothing it reads, or the next statement's sum(g) "
            "of `g = ...`)",
            "a list, evaluated where it is written: [f(v) for v in xs] or list(map(f, xs))", node)


def check_zip(lw: Any, seqs: list[cst.BaseExpression], values: list[Any]) -> None:
    """``zip(xs, g)`` (a ``for``'s, a comprehension's, ``map(f, xs, g)``'s): Python stops at the shortest
    sequence, and reads no element of a generator or ``map`` past it; astad reads every element of
    them up front (an ``xs[i]`` Python never reaches raised IndexError).  Refuse such an argument
    unless its length is known and no other argument is known to be, or may be, shorter."""
    if len(seqs) < 2:
        return
    lengths = [_length(v) for v in values]
    for s, n in zip(seqs, lengths):
        if _is_lazy(s) and (n is None or any(m is None or m < n for m in lengths)):
            raise lw.syntax_error(
                "zip stops at its shortest argument, and Python reads no element of a generator or map(...) past "
                "it; astad reads all of them: here this one may be longer than another argument",
                "make it no longer than the others: zip(xs, (f(v) for v in ys[:len(xs)]))", s)


def _is_lazy(node: cst.BaseExpression) -> bool:
    """Whether ``node`` is a generator expression or a call of ``map``."""
    return type(node) is cst.GeneratorExp or (type(node) is cst.Call and type(node.func) is cst.Name
                                              and node.func.value == "map")


def _length(value: Any) -> int | None:
    """The length of a sequence's value, where known when transforming."""
    if type(value) is PyTuple:
        return len(value.items)
    t = getattr(value, "type", None)
    if type(t) is ListT:
        return t.length
    shape = getattr(t, "shape", None)
    return shape[0] if shape else None


def _is_builtin(lw: Any, name: cst.Name) -> bool:
    """Whether ``name`` is the builtin of that name where it is read (not a function of the user's)."""
    found = lw.expr(name)
    return isinstance(found, Ref) and found.obj is getattr(builtins, name.value)


def _consumer_arg(value: Any) -> cst.BaseExpression | None:
    """The first argument of ``value`` when it is a call of a consuming builtin (by name)."""
    if (type(value) is cst.Call and type(value.func) is cst.Name and value.func.value in CONSUMERS
            and value.args and not value.args[0].keyword and not value.args[0].star):
        return value.args[0].value
    return None


def consumed_at_once(funcdef: cst.FunctionDef) -> dict[int, tuple[cst.Name, ...]]:
    """The ids of the expressions of ``funcdef`` (nested functions included) in a place where
    Python consumes an iterator at once (see the module docstring), each with the names that must
    be the builtins of those names there (``sum`` of ``sum(g)``)."""
    ok: dict[int, tuple[cst.Name, ...]] = {}
    names: dict[str, int] = {}  # how often each name occurs (a read, an assignment)
    pairs: list[tuple[str, cst.BaseExpression, tuple[cst.Name, ...] | None]] = []  # `g = <expression>` consumed next
    loops: list[tuple[cst.BaseExpression, tuple[cst.Name, ...], cst.For]] = []  # run over by a `for`
    maps: list[cst.Call] = []  # `map(f, xs)`: each `xs` read in step with it (outer ones first)
    todo: list[cst.CSTNode] = [funcdef]
    while todo:
        n = todo.pop()
        cls = type(n)
        if cls is cst.Name:
            names[n.value] = names.get(n.value, 0) + 1
        elif cls is cst.Call:
            arg = _consumer_arg(n)
            if arg is not None:
                ok[id(arg)] = (n.func,)
            if type(n.func) is cst.Name and n.func.value == "map":
                maps.append(n)
        elif cls is cst.CompFor:
            ok[id(n.iter)] = ()
            ok.update({id(it): via for it, via in _run_over(n.iter) if via})  # `zip(g1, g2)`: in step with it
        elif cls is cst.Assign and all(type(t.target) in (cst.Tuple, cst.List) for t in n.targets):
            ok[id(n.value)] = ()  # unpacked: consumed at once
        elif cls is cst.For:
            loops += [(it, via, n) for it, via in _run_over(n.iter)]
        body = getattr(n, "body", None)
        if isinstance(body, cst.BaseSuite):
            stmts = stmts_of(body)
            for first, second in zip(stmts, stmts[1:]):
                found = _assigned_then_consumed(first, second)
                if found is not None:
                    pairs.append(found)
                elif type(second) is cst.For:
                    loop_pair = _assigned_then_looped(first, second)
                    if loop_pair is not None:
                        loops += [(loop_pair[1], (), second)]
                        pairs.append((loop_pair[0], loop_pair[1], None))
        todo.extend(syntax_children(n))
    for it, via, loop in loops:
        if not _stops_early(loop) and _unchanged_by(loop, it, funcdef):
            ok[id(it)] = via
    for name, value, via in pairs:
        if names.get(name) != 2:  # not only assigned here and read there
            ok.pop(id(value), None)
        elif via is not None:
            ok[id(value)] = via
    for m in maps:
        if id(m) in ok:
            ok.update({id(a.value): (*ok[id(m)], m.func) for a in m.args[1:] if not a.keyword and not a.star})
    return ok


def _run_over(it: cst.BaseExpression) -> list[tuple[cst.BaseExpression, tuple[cst.Name, ...]]]:
    """What a ``for`` over ``it`` reads in step with its iterations: ``it``, or the arguments of
    ``enumerate(it)`` or ``zip(a, b)``, each with the builtins' names they are read through."""
    if (type(it) is cst.Call and type(it.func) is cst.Name and it.func.value in STEPPERS
            and not any(a.star or a.keyword for a in it.args)):
        return [(a.value, (it.func,)) for a in it.args[:1 if it.func.value == "enumerate" else None]]
    return [(it, ())]


def _assigned_then_looped(first: cst.CSTNode, loop: cst.For) -> tuple[str, cst.BaseExpression] | None:
    """``(g, value)`` where ``first`` is ``g = value`` and ``loop`` is ``for ... in g:``."""
    if type(first) is not cst.SimpleStatementLine or len(first.body) != 1 or type(loop.iter) is not cst.Name:
        return None
    assign = first.body[0]
    if type(assign) is not cst.Assign or len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
        return None
    name = assign.targets[0].target.value
    return (name, assign.value) if loop.iter.value == name else None


def _stops_early(loop: cst.For) -> bool:
    """Whether ``loop`` may stop before its iterable's end (a ``break`` or ``return``, or a ``raise``, in its
    body): Python then never reads the elements after, which astad would read up front (one that raises,
    ``xs[t]`` past the end, made the derivative raise where the function returns)."""
    return breaks_out(loop.body) or contains_return(loop.body) or deep.found_below(
        loop.body, (cst.Raise,), (cst.FunctionDef, cst.BaseExpression), FOUND.setdefault((cst.Raise,), {}))


def _unchanged_by(loop: cst.For, it: cst.BaseExpression, funcdef: cst.FunctionDef) -> bool:
    """Whether nothing ``it`` reads (its free names, and those of the functions of ``funcdef`` it
    calls by name, transitively) is assigned or updated by ``loop``'s target or body."""
    changed = set(bound_by(loop.target, items=True)) | set(assigned_names(loop.body))
    functions = _local_functions(funcdef)
    read: set[str] = set()
    todo = [it]
    while todo:
        for name in free_names(todo.pop()) - read:
            read.add(name)
            todo += functions.get(name, [])
    return not read & changed


def _local_functions(funcdef: cst.FunctionDef) -> dict[str, list[cst.CSTNode]]:
    """The ``def``s and ``name = lambda ...`` of ``funcdef`` (itself included), by name."""
    found: dict[str, list[cst.CSTNode]] = {}
    todo: list[cst.CSTNode] = [funcdef]
    while todo:
        n = todo.pop()
        if type(n) is cst.FunctionDef:
            found.setdefault(n.name.value, []).append(n)
        elif type(n) is cst.Assign and type(n.value) is cst.Lambda:
            for t in n.targets:
                for name in bound_by(t.target, items=False):
                    found.setdefault(name, []).append(n.value)
        todo.extend(syntax_children(n))
    return found


def free_names(node: cst.CSTNode, bound: frozenset[str] = frozenset()) -> set[str]:
    """The names ``node`` reads from outside it (over-approximated: a ``def``'s own locals are left out
    only where it binds them)."""
    cls = type(node)
    if cls is cst.Name:
        return set() if node.value in bound else {node.value}
    if cls is cst.Attribute:
        return free_names(node.value, bound)
    if cls is cst.Arg:
        return free_names(node.value, bound)
    if cls is cst.Lambda or cls is cst.FunctionDef:
        ps = node.params
        params = [p for p in (*ps.posonly_params, *ps.params, *ps.kwonly_params, ps.star_arg, ps.star_kwarg)
                  if isinstance(p, cst.Param)]
        out: set[str] = set()
        for p in params:
            if p.default is not None:
                out |= free_names(p.default, bound)
        own = {p.name.value for p in params}
        if cls is cst.FunctionDef:
            own |= set(assigned_names(node.body))
        return out | free_names(node.body, bound | own)
    if cls in (cst.GeneratorExp, cst.ListComp, cst.SetComp, cst.DictComp):
        out, inner, clause = set(), bound, node.for_in
        while clause is not None:
            out |= free_names(clause.iter, inner)  # (the first one in the enclosing scope)
            inner = inner | set(bound_by(clause.target, items=False))
            for cond in clause.ifs:
                out |= free_names(cond.test, inner)
            clause = clause.inner_for_in
        parts = (node.key, node.value) if cls is cst.DictComp else (node.elt,)
        for part in parts:
            out |= free_names(part, inner)
        return out
    out = set()
    for child in syntax_children(node):
        out |= free_names(child, bound)
    return out


def _assigned_then_consumed(first: cst.CSTNode, second: cst.CSTNode
                            ) -> tuple[str, cst.BaseExpression, tuple[cst.Name, ...]] | None:
    """``(g, value, (consumer,))`` where ``first`` is ``g = value`` and ``second`` is one statement whose whole
    value is a consuming call of ``g`` (its other arguments names or numbers)."""
    if type(first) is not cst.SimpleStatementLine or type(second) is not cst.SimpleStatementLine:
        return None
    if len(first.body) != 1 or len(second.body) != 1:
        return None
    assign, use = first.body[0], second.body[0]
    if type(assign) is not cst.Assign or len(assign.targets) != 1 or type(assign.targets[0].target) is not cst.Name:
        return None
    value = getattr(use, "value", None)
    arg = _consumer_arg(value)
    name = assign.targets[0].target.value
    if type(arg) is not cst.Name or arg.value != name:
        return None
    if not all(type(a.value) in (cst.Name, cst.Integer, cst.Float) and not a.star for a in value.args[1:]):
        return None
    return name, assign.value, (value.func,)
