"""Forward over reverse where a loop's tape records a value bound inside a
branch of the loop body: the tape must record its tangent too (once, dead-code
elimination dropped the tangent's binding because only the tape read it, and
the second-order backward pass read an unbound name)."""

from __future__ import annotations

import numpy as np
import pytest

import astad


def taped_branch(x, y, n):
    for i in range(n):
        v4 = x + y
        if np.sum(y) < 0.0:
            x = np.tanh(y.sum())
        else:
            v9 = np.tanh(np.sum(y))  # read only by the condition: its cotangent is zero
            for j in range(n):
                if -1.0 < v9 < 0.2:
                    if y.shape[0] > 3:
                        break
                    v4 = 0.5 * v4 + 0.5 * np.tanh(x * j)
            x += 0.5 * (np.tanh(v4[(i + 1) % 3]) - x)
    return x


def _grad_fd_directional(f, x, y, n, tx, ty, eps=1e-5):
    """Central differences of the gradient along (tx, ty): an oracle for the HVP."""
    g = astad.grad(f, argnums=(0, 1))
    gp, gm = g(x + eps * tx, y + eps * ty, n), g(x - eps * tx, y - eps * ty, n)
    return (gp[0] - gm[0]) / (2 * eps), (gp[1] - gm[1]) / (2 * eps)


@pytest.mark.parametrize("n", [0, 1, 2, 3])
@pytest.mark.parametrize("y", [np.array([0.1, -0.2, 0.4]), np.array([0.05, 0.02, -0.03]), np.array([-0.3, 0.1, -0.2])])
def test_hvp_through_a_tape_saving_branch_values(y, n):
    x, tx, ty = 0.3, 0.7, np.array([1.0, -0.5, 0.25])
    hx, hy, _ = astad.hvp(taped_branch, (x, y, n), (tx, ty, None))
    fx, fy = _grad_fd_directional(taped_branch, x, y, n, tx, ty)
    np.testing.assert_allclose(hx, fx, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(hy, fy, rtol=1e-6, atol=1e-8)


# A random program (test_random_higher) whose second-order forward part folded away an `if` whose
# branch bound the condition of an inner `if` that the backward part reads (an InternalError: the
# generated code read an unbound `t42`).  The fold keeps an `if` that binds a residual.
def folded_condition(x, y, z, n):
    v1 = np.minimum(y, y)
    if n % 2 == 0:
        y *= 0.25
        v2 = np.tanh(np.dot(x, x)) if n > 1 else z
    elif (np.sum(x) <= 0.3) and (y >= z):
        x = np.minimum(z, x) if (x[0] >= 0.0) or (y < 0.0) else -(np.minimum(z, x))
    else:
        v3 = x[1]
        v4, v5 = np.maximum(y, z), v3 ** 2
        if not (n == 0):
            v6 = v1 * z if x[0] < z else 0.5
        elif (x.shape[0] > 3) and (v1 > x[0]):
            acc7 = []
        elif n >= 2:
            v8 = x[1]
            v9 = np.sqrt(y * y + 1.0) if (n >= 2) or (x.shape[0] > 3) else v4
            acc10 = [x, np.ones((3,)) * np.tanh(np.sum(v1))]
        else:
            v11 = 0.0
            acc12 = [x, x]
            for i in range(x.shape[0]):
                v5 = np.tanh(x[-1 - i % 3] * (i + 1.0)) if y >= 0.0 else v3
                if not (len(acc12) > 1):
                    break
                else:
                    if (i < n - 1) and (n == 0):
                        continue
                v5 = v5 * np.cos(np.tanh(x[i % len(x)] * (i + 1.0)))
                v1 = v1 * np.cos(v4 / (v11 * v11 + 1.0))
                if (np.sum(acc12[len(acc12) - 1]) < 0.0) and (-1.0 < y < 0.2):
                    acc12.append(x)
                v11 = v11 + np.tanh(x[-1 - i % 3])
            v13 = len(acc12)
            v14 = x * x
            v15, v16 = (np.sin(x), np.cos(x))
    return np.sum(x * x)


@pytest.mark.parametrize("n", [0, 1, 3])
def test_hvp_keeps_conditions_the_backward_part_reads(n):
    x, y, z = np.array([0.5, -0.3, 0.8]), 0.4, np.float64(0.1)
    v = (np.array([1.0, -0.5, 0.25]), 0.3, np.float64(-0.7))
    hv = astad.hvp(folded_condition, (x, y, z, n), (*v, None))
    g = astad.grad(folded_condition, argnums=(0, 1, 2))
    eps = 1e-5
    plus = g(x + eps * v[0], y + eps * v[1], z + eps * v[2], n)
    minus = g(x - eps * v[0], y - eps * v[1], z - eps * v[2], n)
    for got, p, m in zip(hv[:3], plus, minus):
        np.testing.assert_allclose(got, (np.asarray(p) - np.asarray(m)) / (2 * eps), rtol=1e-6, atol=1e-8)
