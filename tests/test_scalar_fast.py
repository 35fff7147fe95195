"""The fast paths of tiny scalar programs: ``abs`` for ``np.abs`` in tests (forward mode too),
``grad`` in one Python-float argument by forward mode (astad/scalar_grad.py), and the generated
functions that check their own arguments (astad/guards.py).  Derivatives are checked against
central finite differences and against the other mode; values against the plain function
(equal, and of the same type); calls of other kinds (np.float64, 0-d arrays, ints, other
arities, keywords) after fast calls against the plain function and the array path."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import astad
from conftest import fuzz_examples, load_program

SOURCE = '''
import numpy as np

K = 2.0


def newton(a):
    x = a
    step = 1.0
    it = 0
    while np.abs(step) > 1e-12 and it < 50:
        step = (x * x * x - a) / (3.0 * x * x)
        x = x - step
        it = it + 1
    return x


def halving(x, y):
    s = x
    step = 1.0
    while np.abs(step) > 1e-6:
        step = step * 0.5 * np.tanh(x * y + s)
        s = s + step * y
    return s * x


def returns_abs(x):
    return np.abs(x * x - 3.0)


def tiny(x, y):
    return (x * y + 1.0) / (x - 2.0 * y)


def mixed(x, n, y):
    s = 0.0
    i = 0
    while i < n:
        if np.abs(s) < 1.0:
            s = s + x * y
        else:
            s = s - 0.5 * x
        i = i + 1
    return s + K * x


def constant(x):
    return 3.0


def arrays(x, y):
    return np.sum((x * y + 1.0) / (x - 2.0 * y)) - np.sum(x - (y - x * x))
'''


@pytest.fixture(scope="module")
def mod(tmp_path_factory):
    return load_program(SOURCE, tmp_path_factory.mktemp("scalar_fast"), "scalar_fast")


def fd(f, args, i, eps=1e-6):
    hi, lo = list(args), list(args)
    hi[i] = hi[i] + eps
    lo[i] = lo[i] - eps
    return (float(f(*hi)) - float(f(*lo))) / (2 * eps)


def close(a, b, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rtol, atol=atol)


CASES = [("newton", (7.3,), 0), ("halving", (0.7, 1.3), 0), ("halving", (0.7, 1.3), 1), ("returns_abs", (0.4,), 0),
         ("tiny", (2.0, 3.0), 0), ("mixed", (0.3, 5, 1.1), 0), ("mixed", (0.3, 5, 1.1), 2)]


@pytest.mark.parametrize("name, args, i", CASES)
def test_grad_in_one_float_by_forward_mode(mod, name, args, i):
    f = getattr(mod, name)
    vg = astad.value_and_grad(f, argnums=i)
    for _ in range(3):  # the first call, the table, the checked latest entry
        value, g = vg(*args)
        want = f(*args)
        assert value == want and type(value) is type(want)
        assert type(g) is float
        close(g, fd(f, args, i))
        _, pullback = astad.reverse(f)(*args)
        close(g, pullback(1.0)[i], rtol=1e-12, atol=1e-15)  # reverse mode: the same to rounding
        assert astad.grad(f, argnums=i)(*args) == g
        assert astad.grad(f, argnums=(i,))(*args) == (g,)


@pytest.mark.parametrize("name, args, i", CASES)
def test_other_kinds_after_fast_calls(mod, name, args, i):
    """np.float64 arguments and 0-d arrays do not take the code made for Python floats."""
    f = getattr(mod, name)
    vg = astad.value_and_grad(f, argnums=i)
    for _ in range(3):
        vg(*args)
    for kind in (np.float64, lambda v: np.array(v, dtype=float)):
        other = tuple(kind(a) if type(a) is float else a for a in args)
        value, g = vg(*other)
        want = f(*other)
        assert type(value) is type(want)
        close(value, want, rtol=1e-14, atol=0)
        close(g, fd(f, args, i))
        _, pullback = astad.reverse(f)(*other)
        assert type(g) is type(pullback(1.0)[i])
        again = vg(*args)  # and floats again
        assert again == vg(*args) and type(again[1]) is float


def test_jvp_of_floats_with_abs_in_while_conditions(mod):
    for name, args in (("newton", (7.3,)), ("halving", (0.7, 1.3)), ("mixed", (0.3, 5, 1.1))):
        f = getattr(mod, name)
        tangents = tuple(0.5 if type(a) is float else None for a in args)
        for _ in range(3):
            value, tangent = astad.jvp(f, args, tangents)
            assert value == f(*args)
            want = sum(0.5 * fd(f, args, k) for k, a in enumerate(args) if type(a) is float)
            close(tangent, want)
        code = "\n".join(ln.split("#")[0] for ln in astad.forward(f).source.splitlines())  # not the comments
        assert "abs(" in code and "np.abs(" not in code, code


def test_abs_returned_is_numpys(mod):
    """``np.abs`` whose value is returned (not only compared) stays numpy's: the value's type is kept."""
    value, _ = astad.value_and_grad(mod.returns_abs)(0.4)
    assert type(value) is type(mod.returns_abs(0.4)) is np.float64
    value, _ = astad.jvp(mod.returns_abs, (0.4,), (1.0,))
    assert type(value) is np.float64


def test_a_constant_function_has_a_zero_float_gradient(mod):
    for _ in range(3):
        assert astad.value_and_grad(mod.constant)(1.5) == (3.0, 0.0)
        v, g = astad.grad(mod.constant)(1.5), astad.jvp(mod.constant, (1.5,), (1.0,))
        assert type(v) is float and v == 0.0 and g == (3.0, 0.0)


def test_the_latest_entry_checks_its_arguments(mod):
    vg = astad.value_and_grad(mod.tiny, argnums=(0, 1))
    for _ in range(3):
        assert vg(2.0, 3.0) == astad.reverse(mod.tiny)(2.0, 3.0)[0:1] + (astad.reverse(mod.tiny)(2.0, 3.0)[1](1.0),)
    with pytest.raises(astad.AstadTypeError):  # an int has no gradient: not the code made for floats
        vg(2, 3.0)
    with pytest.raises(astad.AstadTypeError):
        vg(True, 3.0)
    vg0 = astad.value_and_grad(mod.tiny)
    assert vg0(2.0, 3.0) == vg0(2.0, y=3.0) == vg0(2.0, 3.0)  # a keyword: bound as Python binds it
    with pytest.raises(astad.AstadTypeError):
        vg(2.0, 3.0, 4.0)
    with pytest.raises(astad.AstadTypeError):
        vg(2.0)
    assert vg(2.0, 3.0) == vg(2.0, 3.0)
    jv = astad.jvp(mod.tiny, (2.0, 3.0), (1.0, 0.5))
    assert astad.jvp(mod.tiny, [2.0, 3.0], [1.0, 0.5]) == jv
    assert astad.jvp(mod.tiny, (2.0, 3.0), (1.0, None))[1] == astad.jvp(mod.tiny, (2.0, 3.0), (1.0, 0.0))[1]
    with pytest.raises(astad.AstadTypeError):
        astad.jvp(mod.tiny, (2.0, 3.0), (1.0,))
    with pytest.raises(astad.AstadTypeError):
        astad.jvp(mod.tiny, (2.0, 3.0), (1.0, np.ones(2)))
    assert astad.jvp(mod.tiny, (2.0, 3.0), (1.0, 0.5)) == jv


def test_a_global_changed_after_fast_calls_is_read_again(mod):
    g = astad.grad(mod.mixed)
    for _ in range(3):
        close(g(0.3, 5, 1.1), fd(mod.mixed, (0.3, 5, 1.1), 0))
    old = mod.K
    try:
        mod.K = 7.0
        close(g(0.3, 5, 1.1), fd(mod.mixed, (0.3, 5, 1.1), 0))
        close(astad.jvp(mod.mixed, (0.3, 5, 1.1), (1.0, None, 0.0))[1], fd(mod.mixed, (0.3, 5, 1.1), 0))
    finally:
        mod.K = old


# ------------------------------------------------------------------ random scalar programs

_OPS = ["{a} + {b}", "{a} - {b}", "{a} * {b}", "0.5 * {a}", "np.tanh({a})", "np.sin({a}) * {b}", "-{a}"]


@st.composite
def scalar_programs(draw):
    """A function of two floats (and an int ``n``): straight-line updates, a ``while`` loop whose
    condition is ``np.abs(step) > tol`` (alone or with ``and it < n``), ``if np.abs(..) < c``."""
    names = ["x", "y"]
    lines = []

    def expr():
        op = draw(st.sampled_from(_OPS))
        return op.format(a=draw(st.sampled_from(names)), b=draw(st.sampled_from(names)))

    for k in range(draw(st.integers(0, 2))):
        lines.append(f"v{k} = {expr()}")
        names.append(f"v{k}")
    lines.append("s = x * 0.5")
    lines.append("step = 1.0")
    lines.append("it = 0")
    names.append("s")
    cond = draw(st.sampled_from(["np.abs(step) > 1e-4", "np.abs(step) > 1e-4 and it < n", "1e-4 < np.abs(step)"]))
    lines.append(f"while {cond}:")
    lines.append(f"    step = step * 0.5 * np.tanh({expr()})")
    lines.append(f"    if np.abs(s) < {draw(st.sampled_from(['0.5', '2.0']))}:")
    lines.append(f"        s = s + step * {draw(st.sampled_from(names))}")
    lines.append("    else:")
    lines.append(f"        s = s - step * {draw(st.sampled_from(names))}")
    lines.append("    it = it + 1")
    lines.append(f"return s * {draw(st.sampled_from(names))} + {expr()}")
    return "import numpy as np\n\n\ndef f(x, y, n):\n" + "\n".join("    " + ln for ln in lines) + "\n"


@settings(max_examples=fuzz_examples(6, long=25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scalar_programs(), st.floats(-1.5, 1.5), st.floats(-1.5, 1.5), st.integers(0, 6))
def test_random_scalar_programs(tmp_path_factory, source, x, y, n):
    note(source)
    f = load_program(source, tmp_path_factory.mktemp("random_scalar_fast"), "scalar_fast").f
    args = (x, y, n)
    want = f(*args)
    _, pullback = astad.reverse(f)(*args)
    cts = pullback(1.0)
    for i in (0, 1):
        for _ in range(2):  # the first call, then the checked latest entry
            value, g = astad.value_and_grad(f, argnums=i)(*args)
            assert value == want and type(value) is type(want)
            close(g, cts[i], rtol=1e-9, atol=1e-12)  # forward mode vs reverse mode
    for _ in range(2):
        value, (gx, gy) = astad.value_and_grad(f, argnums=(0, 1))(*args)
        # reverse mode: its loop on the scalar fast path calls math.tanh for np.tanh (an ulp apart)
        close(value, want, rtol=1e-14, atol=0)
        close((gx, gy), cts[:2], rtol=1e-12, atol=1e-15)
        jv = astad.jvp(f, args, (0.3, -0.7, None))
        assert jv[0] == want
        close(jv[1], 0.3 * cts[0] - 0.7 * cts[1], rtol=1e-9, atol=1e-12)  # <J v> == <J^T u, v>
    for kind in (np.float64, lambda v: np.array(v)):
        other = (kind(x), kind(y), n)
        value, (gx, gy) = astad.value_and_grad(f, argnums=(0, 1))(*other)
        close(value, want, rtol=1e-14, atol=0)
        close((gx, gy), cts[:2], rtol=1e-12, atol=1e-14)


def test_jvps_of_two_functions_of_the_same_kinds_alternating(mod):
    """The latest call's checked code belongs to its callable: another function of the same kinds
    of arguments gets its own derivative."""
    want_tiny = 0.5 * fd(mod.tiny, (2.0, 3.0), 0) - fd(mod.tiny, (2.0, 3.0), 1)
    want_halving = 0.5 * fd(mod.halving, (2.0, 3.0), 0) - fd(mod.halving, (2.0, 3.0), 1)
    for k in range(6):
        if k == 3:
            astad.clear_caches(memory=True, disk=False)
        close(astad.jvp(mod.tiny, (2.0, 3.0), (0.5, -1.0))[1], want_tiny)
        close(astad.jvp(mod.halving, (2.0, 3.0), (0.5, -1.0))[1], want_halving)
        vg_t, vg_h = astad.value_and_grad(mod.tiny, argnums=(0, 1)), astad.value_and_grad(mod.halving, argnums=(0, 1))
        close(vg_t(2.0, 3.0)[1][0], fd(mod.tiny, (2.0, 3.0), 0))
        close(vg_h(2.0, 3.0)[1][0], fd(mod.halving, (2.0, 3.0), 0))


def test_negations_of_negations_cancel_in_the_backward_block(mod):
    """``x - 2.0 * y`` and ``q / d`` give ``t3_ct = -t4_ct`` of ``t4_ct = -(t6 * t5)``: read as
    ``t6 * t5``, and ``x_1_ct + t4_ct`` as ``x_1_ct - t7`` (exact); arrays too."""
    import re

    rng = np.random.default_rng(0)
    for f, args in ((mod.tiny, (2.0, 3.0)), (mod.arrays, (rng.normal(size=4) + 3.0, rng.normal(size=4)))):
        r = astad.reverse(f)
        value, pullback = r(*args)
        negs = dict(re.findall(r"let (\w+) = neg\((\w+)\)", r.ir("optimised", *args)))
        assert not set(negs.values()) & set(negs), negs  # no negation of a negation
        cts = pullback(1.0)
        for i, a in enumerate(args):
            for k in np.ndindex(np.shape(a)):
                hi, lo = list(args), list(args)
                e = np.zeros(np.shape(a))
                e[k] = 1e-6
                hi[i], lo[i] = a + e, a - e
                close(np.asarray(cts[i])[k], (f(*hi) - f(*lo)) / 2e-6, rtol=1e-6, atol=1e-7)


def test_first_fast_calls_from_threads(mod):
    """Threads making the checked code at once (each compiles its syntax tree: astad.deep takes turns)."""
    import threading

    errors = []
    want_g, want_t = fd(mod.tiny, (2.0, 3.0), 1), 0.5 * fd(mod.halving, (0.7, 1.3), 0)

    def work(k):
        try:
            for i in range(20):
                if k == 0 and i % 5 == 4:  # one thread forgets the code the others run
                    astad.clear_caches(memory=True, disk=False)
                close(astad.value_and_grad(mod.tiny, argnums=(0, 1))(2.0, 3.0)[1][1], want_g)
                close(astad.jvp(mod.halving, (0.7, 1.3), (0.5, 0.0))[1], want_t)
                close(astad.grad(mod.newton)(7.3), 1 / (3 * 7.3 ** (2 / 3)))
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
