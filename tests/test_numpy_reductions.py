"""numpy's reductions, scans and orderings, and the array methods matching them,
in user programs with numpy's keyword arguments (``axis``, ``keepdims``,
``ddof``, ``weights``, ``n``, ``offset``/``axis1``/``axis2``): reverse mode
against central finite differences in float64 (``check_grad``), forward mode
against them too and against reverse mode (``<u, J v> == <J^T u, v>``,
``check_forward``), on several shapes; the exact derivative of ``cumprod`` at
zeros (also its Hessian); the stable logsumexp pattern; the nans of
``nansum``/``nanmean`` get a zero cotangent; discrete results have none; what
is refused is refused with a hint."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from conftest import check_grad, fuzz_examples, load_program
from forward_oracle import check_forward


# --------------------------------------------------------------------------- programs


def variances(x):
    return (np.var(x) + np.sum(np.var(x, axis=0, ddof=1)) + np.sum(np.std(x, axis=1, keepdims=True) * x)
            + x.var(ddof=1) + np.sum(x.std(axis=-1)))


def variances_3d(x):
    return np.sum(np.var(x, axis=(0, 2), ddof=1) * np.std(x, axis=(1, 2), keepdims=True)) + np.std(x, ddof=2)


def averages(x, w, v):
    return (np.sum(np.average(x, axis=1, weights=w)) + np.average(x, weights=v)
            + np.sum(np.average(x, axis=0, keepdims=True) * x) + np.sum(np.average(x, axis=0, weights=v[:, 0])))


def cumulative(x):
    return (np.sum(np.sin(np.cumsum(x, axis=0)) * np.cumprod(x, axis=1)) + np.sum(np.cumprod(x) ** 2)
            + np.sum(x.cumsum(axis=-1) * x.cumprod(axis=0)) + np.sum(np.cumsum(x) * np.arange(12.0)))


def differences(x):
    return (np.sum(np.diff(x) ** 2) + np.sum(np.diff(x, n=2, axis=0) * np.diff(x, axis=0)[1:])
            + np.sum(np.cos(np.diff(x, n=0))) + np.sum(np.diff(x, n=3, axis=-1) ** 3))


def traces(x3, m):
    return np.trace(m) + np.sum(np.trace(x3, offset=1, axis1=0, axis2=2) ** 2) + m.trace(offset=-1) * np.trace(m.T, 1)


def extremes(x):
    return np.sum(np.ptp(x, axis=0)) + np.nanmax(x) - np.sum(np.nanmin(x, axis=1)) * np.ptp(x, keepdims=True)[0, 0]


def nan_reductions(x, w):
    return np.nansum(x) + np.sum(np.nanmean(x, axis=0) * w) + np.sum(np.nansum(x, axis=1, keepdims=True) ** 2)


def logsumexp(x):
    m = np.max(x)
    return m + np.log(np.sum(np.exp(x - m)))


def logsumexp_rows(x):
    m = np.max(x, axis=1, keepdims=True)
    return m[:, 0] + np.log(np.sum(np.exp(x - m), axis=1))


def sorting(x):
    s = np.sort(x)
    t = np.sort(x, axis=0)
    u = np.sort(x, axis=None)
    return np.sum(s * np.arange(4.0)) + np.sum(t[0] * t[-1]) + np.sum(u[:5] ** 2) + np.sum(np.sort(x[0]) * x[1])


def orderings(x):
    i = np.argmax(x)
    j = np.argmin(x[:, 0])
    k = np.argsort(x, axis=1)
    n = np.count_nonzero(x > 0) + np.count_nonzero(x > 0, axis=0)[0]
    total = x.ravel()[i] * 2.0 + x[j, 1] + np.sum(x) * np.sum(k) + n * x[0, 0] + np.sum(x.argmax(axis=0) * x[0])
    if np.all(x > -5.0) and not np.any(x > 5.0, axis=0)[0]:
        total = total + x.argmin() * x[1, 1]
    return total


def conversions(x):
    n = x.astype(int)
    z = np.zeros(3, dtype=x.dtype)
    return (np.sum(x.astype(np.float64) * n) + x[:1, :1].item() * x[1, 2] + np.sum(x.real * x) + np.sum(z)
            + np.sum(x[:1].squeeze() * x[:, :1].squeeze(axis=1)[:1]) + np.sum(x.clip(-0.5, 0.5))
            + np.sum(x.clip(min=0.0) * x.clip(max=0.2)) + x[0:1, 1].item())


def medians(x):
    return (np.median(x) + np.sum(np.median(x, axis=0) ** 2) + np.sum(np.median(x, axis=1, keepdims=True) * x)
            + np.sum(np.median(x, keepdims=True)) * np.median(x[:, :3], axis=-1)[0])


def cumprod_weighted(x, w):
    return np.sum(np.cumprod(x, axis=-1) * w) + np.sum(np.cumprod(x, axis=0))


def cumprod_1d(x):
    return np.sum(np.cumprod(x) * np.arange(1.0, 5.0))


def second_order(x):
    y = np.cumprod(x[:4]) + np.cumsum(x[1:], axis=0) * np.sort(x)[:4]
    return (np.var(x, ddof=1) * np.std(x) + np.sum(np.diff(x, n=2) ** 3) + np.sum(y * y)
            + np.average(x, weights=np.arange(1.0, 6.0)) ** 2 + np.trace(np.outer(x, x), offset=1) ** 2
            + np.nanmean(x * x) * np.ptp(x) + logsumexp(x * x))


def large(x):
    return (np.sum(np.cumsum(x, axis=0) * np.sin(x)) + np.sum(np.sort(x, axis=1) ** 2)
            + np.sum(np.cumprod(x * 0.1 + 1.0, axis=1)) + np.sum(np.diff(x, axis=0) ** 2) + np.sum(np.std(x, axis=0)))


def to_float32(x):
    return np.sum(x.astype(np.float32) * 2.0)


rng = np.random.default_rng(11)
R = lambda *shape: rng.standard_normal(shape)  # noqa: E731
POS = lambda *shape: rng.uniform(0.5, 2.0, shape)  # noqa: E731
WITH_NANS = np.array([[0.3, np.nan, -1.2], [np.nan, 0.7, 2.0], [1.1, -0.4, np.nan], [0.5, 0.9, -0.8]])
ZEROS = np.array([[1.5, 0.0, 2.0, -1.0], [0.0, 0.0, 3.0, 0.5], [0.7, -1.3, 0.0, 2.0]])

PROGRAMS = [
    pytest.param(variances, (R(3, 4),), id="var-std-2d"),
    pytest.param(variances, (R(5, 2),), id="var-std-tall"),
    pytest.param(variances_3d, (R(2, 3, 4),), id="var-std-3d"),
    pytest.param(averages, (R(3, 4), POS(4), POS(3, 4)), id="average"),
    pytest.param(cumulative, (R(3, 4),), id="cumsum-cumprod"),
    pytest.param(cumulative, (R(4, 3) * 0 + ZEROS.T,), id="cumsum-cumprod-zeros"),
    pytest.param(differences, (R(4, 5),), id="diff"),
    pytest.param(traces, (R(3, 2, 4), R(3, 4)), id="trace"),
    pytest.param(extremes, (R(3, 4),), id="ptp-nanmax-nanmin"),
    pytest.param(nan_reductions, (R(4, 3), R(3)), id="nansum-nanmean"),
    pytest.param(nan_reductions, (WITH_NANS, R(3)), id="nansum-nanmean-nans"),
    pytest.param(logsumexp, (R(5),), id="logsumexp"),
    pytest.param(logsumexp_rows, (R(3, 4),), id="logsumexp-rows"),
    pytest.param(sorting, (R(3, 4),), id="sort"),
    pytest.param(orderings, (R(3, 4),), id="argmax-argmin-argsort-all-any-count"),
    pytest.param(conversions, (R(3, 4) * 3,), id="methods"),
    pytest.param(cumprod_weighted, (ZEROS, R(3, 4)), id="cumprod-at-zeros"),
    pytest.param(cumprod_1d, (np.array([2.0, 0.0, -1.5, 0.5]),), id="cumprod-1d-zero"),
    pytest.param(second_order, (R(5),), id="mixed"),
    pytest.param(medians, (R(4, 5),), id="median-even-odd"),
    pytest.param(medians, (R(3, 4),), id="median-odd-even"),
]


@pytest.mark.parametrize("fn, args", PROGRAMS)
def test_reverse_mode_matches_finite_differences(fn, args):
    check_grad(fn, [np.array(a) for a in args])


@pytest.mark.parametrize("fn, args", PROGRAMS)
@settings(max_examples=3, deadline=None)
@given(data=st.data())
def test_forward_mode_matches_finite_differences_and_reverse_mode(fn, args, data):
    check_forward(fn, [np.array(a) for a in args], data)


# --------------------------------------------------------------------------- exact values


def test_large_arrays_along_a_direction():
    """80 x 60 (the derivative code updates its large temporaries in place): <grad, v> and the JVP
    against the central difference along v."""
    x, v = R(80, 60), R(80, 60)
    eps = 1e-6
    fd = (large(x + eps * v) - large(x - eps * v)) / (2 * eps)
    g = astad.grad(large)(x)
    _, jv = astad.jvp(large, (x,), (v,))
    np.testing.assert_allclose([np.sum(g * v), jv], [fd, fd], rtol=1e-6)


def test_the_nans_get_a_zero_cotangent():
    w = np.array([1.0, -2.0, 0.5])
    g = astad.grad(nan_reductions)(WITH_NANS, w)
    assert np.all(np.isfinite(g))
    assert np.all(g[np.isnan(WITH_NANS)] == 0.0)


def test_cumprod_derivative_is_exact_at_zeros():
    """d/dx_k sum_i w_i prod_{j<=i} x_j written out; the Hessian against differences of the gradient."""
    x = np.array([2.0, 0.0, -1.5, 0.0])
    g = astad.grad(cumprod_1d)(x)
    w = np.arange(1.0, 5.0)
    want = [sum(w[i] * np.prod([x[j] for j in range(i + 1) if j != k]) for i in range(k, 4)) for k in range(4)]
    np.testing.assert_allclose(g, want, rtol=0, atol=1e-15)
    h = astad.hessian(cumprod_1d)(x)
    eps = 1e-6
    fd = np.array([(astad.grad(cumprod_1d)(x + eps * e) - astad.grad(cumprod_1d)(x - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(h, fd, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(h, h.T, atol=1e-14)


def test_hessian_matches_differences_of_the_gradient():
    """Forward over reverse through every rule above (and the ones their derivatives are made of)."""
    x = np.array([0.7, -1.2, 0.4, 1.9, -0.3])
    h = astad.hessian(second_order)(x)
    eps = 1e-6
    grad = astad.grad(second_order)
    fd = np.array([(grad(x + eps * e) - grad(x - eps * e)) / (2 * eps) for e in np.eye(5)])
    np.testing.assert_allclose(h, fd, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(h, h.T, rtol=1e-10, atol=1e-12)


def test_median_is_nan_where_numpy_says_so():
    x = np.array([[0.5, np.nan, 1.0], [2.0, -1.0, 0.25]])
    value, pullback = astad.reverse(median_rows)(x)
    np.testing.assert_array_equal(value, np.median(x, axis=1))
    assert np.isnan(value[0]) and pullback(np.ones(2))[0][1].tolist() == [0.0, 0.0, 1.0]


def median_rows(x):
    return np.median(x, axis=1)


def test_logsumexp_pattern_is_stable_and_gives_the_softmax():
    x = np.array([1000.0, 1001.0, 999.5, 1000.2])
    value, g = astad.value_and_grad(logsumexp)(x)
    soft = np.exp(x - x.max()) / np.sum(np.exp(x - x.max()))
    assert np.isfinite(value) and abs(value - (1000.0 + np.log(np.sum(np.exp(x - 1000.0))))) < 1e-12
    np.testing.assert_allclose(g, soft, rtol=1e-12)
    _, tangent = astad.jvp(logsumexp, (x,), (np.ones(4),))
    np.testing.assert_allclose(tangent, 1.0, rtol=1e-12)  # softmax sums to one


def test_sort_sends_the_cotangent_back_through_the_permutation():
    x = np.array([[0.3, -1.0, 2.0], [1.5, 0.1, -0.2]])
    _, pullback = astad.reverse(lambda_free_sort)(x)
    ct = np.arange(6.0).reshape(2, 3)
    back = pullback(ct)[0]
    order = np.argsort(x, axis=1)
    want = np.zeros_like(x)
    np.put_along_axis(want, order, ct, axis=1)
    np.testing.assert_array_equal(back, want)


def lambda_free_sort(x):
    return np.sort(x, axis=1)


def test_astype_float32_keeps_the_dtype_and_casts_the_cotangent_back():
    x = np.array([0.5, -1.25, 2.0])
    value, pullback = astad.reverse(to_float32)(x)
    assert value.dtype == np.float32
    (ct,) = pullback(np.float32(1.0))
    assert ct.dtype == np.float64
    np.testing.assert_array_equal(ct, 2.0)


def item_of_float32(x):
    return x[:1].item() * 2.0 + x.astype(np.float64)[1] * 3.0


def test_item_of_float32_gives_a_python_float_and_float32_cotangents():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    g = astad.grad(item_of_float32)(x)
    assert g.dtype == np.float32
    np.testing.assert_array_equal(g, [2.0, 3.0, 0.0])
    value, tangent = astad.jvp(item_of_float32, (x,), (np.array([1.0, 0.5, 4.0], dtype=np.float32),))
    assert value == 8.0 and tangent == 3.5


def test_discrete_results_have_no_tangent():
    x = R(3, 4)
    value, tangent = astad.jvp(argmax_only, (x,), (np.ones((3, 4)),))
    np.testing.assert_array_equal(value, np.argmax(x, axis=0))
    assert tangent is None or not np.any(tangent)


def argmax_only(x):
    return np.argmax(x, axis=0)


# --------------------------------------------------------------------------- refused, with a hint


def sorts_in_place(x):
    x.sort()
    return np.sum(x)


def method_ptp(x):
    return x.ptp()


def average_returned(x, w):
    return np.average(x, weights=w, returned=True)


def cumsum_dtype(x):
    return np.sum(np.cumsum(x, dtype=np.float32))


def diff_prepend(x):
    return np.sum(np.diff(x, prepend=np.zeros((1, 1))))  # (prepend=0.0 is accepted: tests/test_numpy_masked.py)


def item_of_many(x):
    return x.item() * 2.0


def average_misshapen(x, w):
    return np.average(x, weights=w)


def trace_of_a_vector(x):
    return np.trace(x)


def argmax_of_axes(x):
    return x[np.argmax(x, axis=(0, 1))]


@pytest.mark.parametrize("fn, args, hint", [
    (sorts_in_place, (R(3),), "np.sort(x)"),
    (method_ptp, (R(3),), "np.ptp(x)"),
    (average_returned, (R(3), POS(3)), "np.sum(weights)"),
    (cumsum_dtype, (R(3),), ".astype"),
    (diff_prepend, (R(3),), "a number, or an array of a's dimensions"),
    (item_of_many, (R(2),), "x[i, j]"),
    (argmax_of_axes, (R(2, 3),), "one axis"),
    (average_misshapen, (R(2, 3), POS(3)), "axis=k"),
    (average_misshapen, (R(2, 3), POS(1, 3)), "axis=k"),
    (trace_of_a_vector, (R(3),), "at least two dimensions"),
])
def test_refused_with_a_hint(fn, args, hint):
    with pytest.raises(astad.AstadError) as info:
        astad.grad(fn)(*args)
    assert not isinstance(info.value, astad.InternalError)
    assert hint in str(info.value)


# --------------------------------------------------------------------------- random calls


def _axis(draw, ndim, allow_none=True, allow_tuple=False):
    choices = list(range(-ndim, ndim)) + ([None] if allow_none else [])
    axis = draw(st.sampled_from(choices))
    if allow_tuple and ndim > 1 and draw(st.booleans()):
        axis = tuple(sorted(set(draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim)))))
    return axis


def _reduce_kwargs(draw, shape, ddof=False):
    axis = _axis(draw, len(shape), allow_tuple=True)
    kw = {"axis": axis, "keepdims": draw(st.booleans())}
    if ddof:
        axes = range(len(shape)) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
        n = int(np.prod([shape[a] for a in axes]))
        kw["ddof"] = draw(st.integers(0, n - 1))
    return kw


#: how to draw numpy's keyword arguments for each function, given the shape of ``a``
KWARGS = {
    "var": lambda draw, shape: _reduce_kwargs(draw, shape, ddof=True),
    "std": lambda draw, shape: _reduce_kwargs(draw, shape, ddof=True),
    "ptp": lambda draw, shape: _reduce_kwargs(draw, shape),
    "nansum": lambda draw, shape: _reduce_kwargs(draw, shape),
    "nanmean": lambda draw, shape: _reduce_kwargs(draw, shape),
    "nanmax": lambda draw, shape: _reduce_kwargs(draw, shape),
    "average": lambda draw, shape: _reduce_kwargs(draw, shape),
    "median": lambda draw, shape: {"axis": _axis(draw, len(shape)), "keepdims": draw(st.booleans())},
    "cumsum": lambda draw, shape: {"axis": _axis(draw, len(shape))},
    "cumprod": lambda draw, shape: {"axis": _axis(draw, len(shape))},
    "sort": lambda draw, shape: {"axis": _axis(draw, len(shape))},
    "diff": lambda draw, shape: {"n": draw(st.integers(0, 3)), "axis": _axis(draw, len(shape), allow_none=False)},
    "trace": lambda draw, shape: dict(zip(("axis1", "axis2"), draw(st.permutations(range(len(shape))))[:2]),
                                      offset=draw(st.integers(-2, 2))),
}
METHOD_FORM = ("var", "std", "cumsum", "cumprod", "trace")


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("numpy_reductions")


@settings(max_examples=fuzz_examples(15), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_calls_in_both_modes(program_dir, data):
    """A call with keyword arguments drawn from numpy's signature, on a random shape, in both modes."""
    op = data.draw(st.sampled_from(sorted(KWARGS)), label="function")
    shape = tuple(data.draw(st.lists(st.integers(1, 4), min_size=2 if op == "trace" else 1, max_size=3), label="shape"))
    kwargs = KWARGS[op](data.draw, shape)
    text = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
    call = f"x.{op}({text})" if op in METHOD_FORM and data.draw(st.booleans()) else f"np.{op}(x{', ' if text else ''}{text})"
    source = f"import numpy as np\n\n\ndef f(x):\n    return np.sin({call})\n"
    note(source)
    fn = load_program(source, program_dir, "reductions").f
    x = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).standard_normal(shape)
    check_grad(fn, [x])
    check_forward(fn, [x], data)


def _diff_sum(v):
    return np.sum(np.diff(v, n=2))


def _diff_short(x, k):
    return np.sum(np.sin(np.diff(x[:k], n=2)))


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_diff_of_fewer_entries_than_n_has_a_zero_derivative_of_the_input_shape(k):
    """np.diff of fewer than n entries is empty: the cotangent is zeros of x's shape (it had n entries),
    also where the length is known only at run time (x[:k] with k an int parameter)."""
    x = np.linspace(0.1, 0.9, 5)
    grad = astad.grad(_diff_short)(x, k)
    fd = np.array([(_diff_short(x + 1e-6 * e, k) - _diff_short(x - 1e-6 * e, k)) / 2e-6 for e in np.eye(5)])
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-8)
    short = np.full(min(k, 1), 0.3)
    assert astad.grad(_diff_sum)(short).shape == short.shape
