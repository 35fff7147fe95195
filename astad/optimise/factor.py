"""Tangent sums factored (``factor_tangents``): in the forward program, a sum of
products that share a factor is computed as that factor times the sum of the
rest, ``t1 * y_t + y_t * cos(y)`` -> ``y_t * (t1 + cos(y))``: one
multiplication fewer per product beyond the first.  A quotient is a product
with the inverse of its denominator, so quotients by one value are one
quotient, ``n_t / d - d_t / d * q`` -> ``(n_t - d_t * q) / d`` (the tangent of
``q = n / d``), and a factor is taken out of a quotient's numerator.

Only tangent arithmetic is rewritten (bindings that read, through any chain,
a tangent parameter: the primal never does, so its rounding is unchanged), and
only through products and sums bound in the same block and read once (what
the rewrite leaves unread, ``dce`` removes)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from .. import rules
from ..blocks import NESTING, result_items, same_or_new, with_branches
from ..ir import Atom, Bind, Block, Copy, Function, If, Loop, Plus, Prim, Var, all_binds, kinds, use_counts
from ..names import Namer
from .cse import _atom_key
from .signs import sink_negations

_SUMS = {"add", "sub", "neg"}
Term = tuple[bool, Atom]  # (negated, atom)


@dataclass(frozen=True)
class Inverse:
    """The factor ``1 / atom`` of a quotient ``n / atom``."""

    atom: Atom


class _Unfactored(Exception):
    """A group whose factoring would need a reciprocal: left as it is."""


def _key(f: "Atom | Inverse") -> object:
    return ("inverse", _atom_key(f.atom)) if isinstance(f, Inverse) else _atom_key(f)


def tangent_names(fn: Function, tangents: Sequence[Var]) -> set[str]:
    """The names whose values depend on a tangent parameter (to a fixed point over loops
    and branches; a block with neither is done in one walk: each name is read after it is bound).
    Remembered on the block (blocks are immutable): the tangent passes run one after another
    ask it of a block that the pass before them left as it was."""
    known = fn.body.__dict__.setdefault("_tangent_names", {})
    key = tuple(v.name for v in tangents)
    if key not in known:
        known[key] = frozenset(_tangent_names(fn.body, key))
    return set(known[key])


def _tangent_names(body: Block, tangents: tuple[str, ...]) -> set[str]:
    tainted = set(tangents)

    def reads(atoms) -> bool:
        return any(isinstance(a, Var) and a.name in tainted for a in atoms)

    # a branch's or loop's targets are tainted from bindings visited after them (inside it), and
    # a loop's carried values from its later iterations: only then is a second walk needed
    again = not {"If", "Loop"}.isdisjoint(kinds(body))
    while True:
        before = len(tainted)
        for b in all_binds(body):
            rhs = b.rhs
            cls = type(rhs)
            if cls is Prim or cls is Plus:  # the most common
                for a in (rhs.args if cls is Prim else rhs.items):
                    if type(a) is Var and a.name in tainted:
                        tainted.update([t.name for t in b.targets])
                        break
                continue
            if cls is Copy:
                hit = list(b.targets) if reads([rhs.atom]) else []
            elif cls is Loop:
                items = result_items(rhs.body) or ()
                hit = []
                for i, c in enumerate(rhs.carried):
                    if reads([rhs.init[i]]) or (i < len(items) and reads([items[i]])):
                        tainted.add(c.name)
                        if i < len(b.targets):
                            hit.append(b.targets[i])
            elif cls is If:
                then, orelse = result_items(rhs.then) or (), result_items(rhs.orelse) or ()
                hit = [t for i, t in enumerate(b.targets)
                       if (i < len(then) and reads([then[i]])) or (i < len(orelse) and reads([orelse[i]]))]
            else:
                hit = []
            tainted.update(t.name for t in hit)
        if not again or len(tainted) == before:
            return tainted


def factor_tangents(fn: Function, n_primal: int) -> Function:
    """``fn``: a forward program whose parameters after the first ``n_primal`` are tangents
    (factored, then its negations moved outward: :mod:`astad.optimise.signs`)."""
    tainted = tangent_names(fn, fn.params[n_primal:])
    counts = use_counts(fn.body)
    namer = Namer.of(fn)  # never one of the program's own names (walked when the first is asked for)
    factored = Function(fn.name, fn.params, _block(fn.body, tainted, counts, namer))
    return sink_negations(factored, tangent_names(factored, fn.params[n_primal:]))


def _block(block: Block, tainted: set[str], counts: Counter, namer: Namer) -> Block:
    inner_blocks = lambda blk: _block(blk, tainted, counts, namer)  # noqa: E731
    binds = [with_branches(b, b.rhs, inner_blocks) if type(b.rhs) in NESTING else b for b in block.binds]
    defs = {b.targets[0].name: b.rhs for b in binds
            if len(b.targets) == 1 and isinstance(b.rhs, Prim) and not b.rhs.params and b.targets[0].name in tainted}

    negs = {b.targets[0].name: b.rhs.args[0] for b in binds if len(b.targets) == 1 and isinstance(b.rhs, Prim)
            and b.rhs.op == "neg" and counts[b.targets[0].name] == 1}  # primal ones too: `t * -sin(x)`

    def inner(a: Atom, ops: set[str]) -> Prim | None:
        """The tangent primitive (one of ``ops``) bound here to ``a`` and read only once."""
        rhs = defs.get(a.name) if isinstance(a, Var) and counts[a.name] == 1 else None
        return rhs if rhs is not None and rhs.op in ops else None

    def negated(a: Atom) -> Atom | None:
        """``x`` where ``a = -x`` is bound here and read only here (a product's factor)."""
        return negs.get(a.name) if isinstance(a, Var) else None

    consumed = {a.name for rhs in defs.values() if rhs.op in _SUMS for a in rhs.args if inner(a, _SUMS)}
    out: list[Bind] = []
    for b in binds:
        rhs = b.rhs
        t = b.targets[0] if len(b.targets) == 1 else None
        if t is not None and t.name in defs and rhs.op in ("add", "sub") and t.name not in consumed:
            try:
                new = _factored(t, rhs, inner, negated, namer, b.loc)
            except _Unfactored:
                new = None
            if new is not None:
                out.extend(new)
                continue
        if t is not None and t.name in defs and rhs.op == "neg" and t.name not in consumed:
            new = _unnegated(t, rhs, inner, namer, b.loc)
            if new is not None:
                out.extend(new)
                continue
        out.append(b)
    return same_or_new(block, out)


def _unnegated(target: Var, rhs: Prim, inner, namer: Namer, loc) -> list[Bind] | None:
    """``-(-a * b / c)`` -> ``a * b / c``: the negations of a negated product's factors
    taken out and cancelled in pairs (a tangent's ``-(-g_t * e / (1 + e) * s)``)."""
    fs = _factors(rhs.args[0], inner)
    negated = [f for f in fs or [] if inner(f.atom if isinstance(f, Inverse) else f, {"neg"})]
    if not fs or not negated:
        return None

    def plain(f: Atom | Inverse) -> Atom | Inverse:
        if f not in negated:
            return f
        if isinstance(f, Inverse):
            return Inverse(inner(f.atom, {"neg"}).args[0])
        return inner(f, {"neg"}).args[0]

    binds: list[Bind] = []
    acc: Atom | None = None
    for f in sorted(map(plain, fs), key=lambda f: isinstance(f, Inverse)):  # the numerator first
        if acc is None:
            if isinstance(f, Inverse):
                return None
            acc = f
            continue
        op, arg = ("div", f.atom) if isinstance(f, Inverse) else ("mul", f)
        var = Var(namer.temp(), rules.infer(op, [acc.type, arg.type], {}))
        binds.append(Bind((var,), Prim(op, (acc, arg)), loc))
        acc = var
    if len(negated) % 2 == 0:  # an odd number of negations left: the product negated
        var = Var(namer.temp(), acc.type)
        binds.append(Bind((var,), Prim("neg", (acc,)), loc))
        acc = var
    if not binds or acc.type != target.type:
        return None
    binds[-1] = Bind((target,), binds[-1].rhs, loc)
    return binds


def _terms(rhs: Prim, neg: bool, inner) -> list[Term]:
    """The signed terms of a sum of sums, left to right (a loop: sums run thousands deep)."""
    terms: list[Term] = []
    todo: list[tuple[Prim | Atom, bool]] = [(rhs, neg)]
    while todo:
        item, n = todo.pop()
        if not isinstance(item, Prim):
            terms.append((n, item))
            continue
        signs = {"add": (False, False), "sub": (False, True), "neg": (True,)}[item.op]
        for a, sgn in reversed(list(zip(item.args, signs))):
            todo.append((inner(a, _SUMS) or a, n != sgn))
    return terms


def _factors(a: Atom, inner) -> list[Atom | Inverse] | None:
    """The factors of a product of products and quotients, left to right (a loop, as ``_terms``)."""
    rhs = inner(a, {"mul", "div"})
    if rhs is None:
        return None
    out: list[Atom | Inverse] = []
    todo: list[Prim | Atom | Inverse] = [rhs]
    while todo:
        item = todo.pop()
        if not isinstance(item, Prim):
            out.append(item)
        elif item.op == "div":
            num, den = item.args
            todo += [Inverse(den), inner(num, {"mul", "div"}) or num]
        else:
            todo += [inner(x, {"mul", "div"}) or x for x in reversed(item.args)]
    return out


def _signs_out(terms: list[Term], products: list, negated) -> set[int]:
    """The negations of the products' factors taken out into the terms' signs, in place
    (``a + b * -c`` -> ``a - b * c``: one negation fewer); the terms changed."""
    changed = set()
    for i, fs in enumerate(products):
        for j, f in enumerate(fs or ()):
            plain = negated(f.atom if isinstance(f, Inverse) else f)
            if plain is not None:
                fs[j] = Inverse(plain) if isinstance(f, Inverse) else plain
                terms[i] = (not terms[i][0], terms[i][1])
                changed.add(i)
    return changed


def _factored(target: Var, rhs: Prim, inner, negated, namer: Namer, loc) -> list[Bind] | None:
    terms = _terms(rhs, False, inner)
    products = [_factors(a, inner) for _, a in terms]
    flipped = _signs_out(terms, products, negated)
    groups: dict[int, tuple[Atom, list[int]]] = {}  # first member -> (common factor, members)
    free = [i for i, p in enumerate(products) if p is not None]
    while True:
        seen: Counter = Counter()
        for i in free:
            seen.update(dict.fromkeys(map(_key, products[i])).keys())  # once per product, in its order (a set's order varies with the hash seed)
        key, n = seen.most_common(1)[0] if seen else (None, 0)
        if n < 2:
            break
        members = [i for i in free if any(_key(f) == key for f in products[i])]
        common = next(f for f in products[members[0]] if _key(f) == key)
        groups[members[0]] = (common, members)
        free = [i for i in free if i not in members]
    if not groups and not flipped:
        return None
    binds: list[Bind] = []

    def prim(op: str, *args: Atom) -> Var:
        var = Var(namer.temp(), rules.infer(op, [a.type for a in args], {}))
        binds.append(Bind((var,), Prim(op, args), loc))
        return var

    def product(fs: list[Atom | Inverse]) -> Atom:
        numerator = [f for f in fs if not isinstance(f, Inverse)]
        if not numerator:  # 1 / d: no factoring (it would need a reciprocal)
            raise _Unfactored
        acc = numerator[0]
        for f in numerator[1:]:
            acc = prim("mul", acc, f)
        for f in fs:
            if isinstance(f, Inverse):
                acc = prim("div", acc, f.atom)
        return acc

    def signed_sum(ts: list[Term]) -> Term:
        pos = [a for s, a in ts if not s]
        if not pos:
            total = ts[0][1]
            for _, a in ts[1:]:
                total = prim("add", total, a)
            return True, total
        total = pos[0]
        first = True
        for s, a in ts:
            if not s and first and a is pos[0]:
                first = False
                continue
            total = prim("sub" if s else "add", total, a)
        return False, total

    in_groups = {i for _, ms in groups.values() for i in ms}
    new_terms: list[Term] = []
    for i, (s, a) in enumerate(terms):
        if i in groups:
            common, members = groups[i]
            rests = []
            for m in members:
                fs = list(products[m])
                fs.pop(next(j for j, f in enumerate(fs) if _key(f) == _key(common)))
                rests.append((terms[m][0], product(fs)))
            neg, total = signed_sum(rests)
            new_terms.append((neg, prim("div", total, common.atom) if isinstance(common, Inverse)
                              else prim("mul", common, total)))
        elif i not in in_groups:
            new_terms.append((s, product(products[i]) if i in flipped else a))
    neg, total = signed_sum(new_terms)
    if neg:
        total = prim("neg", total)
    if not isinstance(total, Var) or not binds or binds[-1].targets[0] is not total or total.type != target.type:
        return None
    binds[-1] = Bind((target,), binds[-1].rhs, loc)
    return binds
