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

from typing import Collection

from ..blocks import NESTING, same_or_new, with_branches
from ..ir import Bind, Block, Num, Prim, ReverseProgram, Var
from ..ir.walk import NESTING_KINDS, OTHER_KINDS, ops_of, positions, use_counts_dict
from .dce import dce, dce_rewritten

Pair = tuple[str, str]


def _product(rhs: object) -> tuple[Var, Var] | None:
    """The two variables a ``mul`` of two variables reads (None for anything else)."""
    if type(rhs) is Prim and rhs.op == "mul" and len(rhs.args) == 2 and not rhs.params:
        a, b = rhs.args
        if isinstance(a, Var) and isinstance(b, Var):
            return a, b
    return None


def _pair(a: Var, b: Var) -> Pair:
    return (a.name, b.name) if a.name <= b.name else (b.name, a.name)


def _float(t: object) -> bool:
    return isinstance(t, Num) and t.dtype.startswith("float")


#: functions of a float whose value is at most 1 in magnitude
_BOUNDED = frozenset({"tanh", "sin", "cos"})


#: the primitives the forward block's walk records: negations, bounded functions, products
_RECORDED = _BOUNDED | {"neg", "exp", "mul"}


#: what the backward walk looks at: products, negations and the right-hand sides that may have blocks inside
_LOOKED_AT = OTHER_KINDS | {"mul", "neg"}


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
            factors = _product(rhs)
            if factors is not None and _float(b.targets[0].type):
                (x, u), negated = _signed(factors, negations)
                if x == u:
                    (nonpositive if negated else squares).add(b.targets[0].name)
                if factors[0].name in bounded or factors[1].name in bounded:
                    made.setdefault(_pair(*factors), b.targets[0])
                    made_factors.update((factors[0].name, factors[1].name))
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
    # the names a product of the backward block may read the negation of: what each negation of either block
    # negates (the backward block's own found without a Python loop over every binding)
    backward_binds, ops = prog.backward.binds, ops_of(prog.backward)
    bases = set([u.name for u in negations.values()])
    bases.update([backward_binds[at].rhs.args[0].name for at in positions(ops, ("neg",))  # type: ignore[union-attr]
                  if _negation(backward_binds[at])])
    backward = _block(prog.backward, negations, made, counts, changed, where, made_factors, bases)
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
           made_factors: Collection[str] = (), bases: set[str] | None = None) -> Block:
    """``changed``, where given: receives where a binding is made again (of a block without nested
    blocks), and ``where`` where each product the block binds is.  ``made_factors``: the names of the
    factors of ``made``'s products; ``bases`` (changed here), where given: every name a product of the block
    reads the negation of (see below)."""
    negations = dict(negations)
    products: dict[Pair, tuple[Var, bool]] = {}  # {x, u} -> (z, negated), for each z = ±x * ±u of this block so far
    defs: dict[str, tuple[Var, Var]] = {}  # p -> its two factors, for each p = x * y of this block
    out = list(block.binds)  # (each binding kept or replaced by one)
    ops = ops_of(block)
    # (only products, negations and bindings with blocks inside, found without a Python loop over every binding:
    # the others, the most common, are neither rule's)
    for at in positions(ops, _LOOKED_AT):
        b = out[at]
        rhs = b.rhs
        if type(rhs) is not Prim:  # (neither a product nor a negation: only the blocks inside, if any)
            if type(rhs) in NESTING:
                out[at] = with_branches(b, rhs, lambda blk: _block(blk, negations, made, counts,
                                                                   made_factors=made_factors))
            continue
        if rhs.op != "mul":
            if _negation(b):
                negations[b.targets[0].name] = rhs.args[0]  # type: ignore[assignment]
            continue
        args = rhs.args
        if len(b.targets) != 1 or len(args) != 2 or rhs.params:  # (``_product``'s test, written out)
            continue
        f, g = args
        if type(f) is not Var or type(g) is not Var:
            continue
        # (``_made`` finds nothing where neither factor is a product of this block's)
        new = _made((f, g), defs, made, counts) if f.name in defs or g.name in defs else None
        if new is not None:
            b = out[at] = Bind(b.targets, new, b.loc)
            f, g = new.args  # type: ignore[assignment]
            if changed is not None:
                changed.append(at)
        p, q = negations.get(f.name, f), negations.get(g.name, g)  # (``_signed``, written out)
        if bases is not None and p.name not in bases and q.name not in bases:
            # (a product of another sign reads the negation of a factor: of a name of ``bases``, what a
            # negation negates or, in turn, a product of such a name; these factors are neither, nor become
            # one: a name is added to ``bases`` at its binding, before what reads it)
            if f.name in made_factors or g.name in made_factors:  # (``_made``'s, only of these)
                defs[b.targets[0].name] = (f, g)
            if where is not None:
                where[b.targets[0].name] = at
            continue
        key = (p.name, q.name) if p.name <= q.name else (q.name, p.name)
        negated = (p is not f) is not (q is not g)
        z, sign = products.setdefault(key, (b.targets[0], negated))
        if sign != negated:  # x * -u after x * u, or x * u after x * -u
            b = out[at] = Bind(b.targets, Prim("neg", (z,)), b.loc)
            if changed is not None and (not changed or changed[-1] != at):
                changed.append(at)
            if _negation(b):  # (a product made a negation: read as one by the products after it)
                negations[b.targets[0].name] = z
        else:
            if bases is not None:
                bases.add(b.targets[0].name)
            if f.name in made_factors or g.name in made_factors:  # (``_made``'s, only of these)
                defs[b.targets[0].name] = (f, g)
            if where is not None:
                where[b.targets[0].name] = at
    return same_or_new(block, out)


def _signed(factors: tuple[Var, Var], negations: dict[str, Var]) -> tuple[Pair, bool]:
    """The factors with each negation ``t = -u`` read as ``u`` (as a pair), and whether an odd number were."""
    f, g = factors
    p, q = negations.get(f.name, f), negations.get(g.name, g)
    return (p.name, q.name) if p.name <= q.name else (q.name, p.name), (p is not f) is not (q is not g)  # (``_pair``)


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
