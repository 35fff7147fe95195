"""A function of its own (:class:`astad.ir.KeyFunction`: a recursion's call, lowered once per
static key) as a reverse program: differentiated once per set of active parameters, and generated
beside the main program (:func:`astad.pipeline.transform`); :mod:`astad.ad.calls` splits its calls."""

from __future__ import annotations

from . import optimise, structural
from .ad import activity, reverse
from .ir import Bind, Block, Function, KeyFunction, MakeTuple, Prim, ReverseProgram, TupleT, Var, all_binds, interp
from .optimise import copowers
from .rules import calls


def reverse_of_key(fn: KeyFunction, mask: tuple[bool, ...]) -> ReverseProgram:
    """The optimised reverse program of ``fn`` for the parameters ``mask`` makes active (made once)."""
    found = fn.derived.get(mask)
    if found is None:
        core = Function(fn.variant(mask), fn.fn.params, fn.fn.body)
        linear = structural.make_explicit(core)
        active = activity.analyse(linear, frozenset(i for i, m in enumerate(mask) if m))
        ad = reverse.reverse(linear, active)
        found = fn.derived[mask] = _active_only(optimise.optimise(copowers.remove_functions(ad), active.wrt), mask)
    return found


def _active_only(prog: ReverseProgram, mask: tuple[bool, ...]) -> ReverseProgram:
    """``prog`` returning the cotangents of the parameters ``mask`` makes active only (not a None for each other)."""
    final = prog.backward.binds[-1]
    assert isinstance(final.rhs, MakeTuple) and final.targets == (prog.backward.result,)
    items = tuple(a for a, m in zip(final.rhs.items, mask) if m)
    result = Var(final.targets[0].name, TupleT(tuple(a.type for a in items)))
    binds = prog.backward.binds[:-1] + (Bind((result,), MakeTuple(items), final.loc),)
    return ReverseProgram(prog.name, prog.params, prog.forward, prog.ct_in, Block(binds, result))


def called(prog: ReverseProgram) -> list[tuple[KeyFunction, tuple[bool, ...]]]:
    """The functions ``prog`` calls (their variants), and those they call, each once: what one
    calls before it (the order a reader meets them in the generated module)."""
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


calls.HOOKS.update(run=interp.run, run_reverse=interp.run_reverse, derive=reverse_of_key)
