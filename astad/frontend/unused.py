"""Statements whose value nothing reads, run where they may raise.

Python runs ``y = math.log(x)`` even where nothing reads ``y``, and raises
there for ``x <= 0`` (so does ``_ = np.linalg.cholesky(S)``, a check that ``S``
is positive definite, or ``1.0 / x`` of a Python float at 0).  The passes after
the lowering drop what the result does not need, so such a statement is kept
by an effect that reads its value (``keep``, :mod:`astad.rules.python`): the
generated code computes it, as Python does, and raises as Python does.  Only
what may raise at run time is kept; other unread values are dropped as before
(their exceptions, numpy's shape errors, are astad's own when transforming)."""

from __future__ import annotations

from itertools import compress
from typing import Callable, Iterable

import numpy as np

from ..blocks import prim_rhss, with_branches
from ..ir import (App, Bind, Block, Const, Function, If, Lam, Loop, Num, Prim, ReverseProgram, Var, all_binds,
                  nested_blocks, read_set, vars_of)
from ..ir.walk import ops_of
from ..names import Namer
from ..rules import TABLE, infer

#: linear algebra that raises LinAlgError on its values (a singular matrix, one not positive definite, an
#: SVD or eigensolver that does not converge on a nan)
_RAISING_LINALG = frozenset({"cholesky", "inv", "solve", "matrix_power", "pinv", "svd_u", "svd_vh", "svdvals",
                             "eigvalsh", "eigh_vectors"})
#: numpy functions of sizes, shapes or indices (ValueError for a negative size or a shape that does not fit,
#: IndexError for an index out of range): they may raise where such an argument is known only when running
_SIZES_AND_INDICES = frozenset({"zeros", "ones", "full", "eye", "tri", "repeat", "reshape", "tile", "pad",
                                "broadcast_to", "take", "take_along_axis"})
#: Python's arithmetic on Python numbers raises (ZeroDivisionError, OverflowError); numpy's only warns
_PYTHON_ARITHMETIC = frozenset({"div", "floordiv", "mod", "pow"})
#: conversions of Python numbers that raise on nan or inf (``int(nan)``, ``round(inf)``) or a huge int
_CONVERSIONS = frozenset({"convert_discrete", "convert_float", "py_round"})
#: the operations :func:`may_raise` looks at further (but ``math_...``): any other never raises
_MAY = _RAISING_LINALG | _SIZES_AND_INDICES | _PYTHON_ARITHMETIC | _CONVERSIONS | {
    "power", "getitem", "list_get", "arange"}


def may_raise(rhs: Prim) -> bool:
    """Whether a primitive may raise on the values it runs on (not on their types: those are known)."""
    op = rhs.op
    if op not in _MAY and not op.startswith("math_"):
        return False
    if op.startswith("math_") or op in _RAISING_LINALG or op in _CONVERSIONS:
        return True
    if op in _PYTHON_ARITHMETIC:
        if all(isinstance(a.type, Num) and a.type.py for a in rhs.args) and not (
                op != "pow" and rhs.args[0].type.dtype.startswith("float")
                and isinstance(rhs.args[1].type, Num) and rhs.args[1].type.value not in (None, 0)):
            return True  # (but a float's division by a number known when transforming, a shape, not 0)
    if op in ("pow", "power") and len(rhs.args) == 2:  # numpy's integers to a negative integer power: ValueError
        base, exp = rhs.args
        return (isinstance(base.type, Num) and base.type.dtype[:1] in "iub" and isinstance(exp.type, Num)
                and exp.type.dtype[:1] in "iu"
                and not (type(exp) is Const and bool(np.all(np.asarray(exp.value) >= 0))))
    if op in ("getitem", "list_get"):  # an index known only when running: IndexError
        return any(type(a) is Var for a in rhs.args[1:])
    if op in _SIZES_AND_INDICES:  # (a float array's values never make them raise)
        return any(type(a) is Var and isinstance(a.type, Num) and a.type.dtype[:1] in "iub" for a in rhs.args)
    if op == "arange":  # a step of 0, a nan or infinite bound
        return any(type(a) is Var and (i == 2 or not (isinstance(a.type, Num) and a.type.dtype[:1] in "iub"))
                   for i, a in enumerate(rhs.args))
    return False


def _any_may_raise(blocks: Iterable[Block]) -> bool:
    """Whether a primitive of ``blocks`` (and of the blocks nested in them) may raise."""
    return any(type(x.rhs) is Prim and may_raise(x.rhs) for blk in blocks for x in all_binds(blk))


def keep_unread_raising(fn: Function, temp: Callable[[], str]) -> Function:
    """``fn`` with a ``keep`` effect after each binding that nothing reads and whose value is computed by
    something that may raise (the temporaries it is made of included): a user's name, or a temporary, an
    item of a tuple or list nothing reads (an effect's binding is kept anyway).  Primitives alone and none
    of them one that may raise (straight-line code, mostly): nothing to keep, no walk (``prim_rhss`` and
    ``ops_of``: each computed once per block, shared with ``check_weak_joins``)."""
    rhss = prim_rhss(fn.body)
    if rhss is not None:
        ops = ops_of(fn.body)
        maybe = {op for op in set(ops) if op in _MAY or op.startswith("math_")}
        if not maybe or not any(map(may_raise, compress(rhss, map(maybe.__contains__, ops)))):
            return fn
    read = read_set(fn.body)
    lams: dict[str, Lam] = {}
    body = _keep(fn.body, read, temp, lams)
    return fn if body is fn.body else Function(fn.name, fn.params, body)


def keep_primal_raising(prog: ReverseProgram) -> ReverseProgram:
    """``prog`` whose forward block keeps what may raise and only its value reads: a derivative of the reverse
    program (``hessian``, ``grad(grad(f))``) reads its cotangents, not its value, and would drop the value's
    ``math.log(x)`` where ``f`` raises (``x * 2.0 + math.log(x) * 0.0`` at x = -1 gave nan).  Only a binding
    the backward block does not need and whose own operation may raise is kept (what it reads stays)."""
    fwd = prog.forward
    needed = set(read_set(prog.backward))
    kept: set[int] = set()
    for b in reversed(fwd.binds):
        rhs = b.rhs
        if not any(t.name in needed for t in b.targets):
            if type(rhs) is Prim:
                if not may_raise(rhs):
                    continue
            elif not (isinstance(rhs, (If, Loop)) and _any_may_raise(nested_blocks(rhs))):
                continue
            kept.add(id(b))
        needed.update(v.name for v in vars_of(rhs))
        needed.update(n for blk in nested_blocks(rhs) for n in read_set(blk))
    if not kept:
        return prog
    namer = Namer.of(prog)
    out: list[Bind] = []
    for b in fwd.binds:
        out.append(b)
        if id(b) in kept:
            out.append(Bind((Var(namer.temp(), infer("keep", [t.type for t in b.targets], {})),),
                            Prim("keep", tuple(b.targets), ()), b.loc))
    return ReverseProgram(prog.name, prog.params, Block(tuple(out), fwd.result), prog.ct_in, prog.backward)


def has_unread_raising(block: Block) -> bool:
    """Whether a block (a function value's body) has a binding that nothing reads and that may raise: kept
    only where the block is inlined (a function value's body holds no effect)."""
    return _keep(block, read_set(block), lambda: "_", {}) is not block


def _keep(block: Block, read: frozenset[str], temp: Callable[[], str], lams: dict[str, Lam]) -> Block:
    made: dict[str, Bind] = {}
    memo: dict[int, bool] = {}
    out: list[Bind] = []
    changed = False
    for b in block.binds:
        nb = b if type(b.rhs) is Prim else with_branches(b, b.rhs, lambda inner: _keep(inner, read, temp, lams))
        changed |= nb is not b
        out.append(nb)
        targets = nb.targets
        unread = bool(targets)
        if type(nb.rhs) is Lam:  # (a function value: an unread call of it may raise where its body may)
            lams[targets[0].name] = nb.rhs
        for t in targets:
            made[t.name] = nb
            if t.name in read:  # (most bindings: a loop, no generator, as this runs at every one)
                unread = False
        if unread and not (type(nb.rhs) is Prim and TABLE[nb.rhs.op].effect) and _raises(nb, made, memo, lams):
            out.append(Bind((Var(temp(), infer("keep", [t.type for t in targets], {})),),
                            Prim("keep", tuple(targets), ()), nb.loc))
            changed = True
    return Block(tuple(out), block.result) if changed else block


def _raises(b: Bind, made: dict[str, Bind], memo: dict[int, bool], lams: dict[str, Lam]) -> bool:
    """Whether ``b``, or a binding of its block it is computed from, may raise (a branch or a loop: a
    primitive in it, or what it reads)."""
    found = memo.get(id(b))
    if found is not None:
        return found
    memo[id(b)] = False  # (a binding reads only earlier ones: no cycle; this bounds the walk)
    rhs = b.rhs
    if type(rhs) is Prim:
        here = may_raise(rhs)
        reads = [a.name for a in rhs.args if type(a) is Var]
    elif isinstance(rhs, (If, Loop)):
        here = _any_may_raise(nested_blocks(rhs))
        reads = [v.name for v in vars_of(rhs)] + [n for blk in nested_blocks(rhs) for n in read_set(blk)]
    elif type(rhs) is App:  # a call of a function value (made before, in this block or one around it)
        lam = lams.get(rhs.fn.name)
        here = lam is None or _any_may_raise((lam.body,))
        reads = [a.name for a in rhs.args if type(a) is Var]
    else:
        return False
    result = here or any(n in made and made[n] is not b and _raises(made[n], made, memo, lams) for n in reads)
    memo[id(b)] = result
    return result
