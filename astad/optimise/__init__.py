"""The simplifier for the target IR of the reverse macro: one pass (or one
family of passes) per module, each a function from program to program (or
block to block), run in order by ``optimise``:

- ``structure.forget_structure``: ``dup`` copies become aliases of the original,
  ``drop`` disappears (the primal needs neither; they were there for the macro);
- ``simplify.fold``: the zero/plus algebra — a statically-zero cotangent is never
  materialised: ``plus`` drops zeros, a primitive that is zero-preserving in
  a zero argument is zero, tuples of zeros are zero, ``unpack`` of a known
  tuple is its items, copies are propagated; ``simplify.name_cotangents``: a
  cotangent computed into a temporary and then named ``x_ct`` is computed
  straight into ``x_ct``;
- ``arrays``: broadcasts sunk through elementwise operations, sums of outer
  products as one matrix product, zeros of a static shape;
- ``hoist.hoist_invariants``: loop-invariant code motion;
- ``cse.cse``: common subexpressions;
- ``dce.dce``: bindings nothing reads are removed (backward first, then forward,
  keeping what the backward reads: the residuals), tapes pruned;
- ``accumulate.accumulate_in_loops``: one-hot cotangents added in place;
- ``lists_in_place.lists_in_place``: lists appended to and popped in place;
- ``products.shared_products``: products the backward pass has in hand
  already not computed again (``x * -u`` after ``x * u`` is its negation,
  ``(ct * a) * b`` is ``ct * c`` where the forward pass made ``c = a * b``);
- ``remat.rematerialise``: residual arrays made by one or two cheap elementwise
  operations are computed again in the backward pass rather than kept;
- ``cotangent_signs.absorb_negations``: a negation in the backward pass that
  every reader can take is not computed (``a + -x`` -> ``a - x``, ``-x * 0.2``
  -> ``x * -0.2``, a product's result negated instead), exactly;
  ``unit_axes.unit_axes``: over an axis of length 1, ``x.T @ ct`` of rows is
  ``x.T * ct`` and ``ct.sum(axis=0)`` is ``ct[0]`` (the same numbers, cheaper);
  ``tiles.tiles``: parts' cotangents written into the slices of zeros that they
  tile are concatenated instead;
- ``outputs``: only the cotangents asked for (``restrict``); parameter
  cotangents that are statically zero become real zeros, and read-only
  broadcast views returned to the user become arrays (``finish``).

``copowers.remove_functions`` (function values and their copowers removed when
every call site is known) runs before ``optimise``.  Forward mode's tangents get
three passes more (``pipeline.optimise_forward``; tangent arithmetic only, the
primal's rounding unchanged): ``factor.factor_tangents`` (sums of products and
quotients sharing a factor factored, negations of a product's factors
cancelled), ``shifts.cancel_shifts`` (the tangent of a shift a weighted mean
cannot see, like a logsumexp's max, cancelled) and ``dots.dot_sums`` (a full
sum of a product of two vectors as a dot product).  ``astad.blocks`` holds the
helpers the passes share.
"""

from __future__ import annotations

from typing import Collection, Sequence

import numpy as np

from ..ir import Block, Const, ReverseProgram, Var, bound_vars, kinds, nested_blocks
from ..ir.walk import NESTING_KINDS, atoms_of, outside_reads
from ..names import Namer
from .accumulate import accumulate_in_loops, accumulates
from .arrays import outer_sums, sink_broadcasts, sink_forward_broadcasts, static_zeros
from .cotangent_signs import absorbed
from .cse import cse
from .dce import dce, prune_tapes
from .hoist import hoist_invariants
from .lists_in_place import lists_in_place
from .outputs import finish, restrict
from .products import shared_products_cleaned
from .program_fold import fold_forward, fold_program
from .remat import rematerialise
from .shapes import shapes_not_arrays
from .simplify import fold, name_cotangents
from .structure import forget_structure
from .tiles import tiles
from .unit_axes import unit_axes

__all__ = ["accumulate_in_loops", "cse", "dce", "finish", "fold", "fold_forward", "forget_structure",
           "held_constants", "hoist_invariants", "lists_in_place", "name_cotangents", "optimise", "outer_sums",
           "prune_tapes", "residuals", "restrict", "sink_broadcasts", "sink_forward_broadcasts", "static_zeros"]


def optimise(prog: ReverseProgram, wrt: frozenset[int] | None = None) -> ReverseProgram:
    return optimise_passes(restrict(prog, wrt), finishing=True)


def optimise_passes(prog: ReverseProgram, finishing: bool = False) -> ReverseProgram:
    """The passes of ``optimise``; ``finish`` (parameter cotangents materialised) only
    with ``finishing`` (forward mode over a reverse program returns something else)."""
    prog = fold_program(prog)  # (forget_structure, fold_forward, fold and name_cotangents of the backward block)
    sunk = sink_broadcasts(prog)
    # (the reads counted in dce's own walk where outer_sums will ask for them: it runs where the block has
    # an outer product, and no pass before it makes one)
    cleaned = dce(cse(hoist_invariants(sunk)), count_reads="outer" in kinds(prog.backward))
    prog = shapes_not_arrays(cleaned)
    prog = prog if prog is cleaned else dce(prog)  # (dce of dce's own output is itself)
    # (each of the next two only where the backward block has what it rewrites, else its
    # output would be its input, and that of dce too)
    if accumulates(prog.backward):
        taken = Namer.of(prog).taken  # every name of the program and what generated code reads
        prog = dce(ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in,
                                  accumulate_in_loops(prog.backward, taken)))
    if "outer" in kinds(prog.backward):
        summed = ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in,
                                outer_sums(prog.backward, Namer.of(prog)))
        # (outer_sums leaves out what it makes dead: of dce's output without nested blocks, the output of dce)
        prog = summed if kinds(prog.backward).isdisjoint(NESTING_KINDS) else dce(summed)
    # (prog is dce's output here: each pass after it needs dce again only where it changed something)
    prog = shared_products_cleaned(prog)
    recomputed = rematerialise(prog)
    prog = prog if recomputed is prog else dce(recomputed)
    replaced = unit_axes(tiles(prog.backward))
    backward, unread = absorbed(replaced, Namer.of(prog))
    if backward is not prog.backward:
        # (prog is dce's output here: so is absorbed's output where nothing before it changed the block,
        # absorbed left nothing unread, and the forward block has no tapes to prune)
        clean = replaced is prog.backward and not unread and "Loop" not in kinds(prog.forward)
        prog = ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, backward)
        prog = prog if clean else dce(prog)
    prog = finish(prog) if finishing else prog
    return lists_in_place(ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in,
                                         static_zeros(prog.backward)))


def residuals(prog: ReverseProgram, constants: Collection[str] = ()) -> tuple[Var | Const, ...]:
    """The forward variables (and parameters) the backward block reads, in forward order.
    After the parameters, the arrays of ``constants`` (the names of the user's constants the
    program may read: module-level, captured, ``self``'s, a partial's, a default's) that the
    backward block reads: the forward returns them with the other residuals, so the backward
    reads the arrays the forward read (the caller copies those that could change, as it copies
    the arguments), not what they hold when it runs."""
    read = outside_reads(prog.backward) - {prog.ct_in.name}
    forward = prog.forward
    picked = [v for v in prog.params if v.name in read]
    if kinds(forward).isdisjoint(NESTING_KINDS):  # (of a block without nested blocks, what ``bound_vars`` gives:
        # the targets of its bindings, in order; those read picked in the same walk, no list made of them all)
        picked += [t for b in forward.binds for t in b.targets if t.name in read]
    else:
        picked += [v for v in bound_vars(forward) if v.name in read]
    found = tuple(picked)
    arrays = constant_arrays(prog.backward, constants) if constants else ()
    if not arrays:
        return found
    n = sum(1 for v in found if v in prog.params)  # (the parameters come first)
    return found[:n] + arrays + found[n:]


def held_constants(residuals: Sequence[Sequence[Var | Const]]) -> tuple[str, ...]:
    """The names of the constants among the ``residuals`` of generated programs (see
    :func:`residuals`), each once: the backward functions unpack them from their residuals."""
    return tuple(dict.fromkeys([a.name for r in residuals for a in r if type(a) is Const]))  # type: ignore[misc]


def constant_arrays(block: Block, constants: Collection[str]) -> tuple[Const, ...]:
    """The constants of ``constants`` holding a numpy array (mutable, unlike a number) that
    ``block`` reads, also inside its branches and loops, each once, in the order first read."""
    found: dict[str, Const] = {}

    def visit(blk: Block) -> None:
        for b in blk.binds:
            rhs = b.rhs
            for a in atoms_of(rhs):
                if type(a) is Const and a.name in constants and a.name not in found \
                        and isinstance(a.value, np.ndarray):
                    found[a.name] = a
            for inner in nested_blocks(rhs):
                visit(inner)
        r = blk.result
        if type(r) is Const and r.name in constants and r.name not in found and isinstance(r.value, np.ndarray):
            found[r.name] = r

    visit(block)
    return tuple(found.values())
