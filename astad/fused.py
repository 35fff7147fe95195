"""One function for a gradient of scalar arguments: the generated forward and
backward functions run back to back, with the output cotangent 1.0.

``grad(f)(x, y)`` on Python floats calls ``f_forward``, which packs its
residuals in a tuple, then ``f_backward``, which unpacks them: two calls and a
tuple, as much as the arithmetic itself for a function of five float
operations.  :func:`fuse` writes the two bodies one after the other in a single
function (the residual tuple and its unpacking dropped when they name the same
variables, ``out_ct = 1.0`` in place of the parameter) and returns ``(value,
cotangents)``.  The statements are the generated ones, in the same order, so
the numbers are the same to the last bit; :func:`fuse` returns None, and the
caller keeps the two functions, wherever joining the bodies could change what
a statement reads: a name the backward assigns that the forward also binds, a
``return`` before the end, a nested function or ``global``, a backward that
reads ``residuals`` other than by unpacking it.
"""

from __future__ import annotations

import ast
import copy
import weakref
from typing import Any, Callable

from . import names
from .ir import StructT

_FUSED: "weakref.WeakKeyDictionary[Any, Callable[..., Any] | None]" = weakref.WeakKeyDictionary()


def of(d: Any) -> Callable[..., Any] | None:
    """The fused value-and-gradient function of a :class:`astad.pipeline.Derivative`
    (made once per derivative), or None where :func:`fuse` declines or the
    generated functions take the leaves of structured arguments."""
    try:
        return _FUSED[d]
    except KeyError:
        pass
    plain = not any(isinstance(t, StructT) for t in d.arg_types) and hasattr(d.forward, "__globals__")
    found = _FUSED[d] = fuse(d.source, d.name, d.forward.__globals__) if plain else None
    return found


def fuse(source: str, program: str, namespace: dict[str, Any]) -> Callable[..., Any] | None:
    """``program``'s forward and backward, from the generated ``source``, as one
    function ``(*args) -> (value, cotangents)`` at output cotangent 1.0, compiled
    in a copy of ``namespace`` (the generated module's globals); None when the
    bodies cannot be joined as they are (see the module docstring)."""
    funcs = {f.name: f for f in ast.parse(source).body if isinstance(f, ast.FunctionDef)}
    fwd = funcs.get(names.python_name(f"{program}_forward"))
    bwd = funcs.get(names.python_name(f"{program}_backward"))
    if fwd is None or bwd is None or not _plain(fwd) or not _plain(bwd) or len(bwd.args.args) != 2:
        return None
    params = {a.arg for a in fwd.args.args}
    joined = _join(_body(fwd), _body(bwd), params, bwd.args.args[0].arg, bwd.args.args[1].arg)
    if joined is None:
        return None
    name = "_".join(("fused", fwd.name, "value_and_grad"))
    if name in namespace:  # a constant the code reads has the name
        return None
    fused = copy.copy(fwd)
    fused.name, fused.body, fused.decorator_list = name, joined, []
    tree = ast.Module(body=[fused], type_ignores=[])
    scope = dict(namespace)
    exec(compile(ast.fix_missing_locations(tree), f"<astad: {program} value_and_grad>", "exec"), scope)  # noqa: S102
    return scope[name]


def _body(f: ast.FunctionDef) -> list[ast.stmt]:
    """The statements of a generated function, without its docstring."""
    body = f.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return list(body)


def _plain(f: ast.FunctionDef) -> bool:
    """No nested scope, no ``global``/``nonlocal``, no ``yield``, and a
    ``return`` only as the last statement."""
    body = _body(f)
    for node in ast.walk(f):
        if node is f:
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Global,
                             ast.Nonlocal, ast.Yield, ast.YieldFrom, ast.comprehension)):
            return False
        if isinstance(node, ast.Return) and not (body and node is body[-1]):
            return False
    return bool(body) and isinstance(body[-1], ast.Return) and body[-1].value is not None


def _join(fwd: list[ast.stmt], bwd: list[ast.stmt], params: set[str], residuals: str,
          ct: str) -> list[ast.stmt] | None:
    """The joined statements, or None where a name would change what it refers to:
    one function has one scope, so a name the backward assigns is local in the
    forward part too, and a global the backward reads must not be a forward local."""
    ret = fwd[-1].value  # type: ignore[attr-defined]
    if not (isinstance(ret, ast.Tuple) and len(ret.elts) == 2):
        return None
    value, saved = ret.elts
    head, tail = fwd[:-1], bwd
    bwd_bound = _bound(bwd)
    if tail and _unpacks(tail[0], residuals):
        unpack = tail[0]
        tail = tail[1:]
        if ast.dump(unpack.targets[0]).replace("Store", "Load") != ast.dump(saved):  # type: ignore[attr-defined]
            head = head + [ast.Assign(targets=unpack.targets, value=saved)]  # type: ignore[attr-defined]
    fwd_locals = _bound(head) | params
    fwd_globals = (_read(head) | _read([ast.Expr(value)])) - fwd_locals
    bwd_globals = _read(bwd) - bwd_bound
    if (residuals in _read(tail) or ct in fwd_locals | fwd_globals or bwd_bound & fwd_globals
            or bwd_globals & fwd_locals):
        return None
    result = _fresh("value", fwd_locals | fwd_globals | bwd_bound | _read(bwd))
    start = [ast.Assign(targets=[ast.Name(id=result, ctx=ast.Store())], value=value),
             ast.Assign(targets=[ast.Name(id=ct, ctx=ast.Store())], value=ast.Constant(1.0))]
    cts = tail[-1].value  # type: ignore[attr-defined]
    end = ast.Return(value=ast.Tuple(elts=[ast.Name(id=result, ctx=ast.Load()), cts], ctx=ast.Load()))
    return head + start + tail[:-1] + [end]


def _fresh(base: str, taken: set[str]) -> str:
    """``base``, or ``base_2``, ``base_3``, ... : the first not in ``taken``."""
    name, k = base, 1
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    return name


def _unpacks(stmt: ast.stmt, residuals: str) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.value, ast.Name) and stmt.value.id == residuals)


def _bound(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _read(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
