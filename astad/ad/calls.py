"""The reverse macro's rule for a call of a function of its own (:class:`astad.ir.KeyFunction`).

The function is differentiated once, as a program of its own (:func:`reverse_of_key`, for the
parameters that are active at its calls), and generated as a pair of functions beside the main
program's; each call is then split in two:

    let y = call(a, b, fn=f)        forward:  let p = call_forward(a, b)      (f_forward(a, b))
                                              let (y, r) = unpack p           (r: f's residuals)
                                    backward: let c = call_backward(r, y_ct)  (f_backward(r, y_ct))
                                              let (a_ct, b_ct) = unpack c

:func:`split` makes the forward bindings (when the macro gives loops their tapes), :func:`backward`
the backward ones, at the ``unpack``.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import rules
from ..ir import Bind, KeyFunction, Prim, ReverseProgram, TupleT, Unpack, Var, Zero


def split(b: Bind, active: Callable[[Any], bool], namer: Any, calls: dict[str, Prim]) -> tuple[Bind, ...]:
    """The forward bindings of ``y = call(args)``: the pair of the value and the residuals, unpacked."""
    prim = b.rhs
    assert isinstance(prim, Prim)
    fn: KeyFunction = prim.param("fn")
    mask = tuple(bool(a.type.differentiable) and type(a) is Var and active(a) for a in prim.args)
    params = (("fn", fn), ("mask", mask), ("name", fn.variant(mask)))
    (y,) = b.targets
    pair = Var(namer.temp(), rules.infer("call_forward", [a.type for a in prim.args], dict(params)))
    residuals = Var(namer.fresh(f"{fn.variant(mask)}_residuals"), TupleT(()))
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


def reverse_of_key(fn: KeyFunction, mask: tuple[bool, ...]) -> ReverseProgram:
    """The optimised reverse program of ``fn`` for the parameters ``mask`` makes active (made once)."""
    found = fn.derived.get(mask)
    if found is None:
        from .. import optimise, structural
        from ..ir import Function
        from ..optimise import copowers
        from . import activity, reverse

        core = Function(fn.variant(mask), fn.fn.params, fn.fn.body)
        linear = structural.make_explicit(core)
        active = activity.analyse(linear, frozenset(i for i, m in enumerate(mask) if m))
        ad = reverse.reverse(linear, active)
        found = fn.derived[mask] = _active_only(optimise.optimise(copowers.remove_functions(ad), active.wrt), mask)
    return found


def _active_only(prog: ReverseProgram, mask: tuple[bool, ...]) -> ReverseProgram:
    """``prog`` returning the cotangents of the parameters ``mask`` makes active only (not a None for each other)."""
    from ..ir import Block, MakeTuple

    final = prog.backward.binds[-1]
    assert isinstance(final.rhs, MakeTuple) and final.targets == (prog.backward.result,)
    items = tuple(a for a, m in zip(final.rhs.items, mask) if m)
    result = Var(final.targets[0].name, TupleT(tuple(a.type for a in items)))
    binds = prog.backward.binds[:-1] + (Bind((result,), MakeTuple(items), final.loc),)
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, Block(binds, result))


def called(prog: ReverseProgram) -> list[tuple[KeyFunction, tuple[bool, ...]]]:
    """The functions ``prog`` calls (their variants), and those they call, each once: what one
    calls before it (the order a reader meets them in the generated module)."""
    from ..ir import all_binds

    order: list[tuple[KeyFunction, tuple[bool, ...]]] = []
    seen: set[tuple[int, tuple[bool, ...]]] = set()

    def visit(p: ReverseProgram) -> None:
        for block in (p.forward, p.backward):
            for b in all_binds(block):
                rhs = b.rhs
                if type(rhs) is Prim and rhs.op == "call_forward":
                    fn, mask = rhs.param("fn"), rhs.param("mask")
                    if (id(fn), mask) not in seen:
                        seen.add((id(fn), mask))
                        visit(reverse_of_key(fn, mask))
                        order.append((fn, mask))

    visit(prog)
    return order
