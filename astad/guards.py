"""Generated functions that check their own arguments: the fast calls of ``grad`` and ``jvp``.

A call of ``grad(f)(2.0, 3.0)`` or ``jvp(f, (2.0, 3.0), (1.0, 0.5))`` with
arguments of types seen before is answered from a table keyed by those types
(``api.remember``): building the key (a tuple of types), hashing it and
looking it up costs as much as a function of five float operations (and for
``jvp(f, (w, A, b), (w_t, None, None))`` of arrays, keyed by their shapes and
dtypes, as much as ten).  For the latest entry of such a table, :func:`guard`
and :func:`guard_jvp` compile the entry's generated function again with its
checks at the top (printed by :mod:`astad.kind_checks`): one argument of each
kind by position (``type(x) is not float``; an array's type, shape and
dtype), the function's code still the one read (``function.__code__ is
code``), the names the code read still the same objects (``holds()``).  A call that fails a check gets :data:`MISS`,
and the caller goes on to the table; one that passes runs the very statements
the table's entry runs.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, Callable, Sequence

import numpy as np

from . import deep, kind_checks

#: what a guarded function returns for a call it was not made for
MISS = object()


def made(f: ast.FunctionDef, scope: dict[str, Any], filename: str) -> Callable[..., Any]:
    """The function ``f`` compiled in ``scope``, which it keeps with its tree (see :func:`guard`)."""
    tree = ast.fix_missing_locations(ast.Module(body=[f], type_ignores=[]))
    exec(deep.compile_ast(tree, filename), scope)  # noqa: S102 (one thread at a time: see astad.deep)
    found = scope[f.name]
    found.__astad_tree__ = (f, scope, filename)
    return found


def body(f: ast.FunctionDef) -> list[ast.stmt]:
    """The statements of a generated function, without its docstring."""
    body = f.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return list(body)


def plain(f: ast.FunctionDef) -> bool:
    """No nested scope, no ``global``/``nonlocal``, no ``yield``, and a
    ``return`` only as the last statement."""
    stmts = body(f)
    for node in ast.walk(f):
        if node is f:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Global,
                             ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.comprehension)):
            return False
        if isinstance(node, ast.Return) and not (stmts and node is stmts[-1]):
            return False
    return bool(stmts) and isinstance(stmts[-1], ast.Return) and stmts[-1].value is not None


def names_of(f: ast.FunctionDef, scope: dict[str, Any]) -> kind_checks.Names:
    """Fresh names for what a guarded (or rewritten) copy of ``f`` adds: none is a name of ``f`` or of its scope."""
    return kind_checks.Names({n.id for n in ast.walk(f) if isinstance(n, ast.Name)} | {a.arg for a in f.args.args} |
                             set(scope))


def _simple(f: ast.FunctionDef) -> bool:
    a = f.args
    return not (a.posonlyargs or a.vararg or a.kwonlyargs or a.kwarg or a.defaults)


def _checks(names: kind_checks.Names, params: list[str], keys: Sequence[Any], scalars: frozenset, miss: str,
            function: Any, code: Any, holds: Any) -> list[ast.stmt]:
    """``params`` of the kinds ``keys`` (scalars of the types in ``scalars``, arrays: see
    :mod:`astad.kind_checks`), ``function.__code__`` still ``code``, and ``holds()``; ``return
    miss`` where one fails (:class:`~astad.kind_checks.NoCheck`: a kind it does not check)."""
    lines = [line for p, k in zip(params, keys)
             for line in kind_checks.lines(k, p, f"return {miss}", names, scalars, ())]
    test = f"{names.of(function, 'function')}.__code__ is not {names.of(code, 'code')}"
    if holds is not None:
        test += f" or not {names.of(holds, 'holds')}()"
    lines.append(f"if {test}: return {miss}")
    return list(deep.parse_ast("\n".join(lines) + "\n").body)


def compiled(g: ast.FunctionDef, scope: dict[str, Any], filename: str, names: kind_checks.Names) -> Callable[..., Any]:
    """:func:`made` in ``scope`` with the objects ``names`` bound added."""
    scope = dict(scope)
    scope.update(names.namespace)
    return made(g, scope, filename)


def guard(run: Callable[..., Any], types: tuple[type, ...], function: Any, code: Any,
          holds: Callable[[], bool] | None, scalars: frozenset) -> Callable[..., Any] | None:
    """``run`` (made by :func:`made`) checking, itself, that it was called with one argument of
    each type in ``types`` (each in ``scalars``) by position, that ``function.__code__`` is
    ``code`` and that ``holds()``; :data:`MISS` otherwise.  None where ``run`` was not made by :func:`made`."""
    tree = getattr(run, "__astad_tree__", None)
    if tree is None:
        return None
    f, scope, filename = tree
    params = [a.arg for a in f.args.args]
    if len(params) != len(types) or not _simple(f):
        return None
    names = names_of(f, scope)
    miss, rest = names.of(MISS, "miss"), names.fresh("rest")
    try:
        checks = _checks(names, params, types, scalars, miss, function, code, holds)
    except kind_checks.NoCheck:
        return None
    g = copy.copy(f)
    g.name = names.fresh(f"{f.name}_guarded")
    g.args = ast.arguments(posonlyargs=[], args=list(f.args.args), vararg=ast.arg(arg=rest), kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[ast.Name(id=miss, ctx=ast.Load()) for _ in params])
    g.body = [*deep.parse_ast(f"if {rest}: return {miss}\n").body, *checks, *f.body]
    return compiled(g, scope, filename, names)


def pair_returning(jvp: Callable[..., Any], source: str, n_params: int
                   ) -> tuple[ast.FunctionDef, dict[str, Any], list[ast.stmt], ast.Tuple] | None:
    """The generated function ``jvp`` read back from its module's text ``source``: its tree, its
    globals, its statements (no docstring) and the ``(value, tangent)`` tuple it returns; None where
    it is not one plain function of ``n_params`` plain parameters ending in ``return value, tangent``."""
    f = next((s for s in deep.parse_ast(source).body if isinstance(s, ast.FunctionDef) and s.name == jvp.__name__), None)
    scope = getattr(jvp, "__globals__", None)
    if f is None or scope is None or not _simple(f) or not plain(f) or len(f.args.args) != n_params:
        return None
    stmts = body(f)
    ret = stmts[-1].value  # type: ignore[attr-defined]
    if not (isinstance(ret, ast.Tuple) and len(ret.elts) == 2):
        return None
    return f, scope, stmts, ret


def guard_jvp(jvp: Callable[..., Any], source: str, kinds: Sequence[Any], scalars: frozenset, order: tuple[int, ...],
              function: Any, code: Any, holds: Callable[[], bool] | None, zero: Callable[[Any], Any],
              owned: Callable[[Any, tuple, tuple], Any] | None = None) -> Callable[..., Any] | None:
    """The generated ``jvp(*args, *tangents of the arguments in order)`` (its text in ``source``)
    as ``(primals, tangents) -> (value, tangent)``: two tuples of ``n`` items, of the ``2n``
    ``kinds`` (``api_forward.fast_key``'s keys: a scalar's or None's type in ``scalars``, an array's
    shape and dtype), checked as :func:`guard` checks; a tangent the code gives as None is ``zero(value)``,
    one that is not a float ``owned(tangent, primals, tangents)`` (where given: arrays may share
    memory).  None where the text is not one plain function ending in ``return value, tangent``,
    or a kind is not a scalar's or an array's."""
    n = len(kinds) // 2
    found = pair_returning(jvp, source, n + len(order))
    if found is None:
        return None
    f, scope, stmts, ret = found
    params = [a.arg for a in f.args.args]
    names = names_of(f, scope)
    miss, p, t = names.of(MISS, "miss"), names.fresh("primals"), names.fresh("tangents")
    given = dict(zip(order, params[n:]))
    tangent_names = [given.get(i) or names.fresh(f"no_tangent_{i}") for i in range(n)]
    is_type = names.of(type, "type")

    def unpacked(items: list[str], of: str) -> str:
        return f"{', '.join(items)}{',' if len(items) == 1 else ''} = {of}\n"

    try:
        checks = _checks(names, params[:n] + tangent_names, kinds, scalars, miss, function, code, holds)
    except kind_checks.NoCheck:
        return None
    src = (f"if {is_type}({p}) is not {names.of(tuple, 'tuple')} or {is_type}({t}) is not {names.of(tuple, 'tuple')}:\n"
           f"    return {miss}\ntry:\n    {unpacked(params[:n], p)}    {unpacked(tangent_names, t)}"
           f"except {names.of(ValueError, 'ValueError')}:  # not {n} of each\n    return {miss}\n")
    v, tg = names.fresh("value"), names.fresh("tangent")
    tail_src = f"{v} = 0\n{tg} = 0\nif {tg} is None:\n    {tg} = {names.of(zero, 'zero')}({v})\n"
    if owned is not None:
        tail_src += (f"elif {is_type}({tg}) is not {names.of(float, 'float')} and {is_type}({tg}) is not "
                     f"{names.of(np.float64, 'float64')}:\n"
                     f"    {tg} = {names.of(owned, 'owned')}({tg}, {p}, {t})\n")
    tail = deep.parse_ast(tail_src + f"return {v}, {tg}\n").body
    tail[0].value, tail[1].value = ret.elts  # type: ignore[attr-defined]
    g = copy.copy(f)
    g.name = names.fresh(f"{f.name}_guarded")
    g.args = ast.arguments(posonlyargs=[], args=[ast.arg(arg=p), ast.arg(arg=t)], vararg=None, kwonlyargs=[],
                           kw_defaults=[], kwarg=None, defaults=[])
    g.body = [*deep.parse_ast(src).body, *checks, *stmts[:-1], *tail]
    return compiled(g, scope, f"<astad: {f.name}, checked>", names)
