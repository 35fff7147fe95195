"""A nested ``def``'s own locals (its parameters and the names its own statements assign, Python's rule) are
never read from the enclosing function or the module: where a path reaches a read of one it has not
assigned, astad refuses (Python raises UnboundLocalError).  astad read the enclosing function's variable or
the module's global of the same name instead: a wrong value.  Valid programs next to them (a nested def
reading the enclosing function's variables, its own, globals; an item update ``y[i] = v`` of an enclosing
array, which does not make ``y`` local) are checked against Python's own execution and central
differences, forward mode against reverse mode."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import astad
from conftest import Refused, central_differences, check_correct_or_refused, fuzz_examples
from forward_oracle import check_forward

P = 5.0
Q = 7.0


def branch_local_shadows_global(x):
    def g(y):
        if y[0] > 0:
            P = y[0] * 2.0
        return np.sum(P * y)
    return g(x)


def read_before_assigned(x):
    def g(y):
        z = np.sum(P * y)
        P = 2.0
        return z * P
    return g(x)


def loop_local_shadows_global(x):
    def g(y):
        for i in range(2):
            P = y[i]
        return np.sum(P * y)
    return g(x)


def branch_local_shadows_enclosing(x):
    P = 2.0

    def g(y):
        if y[0] > 0:
            P = y[0]
        return np.sum(P * y)
    return g(x) + P


def read_before_assigned_shadows_enclosing(x):
    P = x[1]

    def g(y):
        z = np.sum(P * y)
        P = 3.0
        return z + P
    return g(x)


def inner_reads_unassigned_local_of_nested(x):
    def g(y):
        def h(z):
            return P * z
        r = h(y)
        P = 3.0
        return r
    return np.sum(g(x))


def function_value_shadows_global(x):
    def g(t):
        if t > 0.0:
            Q = t * t
        return Q * t
    return g(x[0]) + g(x[1])


@pytest.mark.parametrize("fn, what, line, col", [
    (branch_local_shadows_global, "assigned in only one branch of the `if` at line 23", 25, 23),
    (read_before_assigned, "a local variable of the function, read here before it is assigned", 31, 20),
    (loop_local_shadows_global, "assigned only inside the loop at line 39", 41, 23),
    (branch_local_shadows_enclosing, "assigned in only one branch of the `if` at line 49", 51, 23),
    (read_before_assigned_shadows_enclosing, "read here before it is assigned", 59, 20),
    (inner_reads_unassigned_local_of_nested, "read here before it is assigned", 68, 20),
    (function_value_shadows_global, "assigned in only one branch of the `if` at line 77", 79, 16),
])
@pytest.mark.parametrize("x0", [-1.5, 0.7])
def test_a_nested_local_not_assigned_on_the_path_is_refused(fn, what, line, col, x0):
    x = np.array([x0, 2.0, -0.5])
    for make in (astad.grad, astad.jacfwd):
        with pytest.raises(astad.AstadError) as e:
            make(fn)(x)
        message = str(e.value)
        assert what in message and not isinstance(e.value, astad.InternalError), message
        assert f"test_nested_locals.py:{line}:{col}:" in message.splitlines()[0], message
        assert "^" in message and "assign" in message.splitlines()[-1]


def own_enclosing_and_global(x):
    P = np.tanh(x)

    def g(y):
        Q = P * y  # the enclosing P, its own Q
        return np.sum(Q * y) + Q[0]
    return g(x) + Q * x[1]  # the global Q


def nested_assigned_on_every_path(x):
    def g(y):
        if y[0] > 0.1234567:  # (not a float hypothesis likes: no kink under the finite differences)
            P = y * 2.0
        else:
            P = np.sin(y)
        return np.sum(P * y)
    return g(x) + P


def inner_reads_nested_local_assigned_before_the_call(x):
    def g(y):
        def h(z):
            return P * z
        P = np.cos(y[0])
        return h(y)
    return np.sum(g(x)) * P


def item_update_of_enclosing_array_is_not_a_local(x):
    def g(y):
        v = y.copy()
        v[0] = y[1] * P
        return v
    return np.sum(g(x) * x)


def parameter_named_like_a_global(x):
    def g(P, y=Q):
        return np.sum(P * x) * y
    return g(x[0]) + g(P)


@pytest.mark.parametrize("fn", [own_enclosing_and_global, nested_assigned_on_every_path,
                                inner_reads_nested_local_assigned_before_the_call,
                                item_update_of_enclosing_array_is_not_a_local, parameter_named_like_a_global])
@settings(max_examples=15, deadline=None)
@given(xs=st.lists(st.floats(-2.0, 2.0, allow_nan=False, allow_subnormal=False), min_size=3, max_size=3),
       data=st.data())
def test_valid_nested_locals_are_read_as_python(fn, xs, data):
    x = np.array(xs)
    try:
        check_correct_or_refused(fn, [x])  # value == Python's, pullback == central differences
        check_forward(fn, [x], data)  # J v == central differences, <u, J v> == <J^T u, v>
    except Refused as e:
        raise AssertionError(f"refused: {e}") from None


def test_valid_nested_locals_value_and_gradient():
    x = np.array([0.3, -1.2, 0.8])
    for fn in (own_enclosing_and_global, nested_assigned_on_every_path):
        value, grad = astad.value_and_grad(fn)(x)
        assert value == pytest.approx(fn(x), rel=1e-12)
        np.testing.assert_allclose(grad, central_differences(fn, x), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- random programs of names and scopes

#: global names a program's locals take (a plain name, a builtin's, names that look generated)
SHADOWED = ["P", "u", "sum", "abs", "t1", "x_ct", "out_ct", "np_2", "residuals"]

#: how a function uses its local ``{n}`` (lines; ``{y}`` its array parameter): Python runs some, raises
#: UnboundLocalError on others
USES = {
    "both": ["if {y}[0] > 0.3:", "    {n} = {y} * 2.0", "else:", "    {n} = np.sin({y})", "r = np.sum({n} * {y})"],
    "one": ["if {y}[0] > 0.3:", "    {n} = {y} * 2.0", "r = np.sum({n} * {y})"],
    "one_taken": ["if np.sum({y} * {y}) >= 0.0:", "    {n} = {y} * 2.0", "r = np.sum({n} * {y})"],
    "loop": ["for i in range(2):", "    {n} = {y}[i]", "r = np.sum({n} * {y})"],
    "loop_none": ["for i in range(0):", "    {n} = {y}[i]", "r = np.sum({n} * {y})"],
    "before": ["r = np.sum({n} * {y})", "{n} = 2.0", "r = r * {n}"],
    "after": ["{n} = np.cos({y})", "r = np.sum({n} * {y})"],
    "inner_before": ["def h(z):", "    return {n} * z", "{n} = np.tanh({y}[1])", "r = np.sum(h({y}))"],
    "inner_after": ["def h(z):", "    return {n} * z", "r = np.sum(h({y}))", "{n} = 3.0"],
    "read": ["r = np.sum({n} * {y})"],
    "augmented": ["{n} += {y}", "r = np.sum({n} * {y})"],
    "augmented_after": ["{n} = {y} * 0.5", "{n} += {y}", "r = np.sum({n} * {y})"],
    "comprehension_before": ["r = np.sum(np.stack([{n} * {y}[i] for i in range(2)]))", "{n} = 2.0"],
    "comprehension_after": ["{n} = np.sin({y})", "r = np.sum(np.stack([{n} * {y}[i] for i in range(2)]))"],
    "for_target": ["r = 0.0", "for {n} in {y}:", "    r = r + {n} * {y}[0]"],
}


@st.composite
def scope_programs(draw):
    """(source, name of the use): a module with a global float named ``n``, and ``f(x)`` that uses a local
    ``n`` (``USES``) itself or in a nested def ``g`` (the enclosing ``f`` may assign ``n`` too, before or after
    defining ``g``), in a module-level helper ``h`` that ``f`` calls (twice: the second call may replay the
    first's lowering), in a nested def made in a loop, or a lambda with a parameter ``n``."""
    n = draw(st.sampled_from(SHADOWED))
    use = draw(st.sampled_from(sorted(USES)))
    where = draw(st.sampled_from(["f", "g", "g_enclosing", "g_enclosing_after", "lambda", "helper", "g_in_loop"]))
    lines = [f"    {line}" for line in (l.format(n=n, y="x") for l in USES[use])] + ["    return r"]
    if where.startswith("g"):
        body = ["    def g(y):"] + [f"        {l.format(n=n, y='y')}" for l in USES[use]] + ["        return r"]
        enclosing = [f"    {n} = x[2] * 0.5"]
        lines = ((enclosing if where == "g_enclosing" else []) + body
                 + (enclosing if where == "g_enclosing_after" else []) + [f"    return g(x) + np.sum({n} * x)"])
    elif where == "lambda":
        lines = [f"    g = lambda {n}, y: np.sum({n} * y)", "    return g(x[0], x) + g(x, x)"]
    elif where == "g_in_loop":
        lines = ["    s = 0.0", "    for j in range(2):", "        def g(y):"] + [
            f"            {l.format(n=n, y='y')}" for l in USES[use]] + ["            return r * (j + 1)",
                                                                        "        s = s + g(x)", "    return s"]
    helper = ""
    if where == "helper":
        helper = "def h(y):\n" + "".join(f"    {l.format(n=n, y='y')}\n" for l in USES[use]) + "    return r\n\n\n"
        lines = ["    return h(x) + h(x * 0.5)"]
    source = f"import numpy as np\n\n{n} = 5.0\n\n\n{helper}def f(x):\n" + "\n".join(lines) + "\n"
    return source, f"{use} in {where}"


@settings(max_examples=fuzz_examples(25, long=60), deadline=None)
@given(program=scope_programs(), xs=st.lists(st.sampled_from([-1.33, -0.41, 0.27, 0.93, 1.62]), min_size=3, max_size=3),
       data=st.data())  # (no sum of three entries near 0: forward vs reverse compares to rounding of the terms)
def test_random_scopes_correct_or_refused(tmp_path_factory, program, xs, data):
    """Python's own execution is the oracle: where it raises (UnboundLocalError, NameError), astad refuses;
    where it runs, astad gives its value, the pullback central differences, forward mode <u, J v> == <J^T u, v>
    (or refuses, in both modes)."""
    from hypothesis import note

    from conftest import load_program

    source, what = program
    note(source)
    fn = load_program(source, tmp_path_factory.getbasetemp(), "scopes").f
    x = np.array(xs)
    try:
        fn(x.copy())
    except (UnboundLocalError, NameError):
        for make in (astad.grad, astad.jacfwd):
            with pytest.raises(astad.AstadError) as e:
                make(fn)(x)
            assert not isinstance(e.value, astad.InternalError), str(e.value)
        return
    try:
        check_correct_or_refused(fn, [x])
    except Refused:
        with pytest.raises(astad.AstadError) as e:
            astad.jacfwd(fn)(x)
        assert not isinstance(e.value, astad.InternalError), str(e.value)
        return
    check_forward(fn, [x], data)
