"""Adversarial cases for forward mode, derivatives of derivatives and the API surface (session 9,
helper "advC").  Oracles: central finite differences in float64 and forward against reverse mode,
never astad's own output of the same order.  Each section names what astad did before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import astad


# -- an empty tuple in the output -----------------------------------------------------------------
# ``return ()`` or ``return x, ()`` crashed every transform with "InternalError: codegen: cannot
# materialise a zero of type ()": the simplifier folds an empty tuple (all of whose items are zero)
# to the zero of its type, which codegen could not print.


def returns_empty(x):
    return ()


def returns_pair_with_empty(x):
    return np.sin(x), ()


def returns_nested_empty(x, n):
    return x * x, (n, ())


def test_an_empty_tuple_in_the_output_is_a_value():
    x = 0.7
    assert astad.jvp(returns_empty, (x,), (1.0,))[0] == ()
    assert astad.jacfwd(returns_empty)(x) == ()
    assert astad.jacrev(returns_empty)(x) == ()
    value, tangent = astad.jvp(returns_pair_with_empty, (x,), (1.0,))
    assert value == (np.sin(x), ()) and tangent[0] == pytest.approx(np.cos(x), rel=1e-12)
    assert astad.jacfwd(returns_pair_with_empty)(x)[0] == pytest.approx(np.cos(x), rel=1e-12)
    assert astad.jacrev(returns_pair_with_empty)(x)[0] == pytest.approx(np.cos(x), rel=1e-12)
    assert astad.vjp(returns_pair_with_empty, x)[1]((1.0, ()))[0] == pytest.approx(np.cos(x), rel=1e-12)
    value, tangent = astad.jvp(returns_nested_empty, (x, 3), (1.0, None))
    assert value == (x * x, (3, ())) and tangent[0] == pytest.approx(2 * x, rel=1e-12)
    assert astad.reverse(returns_nested_empty)(x, 3)[1]((1.0, (0, ())))[0] == pytest.approx(2 * x, rel=1e-12)


# -- the command line: modules with side effects, files that are not Python --------------------------
# A module that called sys.exit(3) when imported ended ``astad show-derivative`` with exit status 3 and
# no message (SystemExit is no Exception); what a module printed when imported went to stdout, into
# the code shown; a target file without ``.py`` failed with "cannot import ...: AssertionError: ".


def test_a_module_that_exits_or_prints_when_imported(tmp_path):
    from test_cli import run

    (tmp_path / "exits.py").write_text("print('imported')\nimport sys\ndef f(x: float):\n    return x\nsys.exit(3)\n")
    (tmp_path / "prints.py").write_text("print('imported')\ndef f(x: float):\n    return x * x\n")
    (tmp_path / "noext").write_text("def f(x: float):\n    return x\n")
    proc = run(tmp_path, "show-derivative", "exits:f")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "astad: cannot import exits:f: the module called sys.exit(3) when imported"
    proc = run(tmp_path, "show-derivative", "prints:f")
    assert proc.returncode == 0 and "imported" not in proc.stdout and "def f_backward" in proc.stdout
    proc = run(tmp_path, "show-derivative", f"{tmp_path / 'noext'}:f")
    assert proc.returncode == 2 and proc.stderr.startswith("astad: not a Python file:")


# -- .source of a Jacobian after a call: the user's code is not run at zeros ---------------------------
# ``.source`` (and Jupyter's ``_repr_markdown_``) of ``jacrev(f)``, ``jacobian(f)`` and
# ``jacfwd(jacrev(f))`` after a call ran ``f`` at the remembered arguments, whose arrays are zeros in
# place of the caller's (to know whether the output is one number): a ``while`` loop that ends only
# away from zero never ended; an ``assert`` or a division by zero raised Python's own AssertionError
# or ZeroDivisionError. The output's type now comes from the program's types.


def doubles_until_large(x):
    while np.sum(x) < 10.0:
        x = x * 2.0 + x * x
    return x


def divides_by_the_first(x):  # (no assert here: pytest rewrites the asserts of test modules)
    return np.log(x) * (1.0 / float(x[0]))


@pytest.mark.parametrize("fn", [doubles_until_large, divides_by_the_first])
@pytest.mark.parametrize("make", [astad.jacrev, astad.jacobian, lambda f: astad.jacfwd(astad.jacrev(f))],
                         ids=["jacrev", "jacobian", "jacfwd_jacrev"])
def test_source_after_a_call_does_not_run_the_function_at_zeros(fn, make):
    import threading

    x = np.array([0.5, 0.7])
    d = make(fn)
    got = d(x)
    if make is astad.jacrev:
        columns = [(fn(x + e) - fn(x - e)) / 2e-6 for e in np.eye(2) * 1e-6]
        np.testing.assert_allclose(got, np.stack(columns, axis=-1), rtol=1e-6, atol=1e-6)
    result = {}

    def show():
        result["md"] = d._repr_markdown_()
        try:
            result["text"] = d.source
        except astad.AstadError as e:  # (jacfwd of the jacrev of a vector: not one program)
            result["text"] = e

    thread = threading.Thread(target=show, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), ".source ran the user's while loop at zeros"
    # (jacfwd of the jacrev of a vector is assembled from several programs: it shows the first, session 11)
    assert "def " in result["text"] and "generated code" in result["md"]


# -- .source_for with arguments a call would refuse; .source after a negative argnums ----------------
# ``jacrev(f).source_for(x)`` (f takes two) crashed with Python's "TypeError: f() missing 1 required
# positional argument"; arguments ``.source_for`` refused were remembered, so ``.source`` refused ever
# after; ``hessian(f, argnums=-1)`` (any negative argnums) said it "has not been called yet" after a
# call (its twin counted from the first argument was called, not it).


def product(a, b):
    return np.sum(a * b) * b


def test_source_for_binds_as_a_call_and_forgets_what_it_refused():
    x = np.array([0.5, 0.7])
    for d in (astad.jacrev(product), astad.jacfwd(product), astad.hessian(product)):
        d(x, 2.0)
        shown = d.source
        with pytest.raises(astad.AstadError, match="missing 1 required positional argument: 'b'"):
            d.source_for(x)
        assert d.source == shown


def test_source_after_a_call_with_negative_argnums():
    x = np.array([0.5, 0.7])
    for make in (astad.hessian, astad.jacrev, astad.jacfwd):
        d = make(product, argnums=-1)
        d(x, 2.0)
        shown = d.source
        assert shown == make(product, argnums=1).source_for(x, 2.0)
        with pytest.raises(astad.AstadError):
            d.source_for(x)  # (one argument: -1 would be a)
        assert d.source == shown


# -- jacfwd of an output with a part of no real leaf before a real one ----------------------------------
# Found by the random programs grown with an empty tuple among the outputs: ``jacfwd`` of
# ``return (), 2 * x`` gave a zero Jacobian (a wrong derivative) and of ``return (n, n), 2 * x``
# raised Python's IndexError: forward mode's tangent of such a part is one None, and the Jacobian's
# columns were flattened without the value's structure, shifting the leaves after it.


def empty_first(x):
    return (), x * 2.0, x * 3.0


def ints_first(x, n):
    return (n, [n]), x * 2.0


def test_jacfwd_of_an_output_with_a_part_of_no_real_leaf():
    x = np.array([0.3, 0.5])
    for fn, args in ((empty_first, (x,)), (ints_first, (x, 2))):
        forward, reverse = astad.jacfwd(fn)(*args), astad.jacrev(fn)(*args)
        np.testing.assert_array_equal(forward[1], 2.0 * np.eye(2))
        np.testing.assert_array_equal(reverse[1], 2.0 * np.eye(2))
    assert astad.jacfwd(empty_first)(x)[0] == ()
    np.testing.assert_array_equal(astad.jacfwd(empty_first)(x)[2], 3.0 * np.eye(2))
    assert astad.jacfwd(ints_first)(x, 2)[0] == (None, [None])
