"""``.source`` of grad and value_and_grad shows the code the last call ran: the
reverse derivative at its arguments' types, or (one Python-float argument of a
scalar function) the forward-mode JVP; derived callables shown as one IR
program say so.  The shown code is checked by running it (central differences)."""

import numpy as np
from hypothesis import given, settings, strategies as st

import astad
from conftest import central_differences


def poly(x):
    return x * x * 3.0 + np.sin(x)


def summed(x):
    return np.sum(x * x * 3.0 + np.sin(x))


def weighted(x):
    return np.sum(np.sin(x) * x)


def two(x, y):
    return np.sum(np.sin(x) * y) + x[0] * y[1]


def _run(source):
    scope = {}
    exec(compile(source, "<shown>", "exec"), scope)
    return scope


def _without_note(shown, reference):
    """The shown source less the comment lines astad added to the reference, which are returned too."""
    ref = set(reference.splitlines())
    note = [line for line in shown.splitlines() if line not in ref]
    return "".join(line + "\n" for line in shown.splitlines() if line not in note), note


def _no_forward_labels(source):
    assert "Forward mode of" not in source and "tapes record both" not in source
    assert "their tangents" not in source


def test_grad_of_arrays_shows_the_reverse_derivative():
    x = np.array([0.3, -1.2, 2.0])
    g = astad.grad(weighted)
    g(x)
    shown = g.source
    reference = astad.reverse(weighted).transform(x).source
    rest, note = _without_note(shown, reference)
    assert rest == reference
    assert len(note) == 2 and all(line.startswith("# astad.grad(weighted) runs this") or line.startswith("# ")
                                  for line in note)
    assert "weighted_backward(residuals, 1.0)" in note[0] and "`x`" in note[1] and "gradient" in note[1]
    _no_forward_labels(shown)
    scope = _run(shown)
    value, residuals = scope["weighted_forward"](x)
    ct = scope["weighted_backward"](residuals, 1.0)[0]
    assert value == weighted(x)
    np.testing.assert_allclose(ct, central_differences(weighted, x), rtol=1e-7, atol=1e-9)
    assert g.source_for(x) == shown
    assert f"```python\n{shown}" in g._repr_markdown_()
    assert g.ir("core") == astad.reverse(weighted).ir("core", x)


@settings(max_examples=15, deadline=None)
@given(st.floats(-3, 3), st.integers(0, 1))
def test_shown_reverse_code_of_two_arguments_runs_to_the_gradient(shift, argnum):
    x = np.array([0.3, -1.2, 2.0]) + shift
    y = np.array([1.5, 0.5, -2.0])
    vg = astad.value_and_grad(two, argnums=argnum)
    value, grad = vg(x, y)
    shown = vg.source
    assert "value_and_grad(two)" in shown and ("`x`" if argnum == 0 else "`y`") in shown and "value" in shown
    _no_forward_labels(shown)
    scope = _run(shown)
    v, residuals = scope["two_forward"](x, y)
    ct = scope["two_backward"](residuals, 1.0)[argnum]
    assert v == value
    args = [x, y]

    def along(a):
        return two(*[a if i == argnum else args[i] for i in range(2)])
    np.testing.assert_allclose(ct, central_differences(along, args[argnum]), rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(ct, grad, rtol=1e-12, atol=1e-12)


@settings(max_examples=15, deadline=None)
@given(st.floats(-4, 4))
def test_grad_of_a_python_float_shows_the_forward_mode_jvp(x):
    g = astad.grad(poly)
    d = g(x)
    shown = g.source
    assert "def poly_jvp(x, x_t):" in shown and "x_t = 1.0" in shown and "derivative" in shown
    assert "poly_forward" not in shown and "poly_backward" not in shown and "poly_vjp" not in shown
    value, tangent = _run(shown)["poly_jvp"](x, 1.0)
    assert value == poly(x)
    np.testing.assert_allclose(tangent, central_differences(poly, x), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tangent, d, rtol=1e-13, atol=1e-13)


def test_the_last_call_decides_what_is_shown():
    g = astad.grad(summed)
    g(1.3)
    assert "def summed_jvp(" in g.source
    g(np.array([1.3, 0.2]))
    assert "def summed_forward(" in g.source and "def summed_jvp(" not in g.source
    g(np.float64(0.5))  # a numpy scalar: reverse mode
    assert g.source == g.source_for(np.float64(0.5)) and "def summed_forward(" in g.source
    assert "def summed_jvp(" in g.source_for(0.5) and "def summed_forward(" in g.source_for(np.ones(2))
    other = astad.grad(summed)  # shares what the calls of grad(summed) found
    assert "def summed_forward(" in other.source


def test_programs_of_derived_callables_are_labelled_as_programs():
    x = np.array([0.3, -1.2])
    for derived, title in [(astad.grad(astad.grad(poly)), "grad(grad(poly)), as one program"),
                           (astad.hessian(weighted), "hessian(weighted)"),
                           (astad.jacfwd(poly), "jacfwd(poly), the program of one column"),
                           (astad.jacrev(poly), "jacrev(poly), the program of one row"),
                           (astad.jacobian(poly), "jacobian(poly), the program of one column")]:
        derived(1.3 if title.startswith("grad(grad") else x)
        shown = derived.source
        assert shown.startswith(f"# {title}"), shown
        _no_forward_labels(shown)
        assert "no tangents" in shown
        _run(shown)  # it compiles
    gg = astad.grad(astad.grad(poly))
    gg(0.7)
    scope = _run(gg.source)
    (value, tangent), _ = scope["poly_vjp_vjp_backward"](scope["poly_vjp_vjp_forward"](0.7, 1.0, 1.0, None)[1], None)
    np.testing.assert_allclose(tangent[0], central_differences(astad.grad(poly), 0.7), rtol=1e-6)
