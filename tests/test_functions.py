"""Functions as values: lambdas and nested defs that capture variables,
functions passed, returned, stored in tuples and called through variables;
comprehensions (with filters, nested, over ranges, arrays and lists) and
``map``.  A function the IR can hold is a ``lam`` with CHAD's copower
cotangent in the AD stage, folded and inlined by the optimiser; other calls
are inlined where they are made; either way the captured variables' values
are those at the call, as in Python.  Gradients against central finite
differences, every stage against Python."""

import os
from pathlib import Path

import numpy as np
import pytest

import astad
from conftest import check_grad, check_stages
from paper_fig2 import fig2


def closure_map(a, xs):
    g = lambda z: a * np.sin(z) + z * z
    return np.sum(np.array([g(z) for z in xs]))


def nested_def(w, x):
    def layer(h, v):
        return np.tanh(h @ w + v)
    b = x[0]
    h = layer(x, b)
    return np.sum(layer(h @ w.T, b))


def higher_order(x, y):
    def apply_twice(f, v):
        return f(f(v))
    sq = lambda t: t * y
    fs = (sq, lambda t: np.sin(t))
    return np.sum(apply_twice(fs[0], x) + apply_twice(fs[1], x))


def _compose(f, g):
    return lambda v: f(g(v))


def module_level_higher_order(x, c):
    h = _compose(np.tanh, lambda v: v * c)
    return np.sum(h(x))


def comprehension_filters(x, n):
    ys = [x[i] * x[i] for i in range(n) if i % 2 == 0]
    zs = [x[i] * x[j] for i in range(n) for j in range(i)]
    return np.sum(np.stack(ys)) + np.sum(np.array(zs))


def comprehension_over_rows_and_lists(m, v):
    rows = [np.tanh(r * v) for r in m]
    scaled = [r * (k + 1.0) for k, r in enumerate(rows)]
    return np.sum(np.concatenate([np.stack(scaled), np.array([np.sum(r) for r in rows])[:, None]], axis=1))


def via_map(x, c):
    f = lambda v, w: v * w + c
    return np.sum(np.array(list(map(f, x, x[::-1])))) + np.sum(np.stack(list(map(np.tanh, x))))


def returns_a_closure(x):
    def make(k):
        return lambda t: k * t * t
    f = make(x[0])
    return f(x[1]) + make(2.0)(x[2])


def late_binding(x):
    k = x[0]
    f = lambda t: k * t
    k = x[1]  # Python reads k when f is called
    return f(x[2])


def closure_in_a_loop(x, n):
    s = 0.0
    scale = lambda v: v * s + 1.0
    for i in range(n):
        s = s + np.sum(scale(x)) * 0.1
    return s


def generator_expression(x):
    return np.sum(np.stack(list(np.sin(r) for r in x)))


def default_argument(x):
    def f(v, k=2.0):
        return v * k
    return np.sum(f(x) + f(x, 3.0) + f(x, k=0.5))


X = np.array([0.3, -0.7, 1.1, 0.4])
RNG = np.random.default_rng(0)


@pytest.mark.parametrize("fn, args", [
    (closure_map, (1.3, X)), (nested_def, (RNG.standard_normal((4, 4)) * 0.5, RNG.standard_normal((2, 4)))),
    (higher_order, (X, 0.8)), (module_level_higher_order, (X, 0.7)), (comprehension_filters, (X, 4)),
    (comprehension_over_rows_and_lists, (RNG.standard_normal((3, 2)), RNG.standard_normal(2))),
    (via_map, (X, 0.5)), (returns_a_closure, (X,)), (late_binding, (X,)), (closure_in_a_loop, (X, 3)),
    (generator_expression, (X,)), (default_argument, (X,)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_functions_as_values(fn, args):
    check_grad(fn, list(args))
    check_stages(fn, args)


def test_a_comprehension_keeps_its_variables_to_itself():
    def shadow(x):
        i = x * 2.0
        ys = [x * i for i in range(3)]
        return i + ys[2]

    import inspect
    import tempfile
    from conftest import load_program
    mod = load_program("import numpy as np\n\n\n" + inspect.getsource(shadow).replace("    def", "def", 1)
                       .replace("\n    ", "\n"), tempfile.mkdtemp(), "shadow")
    check_grad(mod.shadow, [0.7])
    assert astad.grad(mod.shadow)(0.7) == pytest.approx(4.0)


def recursive_closure(x):
    def f(v, n):
        if n == 0:
            return v
        return f(v * np.cos(v), n - 1)
    return f(x, 3)


def recursive_closure_on_a_value(x):
    def f(v):
        if v > 1.0:
            return f(v / 2.0)
        return v
    return f(x)


def test_recursion_through_a_closure_is_unrolled():
    check_grad(recursive_closure, [0.7])
    check_stages(recursive_closure, (0.7,))


def test_recursion_on_a_run_time_value_is_a_clear_error():
    with pytest.raises(astad.UnsupportedSyntaxError, match="recursive call to f with the same shapes") as e:
        astad.reverse(recursive_closure_on_a_value)(3.0)
    assert "return f(v / 2.0)" in str(e.value)


def factory_late_binding(x):
    def make():
        return lambda t: t + x
    g = make()
    x = x * 3.0  # g reads x when it is called, from f's scope
    return g(1.0)


def stacked_rows_of_run_time_length(y):
    return np.sum(np.stack([r for r in y]) * 2.0)


def in_place_after_capture_by_default(x):
    v = x * 2.0
    g = lambda t, c=v: t * c
    v += 1.0
    return np.sum(g(x))


def in_place_after_capture_by_a_factory(x):
    def make(c):
        return lambda t: t * c
    v = x * 2.0
    g = make(v)
    v += 1.0
    return np.sum(g(x))


def in_place_after_capture_by_name(x):
    v = x * 2.0
    g = lambda t: t * v
    v += 1.0  # g reads v when called: it sees the update, as in Python
    return np.sum(g(x))


@pytest.mark.parametrize("fn, args", [
    (factory_late_binding, (0.5,)), (stacked_rows_of_run_time_length, (np.array([0.2, 0.4, -1.1]),)),
    (in_place_after_capture_by_name, (np.array([0.3, -0.5, 0.9]),)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_functions_read_names_as_python_does(fn, args):
    value, _ = astad.reverse(fn)(*args)
    assert value == pytest.approx(fn(*args))
    check_grad(fn, list(args))
    check_stages(fn, args)


@pytest.mark.parametrize("fn", [in_place_after_capture_by_default, in_place_after_capture_by_a_factory])
def test_updating_in_place_an_array_a_function_holds_is_refused(fn):
    """Python's function would see the update (it holds the same array); astad
    reads `+=` as a new value, so it asks for `v = v + ...` instead."""
    with pytest.raises(astad.UnsupportedSyntaxError, match="a function made earlier holds it"):
        astad.reverse(fn)(np.array([0.3, -0.5, 0.9]))


def comprehension_shadows_a_capture(x):
    g = lambda t: t * x
    return np.sum(np.array([g(1.0) for x in [2.0, 3.0]])) + np.sum(np.stack([g(1.0) for x in [x, x]]))


def in_place_after_a_call_that_made_a_function(x):
    def h(t):
        g = lambda w: w
        return t * 2.0
    v = x * 2.0
    u = h(v)
    v *= 0.5  # nothing that can still be called holds v
    return np.sum(u * v)


@pytest.mark.parametrize("fn, args", [
    (comprehension_shadows_a_capture, (0.5,)), (in_place_after_a_call_that_made_a_function, (np.array([0.3, -0.5, 0.9]),)),
], ids=lambda a: getattr(a, "__name__", ""))
def test_comprehension_scopes_and_functions_that_are_gone(fn, args):
    """A comprehension's variables are its own (a function it calls reads the
    enclosing function's); an array is free to update once the functions that
    held it can no longer be called."""
    value, _ = astad.reverse(fn)(*args)
    assert value == pytest.approx(fn(*args))
    check_grad(fn, list(args))
    check_stages(fn, args)


# --------------------------------------------------------------------------- CHAD's function types (Fig. 2)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("ASTAD_UPDATE_GOLDEN") == "1"


def _pinned(name, got):
    golden = GOLDEN / name
    if UPDATE:
        golden.write_text(got)
    assert golden.exists(), f"{golden} is missing: run with ASTAD_UPDATE_GOLDEN=1 to create it"
    want = golden.read_text()
    assert got == want, (f"{name} changed; if intended, regenerate with ASTAD_UPDATE_GOLDEN=1\n"
                         f"--- golden\n{want}\n--- now\n{got}")


def test_the_papers_fig2_copower_and_its_removal():
    """CHAD's Fig. 2 (b)/(f): `f = λx2i. x1 * x2i; ys = map f x2; w = sum ys`.
    The AD stage gives `f` a backward map and each call a copower cotangent
    `!record ⊗ ct`, summed over the map's iterations and consumed by `case`
    (Fig. 2 (f)'s `f' = zip x2 ys'; x1' = sum (map ... f')`); the optimiser
    folds the copower where each call makes it and inlines the calls, so the
    generated code accumulates x1's cotangent in the backward loop."""
    astad.clear_caches(memory=True, disk=False)
    x1, x2 = 0.7, np.array([1.0, -2.0, 3.0])
    rev = astad.reverse(fig2)
    w, pullback = rev(x1, x2)
    assert w == pytest.approx(x1 * np.sum(x2))
    g1, g2 = pullback(1.0)
    assert g1 == pytest.approx(np.sum(x2)) and np.allclose(g2, x1)
    check_grad(fig2, [x1, x2])
    check_stages(fig2, (x1, x2))  # the AD stage, copowers and all, interpreted, against the generated code

    ad, optimised = rev.ir("ad"), rev.ir("optimised")
    assert "let f = lam (x2i: f64)" in ad and "backward (f_out_ct) =" in ad
    assert "let f_ct = !f_record ⊗ t8_ct" in ad  # a call's copower
    assert "f_ct_sum=zero[!(f64) ⊗ f64]" in ad  # summed over the iterations of `map`
    assert "case f_ct_2 of !r ⊗ ct" in ad  # consumed by `case`: x1's cotangent
    for gone in ("lam (", "⊗", "case", ".back("):
        assert gone not in optimised and gone not in rev.source
    assert "x1_ct_sum" in rev.source
    _pinned("fig2_ad.txt", ad)
    _pinned("fig2_source.py", rev.source.replace(str(Path(__file__).parent / "paper_fig2.py"), "<file>"))


def captures_two(a, b, xs):
    g = lambda z: a * np.sin(z) + b * z * z
    return np.sum(np.array([g(z) for z in xs]))


def called_in_branches_of_a_loop(a, b, w, xs):
    def g(z):
        h = np.tanh(z * w + a)
        return np.sum(h * b)
    s = 0.0
    for i in range(3):
        if xs[i] > 0.0:
            s = s + g(xs[i])
        else:
            s = s - g(xs[i] * 2.0)
    return s + g(1.0)


def captures_nothing_differentiable(a, n, xs):
    g = lambda z: np.sin(z) * n
    return sum(g(z) for z in xs) * a


@pytest.mark.parametrize("fn, args, captured", [
    (captures_two, (0.7, 0.3, np.array([1.0, 2.0, 3.0])), ("a", "b")),
    (called_in_branches_of_a_loop, (0.2, np.array([1.0, -1.0]), np.array([0.5, 0.1]), np.array([0.3, -0.2, 0.5])),
     ("w", "a", "b")),
    (captures_nothing_differentiable, (0.4, 3, np.arange(3.0)), ()),
], ids=lambda a: getattr(a, "__name__", ""))
def test_function_values_get_copowers_which_the_optimiser_folds(fn, args, captured):
    """A function value's copower becomes, folded, one cotangent per variable
    it captures (none: nothing at all), through loops, branches and several
    call sites; every stage (the AD stage's copowers interpreted) agrees."""
    check_grad(fn, list(args))
    check_stages(fn, args)
    rev = astad.reverse(fn)
    rev(*args)
    ad = rev.ir("ad")
    assert "= lam (" in ad and "⊗" in ad and ".back(" in ad
    assert ("case " in ad) == bool(captured)
    assert "⊗" not in rev.ir("optimised") and "lam (" not in rev.ir("optimised")
    for name in captured:
        assert f"{name}_ct_sum" in rev.source or f"{name}_ct" in rev.source


def called_twice_one_call_dead(x, y):
    fs = (np.cos, lambda t: np.tanh(t * y) + x)
    v = fs[1](x)  # dead: its copower is zero
    x = fs[1](x)
    return x * x


def test_a_function_value_whose_call_is_dead():
    """A dead call's copower is zero (it was a zero of the function's type, which
    the copower folding could not split: InternalError)."""
    check_grad(called_twice_one_call_dead, [0.41, -0.69])
    check_stages(called_twice_one_call_dead, (0.41, -0.69))


def stacked_next_to_its_rows(x):
    return np.sum(np.stack([x, np.stack([np.sin(r) for r in x])]) ** 2)


def stacked_then_updated(x):
    v = np.stack([np.sin(r) for r in x])
    v *= x
    return np.sum(v)


def concatenated_with_a_map(x):
    return np.sum(np.concatenate([x, np.array(list(map(np.tanh, x)))]) * np.arange(6.0))


@pytest.mark.parametrize("fn", [stacked_next_to_its_rows, stacked_then_updated, concatenated_with_a_map])
def test_a_comprehension_over_known_rows_has_a_known_length(fn):
    """`np.stack` of a comprehension or `map` over an array of known shape has a
    known first axis: it fits next to arrays of that shape (it was refused:
    "array shapes (3,), (?,) do not fit together")."""
    x = np.array([0.3, -0.5, 0.9])
    check_grad(fn, [x])
    check_stages(fn, (x,))


def function_value_reads_a_name_through_another_function(x):
    def h3(t, c=2.0):
        return t * c + x

    def compose(p, q):
        return lambda v: p(q(v))

    cm = compose(h3, h3)
    a = cm(x)
    x = x * 0.5 + 0.25      # h3 reads the new x at the second call, through cm
    b = cm(x)
    return np.sum(a * b)


def test_a_function_value_is_not_reused_when_what_it_reads_through_a_function_changed():
    """A call of `cm` reads `x` through `h3`: the function value made for the
    first call must not serve the second (found by the random program generator:
    a wrong value, not a refusal)."""
    check_grad(function_value_reads_a_name_through_another_function, [np.array([0.3, -0.5, 0.9])])


G_CONSTANT = np.array(-0.9)  # a module-level 0-d array (the random programs' G1 found the bug with one)
H_CONSTANT = 0.7


def function_value_called_with_constants(x):
    g = lambda t: t * x + np.sin(t)  # noqa: E731 - its parameter is read twice
    same = lambda t: t  # noqa: E731 - it returns its parameter
    return g(0.5) + g(H_CONSTANT) + g(G_CONSTANT) * same(G_CONSTANT) + same(2.0) * x


def test_a_function_value_called_with_a_constant():
    """A function value called with a constant (a literal, a module-level number or array) whose
    parameter is read twice, or returned: the parameter's copies are the constant (it was an
    InternalError, "dup/drop of a non-variable", when the calls were inlined)."""
    check_grad(function_value_called_with_constants, [0.41])
    check_grad(function_value_called_with_constants, [np.array([0.3, -0.5, 0.9])])
    check_stages(function_value_called_with_constants, (0.41,))
