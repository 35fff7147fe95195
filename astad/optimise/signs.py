"""Negations of tangents moved outward (``sink_negations``): a negation read once,
by a product, a quotient, a matrix product or a reduction, negates that
operation's result instead (``sum(-z_t * z, axis=1)`` -> ``-sum(z_t * z, axis=1)``:
the negation runs on the smaller array), and a sum absorbs it
(``a - -b`` -> ``a + b``, ``a + -b`` -> ``a - b``; two negations of one product
cancel).  Each rewrite is exact in floating point (negation is, and rounding is
symmetric), and only tangents are rewritten, in the block that binds the
negation; ``dce`` removes the negations left unread.  (Reverse mode's backward
block: ``cotangent_signs.absorb_negations``.)"""

from __future__ import annotations

from collections import Counter

from ..blocks import NESTING, same_or_new, with_branches
from ..ir import Atom, Bind, Block, Function, Prim, Var, use_counts
from ..names import Namer

#: operations linear in each of their arguments (``div``: in its numerator, and odd in its denominator)
_EACH = {"mul", "div", "matmul", "dot"}
#: operations linear in their first argument, the others static or discrete (indices, shapes)
_FIRST = {"sum", "mean", "getitem", "transpose", "reshape"}


def sink_negations(fn: Function, tainted: set[str]) -> Function:
    """``fn``: a forward program; ``tainted``: the names of its tangents (see factor.tangent_names)."""
    counts = use_counts(fn.body)
    namer = Namer.of(fn)
    return Function(fn.name, fn.params, _block(fn.body, tainted, counts, namer))


def _block(block: Block, tainted: set[str], counts: Counter, namer: Namer) -> Block:
    negs: dict[str, Atom] = {}  # a negation bound in this block and read once -> what it negates
    consumed: set[str] = set()  # negations whose reader now reads what they negate
    out: list[Bind] = []

    def plain(a: Atom) -> Atom | None:
        found = negs.get(a.name) if isinstance(a, Var) else None
        if found is not None:
            consumed.add(a.name)
        return found

    for b in block.binds:
        if type(b.rhs) in NESTING:
            b = with_branches(b, b.rhs, lambda blk: _block(blk, tainted, counts, namer))
        rhs, target = b.rhs, b.targets[0] if len(b.targets) == 1 else None
        if target is None or not isinstance(rhs, Prim) or target.name not in tainted:
            out.append(b)
            continue
        if rhs.op == "neg" and counts[target.name] == 1:
            negs[target.name] = rhs.args[0]
        new = _rewritten(target, rhs, plain, namer)
        if new is None:
            out.append(b)
            continue
        out.extend(Bind(targets, value, b.loc) for targets, value in new)
        if new[-1][1].op == "neg" and counts[target.name] == 1:
            negs[target.name] = new[-1][1].args[0]
    return same_or_new(block, [b for b in out if len(b.targets) != 1 or b.targets[0].name not in consumed])


def _rewritten(target: Var, rhs: Prim, plain, namer: Namer) -> list[tuple[tuple[Var, ...], Prim]] | None:
    """The bindings that replace ``target = rhs`` with its negated arguments' negations taken out."""
    if rhs.op in ("add", "sub") and len(rhs.args) == 2:
        a, b = rhs.args
        if plain(b) is not None:  # a + -x -> a - x, a - -x -> a + x
            return [((target,), Prim("sub" if rhs.op == "add" else "add", (a, plain(b)), rhs.params))]
        if rhs.op == "add" and plain(a) is not None:  # -x + b -> b - x
            return [((target,), Prim("sub", (b, plain(a)), rhs.params))]
        return None
    positions = range(len(rhs.args)) if rhs.op in _EACH else (0,) if rhs.op in _FIRST else ()
    negated = [i for i in positions if plain(rhs.args[i]) is not None]
    if not negated:
        return None
    args = tuple(plain(a) if i in negated else a for i, a in enumerate(rhs.args))
    if len(negated) % 2 == 0:
        return [((target,), Prim(rhs.op, args, rhs.params))]
    inner = Var(namer.temp(), target.type)
    return [((inner,), Prim(rhs.op, args, rhs.params)), ((target,), Prim("neg", (inner,)))]
