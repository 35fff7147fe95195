"""Recursion whose depth is known only when running (issue 11, point 6): a
linear recursion is lowered as a descent loop, its base case and an ascent
loop (astad/frontend/recursion.py).  Gradients and JVPs against central
finite differences (float64); what is not linear is refused with the reason."""

from __future__ import annotations

import numpy as np
import pytest

import astad


def halving(x, n):
    if n <= 0:
        return x
    y = x * 0.5
    return np.sin(halving(y, n - 1)) + y


def halving_sum(x, n):
    return np.sum(halving(x, n))  # the recursive function called from another


def else_form(x, n):
    if n == 0:
        return x * x
    else:
        return np.cos(else_form(x, n - 1)) * x


def flipped(x, n):
    if n > 0:
        y = x + 1.0
        r = flipped(y * 0.5, n - 1)
        z = r * y
        return z + np.sin(x)
    return np.tanh(x)


def two_bases(x, n):
    if n <= 0:
        return x
    if n == 1:
        return np.sin(x)
    return two_bases(x * 1.1, n - 2) + x


def tail(x, n, acc):
    if n == 0:
        return acc
    return tail(x, n - 1, acc=acc + np.sin(x * n))


def colliding(x, n):
    """Names like the ones the rewrite makes: they stay the user's."""
    if n <= 0:
        return x
    depth = x * 0.9
    level = depth + 1.0
    colliding_result = level * x
    return colliding(depth, n - 1) * colliding_result


def shrinking(x, n):
    """Shapes change at each call until the slice is empty: then the depth is a run-time int."""
    if n <= 0:
        return np.sum(x * x)
    return shrinking(x[1:], n - 1) + np.sum(np.sin(x))


def pair(x, n):
    if n <= 0:
        return x, x * x
    a, b = pair(x * 0.8, n - 1)
    return a + np.sin(b), b * 0.5


def pair_loss(x, n):
    a, b = pair(x, n)
    return np.sum(a * b)


def _fd(f, x, rest, eps=1e-6):
    x = np.asarray(x, dtype=float)
    out = np.zeros(x.shape)
    for i in np.ndindex(x.shape):
        e = np.zeros(x.shape)
        e[i] = eps
        out[i] = (np.sum(f(x + e, *rest)) - np.sum(f(x - e, *rest))) / (2 * eps)
    return out


CASES = [(halving_sum, np.array([0.3, -0.7]), ()), (else_form, 0.4, ()), (flipped, 0.3, ()), (two_bases, 0.7, ()),
         (tail, 0.6, (0.25,)), (colliding, 0.8, ()), (shrinking, np.array([0.2, -0.4, 0.9]), ()),
         (pair_loss, np.array([0.5, -0.3]), ())]


@pytest.mark.parametrize("f, x, extra", CASES, ids=[c[0].__name__ for c in CASES])
@pytest.mark.parametrize("n", [0, 1, 2, 5])
def test_gradient_and_tangent_match_finite_differences(f, x, extra, n):
    args = (x, n, *extra)
    grad = astad.grad(f)(*args)
    ref = _fd(f, x, (n, *extra))
    np.testing.assert_allclose(grad, ref, rtol=1e-6, atol=1e-8)
    v = np.linspace(0.5, 1.5, np.size(x)).reshape(np.shape(x)) if np.ndim(x) else 0.7
    value, tangent = astad.jvp(f, args, (v, None) + (None,) * len(extra))
    assert value == pytest.approx(f(*args), rel=1e-12)
    assert tangent == pytest.approx(float(np.sum(ref * v)), rel=1e-6, abs=1e-8)


def test_hessian_vector_product_of_a_run_time_depth():
    x, v = np.array([0.3, -0.7]), np.array([1.0, 0.5])
    hv = astad.hvp(halving_sum, (x, 4), (v, None))[0]
    g = astad.grad(halving_sum)
    np.testing.assert_allclose(hv, (g(x + 1e-5 * v, 4) - g(x - 1e-5 * v, 4)) / 2e-5, rtol=1e-6, atol=1e-8)


def test_a_deep_recursion_runs_as_loops():
    x = np.array([0.3, -0.7])
    grad = astad.grad(halving_sum)(x, 5000)  # Python itself stops at its recursion limit (1000)
    np.testing.assert_allclose(grad, astad.grad(halving_sum)(x, 60), rtol=1e-12)  # 0.5**60: the same to float64


def test_the_generated_code_is_two_loops_with_the_users_names():
    r = astad.reverse(flipped)
    r(0.3, 3)
    assert "while " in r.source and "for level in range(" in r.source and "y_levels" in r.source


def tree(x, n):
    if n <= 0:
        return x
    return tree(x, n - 1) + tree(x * 0.5, n - 1)


def in_a_loop(x, n):
    if n <= 0:
        return x
    total = 0.0
    for i in range(2):
        total = total + in_a_loop(x, n - 1)
    return total


def conditional(x, n):
    if n <= 0:
        return x
    return x if n > 7 else conditional(x, n - 1) * 0.5


def ping(x, n):
    if n <= 0:
        return x
    return pong(x, n - 1) * 2.0


def pong(x, n):
    return ping(x + 1.0, n)


@pytest.mark.parametrize("f, why", [(tree, "two recursive calls"), (in_a_loop, "a loop"), (conditional, "a conditional expression"),
                                    (ping, "a mutual recursion")])
def test_what_is_not_a_linear_recursion_is_refused_with_the_reason(f, why):
    with pytest.raises(astad.UnsupportedSyntaxError) as info:
        astad.grad(f)(0.5, 3)
    text = str(info.value)
    assert why in text and "test_recursion_runtime_depth.py" in text and "^" in text
