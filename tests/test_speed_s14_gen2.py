"""Session 14, gen2: two shortcuts of cold-transform work, each checked against the general path.

- ``release._flat_body``'s early answer (every top-level binding a single name the last line
  mentions: no ``del`` line can go in, the body printed as it is) equals the general path's
  (``release._function_body`` of the body's lines), on drawn flat bodies: long and short ones,
  with tuple targets, augmented assignments, comments (last too), non-ASCII names, trailing newlines.
- ``walk._nested_use_counts`` of a block without nested blocks (a sum's items read without a call)
  equals a count made binding by binding with ``vars_of``, keys in the same order (the order of the
  reads: passes iterate the Counter), and a block with a nested ``if`` takes the general path.
"""

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from astad.codegen import release
from astad.ir import Bind, Block, Copy, Drop, Dup, If, MakeTuple, Plus, Prim, Unpack, Var, Zero
from astad.ir.types import Num
from astad.ir import walk
from conftest import fuzz_examples

F = Num((3,), "float64")


def _general(text: str, ascii_only: bool) -> str:
    """The general path of ``released`` (the lines grouped one by one) on a function body's text."""
    body = text.split("\n")
    return "\n".join(release._function_body(body, ascii_only, text))


@st.composite
def flat_bodies(draw):
    """A flat function body: a docstring maybe, top-level statements of one line (single or tuple targets,
    ``=`` or ``+=``), comments heading groups, and a last line: a return of some or all names, a
    binding, or a comment; maybe trailing newlines."""
    prefix = draw(st.sampled_from(["v", "t", "é"]))
    n = draw(st.integers(1, 90))
    names = [f"{prefix}{i}" for i in range(n)]
    lines = []
    if draw(st.booleans()):
        lines.append('    """Primal of f: returns (value, residuals)."""')
    bound: list[str] = []
    tuples = draw(st.booleans())  # (without: the early answer's case, where the return mentions every name)
    for i, name in enumerate(names):
        if draw(st.integers(0, 9)) == 0:
            lines.append(f"    # line {i}")
        reads = draw(st.lists(st.sampled_from(bound), max_size=3)) if bound else []
        rhs = " + ".join(reads) if reads else "np.ones(3)"
        shape = draw(st.integers(0, 19))
        if shape == 0 and bound and tuples:
            other = f"{name}_b"
            lines.append(f"    {name}, {other} = divmod({rhs}, 2)")
            bound += [name, other]
            continue
        lines.append(f"    {name} {'+=' if shape == 1 and bound else '='} {rhs}")
        bound.append(name)
    end = draw(st.sampled_from(["all", "all but one", "some", "binding", "comment"]))
    if end.startswith("all"):
        order = draw(st.permutations(bound))
        if end == "all but one":
            dropped = bound[0] if draw(st.booleans()) else draw(st.sampled_from(bound))
            order.remove(dropped)
        lines.append(f"    return ({', '.join(order)})")
    elif end == "some":
        kept = draw(st.lists(st.sampled_from(bound), min_size=1, unique=True))
        lines.append(f"    return ({', '.join(kept)})")
    elif end == "binding":
        lines.append(f"    out = {' * '.join(bound[-3:])}")
    else:
        lines.append("    # the end")
    return "\n".join(lines) + draw(st.sampled_from(["", "\n", "\n\n"]))


@settings(max_examples=fuzz_examples(300), deadline=None)
@given(flat_bodies())
def test_flat_body_early_answer_equals_general_path(text):
    ascii_only = text.isascii()
    flat = release._flat_body(text, ascii_only)
    assert flat is not None  # (drawn flat)
    assert flat == _general(text, ascii_only)


def test_flat_body_returning_every_name_is_printed_as_it_is():
    """The forward pass's shape (every name bound returned): no ``del``; one name left out of the
    return (or bound by a tuple): that name freed, as the general path frees it."""
    names = [f"v{i}" for i in range(80)]
    lines = ["    # line 1"] + [f"    {n} = {names[i - 1] if i else 'x'} * 2" for i, n in enumerate(names)]
    for i in range(0, 80, 10):
        lines.insert(i + i // 10 + 1, f"    # line {i + 2}")
    text = "\n".join(lines + [f"    return ({', '.join(names)})"]) + "\n"
    assert release._flat_body(text, True) is text
    short = "\n".join(lines + [f"    return ({', '.join(names[1:])})"]) + "\n"
    freed = release._flat_body(short, True)
    assert "    del v0" in freed and freed == _general(short, True)
    tupled = "\n".join(lines[:5] + ["    w, z = divmod(v0, 2)"] + lines[5:] + [f"    return ({', '.join(names)}, z)"])
    freed = release._flat_body(tupled, True)
    assert "    del w" in freed and "z" not in freed.split("del ", 1)[1].split("\n")[0]
    assert freed == _general(tupled, True)


def _reference_counts(block: Block) -> Counter:
    """The reads of a block's bindings, binding by binding (``vars_of``; an ``if``: its condition, then
    its branches' reads after all the block's own), primitives' reads first, as ``walk`` orders them."""
    rhss = [b.rhs for b in block.binds]
    read = [v.name for rhs in rhss if type(rhs) is Prim for v in walk.vars_of(rhs)]
    nested = []
    for rhs in rhss:
        if type(rhs) is Prim:
            continue
        if type(rhs) is If:
            read += [v.name for v in (rhs.cond,) if type(v) is Var]
            nested += [rhs.then, rhs.orelse]
        else:
            read += [v.name for v in walk.vars_of(rhs)]
    counts = Counter(read)
    for inner in nested:
        counts.update(_reference_counts(inner))
    return counts


@st.composite
def blocks(draw, depth=0):
    names = [f"x{i}" for i in range(6)]
    atoms = st.one_of(st.sampled_from(names).map(lambda n: Var(n, F)), st.just(Zero(F)))
    var = st.sampled_from(names).map(lambda n: Var(n, F))
    kinds = [st.lists(atoms, min_size=1, max_size=3).map(lambda a: Prim("add", tuple(a))),
             st.lists(atoms, min_size=1, max_size=4).map(lambda a: Plus(tuple(a))),
             st.lists(atoms, max_size=3).map(lambda a: MakeTuple(tuple(a))),
             atoms.map(Copy), atoms.map(Unpack), var.map(Dup), var.map(Drop)]
    if depth < 2:
        kinds.append(st.tuples(atoms, blocks(depth + 1), blocks(depth + 1)).map(lambda t: If(*t)))
    rhss = draw(st.lists(st.one_of(kinds), max_size=12))
    binds = tuple(Bind((Var(f"b{depth}_{k}", F),), rhs) for k, rhs in enumerate(rhss))
    return Block(binds, draw(atoms))


@settings(max_examples=fuzz_examples(300), deadline=None)
@given(blocks())
def test_nested_use_counts_equal_reference_in_order(block):
    counts = walk._nested_use_counts(block)
    expected = _reference_counts(block)
    assert counts == expected
    assert list(counts) == list(expected)  # (the same keys, in the same order)
