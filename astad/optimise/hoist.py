"""Loop-invariant code motion (``hoist_invariants``)."""

from __future__ import annotations

from dataclasses import replace

from .. import rules
from ..blocks import with_branches
from ..ir import (Bind, Block, Loop, LoopBack, Num, Plus, Prim, ReverseProgram, all_binds, kinds, trip_count,
                 vars_of)
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


def _hoist(block: Block, running: set[str]) -> Block:
    """``running``: the tapes of the forward loops that surely run (so do their backward passes)."""
    binds: list[Bind] = []
    for b in block.binds:
        b = with_branches(b, b.rhs, lambda blk: _hoist(blk, running))
        rhs = b.rhs
        if isinstance(rhs, (Loop, LoopBack)):
            surely = _surely_runs(rhs) if isinstance(rhs, Loop) else rhs.tape.name in running
            inside = {v.name for v in (rhs.inputs if isinstance(rhs, Loop) else rhs.saved + rhs.params)}
            kept = []
            for inner in rhs.body.binds:
                if _may_hoist(inner, surely) and not any(v.name in inside for v in vars_of(inner.rhs)):
                    binds.append(inner)
                else:
                    kept.append(inner)
                    inside.update(t.name for t in inner.targets)
            b = Bind(b.targets, replace(rhs, body=Block(tuple(kept), rhs.body.result)), b.loc)
        binds.append(b)
    return Block(tuple(binds), block.result)
