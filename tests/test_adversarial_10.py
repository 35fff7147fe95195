"""Adversarial cases of the tenth round (helper a8): what the session's changes added (0-d array
arguments' derivatives, ``list(xs)``, ``+x``, ``enumerate(x, start)``/``reversed``, ``is None``, loops
over what their body updates).  The oracle is plain Python and central finite differences in float64
(``conftest.check_correct_or_refused``), never astad's own output.  Each section names what astad did
before its fix."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

import astad
from conftest import central_differences, check_correct_or_refused


# -- 0-d arrays inside structures ---------------------------------------------------------------------
# grad/vjp/value_and_grad/hvp of a 0-d array argument give a 0-d array (as JAX), but one inside a tuple,
# list, dict or NamedTuple gave a numpy scalar (np.float64), and vjp(grad(f), x) of a 0-d x too.


class Pair(NamedTuple):
    a: np.ndarray
    b: np.ndarray


def of_a_tree(t):
    return t["a"] * t["b"][0] * 1.1 + np.sum(t["b"][1] * t["b"][0]) + np.sin(t["a"])


def of_a_pair(p):
    return p.a * p.a * p.b + np.sin(p.b)


def of_a_list(xs):
    return xs[0] * xs[0] * xs[1]


def cube(x):
    return x * x * x + np.sin(x)


def test_zero_d_arrays_inside_structures_get_zero_d_arrays():
    a, b, v = np.array(0.5), np.array(2.0), np.array([1.0, -2.0, 0.5])
    tree = {"a": a, "b": (b, v)}
    g = astad.grad(of_a_tree)(tree)
    assert type(g["a"]) is np.ndarray and g["a"].shape == () and type(g["b"][0]) is np.ndarray
    np.testing.assert_allclose(g["a"], central_differences(lambda s: of_a_tree({"a": s, "b": (b, v)}), a))
    np.testing.assert_allclose(g["b"][0], central_differences(lambda s: of_a_tree({"a": a, "b": (s, v)}), b))
    np.testing.assert_allclose(g["b"][1], central_differences(lambda s: of_a_tree({"a": a, "b": (b, s)}), v))
    _, pullback = astad.vjp(of_a_tree, tree)
    (c,) = pullback(1.0)
    assert type(c["a"]) is np.ndarray and type(c["b"][0]) is np.ndarray
    np.testing.assert_allclose(c["b"][0], g["b"][0])
    _, (ga, gb) = astad.value_and_grad(of_a_pair)(Pair(a, b))
    assert type(ga) is np.ndarray and ga.shape == () and type(gb) is np.ndarray
    np.testing.assert_allclose(gb, central_differences(lambda s: of_a_pair(Pair(a, s)), b))
    g = astad.grad(of_a_list)([a, 2.0])  # a list: the 0-d array's a 0-d array, the float's a float
    assert type(g) is list and type(g[0]) is np.ndarray and type(g[1]) is float
    (hv,) = astad.hvp(of_a_pair, (Pair(a, b),), (Pair(np.array(1.0), np.array(0.0)),))
    assert type(hv.a) is np.ndarray and type(hv.b) is np.ndarray
    np.testing.assert_allclose(hv.a, central_differences(lambda s: astad.grad(of_a_pair)(Pair(s, b)).a, a), rtol=1e-6)
    (h,) = astad.vjp(astad.grad(cube), a)[1](np.array(1.0))  # reverse over reverse
    assert type(h) is np.ndarray and h.shape == ()
    np.testing.assert_allclose(h, 6 * 0.5 - np.sin(0.5))


# -- an empty comprehension summed -------------------------------------------------------------------
# The IR interpreter (the oracle's check of every stage) stacked a run-time list with np.stack, which
# raises for an empty one; generated code makes it with np.array (an empty array).  So a program
# summing an empty comprehension (``reversed(range(a, b, -1))`` with a <= b) failed the oracle with a
# ValueError, though astad's value and derivative were Python's.


def summed_comprehension(x, a, b):
    return sum([x[i % 4] * i for i in reversed(range(a, b, -1))]) + sum([x[i % 4] for i in range(a, b)]) + 0.0


def test_an_empty_comprehension_summed():
    x = np.array([0.3, -0.7, 1.1, 0.5])
    for a, b in ((1, 1), (3, 1), (1, 3), (-2, 2)):
        check_correct_or_refused(summed_comprehension, [x, a, b])  # every IR stage interpreted too


# -- an empty run-time list of arrays stacked ---------------------------------------------------------
# astad types np.array(acc) of a list of arrays of shape (4,) as (n, 4); numpy's np.array of an empty
# list has shape (0,), so the pullback of np.sum(np.array(acc), axis=0) * x crashed with numpy's
# ValueError ("input operand has more dimensions than allowed by the axis remapping") when the loop
# appended nothing.  Generated code (and the IR interpreter) make it (0, 4), as typed.


def summed_rows(x, a, b):
    acc = []
    for i in range(a, b):
        acc.append(x * i)
    return np.sum(np.array(acc), axis=0) * x + np.sum(np.array([x * i for i in range(b, a)]), axis=0)


def test_an_empty_list_of_arrays_stacked():
    x = np.array([0.3, -0.7, 1.1, 0.5])
    for a, b in ((1, 1), (1, 3), (3, 1)):
        value, pullback = astad.reverse(summed_rows)(x, a, b)
        np.testing.assert_allclose(value, summed_rows(x, a, b))
        u = np.array([1.0, -2.0, 0.5, 3.0])
        (got, _, _) = pullback(u)
        np.testing.assert_allclose(got, central_differences(lambda s: u @ summed_rows(s, a, b), x), atol=1e-7)
        check_correct_or_refused(summed_rows, [x, a, b])  # every IR stage interpreted too
