"""Codegen's use of memory: which operations make new arrays, which reads copy,
and the printings that compute into memory the generated function owns
(``t = a; t += b``, ``np.negative(t, out=t)``, a one-hot cotangent added in
place as ``acc[i] += ct``), for :class:`astad.codegen.python.Printer`.  The
rules for what may be written are :mod:`.inplace`'s (DESIGN.md's alias rules).
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from .. import pyexpr as px
from .. import rules
from ..blocks import result_items
from ..ir import Atom, Bind, Block, Num, Plus, Prim, Var
from . import inplace

Expr = cst.BaseExpression

#: operations whose result is a new array (not a view of an argument)
FRESH = {"add", "sub", "mul", "div", "neg", "pow", "exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "abs",
         "sign", "maximum", "minimum", "select", "where", "clip", "matmul", "dot", "outer", "sum", "mean",
         "prod_vjp", "diag_embed", "scatter", "full", "zeros", "ones", "zeros_like", "ones_like", "concatenate",
         "stack", "tril", "triu", "copy"}
FRESH |= {"cumsum", "cumprod", "diff", "sort", "linear_scan", "shift_along", "permute", "trace_embed"}  # rules/scans.py
FRESH |= inplace.FRESH
#: array updates printed as ``y_new = y.copy(); y_new[index] = v`` (``np.add.at(y_new, index, v)``), without
#: the copy where ``y`` is owned
UPDATES = {"setitem", "add_at"}
#: operations that can update their first (for + and *, either) operand in place
_IN_PLACE = {"add": "+", "mul": "*", "sub": "-", "div": "/"}
#: operations that can update their last operand in place by a ufunc's ``out=`` (the first, for + and *, above)
_IN_PLACE_CALL = {"neg": "negative", "sub": "subtract", "div": "divide"}
_AUG = {"+": cst.AddAssign, "*": cst.MultiplyAssign, "-": cst.SubtractAssign, "/": cst.DivideAssign}


class MemoryPrinting:
    """In-place and deferred printings, for :class:`astad.codegen.python.Printer`."""

    in_place: bool
    fresh: set[str]
    updatable: Any
    inlined: dict[str, Any]
    uses: Any
    copied: Any
    deferred: dict[str, Any]
    summed_with: Any

    def in_place_form(self, b: Bind, rhs: Prim) -> bool:
        """``b`` (a large array's) printed computing into the memory of an array nothing reads after it,
        if it can be."""
        op = rhs.op
        if op in _IN_PLACE and self.accumulate(b, list(rhs.args), _IN_PLACE[op]):
            return True
        if op in _IN_PLACE_CALL and self.in_place_call(b, list(rhs.args), _IN_PLACE_CALL[op]):
            return True
        return inplace.fuse(self, b) or inplace.defer_masked(self, b)

    def defer(self, b: Bind, args: list[Expr]) -> bool:
        """``s = scatter(ct, x, i)`` read only by ``t = s + acc``: printed there, as ``acc[i] += ct`` where
        ``acc`` is owned (no one-hot array made).  Its operands are named now (read now, not later)."""
        target = b.targets[0]
        if not self.in_place or target.name not in self.summed_with or self.uses[target.name] != 1:
            return False
        stable = []
        for a, e in zip(b.rhs.args, args):  # type: ignore[union-attr]
            if isinstance(a, Var) and not isinstance(e, cst.Name):
                self.emit(cst.Assign([cst.AssignTarget(cst.Name(a.name))], e), b.loc)
                e = cst.Name(a.name)
            stable.append(e)
        self.deferred[target.name] = (b, stable)
        return True

    def print_deferred(self, name: str) -> None:
        sb, args = self.deferred.pop(name)
        for small in rules.TABLE["scatter"].stmts(cst.Name(name), args, dict(sb.rhs.params)):  # type: ignore
            self.emit(small, sb.loc)

    def scatter_into(self, b: Bind, items: list[Atom]) -> bool:
        """``t = scatter(ct, x, i) + acc`` with ``acc`` owned: ``t = acc; t[i] += ct``."""
        if not self.deferred:  # (most sums: no scatter waiting)
            return False
        found = [k for k, a in enumerate(items) if isinstance(a, Var) and a.name in self.deferred]
        if len(items) != 2 or not found:
            for k in found:
                self.print_deferred(items[k].name)  # type: ignore[union-attr]
            return False
        k = found[0]
        acc, target = items[1 - k], b.targets[0]
        read = {a.name for a in self.deferred[items[k].name][0].rhs.args if isinstance(a, Var)}  # type: ignore
        if len(found) == 2 or not self._owned(acc) or acc.type != target.type or acc.name in read:  # type: ignore
            for j in found:
                self.print_deferred(items[j].name)  # type: ignore[union-attr]
            return False
        sb, args = self.deferred.pop(items[k].name)  # type: ignore[union-attr]
        self.flush_reading(acc)
        for small in rules.TABLE["scatter_add"].stmts(cst.Name(target.name), [self.atom(acc), *args],
                                                      dict(sb.rhs.params)):  # type: ignore[union-attr]
            self.emit(small, b.loc)
        return True

    def accumulate(self, b: Bind, items: list[Atom], op: str) -> bool:
        """``t = a + b`` with ``a`` an array this function allocated and reads only
        here becomes ``t = a; t += b``: the cotangent is accumulated in place,
        without allocating another array."""
        if not self.in_place:
            return False
        target = b.targets[0]
        candidates = range(len(items)) if op in "+*" else range(1)
        base = next((i for i in candidates if self._reusable(items[i], target)
                     and (len(items) == 2 or items.count(items[i]) == 1)), None)  # (`t += a` after `a` changed)
        if base is None:
            return False
        rest = [a for i, a in enumerate(items) if i != base]
        inplace.claim(self, items[base])  # type: ignore[arg-type]
        self.fresh.add(target.name)
        self.assign(b.targets, self.atom(items[base]), b.loc)
        for a in rest:
            self.emit(cst.AugAssign(target=cst.Name(target.name), operator=_AUG[op](), value=self.atom(a)), b.loc)
        return True

    def in_place_call(self, b: Bind, items: list[Atom], ufunc: str) -> bool:
        """``t = -a`` or ``t = c - a`` (``/``) with ``a`` an array this function
        allocated and reads only here: ``t = a`` then ``np.negative(t, out=t)``
        (``np.subtract(c, t, out=t)``), no other array allocated."""
        target = b.targets[0]
        if not self.in_place or not self._reusable(items[-1], target):
            return False
        inplace.claim(self, items[-1])  # type: ignore[arg-type]
        first = [self.atom(a) for a in items[:-1]]
        self.fresh.add(target.name)
        self.assign(b.targets, self.atom(items[-1]), b.loc)
        name = cst.Name(target.name)
        self.emit(cst.Expr(px.call(f"np.{ufunc}", [*first, name], out=cst.Name(target.name))), b.loc)
        return True

    def _owned(self, a: Atom) -> bool:
        """``a`` holds an array only it holds, read only here and, before, by operations that copy
        what they read (``y[i]``, ``y * 2``): it may be changed in place."""
        return (isinstance(a, Var) and (a.name in self.fresh or a.name in self.updatable) and a.name not in self.inlined
                and self.uses[a.name] == 1 + self.copied[a.name])

    def _loop_owns(self, p: Var, init: Atom, body: Block, k: int) -> bool:
        """Loop variable ``p`` holds an array only it holds in every iteration: its initial value is
        owned (read by nothing after the loop starts), and what the body passes on is a new array
        (an update's or a computation's result) that nothing else keeps (no tape, no other name)."""
        items = result_items(body)
        if items is None or not self._owned(init):
            return False
        r = items[k]
        if isinstance(r, Var) and r.name == p.name:
            return True
        made = next((bb.rhs for bb in body.binds if bb.targets == (r,)), None)
        new = isinstance(made, Plus) or (isinstance(made, Prim) and (made.op in FRESH or made.op in UPDATES))
        return new and isinstance(r, Var) and self.uses[r.name] == 1 + sum(copying_reads(bb.rhs).get(r.name, 0)
                                                                         for bb in body.binds)

    def _reusable(self, a: Atom, target: Var) -> bool:
        return inplace.writable(self, a, target)


def copying_reads(rhs: object) -> dict[str, int]:
    """The variables ``rhs`` reads into new memory (an element, a computation), not as a view or in
    place: how many times each."""
    if not isinstance(rhs, Prim):
        return {}
    if rhs.op in FRESH:
        args = rhs.args
    elif rhs.op == "getitem" and rhs.args and copying_index(rhs):
        args = rhs.args
    elif rhs.op in UPDATES:
        args = rhs.args[1:]
    else:
        return {}
    reads: dict[str, int] = {}
    for a in args:
        if type(a) is Var:
            reads[a.name] = reads.get(a.name, 0) + 1
    return reads


def copying_index(p: Prim) -> bool:
    """``x[index]`` gives a copy: a scalar (an int per axis) or numpy's advanced indexing."""
    index = p.param("index")
    ints = all(isinstance(i, int) or (isinstance(i, tuple) and i[:1] == ("arg",)) for i in index)
    t = p.args[0].type
    return (ints and isinstance(t, Num) and len(index) == t.ndim) or rules.is_advanced(index)
