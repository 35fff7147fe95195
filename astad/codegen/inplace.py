"""In-place printing of elementwise operations on large arrays: fewer fresh
allocations and passes over memory.

``t = np.exp(a)`` where ``a`` is an array the generated function allocated
itself and nothing reads after this becomes ``t = a; np.exp(t, out=t)``
(``np.maximum(t, b, out=t)``, ``t |= b`` for the binary ones): the result is
written into ``a``'s memory instead of a new array.  Python's printer
(:mod:`astad.codegen.python`) asks :func:`writable` before any in-place form
(these and its own ``t = a; t += b``).

What may be written, the alias rules of DESIGN.md made concrete for one
generated function: the array is *fresh* (made by an operation whose result
is always new memory, never an argument, a residual unpacked from the tape or
a view of one); every read of it so far (this one included) was by an
operation that copies what it reads (no view of it is alive); no statement
still to be printed reads it (an inlined expression or a deferred scatter);
nothing later reads it (no other use, not returned, not kept as a residual or
on a tape: those count as uses); and its type is the result's type exactly
(same shape and dtype, so ``out=`` changes neither the broadcast shape nor the
dtype numpy would pick).  Arrays under :data:`MIN_SIZE` elements are left
alone: a new small array costs little and ``t = a * b`` reads better.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import libcst as cst

from .. import pyexpr as px
from .. import rules
from ..ir import Atom, Bind, Num, Prim, Var

Printer = Any  # astad.codegen.python.Printer (which imports this module)

#: arrays at least this large are updated in place (below, a new array costs
#: little and ``t = a + b`` reads better than ``t = a; t += b``)
MIN_SIZE = 4096

#: operations whose result is a new array (beside python.py's own list): comparisons and logical ones
FRESH = frozenset({"eq", "ne", "lt", "le", "gt", "ge", "and_", "or_", "isnan", "isinf", "isfinite", "positive"})

#: one-argument operations printed ``np.<ufunc>(a)``, by their numpy ufunc
UNARY = {op: op for op in ("exp", "log", "sin", "cos", "tan", "tanh", "sqrt", "sinh", "cosh", "arcsin", "arccos",
                           "arctan", "arcsinh", "arccosh", "arctanh", "expm1", "log1p", "log2", "log10", "exp2",
                           "cbrt", "reciprocal", "deg2rad", "rad2deg", "fabs", "sign")}
UNARY["abs"] = "absolute"

#: two-argument operations printed ``np.<ufunc>(a, b)``; either argument may be the buffer
BINARY = {"maximum": "maximum", "minimum": "minimum", "arctan2": "arctan2", "hypot": "hypot",
          "copysign": "copysign", "logaddexp": "logaddexp"}

#: two-argument operators printed ``a | b``: ``t |= b``
AUGMENTED = {"or_": cst.BitOrAssign, "and_": cst.BitAndAssign}
_OPERATOR = {"or_": "|", "and_": "&"}


def big(t: object) -> bool:
    """An array of known shape with at least :data:`MIN_SIZE` elements."""
    if not isinstance(t, Num):
        return False
    shape = t.shape
    return bool(shape) and None not in shape and math.prod(shape) >= MIN_SIZE  # (None: a size not known)


def writable(p: Printer, a: Atom, target: Var) -> bool:
    """Whether the binding of ``target`` being printed may write its result into ``a``'s memory
    (see the module's docstring); ``p.copied`` already counts this binding's reads."""
    if not isinstance(a, Var) or a.name not in p.fresh or p.uses[a.name] != p.copied[a.name]:
        return False  # (the latter: read later, or read before by a view that may still be alive)
    if not big(a.type) or a.type != target.type:
        return False
    return not any(a.name in {x.name for x in sb.rhs.args if isinstance(x, Var)}  # type: ignore[union-attr]
                   for sb, _ in p.deferred.values())


def claim(p: Printer, a: Var) -> None:
    """Before ``a`` is written: print the pending inlined expressions that read it."""
    if a.name not in p.inlined:
        p.flush_reading(a)


@functools.cache
def _prints_as(op: str, call: str, n: int) -> bool:
    """Whether the table prints ``op`` of ``n`` arrays as ``call(...)`` (checked, not assumed)."""
    entry = rules.TABLE.get(op)
    if entry is None or entry.emit is None or entry.stmts is not None:
        return False
    names = [cst.Name(f"a{i}") for i in range(n)]
    try:
        code = cst.Module([]).code_for_node(entry.emit(names, {}))
    except Exception:  # an entry that needs parameters: not one of these
        return False
    return code == f"{call}({', '.join(f'a{i}' for i in range(n))})"


def fuse(p: Printer, b: Bind) -> bool:
    """Print ``b`` computing into the memory of one of its arguments, if one is writable."""
    rhs = b.rhs
    if not isinstance(rhs, Prim) or len(b.targets) != 1:
        return False
    (target,) = b.targets
    args = list(rhs.args)
    if rhs.op in UNARY and len(args) == 1 and _prints_as(rhs.op, f"np.{rhs.op}", 1):
        positions = [0]
        call = f"np.{UNARY[rhs.op]}"
    elif rhs.op in BINARY and len(args) == 2 and _prints_as(rhs.op, f"np.{rhs.op}", 2):
        positions = [0, 1]
        call = f"np.{BINARY[rhs.op]}"
    elif rhs.op in AUGMENTED and len(args) == 2 and _operator(rhs.op):
        positions = [0, 1]
        call = ""
    else:
        return False
    k = next((i for i in positions if writable(p, args[i], target)), None)
    if k is None:
        return False
    base = args[k]
    assert isinstance(base, Var)
    claim(p, base)
    p.fresh.add(target.name)
    buffer = p.atom(base)
    if call and isinstance(buffer, cst.Name):  # `h = np.tanh(t, out=t)`: the ufunc returns its `out`
        operands = [buffer if i == k else p.atom(a) for i, a in enumerate(args)]
        p.assign(b.targets, px.call(call, operands, out=cst.Name(buffer.value)), b.loc)
        return True
    p.assign(b.targets, buffer, b.loc)  # `t = x - m` then `np.exp(t, out=t)`
    name = cst.Name(target.name)
    if not call:  # `t |= b` (| and & are symmetric)
        p.emit(cst.AugAssign(target=name, operator=AUGMENTED[rhs.op](), value=p.atom(args[1 - k])), b.loc)
        return True
    operands = [name if i == k else p.atom(a) for i, a in enumerate(args)]
    p.emit(cst.Expr(px.call(call, operands, out=cst.Name(target.name))), b.loc)
    return True


@functools.cache
def _operator(op: str) -> bool:
    entry = rules.TABLE.get(op)
    if entry is None or entry.emit is None:
        return False
    code = cst.Module([]).code_for_node(entry.emit([cst.Name("a0"), cst.Name("a1")], {}))
    return code == f"a0 {_OPERATOR[op]} a1"


# ---------------------------------------------------------------- acc + mask * share

def defer_masked(p: Printer, b: Bind) -> bool:
    """``c = mask * share`` (``np.max``'s cotangent: a boolean array of the result's shape times a
    smaller share) read only by a sum of two: kept as a pending inlined expression, its operands
    read now, so that the sum may add it in place (:func:`masked_sum`); anything else that reads
    it first prints the product as written."""
    rhs = b.rhs
    if not isinstance(rhs, Prim) or len(b.targets) != 1:
        return False
    (target,) = b.targets
    if rhs.op != "mul" or len(rhs.args) != 2 or p.uses[target.name] != 1:
        return False
    if target.name not in p.summed_with or not big(target.type):
        return False
    k = next((i for i, a in enumerate(rhs.args) if _mask_of(a, target)), None)
    if k is None:
        return False
    args = [p.atom(a) for a in rhs.args]
    p.inlined[target.name], p.depth[target.name] = rules.TABLE["mul"].emit(args, {}), p.reach + 1
    p.masked[target.name] = (args[k], args[1 - k])
    return True


def _mask_of(a: Atom, target: Var) -> bool:
    t = a.type
    return isinstance(t, Num) and t.dtype == "bool" and t.shape == target.type.shape  # type: ignore[union-attr]


def masked_sum(p: Printer, b: Bind) -> bool:
    """``t = c + acc`` with ``c`` a pending ``mask * share`` and ``acc`` writable:
    ``t = acc; add_where(t, mask, share)`` (no array for the product)."""
    items = list(b.rhs.items)  # type: ignore[union-attr]
    (target,) = b.targets
    if len(items) != 2:
        return False
    k = next((i for i, a in enumerate(items) if isinstance(a, Var) and a.name in p.masked
              and a.name in p.inlined), None)
    if k is None or not writable(p, items[1 - k], target):
        return False
    acc = items[1 - k]
    assert isinstance(acc, Var)
    name = items[k].name  # type: ignore[union-attr]
    claim(p, acc)
    if name not in p.inlined:  # printed by the claim (it read `acc`): an ordinary sum
        return False
    mask, share = p.masked.pop(name)
    del p.inlined[name], p.depth[name]
    p.fresh.add(target.name)
    p.assign(b.targets, p.atom(acc), b.loc)
    p.emit(cst.Expr(px.call("add_where", [cst.Name(target.name), mask, share])), b.loc)
    return True
