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
