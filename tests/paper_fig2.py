"""The program of CHAD's Fig. 2 (b), in Python: a closure mapped over an array, then summed."""


def fig2(x1, x2):
    f = lambda x2i: x1 * x2i  # noqa: E731
    ys = map(f, x2)
    w = sum(ys)
    return w
