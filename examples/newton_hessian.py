"""Newton's method with exact Hessians from astad: fit an L2-regularised
logistic regression, a strictly convex loss, so Newton's method converges
quadratically (the gradient's norm roughly squares at each step).
``astad.grad`` gives the gradient (reverse mode) and ``astad.hessian`` the
Hessian (forward mode over reverse mode).  Run: python examples/newton_hessian.py"""

import numpy as np

import astad


def loss(w, X, y):
    margins = y * (X @ w)
    return np.mean(np.log(1.0 + np.exp(-margins))) + 0.05 * np.sum(w * w)


def newton(w, X, y, tol=1e-12, max_steps=20):
    """Newton's method from w; returns the minimiser and the gradient norms on the way."""
    grad, hessian = astad.grad(loss), astad.hessian(loss)
    norms = []
    for _ in range(max_steps):
        g = grad(w, X, y)
        norms.append(float(np.linalg.norm(g)))
        print(f"step {len(norms) - 1}  loss {loss(w, X, y):.12f}  |gradient| {norms[-1]:.3e}")
        if norms[-1] < tol:
            break
        w = w - np.linalg.solve(hessian(w, X, y), g)
    return w, norms


def main() -> None:
    rng = np.random.default_rng(0)
    n, d = 500, 10
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 0.5 * rng.normal(size=n) > 0, 1.0, -1.0)
    w, norms = newton(np.zeros(d), X, y)
    assert norms[-1] < 1e-12 and len(norms) <= 10, norms
    # quadratic convergence: once the error is small, each step about squares it
    assert any(b < 10 * a * a for a, b in zip(norms, norms[1:]) if a < 1e-2), norms

    # The Hessian is symmetric, positive definite, and the derivative of the gradient
    H = astad.hessian(loss)(w, X, y)
    grad = astad.grad(loss)
    eps = 1e-6
    fd = np.stack([(grad(w + eps * e, X, y) - grad(w - eps * e, X, y)) / (2 * eps) for e in np.eye(d)])
    assert np.allclose(H, H.T, rtol=1e-12, atol=1e-14)
    assert np.all(np.linalg.eigvalsh(H) > 0)
    assert np.allclose(H, fd, rtol=1e-6, atol=1e-8), np.max(np.abs(H - fd))
    print(f"\nconverged in {len(norms) - 1} Newton steps; w[:3] = {np.round(w[:3], 6)}")
    print(f"Hessian vs finite differences of the gradient: max difference {np.max(np.abs(H - fd)):.1e}")


if __name__ == "__main__":
    main()
