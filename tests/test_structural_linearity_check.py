"""The structural pass checks its own output (``structural.check_linear``): every variable bound
(or a parameter, or an input of a branch) is read exactly once, and nothing is read that is not
bound.  The reverse macro relies on it (a cotangent per variable, made at its one use): a variable
read twice would get the cotangent of one use only, a wrong derivative.  Here the check refuses
each way of breaking it, in a block and in a branch, and passes what the pass makes."""

from __future__ import annotations

import numpy as np
import pytest

from astad import structural
from astad.errors import InternalError
from astad.frontend import Lowerer, drop_dead_temporaries, parse
from astad.ir import Bind, Block, Const, Drop, Dup, Function, If, MakeTuple, Num, Prim, Var
from astad.ir.types import BOOL, TupleT

R = Num((3,), "float64")
x, y, z, c = Var("x", R), Var("y", R), Var("z", R), Var("c", BOOL)


def fn(*binds: Bind, result=None, params=(x,)) -> Function:
    return Function("f", params, Block(tuple(binds), result if result is not None else binds[-1].targets[0]))


def mul(out: Var, a, b) -> Bind:
    return Bind((out,), Prim("mul", (a, b)))


LINEAR = [
    fn(Bind((Var("x_1", R), Var("x_2", R)), Dup(x)), mul(y, Var("x_1", R), Var("x_2", R))),
    fn(mul(y, x, Const.literal(2.0, Num((), "float64", py=True)))),
    fn(Bind((), Drop(x)), mul(y, Const.literal(2.0, Num((), "float64", py=True)), Const.literal(3.0, R))),
]

NOT_LINEAR = {
    "read twice": fn(mul(y, x, x)),
    "read twice, once as the result": fn(mul(y, x, Const.literal(2.0, R)), result=x),
    "bound, never read": fn(mul(y, x, Const.literal(2.0, R)), mul(z, Const.literal(1.0, R), Const.literal(2.0, R))),
    "parameter never read": fn(mul(y, Const.literal(1.0, R), Const.literal(2.0, R))),
    "read, never bound": fn(mul(y, x, z)),
    "a copy read twice": fn(Bind((Var("x_1", R), Var("x_2", R)), Dup(x)),
                            mul(y, Var("x_1", R), Var("x_1", R)), result=None),
}


@pytest.mark.parametrize("f", LINEAR, ids=range(len(LINEAR)))
def test_what_is_linear_passes(f):
    structural.check_linear(f)


@pytest.mark.parametrize("why", list(NOT_LINEAR))
def test_what_is_not_linear_is_refused(why):
    with pytest.raises(InternalError, match="not linear"):
        structural.check_linear(NOT_LINEAR[why])


def test_a_branch_reading_its_input_twice_is_refused():
    then = Block((mul(Var("a", R), x, x), Bind((Var("e", TupleT((R,))),), MakeTuple((Var("a", R),)))),
                 Var("e", TupleT((R,))))
    orelse = Block((Bind((Var("g", TupleT((R,))),), MakeTuple((x,))),), Var("g", TupleT((R,))))
    f = Function("f", (x, c), Block((Bind((y,), If(c, then, orelse)),), y))
    with pytest.raises(InternalError, match="not linear"):
        structural.check_linear(f)


def program(x, w):
    h = np.tanh(x * w)
    if np.sum(h) > 0.0:
        h = h * h + x
    for i in range(3):
        h = h * w + np.sin(h)
    return np.sum(h * h * x)


def test_the_pass_output_is_linear():
    arr = Num((4,), "float64")
    core = drop_dead_temporaries(Lowerer(parse(program)).lower_function([arr, arr]))
    out = structural.make_explicit(core)  # (make_explicit checks; and again here)
    structural.check_linear(out)


@pytest.mark.parametrize("miscount", ["once", "never"])
def test_the_pass_checks_what_it_makes(monkeypatch, miscount):
    """The pass checks each block as it makes it (not ``check_linear`` after): counts of reads that
    are wrong (a variable read twice counted once, or not at all) make an output that is refused."""
    arr = Num((4,), "float64")
    core = drop_dead_temporaries(Lowerer(parse(program)).lower_function([arr, arr]))
    counts = structural._use_counts

    def wrong(block):
        found = counts(block)
        twice = sorted(name for name, n in found.items() if n >= 2)
        if twice:
            found[twice[0]] = 1 if miscount == "once" else 0
        return found

    monkeypatch.setattr(structural, "_use_counts", wrong)
    with pytest.raises(InternalError, match="not linear"):
        structural.make_explicit(core)
