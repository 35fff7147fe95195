"""Products in the backward pass that a value already computed gives (``shared_products``).

The transpose of a product multiplies the cotangent by the other factor, and
two patterns of user code make the backward pass compute, one numpy call
each, a product it has in hand already:

- a negated factor: ``-v * v`` (a Gaussian's ``np.exp(-v * v)``) is
  ``t = -v; u = t * v``, whose transpose computes both ``u_ct * v`` (for ``t``,
  then negated into ``v``'s cotangent) and ``u_ct * t`` (for ``v``).  A product
  ``y = x * t`` with ``t = -u`` (a float) where the same block has computed
  ``z = x * u`` before (either order of the factors; or ``y = x * u`` after
  ``z = x * t``) is ``y = -z``, exactly (``x * -u`` is ``-(x * u)`` in
  floating point), and ``cotangent_signs.absorb_negations`` then folds that
  negation into the sum that reads it: one product fewer.
- a factor whose product the forward pass made: ``y = a * np.exp(u)`` (``e =
  exp(u); y = a * e``); the cotangent of ``u`` is ``(y_ct * a) * e``, the
  derivative of ``exp`` being its value.  A product ``y = p * b`` where ``p =
  ct * a`` is read nowhere else and the forward pass computes ``c = a * b``
  (a float array or number; either order of the factors) is ``y = ct * c``:
  one product fewer, ``c`` kept as a residual (where ``a`` may no longer be).
  The same derivative, rounded differently (a product of three numbers
  associated the other way), where one of ``a`` and ``b`` is at most 1 in
  magnitude (``tanh``, ``sin``, ``cos``, ``exp`` of a negated square, as the
  Gaussian's): ``c`` overflows only where that factor's partner did.  Of
  unbounded factors ``c`` may overflow where ``(ct * a) * b`` does not
  (``a * np.exp(u)`` at 1e10 * 1e304, clipped after: ``ct`` is 0 there, and
  ``0 * inf`` would be nan where the gradient is 0).

Products of two operands (``mul``) only, at the top level of the forward block
and of each block of the backward pass.  Runs before ``rematerialise`` and
``absorb_negations``.
"""

from __future__ import annotations

from operator import attrgetter, itemgetter
from typing import Collection

from ..blocks import NESTING, same_or_new, with_branches
from ..ir import Bind, Block, Num, Prim, ReverseProgram, Var
from ..ir.walk import NESTING_KINDS, OTHER_KINDS, ops_of, positions, use_counts_dict
from .dce import dce, dce_rewritten

Pair = tuple[str, str]

_NAME, _ARGS, _FIRST = attrgetter("name"), attrgetter("rhs.args"), itemgetter(0)


def _pair(a: Var, b: Var) -> Pair:
    return (a.name, b.name) if a.name <= b.name else (b.name, a.name)


def _float(t: object) -> bool:
    return isinstance(t, Num) and t.dtype.startswith("float")


#: functions of a float whose value is at most 1 in magnitude
_BOUNDED = frozenset({"tanh", "sin", "cos"})


#: the primitives the forward block's walk records: negations, bounded functions, products
_RECORDED = _BOUNDED | {"neg", "exp", "mul"}


#: what the backward walk looks at: products, negations and the right-hand sides that may have blocks inside
_PRODUCTS = frozenset({"mul", "neg"})
_LOOKED_AT = OTHER_KINDS | _PRODUCTS


def _negation(b: Bind) -> bool:
    """``t = -u`` of a float variable ``u`` (an integer's negation may wrap around)."""
    rhs = b.rhs
    return (type(rhs) is Prim and rhs.op == "neg" and len(b.targets) == 1 and isinstance(rhs.args[0], Var)
            and _float(rhs.args[0].type))


def shared_products(prog: ReverseProgram, cleaning: bool = False) -> ReverseProgram:
    """``prog`` with those products of its backward pass not computed (``dce`` drops the operands left unread;
    with ``cleaning``, ``dce`` of it: see ``shared_products_cleaned``)."""
    negations: dict[str, Var] = {}  # t -> u, for each t = -u of the forward block
    made: dict[Pair, Var] = {}  # {a, b} -> c, for each float c = a * b of the forward block, a or b bounded
    bounded: set[str] = set()  # values at most 1 in magnitude (or nan)
    nonpositive: set[str] = set()  # -v * v, v * -v, -(v * v)
    squares: set[str] = set()  # v * v
    made_factors: set[str] = set()  # the factors of those products c (only a product of those has a ``_made``)
    binds = prog.forward.binds
    # (only the bindings of the primitives recorded, found without a Python loop over every binding)
    for at in positions(ops_of(prog.forward), _RECORDED):
        b = binds[at]
        rhs = b.rhs
        if len(b.targets) != 1:
            continue
        op = rhs.op
        if op == "mul":
            args = rhs.args  # (a product of two variables, of a float)
            if len(args) != 2 or rhs.params:
                continue
            f, g = args
            if type(f) is not Var or type(g) is not Var:
                continue
            target = b.targets[0]
            t = target.type
            if not isinstance(t, Num) or not t.dtype.startswith("float"):
                continue
            fn, gn = f.name, g.name
            p, q = negations.get(fn, f), negations.get(gn, g)
            if p.name == q.name:
                (nonpositive if (p is not f) is not (q is not g) else squares).add(target.name)
            if fn in bounded or gn in bounded:
                made.setdefault((fn, gn) if fn <= gn else (gn, fn), target)
                made_factors.update((fn, gn))
        elif op == "neg":
            if _negation(b):
                negations[b.targets[0].name] = rhs.args[0]  # type: ignore[union-attr]
                if rhs.args[0].name in squares:  # type: ignore[union-attr]
                    nonpositive.add(b.targets[0].name)
        elif len(rhs.args) == 1 and type(rhs.args[0]) is Var and (
                op in _BOUNDED or (op == "exp" and rhs.args[0].name in nonpositive)):
            bounded.add(b.targets[0].name)
    if not negations and not made:
        return prog
    counts = use_counts_dict(prog.backward)  # (a plain dict: dce_rewritten changes many counts)
    flat = cleaning and NESTING_KINDS.isdisjoint(ops_of(prog.backward))  # (its own bindings': ``_block`` asks too)
    changed: list[int] | None = [] if flat else None
    where: dict[str, int] = {}
    # what each negation of either block negates (the backward block's found without a Python loop over every
    # binding; of every negation, float or not)
    bases = set(map(_NAME, negations.values()))
    bases.update(map(_NAME, map(_FIRST, map(_ARGS, map(prog.backward.binds.__getitem__,
                                                       positions(ops_of(prog.backward), ("neg",)))))))
    backward = _block(prog.backward, negations, made, counts, changed, where, made_factors, bases,
                      flat or NESTING_KINDS.isdisjoint(ops_of(prog.backward)))
    if backward is prog.backward:
        return prog
    shared = ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, backward)
    if not cleaning:
        return shared
    cleaned = dce_rewritten(shared, prog.backward, changed, counts, where) if changed is not None else None
    return cleaned if cleaned is not None else dce(shared)


def shared_products_cleaned(prog: ReverseProgram) -> ReverseProgram:
    """``dce(shared_products(prog))`` where that changes ``prog``, else ``prog`` (``prog`` being ``dce``'s
    output): what the rewrites left unread found without a walk of the block, where it has no nested blocks
    (``dce.dce_rewritten``)."""
    return shared_products(prog, cleaning=True)


def _block(block: Block, negations: dict[str, Var], made: dict[Pair, Var], counts: dict[str, int],
           changed: list[int] | None = None, where: dict[str, int] | None = None,
           made_factors: Collection[str] = (), bases: set[str] | None = None, flat: bool = False) -> Block:
    """``changed``, where given: receives where a binding is made again (of a block without nested
    blocks), and ``where`` where each product the block binds is.  ``made_factors``: the names of the
    factors of ``made``'s products; ``bases``, where given: every name the block's negations negate (more
    names only look up more products, and find what they would have); ``flat``: whether the block has no
    nested blocks (known to the caller)."""
    negations = dict(negations)
    products: dict[Pair, tuple[Var, bool]] = {}  # {x, u} -> (z, negated), for each z = ±x * ±u of this block so far
    defs: dict[str, tuple[Var, Var]] = {}  # p -> its two factors, for each p = x * y of this block
    # the names whose products are looked up among those of the other sign (each, where ``bases`` is not given):
    # a product of another sign reads the negation of a factor, so the pair read holds a name a negation negates
    # or, in turn, a product of such a name (a name added at its binding, before what reads it); a product reads
    # a name of these or a negation of one
    watch: set[str] | _All = _All() if bases is None else bases | negations.keys()
    out = list(block.binds)  # (each binding kept or replaced by one)
    ops = ops_of(block)
    # (only products, negations and bindings with blocks inside, found without a Python loop over every binding:
    # the others, the most common, are neither rule's)
    for at in positions(ops, _PRODUCTS if flat else _LOOKED_AT):
        b = out[at]
        rhs = b.rhs
        if type(rhs) is not Prim:  # (neither a product nor a negation: only the blocks inside, if any)
            if type(rhs) in NESTING:
                out[at] = with_branches(b, rhs, lambda blk: _block(blk, negations, made, counts,
                                                                   made_factors=made_factors))
            continue
        if rhs.op != "mul":  # (a negation: ``_negation``, written out)
            u = rhs.args[0]
            if len(b.targets) == 1 and type(u) is Var and _float(u.type):
                negations[b.targets[0].name] = u
                watch.add(b.targets[0].name)
            continue
        args = rhs.args
        if len(b.targets) != 1 or len(args) != 2 or rhs.params:  # (a product of two variables)
            continue
        f, g = args
        if type(f) is not Var or type(g) is not Var:
            continue
        fn, gn = f.name, g.name
        if fn in defs or gn in defs:  # (``_made`` finds nothing where neither factor is a product of this block's)
            new = _made((f, g), defs, made, counts)
            if new is not None:
                b = out[at] = Bind(b.targets, new, b.loc)
                f, g = new.args  # type: ignore[assignment]
                fn, gn = f.name, g.name
                if changed is not None:
                    changed.append(at)
        target = b.targets[0]
        if fn in watch or gn in watch:
            p, q = negations.get(fn, f), negations.get(gn, g)  # (each negation ``t = -u`` read as ``u``)
            key = (p.name, q.name) if p.name <= q.name else (q.name, p.name)
            negated = (p is not f) is not (q is not g)
            z, sign = products.setdefault(key, (target, negated))
            if sign != negated:  # x * -u after x * u, or x * u after x * -u
                b = out[at] = Bind(b.targets, Prim("neg", (z,)), b.loc)
                if changed is not None and (not changed or changed[-1] != at):
                    changed.append(at)
                if _negation(b):  # (a product made a negation: read as one by the products after it)
                    negations[target.name] = z
                    watch.add(target.name)
                continue
            watch.add(target.name)
        if fn in made_factors or gn in made_factors:  # (``_made`` looks only at products of these)
            defs[target.name] = (f, g)
        if where is not None:
            where[target.name] = at
    return same_or_new(block, out)


class _All(set):
    """Every name (a nested block's products are each looked up)."""

    def __contains__(self, name: object) -> bool:
        return True


def _made(factors: tuple[Var, Var], defs: dict[str, tuple[Var, Var]], made: dict[Pair, Var],
          counts: dict[str, int]) -> Prim | None:
    """``ct * c`` for ``p * b`` with ``p = ct * a`` read only here and ``c = a * b`` made by the forward pass."""
    for k in (0, 1):
        p, b = factors[k], factors[1 - k]
        if p.name not in defs or counts.get(p.name, 0) != 1:
            continue
        inner = defs[p.name]
        for j in (0, 1):
            ct, a = inner[j], inner[1 - j]
            c = made.get(_pair(a, b))
            if c is not None:
                return Prim("mul", (ct, c))
    return None
