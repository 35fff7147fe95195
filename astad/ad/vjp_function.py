"""A reverse program as one IR function, for forward mode over reverse mode (Hessians).

:func:`vjp_function` joins the reverse macro's optimised output — the forward
block, then the backward block that reads its values — into one function
``(params..., ct) -> tuple of cotangents``: ``ct ↦ J(params)^T ct``.  The
forward macro accepts it (its rules cover the target-IR constructs that remain
after the optimiser: ``plus``, zeros, a loop recording a tape and the backward
loop over it), so forward mode over it with tangents ``v`` of the parameters
and none of ``ct`` gives ``(J^T ct, (d/dv) J^T ct)``: for a scalar function
and ``ct = 1`` the gradient and the Hessian-vector product ``H v``.

The function remembers where its forward block ends (``split``): the
forward macro keeps that boundary, so the optimiser and codegen can treat the
result as a reverse program again (the backward part reads the forward
part's values, tapes included, as residuals).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Block, Function, ReverseProgram


@dataclass(frozen=True)
class SplitFunction(Function):
    """A function whose first ``split`` bindings are a reverse program's forward block."""

    split: int = 0


def vjp_function(prog: ReverseProgram) -> SplitFunction:
    """``(params..., ct) -> cotangents``: the forward block's bindings, then the backward block's."""
    body = Block(prog.forward.binds + prog.backward.binds, prog.backward.result)
    return SplitFunction(f"{prog.name}_vjp", prog.params + (prog.ct_in,), body, split=len(prog.forward.binds))


def split_of(fn: Function) -> int | None:
    """Where ``fn``'s forward block ends, if it is a reverse program made one function."""
    return fn.split if isinstance(fn, SplitFunction) else None
