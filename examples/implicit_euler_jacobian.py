"""A stiff ODE by implicit Euler, each step solved by Newton's method with the
Jacobian from ``astad.jacfwd`` (forward mode: one JVP per state variable).

The Van der Pol oscillator y0' = y1, y1' = mu (1 - y0^2) y1 - y0 with mu = 10
is stiff; implicit Euler solves z = y + h f(z) for the next state z at each
step.  Run: python examples/implicit_euler_jacobian.py"""

import numpy as np

import astad


def residual(z, y, h, mu):
    """Zero when z is the implicit Euler step from y."""
    f = np.array([z[1], mu * (1.0 - z[0] * z[0]) * z[1] - z[0]])
    return z - y - h * f


def step(y, h, mu, jacobian, tol=1e-12):
    """One implicit Euler step by Newton's method; returns the new state and the iterations it took."""
    z = y
    for it in range(1, 20):
        dz = np.linalg.solve(jacobian(z, y, h, mu), residual(z, y, h, mu))
        z = z - dz
        if np.max(np.abs(dz)) < tol:
            return z, it
    raise RuntimeError("Newton's method did not converge")


def main() -> None:
    mu, h, steps = 10.0, 0.02, 1000
    jacobian = astad.jacfwd(residual)  # d residual / d z: a 2 x 2 matrix
    y = np.array([2.0, 0.0])
    ys, iterations = [y], []
    for _ in range(steps):
        y, it = step(y, h, mu, jacobian)
        ys.append(y)
        iterations.append(it)
    ys = np.array(ys)
    print(f"{steps} implicit Euler steps of Van der Pol (mu = {mu}, h = {h}), t = {steps * h:g}")
    print(f"Newton iterations per step: mean {np.mean(iterations):.2f}, max {max(iterations)}")
    print(f"y(t_end) = {np.round(ys[-1], 6)}, amplitude over the last half {np.max(np.abs(ys[steps // 2:, 0])):.4f}")

    # every step converged within a few iterations, each state solves its implicit equation
    assert max(iterations) <= 8, iterations
    assert all(np.max(np.abs(residual(ys[i + 1], ys[i], h, mu))) < 1e-10 for i in range(steps))
    # the solution stays near the limit cycle, of amplitude about 2 (implicit Euler damps it a little)
    assert 1.8 < np.max(np.abs(ys[steps // 2:, 0])) < 2.1

    # the Jacobian: forward mode == reverse mode == central finite differences
    z, y0 = ys[-1], ys[-2]
    J = jacobian(z, y0, h, mu)
    eps = 1e-6
    fd = np.stack([(residual(z + eps * e, y0, h, mu) - residual(z - eps * e, y0, h, mu)) / (2 * eps)
                   for e in np.eye(2)], axis=1)
    assert np.allclose(J, astad.jacrev(residual)(z, y0, h, mu), rtol=1e-12, atol=1e-14)
    assert np.allclose(J, fd, rtol=1e-7, atol=1e-9), J - fd
    print(f"Jacobian at the last step:\n{J}\n(forward == reverse mode; vs finite differences {np.max(np.abs(J - fd)):.1e})")


if __name__ == "__main__":
    main()
