"""Loop-invariant code motion (``hoist_invariants``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import rules
from ..blocks import with_branches
from ..ir import (Bind, Block, Const, If, Loop, LoopBack, Num, Plus, Prim, ReverseProgram, Var, all_binds, kinds,
                 trip_count, vars_of)
from ..codegen.order import may_raise
from .cse import BUFFERS
from .dce import prune_tapes


#: primitives that never raise on operands of statically known shapes: numpy only
#: warns (``np.log(0.0)``), and Python's ``+ - *`` on floats give ``inf``.
#: Computing one before a loop that would not have run it is harmless.
_TOTAL = {"add", "sub", "mul", "neg", "abs", "sign", "sin", "cos", "tan", "tanh", "exp", "log", "sqrt", "maximum",
          "minimum", "select", "where", "lt", "le", "gt", "ge", "eq", "ne", "shape", "dim", "size", "transpose"}


#: primitives that raise only when Python does the arithmetic (``1.0 / 0.0``), not numpy
_TOTAL_IN_NUMPY = {"div", "pow", "power"}


def _may_hoist(b: Bind, runs: bool) -> bool:
    """Whether ``b``, with every operand bound outside a loop, may be computed
    once before it: a pure primitive or sum making a number (not a list, which
    may be popped in place, nor a buffer that is written in place), and,
    unless the loop surely runs, one that cannot raise."""
    rhs = b.rhs
    if type(rhs) is Prim and rhs.op == "real_power":  # the test of a power (astad.rules.python) moves with it
        return runs
    if not all(isinstance(t.type, Num) for t in b.targets):
        return False
    if isinstance(rhs, Plus):
        return True
    if not isinstance(rhs, Prim) or rhs.op in BUFFERS or rules.TABLE[rhs.op].stmts is not None:
        return False
    if runs:
        return True
    nums = [a.type for a in rhs.args if isinstance(a.type, Num) and a.type.known_shape]
    if len(nums) < len(rhs.args):  # a shape known only at run time may not broadcast
        return False
    floats = all(t.dtype.startswith("float") for t in nums) and not all(t.py for t in nums)
    return rhs.op in _TOTAL or (rhs.op in _TOTAL_IN_NUMPY and floats)


def hoist_invariants(prog: ReverseProgram) -> ReverseProgram:
    """Loop-invariant code motion: a primitive in a loop body (forward or
    backward) whose operands are all bound outside the loop is computed once,
    just before the loop (``1.0 + a * a`` in a loop over ``xs``).  Inner loops
    first, so a value moves out as far as it can.  A forward value that moved
    is no longer recorded per iteration: the backward pass reads it as a
    residual, or from the tape of the loop it moved into (``prune_tapes``), so
    in the backward pass more is invariant: it moves second."""
    if not (kinds(prog.forward) | kinds(prog.backward)) & {"Loop", "LoopBack"}:
        return prog  # no loop: nothing is invariant in one
    running = {b.rhs.tape.name for b in all_binds(prog.forward)
               if isinstance(b.rhs, Loop) and b.rhs.tape is not None and _surely_runs(b.rhs)}
    prog = prune_tapes(ReverseProgram(prog.name, prog.params, _hoist(prog.forward, running), prog.ct_in,
                                      prog.backward))
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, _hoist(prog.backward, running))


def _surely_runs(loop: Loop) -> bool:
    """A ``for`` loop over a range whose bounds are known statically and not empty."""
    return (trip_count(loop) or 0) > 0


def _raises(b: Bind, loop: Loop) -> bool:
    """Whether ``b`` (of forward loop ``loop``'s body) may raise (:mod:`astad.codegen.order`): one that may is
    moved before the loop only if nothing kept before it in the body may raise (Python's order:
    ``xs[i + k] + 1.0 / y`` raises the IndexError first).  An element of an array at the loop's index, in
    range on every trip (``for z in xs``), does not; a branch or a loop in the body may."""
    rhs = b.rhs
    if type(rhs) is Prim:
        return may_raise(rhs, b.targets[0].type) is not None and not _in_range(rhs, loop)
    return isinstance(rhs, (If, Loop, LoopBack))


def _in_range(rhs: Prim, loop: Loop) -> bool:
    """``xs[i]``, ``i`` the index of ``loop`` whose values all index the known first axis of ``xs``."""
    if rhs.op != "getitem" or len(rhs.args) != 2 or rhs.param("index") != (("arg", 1),) or loop.index is None:
        return False
    xs, i = rhs.args
    t = getattr(xs, "type", None)
    if type(i) is not Var or i.name != loop.index.name or type(t) is not Num or not t.known_shape or not t.shape:
        return False
    bounds = [a.value if isinstance(a, Const) else getattr(a.type, "value", None) for a in loop.bounds]
    if any(not isinstance(v, (int, np.integer)) or isinstance(v, bool) for v in bounds):
        return False
    trips, n = range(*(int(v) for v in bounds)), t.shape[0]
    return not trips or (-n <= min(trips[0], trips[-1]) and max(trips[0], trips[-1]) < n)


def _hoist(block: Block, running: set[str]) -> Block:
    """``running``: the tapes of the forward loops that surely run (so do their backward passes)."""
    binds: list[Bind] = []
    for b in block.binds:
        b = with_branches(b, b.rhs, lambda blk: _hoist(blk, running))
        rhs = b.rhs
        if isinstance(rhs, (Loop, LoopBack)):
            surely = _surely_runs(rhs) if isinstance(rhs, Loop) else rhs.tape.name in running
            inside = {v.name for v in (rhs.inputs if isinstance(rhs, Loop) else rhs.saved + rhs.params)}
            kept, raised = [], False  # (raised: a binding kept in a forward loop may raise before what follows)
            for inner in rhs.body.binds:
                raises = isinstance(rhs, Loop) and _raises(inner, rhs)
                if _may_hoist(inner, surely) and not any(v.name in inside for v in vars_of(inner.rhs)) \
                        and not (raised and raises):
                    binds.append(inner)
                else:
                    kept.append(inner)
                    inside.update(t.name for t in inner.targets)
                    raised = raised or raises
            b = Bind(b.targets, replace(rhs, body=Block(tuple(kept), rhs.body.result)), b.loc)
        binds.append(b)
    return Block(tuple(binds), block.result)
