"""Session 14 (names): the names ``Namer.of`` of a reverse program draws are those the general algorithm
(``Namer.adding_to`` of every name of the program, listed independently here: ``names._used``) draws,
whatever the names: look-alikes of temporaries and suffixed names, and names that are not ASCII (which
Python reads in NFKC).  It found that a block with no bindings had not the name of the constant it
returns among its names (``_block_names``)."""

from __future__ import annotations

import unicodedata

from hypothesis import given, settings, strategies as st

from astad import names
from astad.ir import Bind, Block, Const, Num, Prim, ReverseProgram, Var
from astad.names import OUTSIDE, KEYWORDS, Namer, function_names

VEC = Num((3,), "float64")

#: names a program may hold: temporaries and their look-alikes, suffixed names, names of the outside,
#: and names that are not ASCII (some read as an ASCII name: ``ﬁ`` is ``fi``, ``𝑥`` and ``ｘ`` are ``x``)
POOL = ["t1", "t2", "t3", "t12", "t12_ct", "t1_1", "x", "x_2", "x_ct", "x_ct_2", "v_1", "v_1_ct", "v_ct_1",
        "fi", "\ufb01", "\U0001d465", "\uff58", "\u00e9", "e\u0301", "x\u2082", "np_2", "h", "h_1", "h_2",
        "no_ct", "f_forward_2", "t", "tt1", "T1", "résumé", "ｔ1", "t\u2081", "𝐭2"]

BASES = ["t", "x", "v_1", "h", "fi", "\ufb01", "\U0001d465", "e\u0301", "np", "f_forward", "t12", "x_ct", "résumé"]

name = st.one_of(st.sampled_from(POOL),
                 st.builds(lambda n: f"t{n}", st.integers(1, 40)),
                 st.builds(lambda b, k, s: f"{b}_{k}{s}", st.sampled_from(BASES), st.integers(1, 5),
                           st.sampled_from(["", "_ct", "_2"])),
                 st.text(st.characters(categories=("Ll", "Lu", "Lo")), min_size=1, max_size=3)
                 .filter(str.isidentifier))
names_list = st.lists(name, min_size=0, max_size=25)


def _block(targets: list[str], reads: list[str], constants: list[str]) -> Block:
    """A block binding each of ``targets`` to a primitive of the names ``reads`` and ``constants`` name."""
    args = tuple(Var(n, VEC) for n in reads) + tuple(Const(1.0, VEC, name=n) for n in constants)
    binds = tuple(Bind((Var(t, VEC),), Prim("add", args)) for t in targets)
    # (a block of no bindings returns a named constant where there is one: ``program_names`` has its name)
    result = Var(targets[-1], VEC) if targets else Const(1.0, VEC, name=constants[0]) if constants else Var("r", VEC)
    return Block(binds, result)


def _program(fwd: list[str], bwd: list[str], consts: list[str], params: list[str], prog: str) -> ReverseProgram:
    forward = _block(fwd, params, consts)
    backward = _block(bwd, fwd[:3], consts[::-1])
    return ReverseProgram(prog, tuple(Var(p, VEC) for p in params), forward, Var("ct", VEC), backward)


def _all_names(fwd, bwd, consts, params) -> set[str]:
    """Every name of ``_program``'s program, listed independently of ``program_names``."""
    out = set(fwd) | set(bwd) | set(params) | {"ct"}
    for targets, reads, named in ((fwd, params, consts), (bwd, fwd[:3], consts[::-1])):
        if targets:
            out |= set(reads) | set(named)
        else:
            out |= set(named[:1]) or {"r"}
    return out


def _draw(namer: Namer, ops: list[tuple[int, str, int]]) -> list[str]:
    out: list[str] = []
    for kind, base, n in ops:
        if kind == 0:
            out.append(namer.temp())
        elif kind == 1:
            out.append(namer.fresh(base))
        else:
            out.extend(namer.copies(base, n))
    return out


ops_list = st.lists(st.tuples(st.integers(0, 2), st.one_of(st.sampled_from(BASES), name), st.integers(1, 3)),
                    max_size=20)
prog_name = st.sampled_from(["f", "t1", "h", "\ufb01", "résumé", "np"])


@settings(max_examples=300, deadline=None)
@given(names_list, names_list, names_list, names_list, prog_name, ops_list, st.booleans())
def test_reverse_namer_draws_what_the_general_algorithm_draws(fwd, bwd, consts, params, prog, ops, twice):
    p = _program(fwd, bwd, consts, params, prog)
    everything = _all_names(fwd, bwd, consts, params)
    assert names.program_names(p) | {"r"} == everything | {"r"}  # (the program built has these names)
    if twice:  # a first namer of the program, then one of a program with the same forward block, another backward one
        Namer.of(p).temp()
        p = _program(fwd, bwd[::-1] + ["t5"], consts, params, prog)
        everything = _all_names(fwd, bwd + ["t5"], consts, params)
    general = Namer.adding_to(everything, prog)
    namer = Namer.of(p)
    assert namer.used == general.used  # every name the general algorithm counts as used, and no other
    drawn = _draw(namer, ops)
    assert drawn == _draw(general, ops)
    # (independently of both: no name drawn twice, none the program has as Python reads it, none outside)
    python = {unicodedata.normalize("NFKC", n) for n in everything}
    assert len(set(drawn)) == len(drawn)
    assert not set(drawn) & (python | OUTSIDE | KEYWORDS | function_names(prog))


def test_namer_reads_the_names_a_pass_remembers_for_a_block():
    """A pass that remembers other names for a block (dce, outer sums: ``_program_names``) has them read,
    as Python reads them (``ﬁ`` is ``fi``)."""
    p = _program(["a", "b"], ["c"], [], ["x"], "f")
    assert "t1" not in Namer.of(p).used
    Namer.of(p).temp()
    p.forward.__dict__["_program_names"] = frozenset({"a", "b", "x", "t1", "\ufb01"})
    namer = Namer.of(p)
    assert namer.temp() == "t2"
    assert namer.fresh("fi") == "fi_2"


def test_reverse_namer_sets_are_its_own():
    """Each namer's set is a new one: a name one draws is not used by the next namer of the same program."""
    p = _program(["a"], ["b"], [], ["x"], "f")
    first = Namer.of(p)
    assert first.temp() == "t1" and first.fresh("a") == "a_2"
    second = Namer.of(p)
    assert second.temp() == "t1" and second.fresh("a") == "a_2"
    assert "t1" not in names._block_names(p.forward)


def test_block_of_no_bindings_has_the_name_of_the_constant_it_returns():
    """A block with no bindings returning a named constant: the name is the program's (it was not: the
    result was collected with the first binding's names only), so no namer draws it."""
    block = Block((), Const(1.0, VEC, name="t1"))
    assert names.program_names(block) == {"t1"}
    p = ReverseProgram("f", (Var("x", VEC),), Block((), Var("x", VEC)), Var("ct", VEC), block)
    assert Namer.of(p).temp() == "t2"
