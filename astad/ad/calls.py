"""The reverse macro's rule for a call of a function of its own (:class:`astad.ir.KeyFunction`).

The function is differentiated once, as a program of its own (:func:`reverse_of_key`, for the
parameters that are active at its calls), and generated as a pair of functions beside the main
program's; each call is then split in two:

    let y = call(a, b, fn=f)        forward:  let p = call_forward(a, b)      (f_forward(a, b))
                                              let (y, r) = unpack p           (r: f's residuals)
                                    backward: let c = call_backward(r, y_ct)  (f_backward(r, y_ct))
                                              let (a_ct, b_ct) = unpack c

:func:`split` makes the forward bindings (when the macro gives loops their tapes), :func:`backward`
the backward ones, at the ``unpack``; :mod:`astad.key_functions` derives the function.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import rules
from ..ir import Bind, KeyFunction, Prim, TupleT, Unpack, Var, Zero


def split(b: Bind, active: Callable[[Any], bool], namer: Any, calls: dict[str, Prim]) -> tuple[Bind, ...]:
    """The forward bindings of ``y = call(args)``: the pair of the value and the residuals, unpacked."""
    prim = b.rhs
    assert isinstance(prim, Prim)
    fn: KeyFunction = prim.param("fn")
    mask = tuple(bool(a.type.differentiable) and type(a) is Var and active(a) for a in prim.args)
    name = fn.variant(mask)
    params = (("fn", fn), ("mask", mask), ("name", name))
    (y,) = b.targets
    pair = Var(namer.temp(), rules.infer("call_forward", [a.type for a in prim.args], dict(params)))
    residuals = Var(namer.fresh(f"{name}_residuals"), TupleT(()))
    forward = Prim("call_forward", prim.args, params)
    calls[pair.name] = forward
    return Bind((pair,), forward, b.loc), Bind((y, residuals), Unpack(pair), b.loc)


def backward(macro: Any, bind: Bind, forward: Prim) -> None:
    """The backward bindings of a call (``bind``: the unpacking of its pair; ``forward``: its
    ``call_forward``): the cotangents of its arguments, from its generated backward function."""
    y, residuals = bind.targets
    ct = macro.ct_of(y)
    mask = forward.param("mask")
    if isinstance(ct, Zero) or not any(mask) or not y.type.differentiable:
        for a in forward.args:
            macro.give(a, None)
        return
    params = dict(forward.params)
    cts = Var(macro.namer.temp(), rules.infer("call_backward", [residuals.type, ct.type], params))
    macro.b.bind((cts,), Prim("call_backward", (residuals, ct), forward.params))
    active = [a for a, m in zip(forward.args, mask) if m]
    parts = tuple(Var(macro.namer.fresh(f"{a.name}_ct"), a.type) for a in active)
    macro.b.bind(parts, Unpack(cts))
    given = iter(parts)
    for a, m in zip(forward.args, mask):
        macro.give(a, next(given) if m else None)
