"""One function for a gradient of scalar arguments: the generated forward and
backward functions run back to back, with the output cotangent 1.0.

``grad(f)(x, y)`` on Python floats calls ``f_forward``, which packs its
residuals in a tuple, then ``f_backward``, which unpacks them: two calls and a
tuple, as much as the arithmetic itself for a function of five float
operations.  :func:`fuse` writes the two bodies one after the other in a single
function (the residual tuple and its unpacking dropped when they name the same
variables, the constant ``1.0`` read in place of the parameter ``out_ct`` where
nothing assigns it: ``t6 = 1.0 / t4``) and returns ``(value, cotangents)``, or,
given what ``grad``'s caller asks for (a ``pick``), exactly that: ``(value,
(x_ct, y_ct))``, ``x_ct``, ...  The statements are the generated ones, in the
same order, so the numbers are the same to the last bit; :func:`fuse` returns None, and the
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

import numpy as np

from . import deep, names
from .guards import body as _body, made, plain as _plain
from .kind_checks import fresh_name as _fresh
from .ir import Num, StructT

_FUSED: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()

#: what a gradient's caller gets: the cotangents ``nums`` (one, when ``single``), after the value when ``with_value``
Pick = tuple[tuple[int, ...], bool, bool]


def of(d: Any, pick: Pick | None = None) -> Callable[..., Any] | None:
    """The fused value-and-gradient function of a :class:`astad.pipeline.Derivative`
    (made once per derivative and ``pick``), or None where :func:`fuse` declines or the
    generated functions take the leaves of structured arguments.  With ``pick``, the
    function returns what ``grad``'s caller gets (see :func:`fuse`)."""
    by_pick = _FUSED.get(d)
    if by_pick is None:
        by_pick = _FUSED[d] = {}
    if pick in by_pick:
        return by_pick[pick]
    plain = not any(isinstance(t, StructT) for t in d.arg_types) and hasattr(d.forward, "__globals__")
    t = d.out_type  # (a real scalar: grad checked it) the cotangent 1.0 of a numpy scalar is that numpy scalar
    one = 1.0 if not isinstance(t, Num) or t.py or t.shape else np.dtype(t.dtype).type(1.0)
    found = by_pick[pick] = fuse(d.source, d.name, d.forward.__globals__, pick, one) if plain else None
    return found


def fuse(source: str, program: str, namespace: dict[str, Any], pick: Pick | None = None,
         one: Any = 1.0) -> Callable[..., Any] | None:
    """``program``'s forward and backward, from the generated ``source``, as one
    function ``(*args) -> (value, cotangents)`` at output cotangent 1.0, compiled
    in a copy of ``namespace`` (the generated module's globals); None when the
    bodies cannot be joined as they are (see the module docstring).  With ``pick
    = (nums, single, with_value)`` it returns the cotangents ``nums`` as they are
    (the caller knows they are Python floats, which need no copy): ``(value, (x_ct,
    y_ct))``, ``(value, x_ct)``, ``x_ct``, ...; None where the backward's result
    is not a tuple of one item per parameter, or one left out is more than a name
    or a constant (it would no longer be evaluated)."""
    funcs = {f.name: f for f in deep.parse_ast(source).body if isinstance(f, ast.FunctionDef)}
    fwd = funcs.get(names.python_name(f"{program}_forward"))
    bwd = funcs.get(names.python_name(f"{program}_backward"))
    if fwd is None or bwd is None or not _plain(fwd) or not _plain(bwd) or len(bwd.args.args) != 2:
        return None
    params = {a.arg for a in fwd.args.args}
    namespace = dict(namespace)
    seed: ast.expr = ast.Constant(1.0)
    if type(one) is not float:  # a numpy scalar: read from the namespace, by a name nothing else has
        taken = set(namespace) | {n.id for n in ast.walk(fwd) if isinstance(n, ast.Name)} \
            | {n.id for n in ast.walk(bwd) if isinstance(n, ast.Name)} | params
        seed_name = _fresh("out_ct_one", taken)
        namespace[seed_name] = one
        seed = ast.Name(id=seed_name, ctx=ast.Load())
    joined = _join(_body(fwd), _body(bwd), params, bwd.args.args[0].arg, bwd.args.args[1].arg, seed)
    if joined is None or (pick is not None and not _picked(joined[-1], pick, len(params))):
        return None
    name = "_".join(("fused", fwd.name, "value_and_grad"))
    if name in namespace:  # a constant the code reads has the name
        return None
    fused = copy.copy(fwd)
    fused.name, fused.body, fused.decorator_list = name, joined, []
    return made(fused, namespace, f"<astad: {program} value_and_grad>")


def _join(fwd: list[ast.stmt], bwd: list[ast.stmt], params: set[str], residuals: str,
          ct: str, seed: ast.expr) -> list[ast.stmt] | None:
    """The joined statements, or None where a name would change what it refers to:
    one function has one scope, so a name the backward assigns is local in the
    forward part too, and a global the backward reads must not be a forward local."""
    ret = fwd[-1].value  # type: ignore[attr-defined]
    if not (isinstance(ret, ast.Tuple) and len(ret.elts) == 2):
        return None
    value, saved = ret.elts
    head, tail = fwd[:-1], bwd
    bwd_bound = _bound(bwd)
    rebound: set[str] = set()  # what the joined statements bind after the forward's return value is computed
    if tail and _unpacks(tail[0], residuals):
        unpack = tail[0]
        tail = tail[1:]
        if ast.dump(unpack.targets[0]).replace("Store", "Load") != ast.dump(saved):  # type: ignore[attr-defined]
            head = head + [ast.Assign(targets=unpack.targets, value=saved)]  # type: ignore[attr-defined]
            rebound = _bound([unpack])
    fwd_locals = _bound(head) | params
    fwd_globals = (_read(head) | _read([ast.Expr(value)])) - fwd_locals
    bwd_globals = _read(bwd) - bwd_bound
    # (a residual unpacked by the line dropped is bound by nothing: the constant arrays among them, see
    # optimise.residuals, are read as globals by both parts, the same objects in one call)
    if (residuals in _read(tail) or ct in fwd_locals | fwd_globals or (_bound(tail) | rebound) & fwd_globals
            or bwd_globals & fwd_locals):
        return None
    if ct in bwd_bound:
        start: list[ast.stmt] = [ast.Assign(targets=[ast.Name(id=ct, ctx=ast.Store())], value=seed)]
    else:  # read only: each read is the constant (``t6 = 1.0 / t4``: the same operation on the same value)
        start, tail = [], [_Constant(ct, seed).visit(stmt) for stmt in tail]
    if isinstance(value, ast.Name) and value.id not in rebound | _bound(tail):  # the value as it is, by its name
        result = value
    else:
        name = _fresh("value", fwd_locals | fwd_globals | bwd_bound | _read(bwd))
        start.insert(0, ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=value))
        result = ast.Name(id=name, ctx=ast.Load())
    cts = tail[-1].value  # type: ignore[attr-defined]
    end = ast.Return(value=ast.Tuple(elts=[result, cts], ctx=ast.Load()))
    return head + start + tail[:-1] + [end]


class _Constant(ast.NodeTransformer):
    """Each read of ``name`` as the output cotangent, 1.0 (``seed``)."""

    def __init__(self, name: str, seed: ast.expr) -> None:
        self.name, self.seed = name, seed

    def visit_Name(self, node: ast.Name) -> ast.expr:
        return ast.copy_location(copy.copy(self.seed), node) if node.id == self.name else node


def _picked(ret: ast.Return, pick: Pick, n: int) -> bool:
    """``ret`` (``return value, (ct_1, ..., ct_n)``) made to return what ``pick`` asks for."""
    value, cts = ret.value.elts  # type: ignore[union-attr]
    nums, single, with_value = pick
    if not (isinstance(cts, ast.Tuple) and len(cts.elts) == n and all(0 <= i < n for i in nums)):
        return False
    if any(not isinstance(e, (ast.Name, ast.Constant)) for i, e in enumerate(cts.elts) if i not in nums):
        return False
    picked: ast.expr = cts.elts[nums[0]] if single else ast.Tuple(elts=[cts.elts[i] for i in nums], ctx=ast.Load())
    ret.value = ast.Tuple(elts=[value, picked], ctx=ast.Load()) if with_value else picked
    return True


def _unpacks(stmt: ast.stmt, residuals: str) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
            and isinstance(stmt.value, ast.Name) and stmt.value.id == residuals)


def _bound(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _read(stmts: list[ast.stmt]) -> set[str]:
    return {n.id for s in stmts for n in ast.walk(s) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
