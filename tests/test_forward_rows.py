"""Forward mode's loops over the rows of arrays (astad/codegen/loops.py, ``zipped_rows``):
a ``for i in range(n)`` whose index only reads ``x[i]`` of arrays of ``n`` rows is
printed ``for z, z_t in zip(xs, xs_t)``.  Each case is checked against central
finite differences in float64 and reverse mode (``<u, J v> == <J^T u, v>``), with
the loops that must keep their index (the index read otherwise, an array of another
length, an array the loop updates, a nested loop reading the outer index) among them."""

from __future__ import annotations

import numpy as np
import pytest

import astad
from test_forward import check_jvp


def comprehension(a, xs):
    g = lambda z: a * np.sin(z) + z * z / (1.0 + a * a)  # noqa: E731
    return np.sum(np.array([g(z) for z in xs]))


def two_vectors(x, y):
    s = 0.0
    for i in range(x.shape[0]):
        s = s + np.sin(x[i]) * y[i]
    return s


def matrix_rows(M, w):
    acc = np.zeros(3)
    for row in M:
        acc = acc + np.tanh(row * w)
    return np.sum(acc * acc)


def rows_of_a_view(w):
    v = w[1:]  # a view of the argument, read row by row
    s = 0.0
    for z in v:
        s = s + z * np.cos(z)
    return s + w[0]


def index_read_otherwise(x):
    s = 0.0
    for t in range(x.shape[0] - 1):
        s = s + x[t] * x[t + 1]
    return s


def longer_array(x, y):
    s = 0.0
    for i in range(x.shape[0]):  # y has more elements than the loop reads
        s = s + x[i] * y[i]
    return s


def updates_what_it_reads(x):
    y = x * 1.0
    for i in range(x.shape[0]):
        y[i] = y[i] * 2.0 + x[i]
    return np.sum(np.sin(y))


def nested(x, M):
    s = 0.0
    for i in range(x.shape[0]):
        for j in range(M.shape[1]):
            s = s + x[i] * M[i, j] * M[i, j]
    return s


def nested_rows(x, M):
    s = 0.0
    for i in range(M.shape[0]):
        row = M[i]
        for z in x:
            s = s + np.sin(z) * np.sum(row)
    return s


def same_row_twice(x):
    out = []
    for i in range(x.shape[0]):
        a = x[i]
        b = x[i] * x[i]
        out.append(a + b)
    return np.sum(np.array(out))


def row_carried_out(x, y):
    last = 0.0
    s = 0.0
    for i in range(x.shape[0]):
        last = x[i]
        s = s + last * y[i]
    return last * s


rng = np.random.default_rng(0)
CASES = [
    (comprehension, (0.7, rng.standard_normal(7)), True),
    (two_vectors, (rng.standard_normal(5), rng.standard_normal(5)), True),
    (matrix_rows, (rng.standard_normal((4, 3)), rng.standard_normal(3)), True),
    (rows_of_a_view, (rng.standard_normal(6),), True),
    (index_read_otherwise, (rng.standard_normal(6),), False),
    (longer_array, (rng.standard_normal(4), rng.standard_normal(6)), False),
    (updates_what_it_reads, (rng.standard_normal(5),), False),
    (nested, (rng.standard_normal(3), rng.standard_normal((3, 4))), None),
    (nested_rows, (rng.standard_normal(3), rng.standard_normal((2, 4))), True),
    (same_row_twice, (rng.standard_normal(5),), None),
    (row_carried_out, (rng.standard_normal(5), rng.standard_normal(5)), True),
]


@pytest.mark.parametrize("fn, args, zipped", CASES, ids=[c[0].__name__ for c in CASES])
def test_rows_against_fd_and_reverse(fn, args, zipped):
    d, _, _ = check_jvp(fn, args)
    loops = [line.strip() for line in d.source.splitlines() if line.strip().startswith("for ")]
    if zipped is True:  # at least one loop iterates over rows; none keeps a range it needs no more
        assert any(" in range(" not in line for line in loops), d.source
    elif zipped is False:
        assert all(" in range(" in line for line in loops), d.source


@pytest.mark.parametrize("fn, args, zipped", CASES, ids=[c[0].__name__ for c in CASES])
def test_rows_with_inactive_arguments(fn, args, zipped):
    """One argument held constant (no tangent): its array is read row by row with the others'."""
    for i in range(len(args)):
        if isinstance(args[i], np.ndarray):
            check_jvp(fn, args, wrt=[i], seed=i + 1)


def test_two_vectors_reads_each_row_once():
    fwd = astad.forward(two_vectors)
    fwd(np.ones(3), np.ones(3))
    text = fwd.source
    assert "for x_i, x_i_t, y_i, y_i_t in zip(x, x_t, y, y_t):" in text, text  # rows named after their arrays
    code = "\n".join(line for line in text.splitlines() if not line.strip().startswith("#"))
    assert "[i" not in code and ".shape[0]" not in code, text  # neither the index nor the loop's length is left


def test_rows_are_views_of_the_matrix_as_indexing_gives():
    """A matrix's rows are views: a value computed from a row is not changed by what the loop does next."""
    M, w = rng.standard_normal((4, 3)), rng.standard_normal(3)
    tM, tw = rng.standard_normal((4, 3)), rng.standard_normal(3)
    value, tangent = astad.jvp(matrix_rows, (M, w), (tM, tw))
    eps = 1e-6
    fd = (matrix_rows(M + eps * tM, w + eps * tw) - matrix_rows(M - eps * tM, w - eps * tw)) / (2 * eps)
    assert value == pytest.approx(matrix_rows(M, w), rel=1e-12)
    assert tangent == pytest.approx(fd, rel=1e-6)


# ------------------------------------------------------------- random loops over rows

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import fuzz_examples, load_program  # noqa: E402

#: what a body may compute from the rows ``{r}``, ``{q}`` (of two arrays), the carried ``acc`` and a scalar ``s``
_TERMS = ["np.sin({r}) * {q}", "np.tanh({r} + s * acc)", "{r} * {r}", "np.cos({q}) * acc", "{r} / (1.0 + {q} * {q})",
          "np.exp(-{r} * {r}) * s"]
#: how a loop reaches its rows
_HEADS = ["for i in range({a}.shape[0]):", "for i in range(len({a})):", "for i in range({n}):", "for {r} in {a}:"]


@st.composite
def row_programs(draw):
    """``f(a, b, c, s)``: a loop over the rows of ``a`` (a vector or a matrix, maybe a view), reading the
    rows of ``b`` too when it has as many (else ``b[i % len(b)]``: the loop keeps its index), maybe the index
    itself; then the JVP against FD and reverse mode, with tangents for some arguments only."""
    n, k = draw(st.integers(0, 4)), draw(st.sampled_from([None, 3]))
    shape = (n,) if k is None else (n, k)
    b_rows = draw(st.sampled_from(["same", "longer", "view"]))
    b_shape = {"same": shape, "longer": (n + 2, *shape[1:]), "view": (n + 1, *shape[1:])}[b_rows]
    view_a = draw(st.booleans())
    head = draw(st.sampled_from(_HEADS))
    lines = ["import numpy as np", "", "", "def f(a, b, c, s):"]
    a = "a"
    if view_a:
        lines.append("    av = a[::-1] * 1.0 if c > 0.0 else a[::-1]")  # a view or a new array, joined
        a = "av"
    bb = "b[1:]" if b_rows == "view" else "b"
    lines.append(f"    bv = {bb}")
    lines.append("    acc = 0.0" if k is None else "    acc = np.zeros(3)")
    index_used = draw(st.booleans())
    if head.startswith("for {r}"):
        lines.append("    i = 0")
        lines.append("    " + head.format(a=a, r="r"))
        lines.append("        i = i + 1")
    else:
        lines.append("    " + head.format(a=a, n=n))
        lines.append(f"        r = {a}[i]")
    q = "bv[i]" if b_rows in ("same", "view") and not head.startswith("for {r}") else \
        ("bv[(i - 1) % len(bv)]" if head.startswith("for {r}") else "bv[i % len(bv)]")
    lines.append(f"        q = {q}")
    for term in draw(st.lists(st.sampled_from(_TERMS), min_size=1, max_size=3)):
        lines.append("        acc = acc + " + term.format(r="r", q="q"))
    if index_used:
        lines.append("        acc = acc * (0.5 + 0.1 * i)")
    lines.append("    return np.sum(acc * acc) + s * c")
    return "\n".join(lines) + "\n", shape, b_shape, draw(st.integers(0, 2 ** 16))


@settings(max_examples=fuzz_examples(12, long=30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(row_programs(), st.data())
def test_random_loops_over_rows(tmp_path_factory, program, data):
    source, shape, b_shape, seed = program
    fn = load_program(source, tmp_path_factory.mktemp("rows"), "rows").f
    rng = np.random.default_rng(seed)
    args = (rng.standard_normal(shape), rng.standard_normal(b_shape), float(rng.choice([-1.0, 1.0])), 0.3)
    check_jvp(fn, args, seed=seed)
    wrt = data.draw(st.lists(st.sampled_from([0, 1, 3]), min_size=1, max_size=2, unique=True))
    check_jvp(fn, args, seed=seed + 1, wrt=sorted(wrt))
