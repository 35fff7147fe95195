"""Shape and structure functions in user programs (issue 11, point 1): ``einsum``
(drawn by hypothesis over subscripts), ``tensordot kron inner vdot take
take_along_axis repeat tile flip fliplr flipud roll pad atleast_*d squeeze
swapaxes moveaxis broadcast_to split array_split hsplit vsplit hstack vstack
column_stack dstack full full_like linspace meshgrid tri identity`` and the
methods ``.squeeze() .repeat() .swapaxes() .take()``.

Each program is checked against independent oracles: reverse mode (``check_grad``)
against central finite differences in float64, forward mode (``astad.jvp``) against
central differences in a random direction, and forward against reverse
(``<u, J v> == <J^T u, v>``)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import astad
from conftest import check_grad, load_program

RNG = np.random.default_rng(7)
M23, M34, V3, V4 = RNG.normal(size=(2, 3)), RNG.normal(size=(3, 4)), RNG.normal(size=3), RNG.normal(size=4)
SQ = RNG.normal(size=(3, 3))
T234 = RNG.normal(size=(2, 3, 4))
IDX = np.array([2, 0, 2, 1])
ORDER = np.array([[2, 0, 0], [1, 1, 2]])


def _flat(v):
    if isinstance(v, (tuple, list)):
        return np.concatenate([_flat(x) for x in v]) if v else np.zeros(0)
    return np.ravel(np.asarray(v, dtype=float))


def _floats(args):
    return [i for i, a in enumerate(args) if isinstance(a, float) or (isinstance(a, np.ndarray) and a.dtype.kind == "f")]


def check_forward(fn, args, seed=0, eps=1e-6):
    """``astad.jvp`` against central differences along a random direction, and
    against reverse mode: ``<u, J t> == <J^T u, t>``."""
    rng = np.random.default_rng(seed)
    args = list(args)
    floats = _floats(args)
    tangents = [None] * len(args)
    for i in floats:
        tangents[i] = float(rng.normal()) if isinstance(args[i], float) else rng.normal(size=np.shape(args[i]))
    value, tangent = astad.jvp(fn, tuple(args), tuple(tangents))
    np.testing.assert_allclose(_flat(value), _flat(fn(*args)), rtol=1e-12, atol=1e-12)

    def at(h):
        return fn(*[a + h * t if t is not None else a for a, t in zip(args, tangents)])

    fd = (_flat(at(eps)) - _flat(at(-eps))) / (2 * eps)
    np.testing.assert_allclose(_flat(tangent), fd, rtol=1e-5, atol=1e-6)
    u = rng.normal(size=_flat(value).shape)
    _, pullback = astad.reverse(fn)(*args)
    cts = pullback(_unflat(u, value))
    back = sum(float(np.sum(np.asarray(cts[i]) * tangents[i])) for i in floats if cts[i] is not None)
    np.testing.assert_allclose(float(u @ _flat(tangent)), back, rtol=1e-9, atol=1e-9)


def _unflat(u, like):
    if isinstance(like, (tuple, list)):
        out, start = [], 0
        for x in like:
            n = _flat(x).size
            out.append(_unflat(u[start:start + n], x))
            start += n
        return tuple(out)
    if np.ndim(like) == 0:
        return float(u[0])
    return u.reshape(np.shape(like))


def check(fn, *args):
    check_grad(fn, args)
    check_forward(fn, args)


# --------------------------------------------------------------------------- einsum


def einsum_matmul_implicit(a, b):
    return np.einsum('ij,jk', a, b)


def einsum_trace_and_diag(s, v):
    return np.einsum('ii', s) * np.einsum('ii->i', s) + np.einsum('i,i->i', v, v)


def einsum_ellipsis(t, b):
    return np.tanh(np.einsum('...jk,kl->...jl', t, b))


def einsum_batched_broadcast(t, v):
    return np.einsum('...k,...k->...', t, v) + np.einsum('bij->i', t[:, :, :2] * 2.0)


def einsum_three(a, b, v, w):
    return np.einsum('ij,jk,k,i->', a, b, v, np.ones(2), optimize=True) * w


def einsum_scalar(x, v):
    return np.einsum(',i->i', x, v)


@pytest.mark.parametrize("fn, args", [
    (einsum_matmul_implicit, (M23, M34)),
    (einsum_trace_and_diag, (SQ, V3)),
    (einsum_ellipsis, (T234, RNG.normal(size=(4, 2)))),
    (einsum_batched_broadcast, (T234, V4)),
    (einsum_three, (M23, M34, V4, 0.7)),
    (einsum_scalar, (1.3, V3)),
], ids=lambda v: getattr(v, "__name__", ""))
def test_einsum(fn, args):
    check(fn, *args)


def test_einsum_cotangent_reads_as_einsum():
    src = astad.reverse(einsum_matmul_implicit).transform(M23, M34).source
    assert "np.einsum('ik,jk->ij'" in src, src


_LETTERS = "ijk"


@st.composite
def einsum_programs(draw):
    """A few operands with 0-3 subscripts each (repeats allowed, sometimes ``...``),
    sizes fixed per letter, an explicit or implicit output."""
    sizes = {"i": 2, "j": 3, "k": 1 if draw(st.booleans()) else 4}
    n = draw(st.integers(1, 3))
    ell = draw(st.booleans())
    ops, shapes = [], []
    for _ in range(n):
        subs = "".join(draw(st.lists(st.sampled_from(_LETTERS), min_size=0 if ops else 1, max_size=3)))
        dots = ell and draw(st.booleans())
        ops.append(("..." if dots else "") + subs)
        shapes.append(((2,) if dots and draw(st.booleans()) else (1,) if dots else ()) + tuple(sizes[c] for c in subs))
    used = sorted(set("".join(ops)) - set("."))
    if draw(st.booleans()):
        out = "".join(draw(st.permutations(used))[:draw(st.integers(0, len(used)))])
        spec = ",".join(ops) + "->" + ("..." if any("..." in o for o in ops) else "") + out
    else:
        spec = ",".join(ops)
    return spec, shapes


@given(einsum_programs(), st.integers(0, 2**16))
@settings(max_examples=15, deadline=None)
def test_einsum_drawn(tmp_path_factory, program, seed):
    spec, shapes = program
    names = [f"x{i}" for i in range(len(shapes))]
    source = (f"import numpy as np\n\ndef f({', '.join(names)}):\n"
              f"    return np.einsum({spec!r}, {', '.join(names)}) * 1.5\n")
    rng = np.random.default_rng(seed)
    args = [rng.normal(size=s) for s in shapes]
    fn = load_program(source, tmp_path_factory.mktemp("einsum")).f
    try:
        np.einsum(spec, *args)
    except ValueError:  # numpy refuses these subscripts: astad does too, at the line
        with pytest.raises(astad.AstadTypeError, match="einsum"):
            astad.reverse(fn)(*args)
        return
    check(fn, *args)


def test_einsum_subscripts_numpy_refuses_are_refused():
    def bad(a):
        return np.einsum('ij->ik', a)

    with pytest.raises(astad.AstadTypeError, match="einsum: output subscripts"):
        astad.reverse(bad)(M23)


# --------------------------------------------------------------------------- contractions by name


def products(a, b, s, v):
    return (np.sum(np.tensordot(a, b, axes=1) ** 2) + np.sum(np.tensordot(s, s, axes=([0, 1], [1, 0])))
            + np.sum(np.inner(a, a)) + np.inner(v, v) + np.vdot(a, b[:, :2].T) + np.sum(np.kron(a, s) ** 2)
            + np.sum(np.kron(v, a)) + np.sum(np.tensordot(v, a, axes=0)))


def test_products():
    check(products, M23, M34, SQ, V3)


# --------------------------------------------------------------------------- gathers and copies


def gathers(x, m, idx, order):
    return (np.sum(np.take(x, idx) * np.arange(4.0)) + np.sum(np.take(m, idx[:2], axis=1) ** 2)
            + np.sum(m.take([0, 0, 1], axis=0)) + np.take(x, 1) + np.sum(x.take(idx) ** 3)
            + np.sum(np.take_along_axis(m, order, axis=1) * np.arange(3.0)))


def copies(x, m):
    return (np.sum(np.repeat(x, 2) * np.arange(6.0)) + np.sum(np.repeat(m, [1, 0, 2], axis=1) ** 2)
            + np.sum(m.repeat(3, axis=0) ** 2) + np.sum(np.tile(x, (2, 2)) * np.arange(12.0).reshape(2, 6))
            + np.sum(np.tile(m, 2) ** 2))


def test_gathers():
    check(gathers, V4, M23, IDX, np.argsort(M23, axis=1))


def test_copies():
    check(copies, V3, M23)


def movers(m, t):
    return (np.sum(np.flip(m) * M23) + np.sum(np.fliplr(m) ** 3) + np.sum(np.flipud(m) * np.flip(m, axis=1))
            + np.sum(np.roll(m, 1) * M23) + np.sum(np.roll(m, (1, 2), axis=(0, 1)) * M23)
            + np.sum(np.swapaxes(t, 0, 2) * np.arange(24.0).reshape(4, 3, 2)) + np.sum(t.swapaxes(1, 2)[0] ** 2)
            + np.sum(np.moveaxis(t, 0, -1) * np.arange(24.0).reshape(3, 4, 2))
            + np.sum(np.moveaxis(t, (0, 1), (2, 0)) ** 2))


def test_movers():
    check(movers, M23, T234)


def dims(x, v, s):
    a = np.atleast_2d(v)
    b, c = np.atleast_3d(v, s)
    y = np.expand_dims(x, 0)
    return (np.sum(a * np.arange(3.0)) + np.sum(b ** 2) + np.sum(c * 2.0) + np.sum(np.atleast_1d(x) * v)
            + np.sum(np.squeeze(y) * v[:1]) + np.sum(np.squeeze(a, axis=0) ** 2) + np.sum(a.squeeze() * v)
            + np.sum(np.broadcast_to(v, (2, 3)) * M23))


def test_dims():
    check(dims, 0.4, V3, SQ)


def test_newaxis():
    def f(x):
        return np.sum(x[np.newaxis] * x[:, np.newaxis] ** 2)

    try:
        astad.reverse(f)(V3)
    except astad.AstadTypeError:
        pytest.skip("np.newaxis as an index lands with the indexing branch")
    check(f, V3)


def pads(m, c):
    return (np.sum(np.pad(m, 1) ** 2) + np.sum(np.pad(m, ((1, 0), (2, 1)), constant_values=c) * np.arange(30.0).reshape(3, 10)[:, :6])
            + np.sum(np.pad(m, 2, mode='edge') ** 2) + np.sum(np.pad(m[0], (0, 3), 'edge') * np.arange(6.0)))


def test_pad():
    check(pads, M23, 0.8)


# --------------------------------------------------------------------------- joins and splits


def joins(v, w, m):
    return (np.sum(np.hstack([v, w]) * np.arange(7.0)) + np.sum(np.hstack((m, m)) ** 2) + np.sum(np.vstack([v, v]) ** 2)
            + np.sum(np.vstack([m, v]) * np.arange(9.0).reshape(3, 3)) + np.sum(np.column_stack([v, m.T]) ** 2)
            + np.sum(np.column_stack((v, v * 2.0)) * np.arange(6.0).reshape(3, 2)) + np.sum(np.dstack([m, m]) ** 3))


def splits(x, m):
    a, b = np.split(x, 2)
    p, q, r = np.array_split(x, 3)
    left, right = np.hsplit(m, [1])
    top, bottom = np.vsplit(np.vstack([m, m]), 2)
    parts = np.split(m, [1, 2], axis=1)
    return (np.sum(a * b) + np.sum(p ** 2) + np.sum(q) * np.sum(r) + np.sum(left * left) + np.sum(right ** 3)
            + np.sum(top * bottom) + np.sum(parts[2] * parts[0]) + np.sum(np.hsplit(x, 4)[3]))


def test_joins():
    check(joins, V3, V4, M23)


def test_splits():
    check(splits, V4, M23)


def joins_of_lists(v, n):
    rows = []
    for i in range(n):
        rows.append(v * (i + 1.0))
    return np.sum(np.vstack(rows) ** 2) + np.sum(np.hstack(rows) * 2.0) + np.sum(np.column_stack(rows) ** 3)


def test_joins_of_lists():
    check(joins_of_lists, V3, 3)


# --------------------------------------------------------------------------- constants


def constants(x, a, b):
    g = np.full((2, 3), x) * M23 + np.full_like(M23, 2.0) * np.tri(2, 3) + np.tri(2, 3, k=-1)
    s = np.linspace(a, b, 5) ** 2 + np.linspace(0.0, b, 4, endpoint=False).sum() + np.linspace(a, 1, 1)
    X, Y = np.meshgrid(np.linspace(a, b, 3), np.linspace(0.0, x, 2))
    I, J = np.meshgrid(np.linspace(0.0, 1.0, 3) * a, np.ones(2) * b, indexing='ij', sparse=True)
    return np.sum(g ** 2) + np.sum(s * s) + np.sum(X * Y ** 2) + np.sum(I * J) + np.sum(np.identity(3) * x)


def test_constants():
    check(constants, 0.7, -0.3, 1.9)


def test_constants_values_match_numpy():
    def f(x):
        return np.full_like(np.arange(3), 2.5) * x + np.sum(np.tri(3) * np.identity(3)) + np.linspace(0, 1, 3)

    value, _ = astad.reverse(f)(1.5)
    np.testing.assert_array_equal(value, f(1.5))


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("body, match", [
    ("np.pad(x, 1, mode='reflect')", "mode='reflect'"),
    ("np.split(x, 3)", "equal parts"),
    ("np.take(x, [0], mode='clip')", "mode"),
    ("np.einsum(x, [0])", "subscripts as a string"),
    ("np.linspace(x[0], x[1], 5, retstep=True)", "retstep"),
])
def test_refused_with_a_hint(tmp_path, body, match):
    fn = load_program(f"import numpy as np\n\ndef f(x):\n    return np.sum({body})\n", tmp_path).f
    with pytest.raises(astad.AstadError, match=match) as e:
        astad.reverse(fn)(V4)
    assert e.value.loc is not None and e.value.loc.line == 4


# --------------------------------------------------------------------------- second derivatives, aliasing


def second_order(x, idx):
    m = np.reshape(x, (2, 3))
    y = (np.take(x, idx) * np.pad(x[:4], 1, mode='edge')[1:5] + np.einsum('ii->i', np.outer(x, x))[:4]
         + np.take_along_axis(m, ORDER, axis=1).ravel()[:4]
         + np.repeat(x[:2], [3, 1]) + np.tile(np.flip(x[:2]), 2) * np.roll(x, 2)[:4])
    return np.sum(np.sin(y) * np.einsum('i,i->i', y, np.kron(x[:2], x[4:])))


def test_hessian_against_differences_of_the_gradient():
    x = RNG.normal(size=6)
    h = astad.hessian(second_order)(x, IDX)
    g = astad.grad(second_order)
    eps = 1e-6
    fd = np.stack([(g(x + eps * e, IDX) - g(x - eps * e, IDX)) / (2 * eps) for e in np.eye(6)], axis=1)
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)
    check(second_order, x, IDX)


def fresh_tile_updated(x):
    y = np.tile(x, 2)
    y += 1.0
    return np.sum(y * y)


def test_update_of_a_fresh_result_and_refused_update_of_a_view(tmp_path):
    check(fresh_tile_updated, V3)
    fn = load_program("import numpy as np\n\ndef f(x):\n    y = np.flip(x)\n    y += 1.0\n    return np.sum(y * x)\n",
                      tmp_path).f
    with pytest.raises(astad.UnsupportedSyntaxError, match="in place"):
        astad.reverse(fn)(V3)
